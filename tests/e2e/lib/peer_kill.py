"""The peer-kill fault case (issue #3 "Faults"): drives tests/e2e/peer_kill.cc.

1. server and client connect an RC QP; the client streams RDMA WRITEs;
2. once the client prints TRANSFERRING, the server is killed with SIGKILL;
3. the client checks RETRY_EXC_ERR, then WR_FLUSH_ERR for the rest, no hang, QP in ERR, the
   async event; it prints WAITING FOR NEW SERVER;
4. a new server starts; the client connects a new QP, writes and reads back 1 MiB, and both
   compare byte for byte.
"""

import os
import signal
import time

import pair as pairmod
from pair import DEVICE, GID_INDEX, Pair, fail


def run(case, link, build):
    prog = os.path.join(build, "bin", "e2e_peer_kill")
    if not os.path.exists(prog):
        return fail(f"{case.name}: {prog} is not built")
    port = pairmod.free_tcp_port()
    common = ["--port", str(port), "--device", DEVICE, "--gid-index", str(GID_INDEX),
              "--mtu", str(link.mtu)]
    p = Pair(link, build)
    deadline = time.monotonic() + case.timeout - 10
    srv = p.start(0, [prog, "server"] + common)
    if not p.wait_listen(srv, port, deadline):
        p.stop_all()
        return fail(f"{case.name}: server did not listen", p)
    strict = ["--require-async-event"] if case.kw.get("async_event") else []
    cli = p.start(1, [prog, "client", link.oob_host()] + strict + common +
                  ["--timeout-s", "40"])
    if not p.wait_output(cli, "TRANSFERRING", deadline):
        p.stop_all()
        return fail(f"{case.name}: the transfer did not start", p)
    srv.kill(signal.SIGKILL)
    srv.wait(10)
    if not p.wait_output(cli, "WAITING FOR NEW SERVER", deadline):
        p.stop_all()
        return fail(f"{case.name}: the client did not finish round 1", p)
    srv2 = p.start(0, [prog, "server"] + common, tag="2")
    for s in (cli, srv2):
        s.wait(deadline - time.monotonic())
    if cli.rc is None or srv2.rc is None:
        p.timed_out = True
        p.stop_all()
        return fail(f"{case.name}: timed out", p)
    out = cli.output()
    if cli.rc != 0 or srv2.rc != 0 or "RESULT pass" not in out:
        return fail(f"{case.name}: client rc={cli.rc} new server rc={srv2.rc}", p)
    print(f"PASS {case.name}\n{out}")
    return 0
