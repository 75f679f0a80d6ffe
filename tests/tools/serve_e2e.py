#!/usr/bin/env python3
"""`uroce serve`, a host's node API (docs/fabric.md): its settings are the configuration
file's; a write rewrites the file (the old text kept as .bak) and a program started afterwards
sees it; bad input and writes without the token leave the file byte for byte as it was; a
device whose settings differ from the first's is reported as drift. Loopback only."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
from nodelib import Nodes, call, get, verdict, write_token  # noqa: E402

TOKEN = "serve-token-0123456789abcdef"
CONFIG = """# a host of the fabric
[[device]]
name = "uroce0"
port = "loopback"
addresses = ["198.18.0.1/15"]

[[device]]
name = "uroce1"
port = "loopback"
addresses = ["198.18.0.2/15"]
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    uroce = os.path.join(args.build, "bin", "uroce")
    tmp = tempfile.mkdtemp(prefix="uroce-serve-", dir="/dev/shm")
    cfg = os.path.join(tmp, "h1.toml")
    nodes = Nodes(tmp, args.build)
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def file():
        with open(cfg, "rb") as f:
            return f.read()

    try:
        port = nodes.host("h1", CONFIG, ["--token-file", write_token(tmp, TOKEN)])
        srv = nodes.procs["h1"]
        st, j = call(port, "GET", "/v1")
        check(st == 200 and j["role"] == "host" and j["node"] == "h1", f"GET /v1: {st} {j}")
        st, j = call(port, "GET", "/v1/state")
        check(st == 200 and j["state"]["config"] == cfg and j["state"]["drift"] == [],
              f"GET /v1/state: {st} {j}")
        check(j["settings"]["pfc"]["priorities"] == [] and j["settings"]["mtu"] == 1024,
              f"initial settings: {j['settings']}")

        original = file()
        for what, doc, token, raw, want in [
                ("no token", {"profile": "lossless"}, None, None, 401),
                ("wrong token", {"profile": "lossless"}, "y" * 28, None, 403),
                ("malformed", None, TOKEN, b"{\"mtu\":", 400),
                ("unknown key", {"speed": 1}, TOKEN, None, 400),
                ("a switch's key", {"ecn": {"kmin_bytes": 1}}, TOKEN, None, 400),
                ("bad MTU", {"mtu": 1500}, TOKEN, None, 400)]:
            st, j = call(port, "PATCH", "/v1/settings", doc, token, raw)
            check(st == want and "error" in j, f"{what}: {st} {j}, want {want}")
            check(file() == original, f"{what}: the file changed")
        check(not os.path.exists(cfg + ".bak"), "a refused write left a .bak")

        st, j = call(port, "PATCH", "/v1/settings", {"profile": "lossless",
                                                     "dscp_to_prio": {"26": 4}}, TOKEN)
        check(st == 200 and j["applied"] and "pfc.priorities: [] -> [4]" in j["changed"],
              f"PATCH lossless: {st} {j}")
        with open(cfg + ".bak", "rb") as f:
            check(f.read() == original, "the .bak is not the old file")
        parsed = tomllib.loads(file().decode())
        for dev in parsed["device"]:
            check(dev["profile"] == "lossless" and dev["pfc"]["enabled"] == [4] and
                  dev["dscp_to_prio"] == {"26": 4}, f"file after PATCH: {dev}")
        check(file().startswith(b"# a host of the fabric"), "the user's comment went")
        # A program started now reads it (uroce show roce: the configured devices).
        env = dict(os.environ, UROCE_CONFIG=cfg, UROCE_RUN_DIR=tmp)
        shown = json.loads(subprocess.run([uroce, "show", "roce", "--json"], env=env,
                                          capture_output=True, text=True, timeout=30).stdout)
        prios = [[p["priority"] for p in d["priorities"] if p["pfc"]] for d in shown["devices"]]
        check(all(p == [4] for p in prios) and len(prios) == 2, f"uroce show roce: {prios}")

        # One device edited by hand: drift.
        data = file().decode()
        at = data.rindex("mtu = 1024")  # the second device's
        data = data[:at] + "mtu = 4096" + data[at + len("mtu = 1024"):]
        with open(cfg, "w") as f:
            f.write(data)
        j = get(port, "/v1/state")
        check(j["state"]["drift"] == ["uroce1"], f"drift: {j['state'].get('drift')}")
        # PUT makes every device the same again.
        st, j = call(port, "PUT", "/v1/settings", {"profile": "lossy"}, TOKEN)
        check(st == 200 and j["applied"], f"PUT lossy: {st} {j}")
        st, j = call(port, "GET", "/v1/state")
        check(j["state"]["drift"] == [] and j["settings"]["profile"] == "lossy",
              f"after PUT: {j['state'].get('drift')} {j['settings'].get('profile')}")
        check(srv.poll() is None, "uroce serve exited during the test")
        srv.send_signal(signal.SIGTERM)
        srv.wait(10)
        check(srv.returncode == 0, f"exit status {srv.returncode}:\n{nodes.output('h1')}")
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        nodes.stop_all()
    return verdict(failures, tmp)


if __name__ == "__main__":
    sys.exit(main())
