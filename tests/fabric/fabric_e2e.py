#!/usr/bin/env python3
"""`uroce fabric` on a fabric of real nodes (docs/fabric.md): four hosts (`uroce serve` over
their own configuration files) and two uroce-switch instances (their node API), all on
loopback. Checked:
  - apply --dry-run changes nothing and says what would change on each node;
  - apply lossless configures all six (each node's settings, each host's file);
  - show roce sees all six; doctor finds nothing;
  - one host misconfigured by hand (RoCE DSCP on another priority, PFC off): doctor names it
    and the fix, exits 1; apply lossless repairs it, doctor is clean again;
  - a node that cannot be reached (stopped): apply stops before changing anything;
  - a node that vanishes during the change (a stub that answers the read and the dry run,
    then drops the write): every real node is put back as it was, the stub reported unknown;
  - an inventory or profile that is wrong: exit 2 and one line;
  - zero-touch: a new host started with only the desired state's address (`uroce fabric
    serve`) joins configured, reports in, follows a change of the document; edited by hand
    while the desired state cannot be fetched, it shows up in `show roce` and `doctor`.
"""
import argparse
import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nodelib import (Nodes, call, get, loopback_host, verdict, wait_for,  # noqa: E402
                     write_inventory, write_token)

TOKEN = "fabric-token-0123456789abcdef"
HOSTS = ["h1", "h2", "h3", "h4"]
SWITCHES = ["leaf", "spine"]


def patch(port, body):
    status, reply = call(port, "PATCH", "/v1/settings", body, TOKEN)
    if status != 200:
        raise RuntimeError(f"PATCH on port {port}: HTTP {status} {reply}")
    return reply


class VanishingNode(http.server.BaseHTTPRequestHandler):
    """Answers like a switch's node API until the first real write, which it drops (the
    connection closes unanswered); after that it answers nothing more."""
    gone = False
    settings = None

    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if VanishingNode.gone:
            self.close_connection = True
            return
        self.reply(VanishingNode.settings)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", 0))
        self.rfile.read(n)
        if VanishingNode.gone or "dry_run=1" not in self.path:
            VanishingNode.gone = True
            self.close_connection = True
            return
        self.reply({"changed": ["pfc.priorities: [] -> [3]"], "applied": False,
                    "settings": VanishingNode.settings})

    do_PATCH = do_PUT

    def log_message(self, *args):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    args = ap.parse_args()
    uroce = os.path.join(args.build, "bin", "uroce")
    tmp = tempfile.mkdtemp(prefix="uroce-fabric-", dir="/dev/shm")
    nodes_ = Nodes(tmp, args.build)
    procs, failures = nodes_.procs, []
    stub = None

    def check(cond, what):
        if not cond:
            failures.append(what)

    def fabric(*argv, inventory=None):
        p = subprocess.run([uroce, "fabric", *argv, "--inventory", inventory or inv_path],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    try:
        token_file = write_token(tmp, TOKEN)
        ports = {}
        for i, h in enumerate(HOSTS):
            ports[h] = nodes_.host(h, f"# host {h}\n" + loopback_host(i + 1),
                                   ["--token-file", token_file])
        for s in SWITCHES:
            ports[s] = nodes_.switch(s, ["--api-token-file", token_file])

        def inventory(path, nodes):
            write_inventory(path, token_file, nodes)
        nodes = [(h, "host", ports[h]) for h in HOSTS] + [(s, "switch", ports[s])
                                                         for s in SWITCHES]
        inv_path = os.path.join(tmp, "fabric.toml")
        inventory(inv_path, nodes)
        settings = lambda n: get(ports[n], "/v1/settings")  # noqa: E731
        initial = {n: settings(n) for n in HOSTS + SWITCHES}

        # Dry run: nothing changes, every node would.
        rc, out, err = fabric("apply", "lossless", "--dry-run", "--json")
        rep = json.loads(out)
        check(rc == 0 and rep["ok"] and all(n["outcome"] == "would change" for n in rep["nodes"]),
              f"dry run: rc {rc} {out} {err}")
        check(all(settings(n) == initial[n] for n in initial), "the dry run changed a node")

        # Lossless on all six.
        rc, out, err = fabric("apply", "lossless")
        check(rc == 0 and "done on 6 nodes" in out, f"apply lossless: rc {rc}\n{out}{err}")
        for n in HOSTS + SWITCHES:
            s = settings(n)
            check(s["profile"] == "lossless" and s["pfc"]["priorities"] == [3],
                  f"{n} after apply: {s['profile']} {s['pfc']}")
        for h in HOSTS:
            with open(os.path.join(tmp, f"{h}.toml"), "rb") as f:
                dev = tomllib.load(f)["device"][0]
            check(dev["profile"] == "lossless" and dev["pfc"]["enabled"] == [3],
                  f"{h}'s file: {dev}")
        rc, out, err = fabric("show", "roce", "--interval", "0", "--json")
        view = json.loads(out)
        check(rc == 0 and len(view["nodes"]) == 6 and all(n["reachable"] for n in view["nodes"]),
              f"show roce: rc {rc} {out}{err}")
        check(sum(1 for p in view["ports"] if p["role"] == "switch") == 4,
              f"show roce: switch ports {view['ports']}")
        rc, out, err = fabric("show", "roce", "--interval", "0.2")
        check(rc == 0 and "spine" in out and "PAUSE_TX" in out, f"show roce table: {out}{err}")
        rc, out, err = fabric("doctor", "--interval", "0")
        check(rc == 0 and "no problem found" in out, f"doctor on a consistent fabric: {out}{err}")

        # h3 misconfigured by hand: doctor names it; apply repairs it.
        patch(ports["h3"], {"dscp_to_prio": {"26": 4}, "pfc": {"priorities": []}})
        rc, out, err = fabric("doctor", "--interval", "0", "--json")
        found = {f["check"]: f for f in json.loads(out)["findings"]}
        check(rc == 1 and found.get("roce-priority", {}).get("nodes") == ["h3"],
              f"doctor: roce-priority: rc {rc} {out}")
        check("h3" in found.get("pfc-mismatch", {}).get("nodes", []) and
              "uroce fabric apply" in found.get("roce-priority", {}).get("fix", ""),
              f"doctor: pfc-mismatch and the fix: {out}")
        rc, out, err = fabric("apply", "lossless")
        check(rc == 0 and settings("h3") == settings("h1"), f"repair: rc {rc} {out}{err}")
        rc, out, err = fabric("doctor", "--interval", "0")
        check(rc == 0, f"doctor after the repair: {out}")

        # A node that cannot be reached: nothing changes anywhere.
        before = {n: settings(n) for n in initial}
        os.killpg(procs["h2"].pid, signal.SIGSTOP)
        try:
            rc, out, err = fabric("apply", "lossy", "--json")
        finally:
            os.killpg(procs["h2"].pid, signal.SIGCONT)
        rep = json.loads(out)
        h2 = next(n for n in rep["nodes"] if n["node"] == "h2")
        check(rc == 1 and rep["stopped"] == "read" and h2["outcome"] == "failed",
              f"unreachable node: rc {rc} {out}")
        check(all(settings(n) == before[n] for n in before), "a node changed although h2 was away")

        # A node that vanishes during the change: the real ones are put back.
        VanishingNode.settings = before["spine"]
        stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), VanishingNode)
        threading.Thread(target=stub.serve_forever, daemon=True).start()
        inv2 = os.path.join(tmp, "fabric2.toml")
        inventory(inv2, nodes + [("ghost", "switch", stub.server_address[1])])
        rc, out, err = fabric("apply", "lossy", "--json", inventory=inv2)
        rep = json.loads(out)
        outcome = {n["node"]: n["outcome"] for n in rep["nodes"]}
        check(rc == 1 and rep["stopped"] == "apply" and outcome.get("ghost") == "unknown" and
              all(outcome.get(n) == "rolled back" for n in initial),
              f"vanishing node: rc {rc} {out}")
        check(all(settings(n) == before[n] for n in before), "a node was not put back")

        # Bad input to the command.
        rc, out, err = fabric("apply", "fast")
        check(rc == 2 and "unknown profile" in err, f"unknown profile: {rc} {err}")
        bad = os.path.join(tmp, "bad.toml")
        with open(bad, "w") as f:
            f.write('[[node]]\nname = "x"\nrole = "router"\napi = "127.0.0.1:1"\n')
        rc, out, err = fabric("show", "roce", inventory=bad)
        check(rc == 2 and "role" in err, f"bad inventory: {rc} {err}")
        # Zero-touch: h5 starts with only the desired state's address.
        desired = os.path.join(tmp, "desired.json")
        with open(desired, "w") as f:
            json.dump({"version": 1, "all": {"profile": "lossless"}}, f)
        nodes_.start("fabric-serve", [uroce, "fabric", "serve", "--listen", "127.0.0.1:0",
                                      "--state", desired, "--token-file", token_file])
        fport = nodes_.port_of("fabric-serve", "uroce fabric serve:")
        ports["h5"] = nodes_.host("h5", loopback_host(5), [
            "--token-file", token_file, "--desired", f"http://127.0.0.1:{fport}/v1/desired",
            "--desired-every", "200"])
        wait_for(lambda: settings("h5")["profile"] == "lossless", time.monotonic() + 20,
                 "h5 to take the desired state")
        joined = wait_for(lambda: next((n for n in get(fport, "/v1/nodes")["nodes"]
                                        if n["node"] == "h5" and n["in_sync"]), None),
                          time.monotonic() + 20, "h5's report")
        check(joined["role"] == "host" and joined["version"] == 1, f"h5's report: {joined}")
        with open(desired, "w") as f:
            json.dump({"version": 2, "all": {"profile": "lossless"}, "host": {"mtu": 2048}}, f)
        wait_for(lambda: settings("h5")["mtu"] == 2048, time.monotonic() + 20,
                 "h5 to follow the new document")
        # The desired state's server goes; h5 is edited by hand: not as desired.
        procs["fabric-serve"].send_signal(signal.SIGTERM)
        procs["fabric-serve"].wait(15)
        patch(ports["h5"], {"mtu": 4096})
        wait_for(lambda: get(ports["h5"], "/v1/state")["desired"]["in_sync"] is False,
                 time.monotonic() + 20, "h5 out of sync")
        inv5 = os.path.join(tmp, "fabric5.toml")
        inventory(inv5, nodes + [("h5", "host", ports["h5"])])
        rc, out, err = fabric("doctor", "--interval", "0", "--json", inventory=inv5)
        found = {f["check"]: f for f in json.loads(out)["findings"]}
        check(rc == 1 and found.get("desired-state", {}).get("nodes") == ["h5"],
              f"doctor: desired-state: rc {rc} {out}")
        rc, out, err = fabric("show", "roce", "--interval", "0", inventory=inv5)
        check("NOT AS DESIRED" in next((x for x in out.splitlines() if x.startswith("h5")), ""),
              f"show roce: h5 not as desired:\n{out}")
        for name, p in procs.items():
            if name != "fabric-serve":
                check(p.poll() is None, f"{name} exited during the test:\n{nodes_.output(name)}")
    except RuntimeError as e:
        failures.append(str(e))
    finally:
        if stub:
            stub.shutdown()
        for name in nodes_.stop_all():
            failures.append(f"{name} did not stop on SIGTERM")
    return verdict(failures, tmp)


if __name__ == "__main__":
    sys.exit(main())
