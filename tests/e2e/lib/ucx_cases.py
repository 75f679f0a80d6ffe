"""UCX and Open MPI over uroce (issue #9): Debian's unmodified ucx_perftest (ucx-utils, UCX
1.13) and mpirun (openmpi-bin 4.1, pml ucx) with the project's MPI program
(tests/e2e/mpi/pingpong_allreduce.c), two processes over a memif pair; and in host mode
(links.RoutedLink): one process in each of two namespaces with a Linux router between them,
uroce on their veths, UCX finding the device's GIDs, their types and netdev in the sysfs files
`uroce rdma-ns` writes from the netdev, and choosing the IPv4 GID (RoCE v2 AF_INET first).

What makes UCX see a uroce device (docs/user-guide.md, "UCX and Open MPI"):
  - `uroce rdma-ns --` in front of each program: UCX lists an ibv device only when
    /dev/infiniband/<dev_name> is a character device, and reads the GIDs' RoCE version from
    /sys/class/infiniband; the tool provides both in a private mount namespace, the host's /dev
    and /sys stay as they are;
  - UCX_NET_DEVICES=uroce0:1 and UCX_TLS with the verbs transports only (rc_verbs needs a UD
    transport for its connection set-up: "rc_verbs,ud_verbs:aux"), so that no shared-memory or
    TCP transport can carry the data instead;
  - Open MPI: --mca pml ucx --mca osc ucx --mca btl self, and pml_ucx_devices/osc_ucx_devices
    'uroce*' (Open MPI 4.1 accepts only mlx* devices for pml ucx by default).

What each case asserts, beyond exit status 0 of both sides within the deadline:
  - no UCX ERROR/WARN/fatal line, no MPI FAIL line;
  - ucx_perftest: the "Final:" row with the requested iteration count and non-zero figures;
    MPI: every "ok ..." line and PASS;
  - UCX's own choice of lanes (UCX_LOG_LEVEL=info "ep_cfg" lines) names only the uroce device
    (and `self`, a process talking to itself);
  - uroce's counters (UROCE_PRINT_COUNTERS=1, printed as each process closes the device): the
    side that sends the payload sent at least payload-size x iterations bytes over RoCE, and on
    rc_verbs the target counted the RDMA WRITEs (put) or READs (get) it served.
ucx_perftest itself checks no data; the MPI program checks every byte (ping-pong, allreduce,
MPI_Put/MPI_Get through osc ucx).
"""

import os
import random
import re
import socket
import subprocess
import time

import pair as pairmod
from pair import DEVICE, Pair, Side, fail, wait_one

# UCX_TLS per variant. rc: RC for the data, UD only to set RC connections up (aux).
TLS = {"rc": "rc_verbs,ud_verbs:aux", "ud": "ud_verbs"}

# ucx_perftest tests: (test, size, iterations per TLS, payload direction, RDMA counter on rc).
# "client": the client sends the payload; "both": ping-pong; "server": the server returns it
# (get). tag_bw's 64 KiB go by rendezvous, tag_lat's 8 B eagerly inline. ucp_get over UD is
# emulated by active messages answered by the passive server's progress (about 1 ms each).
PERFTESTS = {
    "tag_bw": ("tag_bw", 65536, {"rc": 2000, "ud": 1000}, "client", None),
    "tag_lat": ("tag_lat", 8, {"rc": 2000, "ud": 2000}, "both", None),
    "put_bw": ("ucp_put_bw", 65536, {"rc": 2000, "ud": 500}, "client", "rx_write_requests"),
    "get_bw": ("ucp_get", 65536, {"rc": 1000, "ud": 200}, "server", "rx_read_requests"),
}
# UCT level (-d/-x): the verbs transport's own put and get, rc_verbs only (UD has none).
UCT_TESTS = {
    "uct_put_bw": ("put_bw", 65536, 2000, "zcopy", "rx_write_requests"),
    "uct_get_bw": ("get", 65536, 1000, "zcopy", "rx_read_requests"),
}

# A UCX problem line (DIAG lines are expected: no sysfs, no rdma_cm on this host).
UCX_BAD_RE = re.compile(r"UCX +(ERROR|WARN|FATAL)|Fatal:|Segmentation|Aborted|core dumped|"
                        r"unhandled timeout")
EP_CFG_RE = re.compile(r"ep_cfg\[\d+\]: (.*)$", re.M)
LANE_RE = re.compile(r"([a-z_0-9]+)/([A-Za-z0-9_:]+)")
COUNTERS_RE = re.compile(r"counters at close:(.*)$", re.M)


def cases(add):
    """Registers the cases through e2e.py's add(name, kind, link, timeout, **kw)."""
    for tls in TLS:
        for name in PERFTESTS:
            add(f"memif.ucx_perftest.{name}.{tls}", "ucx_perftest", "memif", 90, short=True,
                labels=["ucx"], test=name, tls=tls)
    for name in UCT_TESTS:
        add(f"memif.ucx_perftest.{name}.rc", "ucx_uct", "memif", 90, short=True,
            labels=["ucx"], test=name)
    for tls in TLS:
        add(f"memif.mpi.pingpong_allreduce.{tls}", "mpi", "memif", 150, short=True,
            labels=["ucx", "mpi"], tls=tls)
    # Host mode through a router: A and B by their kernel addresses; MPI with a rank per host.
    add("routed.ucx_info.gid", "ucx_info", "routed", 60, short=True, labels=["ucx"])
    for tls in TLS:
        for name in ("tag_bw", "put_bw"):
            add(f"routed.ucx_perftest.{name}.{tls}", "ucx_perftest", "routed", 120, short=True,
                labels=["ucx"], test=name, tls=tls)
    for tls in TLS:
        add(f"routed.mpi.pingpong_allreduce.{tls}", "mpi", "routed", 150, short=True,
            labels=["ucx", "mpi"], tls=tls)
    # On veth (af_packet, RoCE MTU 1024): the long set.
    for tls in TLS:
        add(f"af_packet.ucx_perftest.tag_bw.{tls}", "ucx_perftest", "af_packet", 120,
            long_only=True, labels=["ucx"], test="tag_bw", tls=tls)


def ucx_env(tls):
    return {"UCX_NET_DEVICES": f"{DEVICE}:1", "UCX_TLS": tls, "UCX_LOG_LEVEL": "info",
            "UCX_WARN_UNUSED_ENV_VARS": "n", "UROCE_PRINT_COUNTERS": "1"}


def rdma_ns(build):
    """The command prefix that gives a program the kernel RDMA files UCX looks for."""
    return [os.path.join(build, "bin", "uroce"), "rdma-ns", "--"]


def counters(text):
    """The counters a process printed at close: {name: value}; {} when there is no line."""
    m = COUNTERS_RE.search(text)
    if not m:
        return {}
    return {k: int(v) for k, v in (x.split("=") for x in m.group(1).split())}


def lanes_problem(text, allowed=(DEVICE + ":1", "memory0")):
    """None when every lane of every UCX endpoint is on the uroce device (or self)."""
    cfgs = EP_CFG_RE.findall(text)
    if not cfgs:
        return "no UCX ep_cfg line (UCX_LOG_LEVEL=info) to tell which transports carried data"
    for cfg in cfgs:
        for tl, dev in LANE_RE.findall(cfg):
            if dev not in allowed:
                return f"UCX chose {tl}/{dev}: not the uroce device ({cfg})"
    return None


def bad_lines(text):
    return [ln for ln in text.splitlines() if UCX_BAD_RE.search(ln)]


def final_row(text):
    """ucx_perftest's 'Final:' row as numbers (iterations first), or None."""
    for line in text.splitlines():
        if line.startswith("Final:"):
            try:
                return [float(x) for x in line.split()[1:]]
            except ValueError:
                return None
    return None


def check_perftest(outs, iters, size, direction, rdma_counter, check_lanes=True):
    """The assertions of a ucx_perftest pair (module doc); None or the problem. UCT-level tests
    create no UCP endpoint to report lanes: their transport and device are the -x/-d given."""
    for side, out in enumerate(outs):
        if bad_lines(out):
            return f"side {side}: {bad_lines(out)[:3]}"
    row = final_row(outs[1])
    if not row or len(row) < 8:
        return "no 'Final:' row in the client's output"
    if int(row[0]) != iters:
        return f"Final row reports {int(row[0])} iterations, not {iters}"
    if min(row[1:]) <= 0:
        return f"a zero figure in the Final row {row}"
    problem = lanes_problem(outs[1]) if check_lanes else None
    if problem:
        return problem
    c = [counters(o) for o in outs]
    for side in (0, 1):
        if not c[side]:
            return f"side {side} printed no uroce counters (UROCE_PRINT_COUNTERS)"
    want = size * iters
    senders = {"client": [1], "server": [0], "both": [0, 1]}[direction]
    for side in senders:
        sent = c[side].get("tx_vport_rdma_unicast_bytes", 0)
        got = c[1 - side].get("rx_vport_rdma_unicast_bytes", 0)
        if sent < want or got < want:
            return (f"uroce carried too little: side {side} sent {sent} and side {1 - side} "
                    f"received {got} RoCE bytes, the payload alone is {want}")
    if rdma_counter:
        served = c[0].get(rdma_counter, 0)
        if served < iters:
            return f"the server counted {served} {rdma_counter}, fewer than {iters} operations"
    print(f"counters: server {c[0]}\ncounters: client {c[1]}")
    return None


def free_port():
    """A TCP port nothing listens on or is connected from now, below the kernel's ephemeral range
    (32768..): ucx_perftest's server binds without SO_REUSEADDR and fails on a taken port."""
    for _ in range(100):
        port = random.randint(20000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
                return port
            except OSError:
                continue
    return pairmod.free_tcp_port()


def run_pair(case, link, build, client_args, tls, check):
    port = free_port()
    p = Pair(link, build, env=ucx_env(tls))
    server = rdma_ns(build) + ["ucx_perftest", "-p", str(port)]
    client = rdma_ns(build) + ["ucx_perftest", "-p", str(port)] + client_args
    srv, cli = p.run(server, client + [link.oob_host()], port, case.timeout - 10)
    outs = [s.output() if s else "" for s in p.sides]
    if p.timed_out:
        return fail(f"{case.name}: timed out", p)
    if srv != 0 or cli != 0:
        return fail(f"{case.name}: exit codes server={srv} client={cli}", p)
    problem = check(outs)
    if problem:
        return fail(f"{case.name}: {problem}", p)
    print(f"PASS {case.name}")
    print("\n".join(ln for ln in outs[1].splitlines() if not ln.startswith("[")))
    return 0


def run_perftest(case, link, build):
    """ucx_perftest at the UCP level (tag matching, put, get) over rc_verbs or ud_verbs."""
    test, size, iters_by_tls, direction, rdma_counter = PERFTESTS[case.kw["test"]]
    tls = case.kw["tls"]
    iters = iters_by_tls[tls]
    args = ["-t", test, "-s", str(size), "-n", str(iters), "-w", "20"]
    return run_pair(case, link, build, args, TLS[tls], lambda outs: check_perftest(
        outs, iters, size, direction, rdma_counter if tls == "rc" else None))


def run_uct(case, link, build):
    """ucx_perftest at the UCT level: rc_verbs' put (RDMA WRITE) and get (RDMA READ)."""
    test, size, iters, layout, rdma_counter = UCT_TESTS[case.kw["test"]]
    args = ["-t", test, "-d", f"{DEVICE}:1", "-x", "rc_verbs", "-D", layout, "-s", str(size),
            "-n", str(iters), "-w", "20"]
    direction = "server" if test == "get" else "client"
    return run_pair(case, link, build, args, TLS["rc"], lambda outs: check_perftest(
        outs, iters, size, direction, rdma_counter, check_lanes=False))


# ---------------------------------------------------------------------------------------------
# Open MPI

MPI_ITERS = 200
MPI_OK_LINES = ["ok pingpong size 1 ", "ok pingpong size 1048576 ", "ok allreduce", "ok rma",
                "PASS"]
TAG_RE = re.compile(r"^\[\d+,(\d+)\]<(stdout|stderr)>:", re.M)


def by_rank(text):
    """mpirun --tag-output text -> {rank: that rank's lines}."""
    out = {}
    for line in text.splitlines():
        m = TAG_RE.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(line[m.end():])
    return {r: "\n".join(lines) for r, lines in out.items()}


def mpirun_argv(build, prog, configs, tls, args, hosts=None, env=None):
    """mpirun with one application context per rank, each with its own UROCE_CONFIG (Open MPI
    applies -x only to the context it appears in, so every context repeats them) and the
    variables of `env`. hosts: None, every rank on this host, mpirun under rdma-ns and the ranks
    inheriting its mount namespace; or (rsh agent, [host of each rank]): ranks on hosts reached
    through the agent (see run_mpi), each under rdma-ns of its own."""
    argv = ([] if hosts else rdma_ns(build)) + [
        "mpirun", "--allow-run-as-root", "--tag-output",
        # Ranks on other hosts: each host's orted would bind its ranks from core 0 on.
        "--bind-to", "core" if (os.cpu_count() or 1) >= 2 and not hosts else "none",
        "--mca", "pml", "ucx", "--mca", "osc", "ucx", "--mca", "btl", "self",
        "--mca", "pml_ucx_devices", "uroce*", "--mca", "osc_ucx_devices", "uroce*"]
    if hosts:
        argv += ["--mca", "plm_rsh_agent", hosts[0], "--mca", "oob_tcp_if_include", ROUTED_NET]
    env = dict(ucx_env(TLS[tls] + ",self"), LD_LIBRARY_PATH=os.path.join(build, "lib"),
               **(env or {}))
    for rank, cfg in enumerate(configs):
        if rank:
            argv.append(":")
        argv += ["-np", "1"]
        if hosts:
            argv += ["--host", f"{hosts[1][rank]}:{hosts[1].count(hosts[1][rank])}"]
        for k, v in sorted(dict(env, UROCE_CONFIG=cfg).items()):
            argv += ["-x", f"{k}={v}"]
        argv += (rdma_ns(build) if hosts else []) + [prog] + args
    return argv


def check_mpi(out, nranks=2):
    """The assertions of an mpirun (module doc) on its --tag-output; None or the problem."""
    ranks = by_rank(out)
    if sorted(ranks) != list(range(nranks)):
        return f"output of ranks {sorted(ranks)}, expected 0 to {nranks - 1}"
    for r, text in ranks.items():
        bad = bad_lines(text) + [ln for ln in text.splitlines() if "FAIL" in ln]
        if bad:
            return f"rank {r}: {bad[:3]}"
    for want in MPI_OK_LINES:
        if want not in ranks[0]:
            return f"rank 0 did not print '{want}'"
    for r, text in ranks.items():
        problem = lanes_problem(text)
        if problem:
            return f"rank {r}: {problem}"
        m = re.search(r"rank \d+ pingpong sent (\d+) bytes", text)
        c = counters(text)
        if not m or not c:
            return f"rank {r}: no ping-pong byte count or no uroce counters"
        sent = int(m.group(1))
        tx, rx = c.get("tx_vport_rdma_unicast_bytes", 0), c.get("rx_vport_rdma_unicast_bytes", 0)
        if tx < sent or rx < sent:
            return (f"rank {r}: uroce sent {tx} and received {rx} RoCE bytes, but the ping-pong "
                    f"alone moved {sent} each way: another transport carried the data")
        print(f"rank {r}: ping-pong {sent} bytes each way; uroce tx {tx} rx {rx} bytes")
    return None


# Open MPI's out-of-band network between mpirun and the remote orted: RoutedLink's subnets.
ROUTED_NET = "198.18.0.0/16"


def stacks(names=("e2e_mpi_pingpong_allreduce", "orted", "mpirun")):
    """For a run that hangs: every live process whose command line names one of `names`, each
    thread's state and kernel wait channel, and gdb's backtrace of its threads (so a failure
    says which process waits where)."""
    lines = []
    for pid in sorted(int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if not any(os.path.basename(cmd.split(" ")[0]) == n for n in names):
            continue
        lines.append(f"---- pid {pid}: {cmd[:200]}")
        try:
            for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
                base = f"/proc/{pid}/task/{tid}"
                with open(f"{base}/comm") as c, open(f"{base}/wchan") as w, \
                        open(f"{base}/stat") as st:
                    state = st.read().rsplit(")", 1)[1].split()[0]
                    lines.append(f"  tid {tid} {c.read().strip()} state={state} "
                                 f"wchan={w.read().strip()}")
        except OSError:
            continue
        try:
            bt = subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex",
                                 "thread apply all bt 16"], capture_output=True, text=True,
                                timeout=30).stdout
            lines += [ln for ln in bt.splitlines() if ln.startswith(("#", "Thread"))]
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append(f"  gdb: {e}")
    return "\n".join(lines) or "(no such process left)"


def rsh_agent(path, link):
    """Writes Open MPI's rsh agent for the hosts of a link whose sides are namespaces: called as
    `AGENT HOST COMMAND...`, it runs the command (an orted) in the namespace of the side whose
    address HOST is. Returns the path."""
    arms = "".join(f'  {link.roce_addr(s)}) exec {" ".join(link.wrap(s))} sh -c "$*" ;;\n'
                   for s in (0, 1))
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nhost=$1\nshift\ncase $host in\n{arms}esac\n'
                f'echo "rsh agent: no namespace for host $host" >&2\nexit 255\n')
    os.chmod(path, 0o755)
    return path


def run_mpi(case, link, build):
    prog = os.path.join(build, "bin", "e2e_mpi_pingpong_allreduce")
    if not os.path.exists(prog):
        return fail(f"{case.name}: {prog} is not built (needs libopenmpi-dev: "
                    "scripts/install-deps.sh)")
    p = Pair(link, build)
    # Sides in different namespaces (host mode): each is a host with its own address. mpirun
    # runs on side 0 and starts rank 0 there; it reaches side 1 as a remote host through the
    # rsh agent, whose orted (in side 1's namespace) connects back to it over the routed
    # network and starts rank 1. (Ranks cannot simply be started in the other namespace by the
    # local orted: their PMIx client reaches its server on 127.0.0.1, the namespace's own lo.)
    hosts = None
    if link.wrap(0) != link.wrap(1):
        hosts = (rsh_agent(os.path.join(p.dir, "rsh-agent"), link),
                 [link.roce_addr(0), link.roce_addr(1)])
    argv = mpirun_argv(build, prog, p.configs, case.kw["tls"], ["-n", str(MPI_ITERS), "-r"],
                       hosts)
    if hosts:
        argv = link.wrap(0) + argv
    s = Side("mpirun", argv, dict(os.environ), os.path.join(p.dir, "mpirun.out"))
    p.procs.append(s)
    t0 = time.monotonic()
    out, failed = wait_one(case.name, p, s, case.timeout - 10, "mpirun exit code")
    if failed:
        return failed
    problem = check_mpi(out)
    if problem:
        return fail(f"{case.name}: {problem}", p)
    print(f"PASS {case.name} ({time.monotonic() - t0:.1f} s)")
    print("\n".join(ln for ln in by_rank(out).get(0, "").splitlines() if ln.startswith("ok")))
    return 0


# UCX's debug lines on the GID it chose and the netdev it read from gid_attrs/ndevs.
GID_CHOSEN_RE = re.compile(r"UCX +DEBUG +" + DEVICE + r":1 using gid_index (\d+)")
LAG_RE = re.compile(r"UCX +DEBUG +RoCE LAG level on " + DEVICE + r":1 \((\S+)\) is (\d+)")


def run_ucx_info(case, link, build):
    """What UCX takes from rdma-ns's sysfs for a host-mode device: `ucx_info -d` (debug log)
    must pick the IPv4 GID (RoCE v2 AF_INET is its first choice, so it read the GID types) and
    name side 0's netdev as the GID's (read from gid_attrs/ndevs), with no UCX error."""
    p = Pair(link, build, env=dict(ucx_env(TLS["rc"]), UCX_LOG_LEVEL="debug"))
    s = p.start(0, rdma_ns(build) + ["ucx_info", "-d", "-t", "rc_verbs"])
    out, failed = wait_one(case.name, p, s, case.timeout - 10)
    if failed:
        return failed
    if bad_lines(out):
        return fail(f"{case.name}: {bad_lines(out)[:3]}", p)
    gid = GID_CHOSEN_RE.search(out)
    if not gid or int(gid.group(1)) != link.gid_index:
        return fail(f"{case.name}: UCX chose GID {gid and gid.group(1)}, not the IPv4 GID "
                    f"{link.gid_index}", p)
    lag = LAG_RE.search(out)
    if not lag or lag.group(1) != link.ifs[0]:
        return fail(f"{case.name}: UCX found netdev {lag and lag.group(1)} for the GID, "
                    f"not {link.ifs[0]}", p)
    print(f"PASS {case.name}: GID {gid.group(1)}, netdev {lag.group(1)}")
    return 0


RUNNERS = {"ucx_perftest": run_perftest, "ucx_uct": run_uct, "mpi": run_mpi,
           "ucx_info": run_ucx_info}
