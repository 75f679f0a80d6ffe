#!/usr/bin/env python3
"""Several uroce processes on one netdev through uroce-hostd (tools/uroce-hostd), on the routed
topology of tests/e2e (links.RoutedLink: namespaces A and B, a Linux router R between them, uroce
bound to the veths with `netdev =`). uroce-hostd runs in A and in B; the programs find it by its
socket and become its memif clients (shared mode, docs/host-mode.md).

Cases (one per run; ctest registers each as hostd.<case>):
  perftest  two ib_write_bw pairs at once, A -> B, on two TCP ports; then `uroce show roce` in
            A shows the netdev as a whole (the daemon's segment): at least both pairs' bytes
  verify    two uroce_verify pairs at once (RDMA WRITE, every byte checked), A -> B, one over
            IPv4 and one over IPv6
  samehost  uroce_verify and rping between two processes in A: the daemon switches the frames
            to its own MAC between its clients (counter `switched`), none reach the wire
  rping     rping A -> B and rping inside A at once: CM MADs (QP1) to every client, only the
            listening process answers
  mpi       Open MPI over UCX (rc_verbs), four ranks, two per host: ping-pong across the router
            and between the two ranks of a host, allreduce, MPI_Put/Get, every byte checked
            (tests/e2e/mpi/pingpong_allreduce.c; the assertions of tests/e2e/lib/ucx_cases.py)
  sixteen   16 processes per host: 8 uroce_verify pairs A -> B and 8 B -> A at once (every byte
            checked), then the mpi case's program with 4 ranks per host; each daemon's
            counters show every one of its 16 verify processes
  forkquery a process opens, queries and closes the device in A without starting DPDK, then
            forks a child that opens it and allocates a PD (fork_after_query.py, pyverbs;
            docs/host-mode.md, "Opening without DPDK")
  reopen    a process in A opens, uses and closes the device ten times, each time after a probe
            (open, PD, close) and with two contexts open at once, a QP on each to a server in B
            and every byte checked (tests/e2e/lib/reopen.py); after the last close, with the
            process still alive, A's daemon serves no client and the process maps no client
            region
  fork      a process in A checks transfers on its QPs, forks; the child gets EIO from the
            parent's context, opens the device afresh and checks transfers of its own; the
            parent's QPs keep working (fork_transfer.cc; docs/limits.md, "fork")
  many      256 processes in A hold a QP each through the daemon (their idle CPU measured;
            `uroce show roce` lists each one's pid, command and QPN block), then exit in
            random order, some killed: the daemon reports no client, no QPN block and its
            memory back, and `uroce show roce` no client (hold_qp.cc)
  unpriv    ib_write_bw and rping A -> B as an unprivileged user made for the case, the B side
            inside user, mount and PID namespaces with the run folder bind-mounted
  portspace the host's RDMA CM port space: a second rping server in A on the port another
            listens on fails with EADDRINUSE at once (the same address at rdma_bind_addr, the
            wildcard at rdma_listen),
            the first still serves its client; an rping client to a port nobody listens on in
            B is rejected by B's daemon (REJ "invalid service ID") within 2 s
  killed    an rping pair A -> B whose server is SIGKILLed mid-run: B's daemon sends the DREQ
            for its connection, so the client in A sees the disconnect within 2 s (measured)
  hostile   while an rping pair B -> A runs, a forger in A (hostile.cc: the control protocol
            and its TX ring, no engine) sends frames as someone else (another source MAC or IP,
            the victim's QPN in a DETH, RC frames to QPs it has no connection with, a DREQ
            under the victim's comm ID) and asks for the victim's port and QPN: each frame is
            dropped and counted under its reason, only its honest frames leave, the requests
            are refused, an unknown request ends its session, and the pair's every byte is right
  restart   A's daemon stopped (SIGTERM) and started again under a uroce_verify pair A -> B
            (mixed ops, every byte checked, ACK timeout 18), a connected rping pair B -> A and
            an rping server in A that only listens (its client starts after the restart): all
            exit 0, the new daemon names A's three clients resumed, the old sent no DREQ
  squat     a process in A with a QP pair (device_fatal.cc) is stopped (SIGSTOP) while A's
            daemon restarts; another process asks for its QPN block first (hostile.cc --squat,
            resuming a block that is not its own) and is refused with one line naming the
            process the block is kept for; continued, the process resumes its block, no
            DEVICE_FATAL
  daemonkill A's daemon SIGKILLed, not started again: a process with its own QP pair
            (device_fatal.cc) gets IBV_EVENT_DEVICE_FATAL after the grace (5 s: its QPs'
            retry budget is shorter) and within 1.5 s more, its WRs flushed and EIO for new
            objects; an ib_write_bw client in A exits with an error (its QPs' retries run out
            first), its server in B ends; a listening rping server in A gets
            RDMA_CM_EVENT_DEVICE_REMOVAL and exits with an error

Each daemon's final counters must show the frames went through it. Namespaces and programs
are removed also on failure (links.py's cleanup). Needs root, DPDK, perftest, rdmacm-utils.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "lib"))
import links  # noqa: E402
import pair as pairmod  # noqa: E402
import reopen  # noqa: E402
import ucx_cases  # noqa: E402

DEVICE = pairmod.DEVICE
A, B = 0, 1


class Host:
    """Programs in the namespaces of one RoutedLink, with uroce-hostd in A and B."""

    def __init__(self, build, workers=1):
        self.build = os.path.abspath(build)
        self.workers = workers
        # On a tmpfs, as the default run dir /dev/shm (docs/counters.md: statistics on a disk
        # can stall the daemon and the engines).
        self.dir = tempfile.mkdtemp(prefix="uhostd-", dir="/dev/shm")
        self.run_dir = os.path.join(self.dir, "run")
        self.link = links.RoutedLink(mtu=1024, queues=workers)
        self.configs = [pairmod.write_config(os.path.join(self.dir, f"side{s}.toml"), self.link, s)
                        for s in (A, B)]
        self.procs = []
        self.daemons = []
        links.on_cleanup(self.kill_all)

    def env(self, side):
        e = dict(os.environ)
        e["LD_LIBRARY_PATH"] = os.path.join(self.build, "lib")
        e["UROCE_CONFIG"] = self.configs[side]
        e["UROCE_RUN_DIR"] = self.run_dir
        return e

    def start(self, side, label, argv, env=None, stdin=None):
        s = pairmod.Side(label, self.link.wrap(side) + ["stdbuf", "-oL", "-eL"] + argv,
                         {**self.env(side), **(env or {})}, os.path.join(self.dir, f"{label}.out"),
                         stdin)
        self.procs.append(s)
        return s

    def start_daemons(self, deadline):
        for side in (A, B):
            self.daemons.append(self.start_daemon(side, f"hostd{'AB'[side]}", deadline))

    def start_daemon(self, side, label, deadline):
        """uroce-hostd in side, once it serves."""
        d = self.start(side, label, [os.path.join(self.build, "bin", "uroce-hostd"), "--netdev",
                                     self.link.ifs[side], "--run-dir", self.run_dir, "--workers",
                                     str(self.workers)])
        while "serving" not in d.output():
            if d.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"uroce-hostd in {'AB'[side]} did not start")
            time.sleep(0.01)  # polling a condition with a deadline
        return d

    def stop_daemons(self):
        """SIGTERM: each prints its final counters; returns their outputs."""
        outs = []
        for d in self.daemons:
            d.kill(signal.SIGTERM)
            if d.wait(15) is None:
                d.kill()
            outs.append(d.output())
        return outs

    def wait_listen(self, side, listen, proc, deadline):
        """Waits until proc listens (listen: tcp(port) or cm(port, file)); False if it exited or
        the deadline passed."""
        kind, port, path = listen
        while time.monotonic() < deadline:
            if kind == "tcp" and pairmod.listening(self.link, side, port):
                return True
            if kind == "cm" and pairmod.cm_listening(path, port):
                return True
            if proc.poll() is not None:
                return False
            time.sleep(0.05)  # polling a condition with a deadline
        return False

    def kill_all(self):
        for p in self.procs:
            p.kill()

    def report(self):
        lines = [f"==== run dir {self.dir}"]
        for s in self.procs:
            lines.append(f"---- {s.label} rc={s.rc}: {' '.join(s.argv)}")
            lines.append(s.output().rstrip())
        return "\n".join(lines)

    def close(self):
        self.kill_all()
        self.link.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def slot_counters(out):
    """{slot: {counter: value}} from a daemon's "final slot=..." lines."""
    res = {}
    for m in re.finditer(r"(?m)^final slot=(\d+) (.*)$", out):
        res[int(m.group(1))] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return res


def tcp(port):
    """A server that listens on TCP port (perftest, uroce_verify): polled with `ss`."""
    return ("tcp", port, None)


def cm(h, label, port):
    """A server that listens on the RDMA CM port (rping): uroce's librdmacm notes its
    rdma_listen in $UROCE_RDMACM_LISTEN_FILE, since there is no socket to poll."""
    return ("cm", port, os.path.join(h.dir, f"{label}.listen"))


def run_pairs(h, pairs, timeout):
    """pairs: (label, server side, server argv, client side, client argv + [addr], listen:
    tcp(..) or cm(..)). Starts each server and waits until it listens, then every client; all
    must exit 0. Returns a problem or None."""
    deadline = time.monotonic() + timeout
    servers, clients = [], []
    for label, sside, sargv, _, _, listen in pairs:
        env = {"UROCE_RDMACM_LISTEN_FILE": listen[2]} if listen[0] == "cm" else None
        s = h.start(sside, f"{label}-server", sargv, env)
        servers.append(s)
        if not h.wait_listen(sside, listen, s, deadline):
            return f"{label}: the server did not listen on {listen[0]} port {listen[1]}"
    for label, _, _, cside, cargv, _ in pairs:
        clients.append(h.start(cside, f"{label}-client", cargv))
    for p in clients + servers:
        if p.wait(deadline - time.monotonic()) is None:
            return f"{p.label}: timed out"
        if p.rc != 0:
            return f"{p.label}: exit code {p.rc}"
    return None


def perftest_ok(out):
    rows = [ln.split() for ln in out.splitlines() if re.match(r"^\s*\d+\s+\d+\s+[\d.]+", ln)]
    return any(float(r[4]) > 0 for r in rows if len(r) >= 5)


PERFTEST_ITERS, PERFTEST_SIZE = 2000, 65536  # ib_write_bw's default size


def nic_view(h, side):
    """The daemon's device in `uroce show roce --json` of side: (tx bytes, rx bytes) summed over
    the priorities, or a problem string."""
    argv = h.link.wrap(side) + [os.path.join(h.build, "bin", "uroce"), "show", "roce", "--json"]
    out = subprocess.run(argv, env=h.env(side), capture_output=True, text=True,
                                 timeout=30)
    if out.returncode != 0:
        return f"uroce show roce: exit code {out.returncode}: {out.stderr.strip()}"
    name = f"hostd-{h.link.ifs[side]}"
    devs = [d for d in json.loads(out.stdout)["devices"] if d["device"] == name]
    if len(devs) != 1:
        return f"uroce show roce lists {len(devs)} devices {name}: {out.stdout[:400]}"
    prios = devs[0]["priorities"]
    return (sum(p["tx_prio_bytes"] for p in prios), sum(p["rx_prio_bytes"] for p in prios))


def hostd_view(h, side):
    """`uroce show roce --json` of side: its daemon's entry under "hostd" (the worker and the
    clients, stats/hostd_status.h), or a problem string."""
    argv = h.link.wrap(side) + [os.path.join(h.build, "bin", "uroce"), "show", "roce", "--json"]
    out = subprocess.run(argv, env=h.env(side), capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        return f"uroce show roce: exit code {out.returncode}: {out.stderr.strip()}"
    daemons = [d for d in json.loads(out.stdout)["hostd"] if d["netdev"] == h.link.ifs[side]]
    if len(daemons) != 1:
        return f"uroce show roce lists {len(daemons)} daemons of {h.link.ifs[side]}"
    return daemons[0]


def wait_view(h, side, cond, what, timeout=10):
    """hostd_view(h, side) once cond(view) holds (the daemon rewrites its status every 100 ms),
    or a problem string."""
    deadline = time.monotonic() + timeout
    while True:
        view = hostd_view(h, side)
        if isinstance(view, dict) and cond(view):
            return view
        if time.monotonic() > deadline:
            return f"uroce show roce: {what} not shown: {str(view)[:600]}"
        time.sleep(0.1)  # polling a condition with a deadline


def case_perftest(h):
    ports = [pairmod.free_tcp_port(), pairmod.free_tcp_port() + 1]
    pairs = []
    for i, port in enumerate(ports):
        base = ["ib_write_bw", "-d", DEVICE, "-i", "1", "-x", str(links.RoutedLink.GID_V4),
                "-p", str(port), "-n", str(PERFTEST_ITERS), "-s", str(PERFTEST_SIZE)]
        pairs.append((f"bw{i}", B, base, A, base + [h.link.addr[B]], tcp(port)))
    problem = run_pairs(h, pairs, 150)
    if problem:
        return problem
    for p in h.procs:
        if p.label.endswith("-client") and not perftest_ok(p.output()):
            return f"{p.label}: no result row"
    # The clients are gone; the netdev's figures stay with its daemon.
    payload = len(ports) * PERFTEST_ITERS * PERFTEST_SIZE
    for side, direction in ((A, 0), (B, 1)):
        view = nic_view(h, side)
        if isinstance(view, str):
            return view
        print(f"uroce show roce, hostd-{h.link.ifs[side]}: tx {view[0]} rx {view[1]} bytes")
        if view[direction] < payload:
            return (f"the netdev of {'AB'[side]} shows {view} bytes (tx, rx), less than the "
                    f"{payload} payload bytes both pairs moved")
    return None


def verify_argv(h, port, v6=False, iters=50):
    gid = links.RoutedLink.GID_V6 if v6 else links.RoutedLink.GID_V4
    return [os.path.join(h.build, "bin", "uroce_verify"), "-d", DEVICE, "-g", str(gid), "-p",
            str(port), "-o", "write", "-s", "65536", "-n", str(iters)]


def case_verify(h):
    """Pair 0 over IPv4, pair 1 over IPv6 (both A -> B, at once)."""
    pairs = []
    for i in range(2):
        port = pairmod.free_tcp_port() + i
        pairs.append((f"verify{i}", B, verify_argv(h, port, v6=i == 1), A,
                      verify_argv(h, port, v6=i == 1) + [h.link.addr[B]], tcp(port)))
    return run_pairs(h, pairs, 150)


def rping_argv(addr, port, client, count=20):
    return ["rping", "-c" if client else "-s", "-a", addr, "-p", str(port), "-V", "-C", str(count)]


def cm_server(h, side, label, port, argv, deadline):
    """Starts an RDMA CM server (argv) in `side` as `<label>-server` and waits until it listens
    on port; the Side, or None when it did not by the deadline."""
    listen = cm(h, label, port)
    s = h.start(side, f"{label}-server", argv, {"UROCE_RDMACM_LISTEN_FILE": listen[2]})
    return s if h.wait_listen(side, listen, s, deadline) else None


def case_samehost(h):
    port = pairmod.free_tcp_port()
    rport = pairmod.free_tcp_port() + 1
    a = h.link.addr[A]
    problem = run_pairs(h, [("verify", A, verify_argv(h, port), A, verify_argv(h, port) + [a],
                             tcp(port))], 120)
    if problem:
        return problem
    return run_pairs(h, [("rping", A, rping_argv(a, rport, False), A, rping_argv(a, rport, True),
                          cm(h, "rping", rport))], 60)


def case_rping(h):
    p1, p2 = pairmod.free_tcp_port(), pairmod.free_tcp_port() + 1
    return run_pairs(h, [
        ("rpingAB", B, rping_argv(h.link.addr[B], p1, False), A,
         rping_argv(h.link.addr[B], p1, True), cm(h, "rpingAB", p1)),
        ("rpingAA", A, rping_argv(h.link.addr[A], p2, False), A,
         rping_argv(h.link.addr[A], p2, True), cm(h, "rpingAA", p2)),
    ], 90)


def cm_counters(out):
    """The daemon's final "cm" line: {counter: value}."""
    m = re.search(r"(?m)^final cm (.*)$", out)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))} if m else {}


def wait_exit(p, deadline):
    """Waits for p to exit (by the deadline); its exit code or None."""
    return p.wait(deadline - time.monotonic())


def case_portspace(h):
    a, b = h.link.addr[A], h.link.addr[B]
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + 60
    first = cm_server(h, A, "first", port, rping_argv(a, port, False, 5), deadline)
    if not first:
        return "the first rping server did not listen"
    # The same address is refused at its bind, the wildcard (no device yet) at its listen.
    for label, addr, call in (("second", a, "rdma_bind_addr"), ("wildcard", "0.0.0.0", "rdma_listen")):
        t0 = time.monotonic()
        p = h.start(A, f"{label}-server", rping_argv(addr, port, False))
        if wait_exit(p, t0 + 10) is None:
            return f"{label}: a second listener on port {port} was not refused within 10 s"
        if p.rc == 0 or f"{call}: Address already in use" not in p.output():
            return f"{label}: rc {p.rc}, no EADDRINUSE: {p.output()[-300:]}"
        print(f"{label} listener refused after {time.monotonic() - t0:.3f} s")
    client = h.start(A, "first-client", rping_argv(a, port, True, 5))
    for p in (client, first):
        if wait_exit(p, deadline) is None or p.rc != 0:
            return f"{p.label}: exit code {p.rc} (the first listener must still serve)"
    # Nobody listens on this port in B: its daemon answers the REQ with a REJ.
    t0 = time.monotonic()
    lone = h.start(A, "unlistened-client", rping_argv(b, port + 1, True))
    if wait_exit(lone, t0 + 10) is None:
        return "a REQ to a port nobody listens on was not rejected within 10 s"
    took = time.monotonic() - t0
    print(f"REQ to a port nobody listens on: rping exited {lone.rc} after {took:.3f} s")
    if lone.rc == 0 or "REJECTED" not in lone.output() or took > 2.0:
        return f"unlistened port: rc {lone.rc} after {took:.3f} s: {lone.output()[-300:]}"
    return None


HOSTILE = {}  # the forger's client number and frame count, for check_daemons
HOSTILE_COUNT = 10


def netdev_mac(h, side):
    out = subprocess.run(h.link.wrap(side) + ["ip", "-j", "link", "show", "dev", h.link.ifs[side]],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["address"]


def case_hostile(h):
    a, b = h.link.addr[A], h.link.addr[B]
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + 90
    server = cm_server(h, A, "victim", port, rping_argv(a, port, False, 1000), deadline)
    if not server:
        return "the victim's rping server did not listen"
    slots = re.findall(r"(?m)^client slot=(\d+) pid=\d+ uid", h.daemons[A].output())
    if len(slots) != 1:
        return f"A's daemon lists {len(slots)} clients, not the victim alone"
    client = h.start(B, "victim-client", rping_argv(a, port, True, 1000))
    forger = h.start(A, "hostile", [os.path.join(h.build, "bin", "hostd_hostile"),
                                    h.link.ifs[A], netdev_mac(h, A), a, b, slots[0], str(port),
                                    str(HOSTILE_COUNT)])
    for p in (forger, client, server):
        if wait_exit(p, deadline) is None or p.rc != 0:
            return f"{p.label}: exit code {p.rc}: {p.output()[-400:]}"
    m = re.search(r"(?m)^client (\d+), victim", forger.output())
    HOSTILE["slot"] = int(m.group(1))
    print(forger.output().strip())
    return None


def case_killed(h):
    b = h.link.addr[B]
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + 60
    server = cm_server(h, B, "killed", port, ["rping", "-s", "-a", b, "-p", str(port)], deadline)
    if not server:
        return "the rping server did not listen"
    client = h.start(A, "killed-client", ["rping", "-c", "-a", b, "-p", str(port), "-v"])
    while client.output().count("ping data") < 50:
        if client.poll() is not None or time.monotonic() > deadline:
            return f"the pair did not ping: rc {client.rc}"
        time.sleep(0.02)  # polling a condition with a deadline
    t0 = time.monotonic()
    server.kill(signal.SIGKILL)
    if wait_exit(client, t0 + 30) is None:
        return "the client did not see the disconnect within 30 s"
    took = time.monotonic() - t0
    print(f"server SIGKILLed: the client exited {client.rc} after {took:.3f} s")
    if "DISCONNECT" not in client.output() or took > 2.0:
        return f"no disconnect within 2 s ({took:.3f} s): {client.output()[-300:]}"
    return None


def wait_for(what, cond, procs, deadline):
    """Polls cond() until true; a problem when one of procs exited or the deadline passed."""
    while not cond():
        for p in procs:
            if p.poll() is not None:
                return f"{what}: {p.label} exited {p.rc}: {p.output()[-400:]}"
        if time.monotonic() > deadline:
            return f"{what}: not by the deadline"
        time.sleep(0.02)  # polling a condition with a deadline
    return None


def net_tx_grows(h, side, frames):
    """A condition: side's daemon sent `frames` more frames to the wire than when it was made."""
    start = daemon_stats(h, side)["net_tx"]
    return lambda: daemon_stats(h, side)["net_tx"] >= start + frames


RESTART_ACK_TIMEOUT = 18  # 1.07 s: a retry budget of 8.6 s, longer than a daemon's restart


def case_restart(h):
    """A's daemon is stopped (SIGTERM) and started again while A's clients hold QPs: a
    uroce_verify pair A -> B (WRITE, READ back, atomics and SENDs, every byte checked, QPs at
    ACK timeout 18), an rping pair B -> A (RDMA CM: the server's connection, registered again
    with the new daemon, and its comm IDs steered by its block) and an rping server in A that
    only listens (its port, claimed again) all go on: every program exits 0, the new daemon
    names each of A's clients as resumed, the old one sent no DREQ for them."""
    a = h.link.addr[A]
    deadline = time.monotonic() + 150
    port = pairmod.free_tcp_port()
    verify = [os.path.join(h.build, "bin", "uroce_verify"), "-d", DEVICE, "-g",
              str(links.RoutedLink.GID_V4), "-p", str(port), "-o", "mixed", "-s", "65536", "-D",
              "10", "-t", "30", "--ack-timeout", str(RESTART_ACK_TIMEOUT)]
    vserver = h.start(B, "verify-server", verify)
    if not h.wait_listen(B, tcp(port), vserver, deadline):
        return "the uroce_verify server did not listen"
    vclient = h.start(A, "verify-client", verify + [h.link.addr[B]])
    p1, p2 = pairmod.free_tcp_port() + 1, pairmod.free_tcp_port() + 2
    # rping's QPs get the RDMA CM's ACK timeout (17 on RoCE): a 4.3 s retry budget.
    rserver = cm_server(h, A, "rping1", p1, rping_argv(a, p1, False, 3000), deadline)
    lserver = cm_server(h, A, "rping2", p2, rping_argv(a, p2, False, 200), deadline)
    if not rserver or not lserver:
        return "an rping server in A did not listen"
    rclient = h.start(B, "rping1-client", rping_argv(a, p1, True, 3000) + ["-v"])
    running = [vclient, vserver, rserver, rclient, lserver]
    problem = wait_for("the transfers", lambda: rclient.output().count("ping data") >= 100,
                       running, deadline) or wait_for(
        "uroce_verify's traffic", net_tx_grows(h, A, 2000), running, deadline)
    if problem:
        return problem
    old = h.daemons[A]
    t0 = time.monotonic()
    old.kill(signal.SIGTERM)
    if old.wait(15) is None:
        return "A's daemon did not stop on SIGTERM"
    stopped = time.monotonic()
    h.daemons[A] = h.start_daemon(A, "hostdA-restarted", deadline)
    served = time.monotonic()
    print(f"A's daemon restarted: stopped {stopped - t0:.3f} s after SIGTERM, the next one "
          f"served {served - t0:.3f} s after it")
    if cm_counters(old.output()).get("dreq_for_dead", 0):
        return f"the stopping daemon sent DREQs for its clients: {old.output()[-400:]}"
    lclient = h.start(B, "rping2-client", rping_argv(a, p2, True, 200))
    for p in running + [lclient]:
        if wait_exit(p, deadline) is None:
            return f"{p.label}: did not finish"
        if p.rc != 0:
            return f"{p.label}: exit code {p.rc}: {p.output()[-400:]}"
    resumed = re.findall(r"(?m)^client slot=\d+ pid=(\d+) .* resumed$", h.daemons[A].output())
    want = {str(p.proc.pid) for p in (vclient, rserver, lserver)}  # ip netns exec execs
    if set(resumed) != want:
        return f"the new daemon names pids {sorted(resumed)} resumed, want {sorted(want)}: " + \
            h.daemons[A].output()[-600:]
    for p in (vclient, rserver, lserver):
        m = re.search(r"uroce-hostd is back after ([\d.]+) s", p.output())
        if not m:
            return f"{p.label}: no line saying its daemon came back: {p.output()[-400:]}"
        print(f"{p.label}: back after {m.group(1)} s")
    return None


def case_squat(h):
    """While a client is stopped across a daemon restart, another process asks for its QPN
    block (hostd_hostile --squat): refused, the block is reserved for the process that held
    it; the stopped client, continued, resumes its block with the new daemon and no
    DEVICE_FATAL."""
    deadline = time.monotonic() + 90
    fatal = h.start(A, "device-fatal", [os.path.join(h.build, "bin", "hostd_device_fatal"),
                                        DEVICE, str(links.RoutedLink.GID_V4)])
    problem = wait_for("device_fatal", lambda: "ready" in fatal.output(), [fatal], deadline)
    if problem:
        return problem
    m = re.search(rf"(?m)^client slot=(\d+) pid={fatal.proc.pid} ", h.daemons[A].output())
    if not m:
        return f"A's daemon does not list device_fatal (pid {fatal.proc.pid})"
    block = m.group(1)
    fatal.kill(signal.SIGSTOP)
    old = h.daemons[A]
    old.kill(signal.SIGTERM)
    if old.wait(15) is None:
        return "A's daemon did not stop on SIGTERM"
    h.daemons[A] = h.start_daemon(A, "hostdA-restarted", deadline)
    squatter = h.start(A, "squatter", [os.path.join(h.build, "bin", "hostd_hostile"), "--squat",
                                       h.link.ifs[A], block], stdin=subprocess.PIPE)
    if wait_exit(squatter, deadline) is None:
        return "the squatter did not end"
    want = f"QPN block {block} is held by another process (pid {fatal.proc.pid})"
    if squatter.rc == 0 or want not in squatter.output():
        return f"the squatter was not refused ('{want}'): rc {squatter.rc}: {squatter.output()}"
    fatal.kill(signal.SIGCONT)
    resumed = re.compile(rf"(?m)^client slot={block} pid={fatal.proc.pid} .* resumed$")
    problem = wait_for("device_fatal's resume", lambda: resumed.search(h.daemons[A].output()),
                       [fatal], deadline)
    if problem:
        return problem
    if "fatal_at=" in fatal.output() or "the device is gone" in fatal.output():
        return f"device_fatal lost its device: {fatal.output()[-600:]}"
    print(f"the squatter was refused: {want}; device_fatal resumed block {block}")
    fatal.kill()
    return None


DAEMONKILL_MARGIN = 1.5  # seconds past the grace a DEVICE_FATAL may take on a busy machine
GRACE_MIN = 5.0  # Port::kServiceGraceMin (lib/common/port.h)


def case_daemonkill(h):
    """A's daemon is SIGKILLed and not started again: a process with a QP pair of its own
    (device_fatal.cc) gets IBV_EVENT_DEVICE_FATAL after the grace (GRACE_MIN: its QPs' retry
    budget is shorter) and within a margin, its receives flushed, EIO for new objects and
    queries; an ib_write_bw client in A exits with an error by then, its server in B ends too;
    a listening rping server in A gets RDMA_CM_EVENT_DEVICE_REMOVAL by then and exits with an
    error."""
    deadline = time.monotonic() + 90
    fatal = h.start(A, "device-fatal", [os.path.join(h.build, "bin", "hostd_device_fatal"),
                                        DEVICE, str(links.RoutedLink.GID_V4)])
    lport = pairmod.free_tcp_port() + 1
    listener = cm_server(h, A, "listener", lport, rping_argv(h.link.addr[A], lport, False),
                         deadline)
    if not listener:
        return "the rping server in A did not listen"
    port = pairmod.free_tcp_port()
    bw = ["ib_write_bw", "-d", DEVICE, "-i", "1", "-x", str(links.RoutedLink.GID_V4), "-p",
          str(port), "-D", "60", "-s", "65536"]
    server = h.start(B, "bw-server", bw)
    if not h.wait_listen(B, tcp(port), server, deadline):
        return "ib_write_bw's server did not listen"
    client = h.start(A, "bw-client", bw + [h.link.addr[B]])
    running = [fatal, server, client, listener]
    problem = wait_for("device_fatal", lambda: "ready" in fatal.output(), running, deadline) or \
        wait_for("ib_write_bw's traffic", net_tx_grows(h, A, 2000), running, deadline)
    if problem:
        return problem
    grace = GRACE_MIN
    t0 = time.monotonic()
    h.daemons[A].kill(signal.SIGKILL)
    for p in (fatal, client, listener):
        if wait_exit(p, t0 + grace + DAEMONKILL_MARGIN + 5) is None:
            return f"{p.label}: still running {grace + DAEMONKILL_MARGIN + 5:.1f} s after the kill"
    m = re.search(r"(?m)^fatal_at=([\d.]+)$", fatal.output())
    if fatal.rc != 0 or not m or "ok:" not in fatal.output():
        return f"device_fatal: exit code {fatal.rc}: {fatal.output()[-600:]}"
    took = float(m.group(1)) - t0
    ended = time.monotonic() - t0
    print(f"daemon SIGKILLed: IBV_EVENT_DEVICE_FATAL after {took:.3f} s; ib_write_bw in A exited "
          f"{client.rc} by {ended:.3f} s")
    print(fatal.output().strip().splitlines()[-1])
    if took < grace * 0.9 or took > grace + DAEMONKILL_MARGIN:
        return f"DEVICE_FATAL {took:.3f} s after the kill, want {grace} s + up to {DAEMONKILL_MARGIN}"
    if client.rc == 0:
        return f"ib_write_bw in A exited 0 without its daemon: {client.output()[-400:]}"
    if "the device is gone" not in fatal.output():
        return "device_fatal: no line saying the device is gone"
    if listener.rc == 0 or "device removal" not in listener.output():
        return f"the rping server in A: exit code {listener.rc}: {listener.output()[-300:]}"
    print(f"the listening rping server exited {listener.rc} on RDMA_CM_EVENT_DEVICE_REMOVAL")
    if wait_exit(server, time.monotonic() + 30) is None:
        return "ib_write_bw's server in B did not end after its client"
    return None


MPI_ITERS = 50


def case_mpi(h):
    """mpirun in A starts ranks 0 and 1 there and, through the rsh agent, an orted in B that
    starts ranks 2 and 3; every rank is a client of its host's daemon."""
    return mpi_job(h, [A, A, B, B])


def mpi_job(h, sides):
    """An Open MPI job whose rank r runs on sides[r] (the first half in A, the second in B)."""
    prog = os.path.join(h.build, "bin", "e2e_mpi_pingpong_allreduce")
    if not os.path.exists(prog):
        return f"{prog} is not built (needs libopenmpi-dev: scripts/install-deps.sh)"
    hosts = (ucx_cases.rsh_agent(os.path.join(h.dir, "rsh-agent"), h.link),
             [h.link.roce_addr(s) for s in sides])
    argv = ucx_cases.mpirun_argv(h.build, prog, [h.configs[s] for s in sides], "rc",
                                 ["-n", str(MPI_ITERS), "-r"], hosts,
                                 env={"UROCE_RUN_DIR": h.run_dir})
    m = h.start(A, "mpirun", argv)
    if m.wait(300) is None:
        print(ucx_cases.stacks(), file=sys.stderr)  # which process waits where
        return "mpirun timed out"
    if m.rc != 0:
        return f"mpirun: exit code {m.rc}"
    out = m.output()
    problem = ucx_cases.check_mpi(out, nranks=len(sides))
    if problem:
        return problem
    if "ok pingpong neighbour size 1048576 " not in ucx_cases.by_rank(out)[0]:
        return "rank 0 did not finish the ping-pong with the rank on its own host"
    return None


SIXTEEN_PAIRS = 8  # each way


def case_sixteen(h):
    """16 processes per host: 8 uroce_verify pairs A -> B and 8 B -> A at once (a quarter of
    them over IPv6), every byte checked; then an Open MPI job with 4 ranks per host."""
    pairs = []
    base = pairmod.free_tcp_port()
    for i in range(2 * SIXTEEN_PAIRS):
        server, client = (B, A) if i % 2 == 0 else (A, B)
        argv = verify_argv(h, base + i, v6=i % 4 >= 2, iters=20)
        pairs.append((f"verify{i}", server, argv, client, argv + [h.link.addr[server]],
                      tcp(base + i)))
    problem = run_pairs(h, pairs, 300)
    return problem or mpi_job(h, [A] * 4 + [B] * 4)


def case_forkquery(h):
    p = h.start(A, "forkquery", ["/usr/bin/python3", os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fork_after_query.py"), DEVICE,
        h.link.addr[A]])
    if p.wait(60) is None:
        return "fork_after_query.py timed out"
    if p.rc != 0 or "ok " not in p.output():
        return f"fork_after_query.py: exit code {p.rc}"
    return None


def case_fork(h):
    prog = os.path.join(h.build, "bin", "hostd_fork_transfer")
    p = h.start(A, "fork", [prog, DEVICE, h.link.addr[A]])
    if p.wait(120) is None:
        return "fork_transfer timed out"
    if p.rc != 0 or "ok:" not in p.output():
        return f"fork_transfer: exit code {p.rc}"
    return None


MANY = 256


def daemon_stats(h, side, timeout=20):
    """SIGUSR1 to the daemon of side; its next "stats" line as {key: int}."""
    d = h.daemons[side]
    head = re.compile(r"(?m)^stats net_rx=.*$")
    before = len(head.findall(d.output()))
    d.kill(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = head.findall(d.output())
        if len(lines) > before:
            return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", lines[-1])}
        time.sleep(0.05)  # polling a condition with a deadline
    raise RuntimeError("the daemon printed no stats line")


def cpu_ns(pids):
    """CPU time of the processes' threads (schedstat, ns), those still there."""
    total = 0
    for pid in pids:
        try:
            for t in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                    total += int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def case_many(h):
    """MANY processes open the device through A's daemon and create a QP each, held until all
    are up; their idle CPU is measured; then they exit in random order (some killed): the
    daemon must be back to no client, no QPN block and about its memory at the start."""
    import random
    start = daemon_stats(h, A)
    prog = os.path.join(h.build, "bin", "hostd_hold_qp")
    procs = []
    links.on_cleanup(lambda: [p.kill() for p in procs if p.poll() is None])
    for i in range(MANY):
        out = open(os.path.join(h.dir, f"hold{i}.out"), "w+")
        procs.append(subprocess.Popen(h.link.wrap(A) + [prog, DEVICE], env=h.env(A),
                                      stdin=subprocess.PIPE, stdout=out,
                                      stderr=subprocess.STDOUT))
    deadline = time.monotonic() + 180
    qpns = set()
    for i, p in enumerate(procs):
        path = os.path.join(h.dir, f"hold{i}.out")
        while True:
            with open(path) as f:
                text = f.read()
            if text.startswith("up "):
                qpns.add(text.split()[1])
                break
            if p.poll() is not None or time.monotonic() > deadline:
                return f"hold_qp {i} did not come up (rc {p.poll()}): {text.strip()[:300]}"
            time.sleep(0.02)  # polling a condition with a deadline
    if len(qpns) != MANY:
        return f"{MANY} processes hold only {len(qpns)} distinct QPNs"
    full = daemon_stats(h, A)
    if full["clients"] != MANY or full["qpn_blocks"] != MANY:
        return f"with {MANY} processes up the daemon reports {full}"
    # `uroce show roce` lists every one of them: pid, command, its QPN block.
    want = {p.pid for p in procs}
    view = wait_view(h, A, lambda v: {c["pid"] for c in v["clients"]
                                      if c["command"] == "hostd_hold_qp"} == want,
                     f"the {MANY} hostd_hold_qp clients")
    if isinstance(view, str):
        return view
    if len({c["slot"] for c in view["clients"]}) != MANY or len(view["workers"]) != h.workers:
        return f"uroce show roce: slots or workers wrong: {str(view)[:600]}"
    # Idle: each progress thread blocks on its doorbell after kBlockIdle; measure 5 s.
    time.sleep(1.0)
    pids = [p.pid for p in procs]
    t0, c0 = time.monotonic(), cpu_ns(pids)
    time.sleep(5.0)
    t1, c1 = time.monotonic(), cpu_ns(pids)
    idle_pct = 100.0 * (c1 - c0) / 1e9 / (t1 - t0)
    print(f"{MANY} idle clients: {idle_pct:.2f} % of a core in total; daemon with them: "
          f"{full['rss_kb']} kB RSS (at start {start['rss_kb']} kB)")
    order = list(range(MANY))
    random.shuffle(order)
    for n, i in enumerate(order):
        if n % 8 == 0:
            procs[i].kill()  # killed: the socket closes all the same
        else:
            procs[i].stdin.close()
    for p in procs:
        if p.wait(60) is None:
            return "a hold_qp process did not exit"
    deadline = time.monotonic() + 20
    while True:
        end = daemon_stats(h, A)
        if end["clients"] == 0 and end["qpn_blocks"] == 0:
            break
        if time.monotonic() > deadline:
            return f"after every process exited the daemon reports {end}"
        time.sleep(0.1)  # polling a condition with a deadline
    view = wait_view(h, A, lambda v: not v["clients"], "no client after they exited")
    if isinstance(view, str):
        return view
    print(f"after they exited: {end['clients']} clients, {end['qpn_blocks']} QPN blocks, "
          f"{end['rss_kb']} kB RSS")
    if end["rss_kb"] > start["rss_kb"] + 16 * 1024:
        return f"the daemon kept its memory: {start['rss_kb']} kB at start, {end['rss_kb']} kB now"
    if idle_pct > 1.0:
        return f"{MANY} idle clients used {idle_pct:.1f} % of a core"
    return None


def unpriv_user():
    """A system user made for the case (removed by the cleanup): (name, uid, gid)."""
    import pwd
    name = f"uroce-e2e-{os.getpid()}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                    name], check=True, capture_output=True)
    links.on_cleanup(lambda: subprocess.run(["userdel", name], capture_output=True))
    pw = pwd.getpwnam(name)
    return name, pw.pw_uid, pw.pw_gid


def case_unpriv(h):
    """ib_write_bw and rping A -> B through the daemons: in A as an unprivileged user, in B as
    that user inside user, mount and PID namespaces (root mapped to it) with the run folder
    bind-mounted where $UROCE_RUN_DIR points."""
    _, uid, gid = unpriv_user()
    for d in (h.dir, h.run_dir):
        os.chmod(d, 0o1777)
    for c in h.configs:
        os.chmod(c, 0o644)
    inner = os.path.join(h.dir, "inner-run")
    os.mkdir(inner)
    os.chmod(inner, 0o1777)
    drop = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]

    def in_userns(argv):
        cmd = " ".join(["mount", "--bind", h.run_dir, inner, "&&", "exec"] + argv)
        return drop + ["unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork",
                       "env", f"UROCE_RUN_DIR={inner}", "sh", "-c", cmd]

    port = pairmod.free_tcp_port()
    bw = ["ib_write_bw", "-d", DEVICE, "-i", "1", "-x", str(links.RoutedLink.GID_V4), "-p",
          str(port), "-n", "1000", "-s", "65536"]
    problem = run_pairs(h, [("bw", B, in_userns(bw), A, drop + bw + [h.link.addr[B]],
                             tcp(port))], 150)
    if problem:
        return problem
    if not perftest_ok(next(p for p in h.procs if p.label == "bw-client").output()):
        return "bw-client: no result row"
    rport = pairmod.free_tcp_port() + 1
    problem = run_pairs(h, [("rping", B, in_userns(rping_argv(h.link.addr[B], rport, False)), A,
                             drop + rping_argv(h.link.addr[B], rport, True),
                             cm(h, "rping", rport))], 90)
    if problem:
        return problem
    # Each daemon saw the user's uid (SO_PEERCRED; in B mapped back from the namespace's root).
    for side in (A, B):
        n = len(re.findall(rf"(?m)^client slot=\d+ pid=\d+ uid={uid} ", h.daemons[side].output()))
        if n < 2:
            return f"the daemon of {'AB'[side]} saw {n} clients of uid {uid}, want 2"
    return None


def case_reopen(h):
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + 90
    gid = links.RoutedLink.GID_V4
    s = h.start(B, "reopen-server", reopen.server_argv(h.build, port, gid))
    if not h.wait_listen(B, tcp(port), s, deadline):
        return "the server did not listen"
    c = reopen.start_client("reopen-client", h.link.wrap(A) + reopen.client_argv(
        h.build, port, gid, h.link.addr[B]), h.env(A), os.path.join(h.dir, "reopen-client.out"))
    h.procs.append(c)
    if not reopen.wait_closed(c, deadline):
        return "the client did not finish its cycles"
    # The process lives on with no context open: it holds nothing of the daemon's.
    problem = reopen.check_output(c.output())
    if not problem:
        st = daemon_stats(h, A)
        if st["clients"] or st["qpn_blocks"]:
            problem = f"A's daemon still serves a client after the last close: {st}"
    rc = reopen.release(c, deadline - time.monotonic())
    if s.wait(deadline - time.monotonic()) is None or rc is None:
        return "timed out"
    return problem or (f"exit codes client={rc} server={s.rc}" if rc or s.rc else None)


CASES = {"perftest": case_perftest, "verify": case_verify, "samehost": case_samehost,
         "rping": case_rping, "mpi": case_mpi, "forkquery": case_forkquery, "fork": case_fork,
         "many": case_many, "unpriv": case_unpriv, "reopen": case_reopen,
         "portspace": case_portspace, "killed": case_killed, "hostile": case_hostile,
         "restart": case_restart, "daemonkill": case_daemonkill, "squat": case_squat,
         "sixteen": case_sixteen}


def worker_counters(out):
    """{worker: {counter: value}} from a daemon's "final worker=..." lines (several workers)."""
    res = {}
    for m in re.finditer(r"^final worker=(\d+) (.*)$", out, re.M):
        res[int(m.group(1))] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
    return res


def check_workers(case, outs, workers):
    """With several workers: each daemon ran them all, and where each host has a client per
    worker sending across the router, every worker sent frames of its own clients (a new client
    goes to the worker with the fewest)."""
    for side, out in zip("AB", outs):
        if not re.search(rf"^final .*workers={workers}$", out, re.M):
            return f"{side}'s daemon did not run {workers} workers: {out[-400:]}"
        per = worker_counters(out)
        if sorted(per) != list(range(workers)):
            return f"{side}'s daemon's per-worker lines: {per}"
        if case in ("verify", "perftest", "mpi", "sixteen"):
            idle = [k for k, c in per.items() if c.get("net_tx", 0) == 0]
            if idle:
                return f"{side}'s workers {idle} sent no frame: {per}"
    return None


def check_daemons(case, outs, workers=1):
    """The frames went through the daemons: A's clients sent to the wire (cross-host cases) or
    were switched (same host), B's received."""
    if workers > 1:
        problem = check_workers(case, outs, workers)
        if problem:
            return problem
    a, b = slot_counters(outs[0]), slot_counters(outs[1])
    if case in ("forkquery", "many"):  # clients that sent nothing
        return None
    if case in ("daemonkill", "squat"):  # no traffic through the daemons' wire
        return None
    if case == "portspace":
        if cm_counters(outs[1]).get("rej_no_listener", 0) < 1:
            return f"B's daemon sent no REJ for the port nobody listens on: {outs[1][-400:]}"
        return None
    if case == "hostile":
        n = HOSTILE_COUNT
        got = a.get(HOSTILE["slot"], {})
        want = {"refused_src_mac": n, "refused_src_addr": n, "refused_src_qpn": n,
                "refused_not_connected": 2 * n, "cm_refused": n, "to_wire": n, "switched": 0}
        wrong = {k: got.get(k, 0) for k, v in want.items() if got.get(k, 0) != v}
        if wrong:
            return f"the forger's counters in A: {wrong}, want {want}: {got}"
        if "left: a message this protocol version does not have" not in outs[0]:
            return "A's daemon did not end the forger's session on its unknown request"
        victim = [s for k, s in a.items() if k != HOSTILE["slot"]]
        if any(s.get(k, 0) for s in victim for k in s if k.startswith("refused") or k == "cm_refused"):
            return f"the victim's frames were refused: {victim}"
        return None
    if case == "killed" and cm_counters(outs[1]).get("dreq_for_dead", 0) < 1:
        return f"B's daemon sent no DREQ for the killed server's connection: {outs[1][-400:]}"
    if case == "fork":  # the parent and the child, each a client of its own
        if len([s for s in a.values() if s.get("switched", 0) > 0]) < 2:
            return f"A's daemon switched frames of fewer than 2 clients: {a}"
        return None
    if case == "mpi":  # two ranks per host, each to the other host and to its neighbour
        for name, d, key in (("A", a, "to_wire"), ("B", b, "to_client"), ("A", a, "switched"),
                             ("B", b, "switched")):
            if len([s for s in d.values() if s.get(key, 0) > 0]) < 2:
                return f"{name}'s daemon counted {key} for fewer than 2 clients: {d}"
        return None
    if case == "samehost":
        if len([s for s in a.values() if s.get("switched", 0) > 0]) < 2:
            return f"A's daemon switched no frames between two clients: {a}"
        if any(s.get("to_wire", 0) > 0 for s in a.values()):
            return f"same-host frames reached the wire: {a}"
        return None
    want = {"rping": 1, "reopen": 1, "killed": 1, "sixteen": 2 * SIXTEEN_PAIRS}.get(case, 2)
    if len([s for s in a.values() if s.get("to_wire", 0) > 0]) < want:
        return f"A's daemon sent frames of fewer than {want} clients to the wire: {a}"
    if len([s for s in b.values() if s.get("to_client", 0) > 0]) < want:
        return f"B's daemon delivered to fewer than {want} clients: {b}"
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--workers", type=int, default=1,
                    help="each daemon's workers, and the veths' queue pairs")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIP: needs root (namespaces, AF_XDP)")
        return 0
    h = Host(args.build, args.workers)
    try:
        h.start_daemons(time.monotonic() + 30)
        problem = CASES[args.case](h)
        outs = h.stop_daemons()
        problem = problem or check_daemons(args.case, outs, args.workers)
        if problem:
            print(f"FAIL hostd.{args.case}: {problem}", file=sys.stderr)
            print(h.report(), file=sys.stderr)
            return 1
        print(f"PASS hostd.{args.case}")
        for p in h.procs:  # the clients' results (perftest's table, uroce_verify's line)
            if p.label in ("forkquery", "fork"):
                print(p.output().strip())
            if p.label == "mpirun":
                print("\n".join(ln for ln in ucx_cases.by_rank(p.output()).get(0, "").splitlines()
                                if ln.startswith("ok")))
            if p.label == "reopen-client":
                print(p.output().strip())
            elif p.label.endswith("-client"):
                rows = [ln for ln in p.output().splitlines()
                        if re.match(r"^\s*\d+\s+\d+\s+[\d.]+", ln) or "uroce_verify" in ln]
                print(f"{p.label}: " + " | ".join(r.strip() for r in rows[-2:]))
        for out in outs:
            print("\n".join(ln for ln in out.splitlines()
                            if ln.startswith("final") or "frame refused" in ln))
        if args.workers > 1:  # where each client went, and how RSS spread the netdev's frames
            for side, out in zip("AB", outs):
                print(side, "clients by worker:",
                      " ".join(m.group(0) for m in re.finditer(r"slot=\d+ pid=\d+ .*worker=\d+", out)))
        return 0
    except Exception as e:  # report what ran, then clean up
        print(f"FAIL hostd.{args.case}: {e}", file=sys.stderr)
        print(h.report(), file=sys.stderr)
        return 1
    finally:
        h.close()


if __name__ == "__main__":
    sys.exit(main())
