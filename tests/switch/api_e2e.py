#!/usr/bin/env python3
"""uroce-switch's node API on a running switch (docs/fabric.md "The node API"): reads open,
writes with the token only, bad input (malformed JSON, unknown keys, out-of-range values, a
too-large body, a slow client) answered with a clear 4xx while nothing changes and the switch
keeps serving, a dry run that changes nothing, a profile applied at run time and in force in
the switch's settings and state, and a clean exit after it all. Loopback only; the switch's
two memif ports have no peer."""
import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import swlib  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fabric"))
from nodelib import call  # noqa: E402
from swlib import output, start, wait_for  # noqa: E402

TOKEN = "test-token-0123456789abcdef"


def body(tmp, failures, gaps):
    token_file = os.path.join(tmp, "token")
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, (TOKEN + "\n").encode())
    os.close(fd)
    argv = [os.path.join(args.build, "bin", "uroce-switch"), "--file-prefix",
            f"usw-api-{os.getpid()}", "--name", "leaf1", "--api", "127.0.0.1:0",
            "--api-token-file", token_file, "--stats-every", "0"]
    for i in range(2):
        argv += ["--port", f"net_memif{i},role=server,id=0,socket={tmp}/p{i}.sock"]
    sw = start(argv, os.path.join(tmp, "switch.out"))
    deadline = time.monotonic() + 30
    wait_for(lambda: "ports up" in output(sw) or sw.poll() is not None, deadline, "switch start")
    if sw.poll() is not None:
        raise RuntimeError("switch exited:\n" + output(sw))
    line = next(x for x in output(sw).splitlines() if "node API on" in x)
    port = int(line.split("(port ")[1].split(")")[0])

    def check(cond, what):
        if not cond:
            failures.append(what)

    st, j = call(port, "GET", "/v1")
    check(st == 200 and j.get("role") == "switch" and j.get("node") == "leaf1", f"GET /v1: {st} {j}")
    st, j = call(port, "GET", "/v1/state")
    check(st == 200 and len(j["state"]["ports"]) == 2, f"GET /v1/state: {st} {j}")
    check(j["settings"]["pfc"]["priorities"] == [3], f"initial PFC priorities: {j['settings']}")
    initial = call(port, "GET", "/v1/settings")[1]

    # Writes without or with a wrong token, and bad documents: refused, nothing changes.
    bad = [
        ("no token", "PATCH", {"profile": "lossy"}, None, None, 401),
        ("wrong token", "PATCH", {"profile": "lossy"}, "x" * 27, None, 403),
        ("malformed JSON", "PATCH", None, TOKEN, b"{\"pfc\": ", 400),
        ("unknown key", "PATCH", {"colour": "blue"}, TOKEN, None, 400),
        ("out of range", "PATCH", {"ecn": {"pmax": 2}}, TOKEN, None, 400),
        ("a host's key", "PATCH", {"dcqcn": False}, TOKEN, None, 400),
        ("xon above xoff", "PATCH", {"pfc": {"xon_bytes": 10 ** 7}}, TOKEN, None, 400),
        ("bad whole document", "PUT", {"mtu": 100}, TOKEN, None, 400),
        ("too large", "PATCH", None, TOKEN, b" " * (70 * 1024), 413),
        ("wrong method", "DELETE", None, TOKEN, None, 405),
    ]
    for what, method, doc, token, raw, want in bad:
        st, j = call(port, method, "/v1/settings", doc, token, raw)
        check(st == want and isinstance(j, dict) and j.get("error"),
              f"{what}: got {st} {j}, want {want} with an error")
        check(call(port, "GET", "/v1/settings")[1] == initial, f"{what}: the settings changed")
    st, j = call(port, "PATCH", "/v1/settings", {"colour": 1}, TOKEN)
    check("colour" in j.get("error", ""), f"the error names the key: {j}")

    # A slow client is cut off; the API keeps answering meanwhile and after.
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    s.sendall(b"PATCH /v1/settings HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    check(call(port, "GET", "/v1")[0] == 200, "GET while a client stalls")
    t0 = time.monotonic()
    try:
        closed = s.recv(4096) is not None  # the server's answer or its close
    except socket.timeout:
        closed = False
    s.close()
    check(closed and time.monotonic() - t0 < 14, "the stalled client was not cut off")
    check(call(port, "GET", "/v1/settings")[1] == initial, "slow client: the settings changed")

    # A dry run reports and changes nothing; the real one is in force when it answers.
    st, j = call(port, "PATCH", "/v1/settings?dry_run=1", {"profile": "lossy"}, TOKEN)
    check(st == 200 and not j["applied"] and "pfc.priorities: [3] -> []" in j["changed"],
          f"dry run: {st} {j}")
    check(call(port, "GET", "/v1/settings")[1] == initial, "dry run: the settings changed")
    st, j = call(port, "PATCH", "/v1/settings", {"profile": "lossy", "trust": "pcp",
                                                 "mtu": 1500}, TOKEN)
    check(st == 200 and j["applied"], f"PATCH lossy: {st} {j}")
    st, j = call(port, "GET", "/v1/state")
    got = j["settings"]
    check(got["pfc"]["priorities"] == [] and got["trust"] == "pcp" and got["mtu"] == 1500
          and got["profile"] == "lossy", f"settings after PATCH: {got}")
    # Back to lossless with another map: PFC follows the RoCE DSCP's new priority.
    st, j = call(port, "PATCH", "/v1/settings", {"profile": "lossless",
                                                 "dscp_to_prio": {"26": 4}}, TOKEN)
    check(st == 200 and j["settings"]["pfc"]["priorities"] == [4], f"PATCH lossless: {st} {j}")
    # PUT: the defaults, then the document.
    st, j = call(port, "PUT", "/v1/settings", {"ecn": {"kmin_bytes": 1000, "kmax_bytes": 2000}},
                 TOKEN)
    check(st == 200 and j["settings"]["pfc"]["priorities"] == [] and
          j["settings"]["ecn"]["kmax_bytes"] == 2000, f"PUT: {st} {j}")

    check(sw.poll() is None, "the switch exited during the test")
    sw.send_signal(2)
    sw.wait(15)
    check(sw.returncode == 0, f"switch exit status {sw.returncode}:\n{output(sw)}")
    check("final port=0" in output(sw), "no final counters")


ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--keep", action="store_true")
args = ap.parse_args()
swlib.script_main(lambda: swlib.run_test("uroce-swapi-", args.keep, body))
