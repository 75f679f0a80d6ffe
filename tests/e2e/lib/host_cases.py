"""Host mode's e2e cases beyond the plain programs (docs/host-mode.md): uroce bound to the kernel's
veths of namespaces A and B with a Linux router R between them (links.RoutedLink).

  routed.capture.write     ib_write_bw while dumpcap records both of R's interfaces: every
                           RoCEv2 frame on each side decodes (tshark) with a correct ICRC
                           (scapy), and the frames the router forwarded carry a TTL one lower
                           than the ones it received.
  routed.kernel.beside     uroce_verify while ping and an iperf3 TCP transfer run between A
                           and B on the same veths: both succeed (a ping lost only with frames
                           the path's veth queues dropped: the RoCE bursts fill them), and
                           neither kernel counted a UDP datagram or sent an ICMP unreachable (no
                           RoCE frame reached it).
  routed.events.default    e2e_host_events in A while the harness changes A's netdev: an added
                           and a removed address raise GID_CHANGE with the table following; link
                           down and up raise PORT_ERR and PORT_ACTIVE with the port state.
  routed.flap.write        uroce_verify while B's veth loses its carrier for less than the QPs'
                           timeout x retries: the transfer completes, data checked.
  routed.bottleneck.write  uroce_verify through a tbf qdisc on R (a real tail-drop bottleneck):
                           the qdisc dropped frames and every byte arrived checked.
  routed.bottleneck.lossy  the same with the `lossy` profile on both hosts (selective repeat,
                           DCQCN + the delay-based control): selective repeat repaired the
                           drops (sr_loss_events counted), every byte checked.
  routed.bottleneck.selective  the same with selective repeat alone.
  routed.crash.restart     a uroce process on A killed with SIGKILL leaves its XDP program:
                           `uroce doctor` calls it stale, and the next process replaces it and
                           runs a transfer; after that process exits the program is gone.
  routed.reopen.exclusive  one process (B) opens, uses and closes the device ten times, each
                           time after a probe (open, PD, close) and with two contexts open at
                           once, a QP on each to a server in A and every byte checked
                           (lib/reopen.py); after the last close, with the process still alive,
                           it has no AF_XDP socket or BPF object open, no XDP program is on its
                           netdev, `uroce doctor` says so, and another process opens the netdev.
  routed.bad.<what>        a netdev that does not exist, is down, has no address, cannot take an
                           XDP program, or has a foreign one: ibv_devinfo fails with one line
                           naming the reason, no uroce XDP program is left on the netdev, and
                           `uroce doctor` reports the same problem.
"""

import json
import os
import re
import subprocess
import time

import links
import pair as pairmod
import reopen
from links import sh
from pair import DEVICE, Pair, fail
from waits import wait_for

VERIFY = ["-o", "write", "-s", "1048576", "-n", "40"]


def cases(add):
    add("routed.capture.write", "host_capture", "routed", 180, short=True)
    add("routed.kernel.beside", "host_beside", "routed", 180, short=True)
    add("routed.events.default", "host_events", "routed", 120, short=True)
    add("routed.flap.write", "host_flap", "routed", 180, short=True)
    add("routed.bottleneck.write", "host_bottleneck", "routed", 240, short=True,
        bottleneck="100mbit")
    add("routed.bottleneck.lossy", "host_bottleneck", "routed", 240, short=True,
        bottleneck="100mbit", toml='profile = "lossy"')
    add("routed.bottleneck.selective", "host_bottleneck", "routed", 240, short=True,
        bottleneck="100mbit", toml='loss_recovery = "selective"')
    add("routed.crash.restart", "host_crash", "routed", 180, short=True)
    add("routed.reopen.exclusive", "host_reopen", "routed", 120, short=True)
    for what in ("missing", "down", "no_address", "no_xdp", "foreign_xdp"):
        add(f"routed.bad.{what}", "host_bad", "routed", 120, short=True, what=what)


def verify_argv(build, link, port, extra=None):
    return [os.path.join(build, "bin", "uroce_verify"), "-d", DEVICE, "-g",
            str(link.gid_index), "-p", str(port)] + (extra or VERIFY)


def run_verify_pair(case, link, build, during=None, extra=None, toml=""):
    """uroce_verify between A and B; `during(pair)` runs once the client started; toml: more
    [[device]] keys for both. Returns (rc, pair)."""
    port = pairmod.free_tcp_port()
    p = Pair(link, build, extra_toml=toml, env={"UROCE_PRINT_COUNTERS": "1"})
    argv = verify_argv(build, link, port, extra)
    deadline = time.monotonic() + case.timeout - 20
    srv = p.start(0, argv)
    wait_for(lambda: pairmod.listening(link, 0, port) or srv.poll() is not None, deadline,
             "the server's TCP port")
    cli = p.start(1, argv + [link.oob_host()])
    problem = during(p) if during else None
    for s in (srv, cli):
        s.wait(deadline - time.monotonic())
    if srv.rc is None or cli.rc is None:
        p.timed_out = True
        for s in (srv, cli):
            s.kill()
        return fail(f"{case.name}: timed out", p), p
    if problem:
        return fail(f"{case.name}: {problem}", p), p
    if srv.rc != 0 or cli.rc != 0:
        return fail(f"{case.name}: exit codes server={srv.rc} client={cli.rc}", p), p
    return 0, p


# --- captures on the router ------------------------------------------------------------------

class Dumpcap:
    def __init__(self, ns, ifname, path):
        self.path = path
        self.log = path + ".log"
        self.proc = subprocess.Popen(["ip", "netns", "exec", ns, "dumpcap", "-i", ifname, "-w",
                                      path], stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "w"))
        wait_for(lambda: "Capturing on" in open(self.log).read() or self.proc.poll() is not None,
                 time.monotonic() + 20, f"dumpcap on {ifname}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"dumpcap: {open(self.log).read()}")

    def stop(self):
        self.proc.send_signal(2)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def ttls(path, src):
    out = subprocess.run(["tshark", "-n", "-r", path, "-Y", f"udp.dstport == 4791 && "
                          f"ip.src == {src}", "-T", "fields", "-e", "ip.ttl"],
                         capture_output=True, text=True).stdout
    return {int(x) for x in out.split()}


def run_capture(case, link, build):
    import roce_pcap
    from e2e import link_tmp, settle
    paths = [os.path.join(link_tmp(), f"{case.name}.r{i}.pcapng") for i in (0, 1)]
    caps = [Dumpcap(link.router, link.rifs[i], paths[i]) for i in (0, 1)]
    try:
        port = pairmod.free_tcp_port()
        argv = ["ib_write_bw", "-d", DEVICE, "-x", str(link.gid_index), "-p", str(port),
                "-s", "4096", "-n", "200"]
        p = Pair(link, build)
        srv, cli = p.run(argv, argv + [link.oob_host()], port, case.timeout - 30)
        if p.timed_out or srv != 0 or cli != 0:
            return fail(f"{case.name}: ib_write_bw server={srv} client={cli}", p)
        for path in paths:
            settle(path)
    finally:
        for c in caps:
            c.stop()
    for path in paths:
        ok1, m1 = roce_pcap.check_tshark(path, link.addr)
        ok2, m2 = roce_pcap.check_icrc(path)
        print(path, m1, m2, sep="\n  ")
        if not (ok1 and ok2):
            return fail(f"{case.name}: capture {path} does not check out: {m1}; {m2}")
    # A -> B frames: seen on R's A side before forwarding, on its B side after.
    before, after = ttls(paths[0], link.addr[0]), ttls(paths[1], link.addr[0])
    if not before or not after or {t - 1 for t in before} != after:
        return fail(f"{case.name}: TTLs from A: on A's side {before}, on B's side {after}")
    print(f"PASS {case.name}: TTL {before} -> {after}")
    for path in paths:
        os.remove(path)
    return 0


# --- kernel traffic beside RoCE ----------------------------------------------------------------

def snmp(ns):
    """(Udp InDatagrams, Udp NoPorts, Icmp OutDestUnreachs) of a namespace's kernel."""
    text = sh("ip", "netns", "exec", ns, "cat", "/proc/net/snmp")
    rows = {}
    lines = text.splitlines()
    for head, vals in zip(lines[::2], lines[1::2]):
        name = head.split(":")[0]
        rows[name] = dict(zip(head.split()[1:], (int(v) for v in vals.split()[1:])))
    return (rows["Udp"]["InDatagrams"], rows["Udp"]["NoPorts"], rows["Icmp"]["OutDestUnreachs"])


def path_drops(link):
    """{interface: tx_dropped} of every interface on the path: frames a veth could not hand
    to its peer (the peer's ring or backlog full), of any kind."""
    out = {}
    for ns, ifs in ((link.ns[0], [link.ifs[0]]), (link.router, link.rifs),
                    (link.ns[1], [link.ifs[1]])):
        for i in ifs:
            text = sh("ip", "netns", "exec", ns, "ip", "-s", "-j", "link", "show", "dev", i)
            out[i] = json.loads(text)[0]["stats64"]["tx"]["dropped"]
    return out


def run_beside(case, link, build):
    before = [snmp(ns) for ns in link.ns]
    drops_before = path_drops(link)
    results = {}

    def during(p):
        iperf_port = pairmod.free_tcp_port()
        srv = subprocess.Popen(["ip", "netns", "exec", link.ns[1], "iperf3", "-s", "-1", "-p",
                                str(iperf_port)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: pairmod.listening(link, 1, iperf_port), time.monotonic() + 20,
                     "iperf3's server")
            ping = subprocess.Popen(["ip", "netns", "exec", link.ns[0], "ping", "-c", "20", "-i",
                                     "0.1", "-W", "2", link.addr[1]], stdout=subprocess.PIPE,
                                    text=True)
            iperf = subprocess.run(["ip", "netns", "exec", link.ns[0], "iperf3", "-c",
                                    link.addr[1], "-p", str(iperf_port), "-t", "2", "-J"],
                                   capture_output=True, text=True, timeout=60)
            results["ping"] = ping.communicate(timeout=60)[0]
            results["iperf"] = iperf
        finally:
            srv.kill()
        return None

    rc, p = run_verify_pair(case, link, build, during)
    if rc:
        return rc
    # The path is a real one with tail drops: A's RoCE bursts fill the router's veth queue
    # towards B (no PFC on a veth), and a ping behind them can be dropped with them. What must
    # hold: pings get through, and every one lost was dropped by a queue on the path (a veth's
    # tx_dropped: its peer's ring or backlog was full), not taken by uroce's XDP program.
    drops = path_drops(link)
    queue_drops = sum(v - drops_before[i] for i, v in drops.items())
    m = re.search(r"(\d+) packets transmitted, (\d+) received", results.get("ping", ""))
    lost = int(m.group(1)) - int(m.group(2)) if m else None
    if lost is None or int(m.group(2)) == 0 or lost > queue_drops:
        return fail(f"{case.name}: ping beside RoCE lost {lost}, more than the {queue_drops} "
                    f"frames the path's queues dropped: {results.get('ping')}", p)
    iperf = results["iperf"]
    m = re.search(r'"sum_received":\s*{[^}]*"bytes":\s*(\d+)', iperf.stdout)
    if iperf.returncode != 0 or not m or int(m.group(1)) == 0:
        return fail(f"{case.name}: iperf3 beside RoCE: rc={iperf.returncode} "
                    f"{iperf.stderr.strip()[:200]}", p)
    after = [snmp(ns) for ns in link.ns]
    if before != after:
        return fail(f"{case.name}: the kernel saw UDP or sent ICMP unreachable (InDatagrams, "
                    f"NoPorts, OutDestUnreachs): before {before}, after {after}", p)
    print(f"PASS {case.name}: ping lost {lost} (queues on the path dropped {queue_drops}), "
          f"iperf3 {int(m.group(1))} bytes, kernel UDP/ICMP counters unchanged {after}")
    return 0


# --- events -------------------------------------------------------------------------------------

class Events:
    """e2e_host_events in a namespace, its output read line by line."""

    def __init__(self, link, build, side=0):
        p = Pair(link, build)
        self.pair = p
        self.proc = subprocess.Popen(
            link.wrap(side) + [os.path.join(build, "bin", "e2e_host_events"), "--seconds", "90"],
            env=p.env(side), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lines = []
        self.pending = []  # complete lines read, not yet matched
        self.partial = b""

    def _read_lines(self, deadline):
        """Blocks until more complete lines arrive (False: EOF or deadline)."""
        import select
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], deadline - time.monotonic())
            if not r:
                return False
            chunk = os.read(fd, 4096)
            if not chunk:
                return False
            *done, self.partial = (self.partial + chunk).split(b"\n")
            if done:
                self.pending += [ln.decode(errors="replace") for ln in done]
                return True
        return False

    def expect(self, pattern, what, timeout=20):
        """Reads lines until one matches; returns the lines read (the last matches)."""
        deadline = time.monotonic() + timeout
        got = []
        while True:
            while self.pending:
                line = self.pending.pop(0)
                self.lines.append(line)
                got.append(line)
                if re.search(pattern, line):
                    return got
            if not self._read_lines(deadline):
                break
        raise RuntimeError(f"no /{pattern}/ ({what}); output so far:\n" + "\n".join(self.lines))

    def table(self):
        """The GID lines of the last table printed."""
        last = len(self.lines) - 1 - self.lines[::-1].index("GIDS")
        return [ln for ln in self.lines[last:] if ln.startswith("GID ")]

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(10)
        except (subprocess.TimeoutExpired, OSError):
            self.proc.kill()


def run_events(case, link, build):
    ns, ifname = link.ns[0], link.ifs[0]
    ev = Events(link, build)
    try:
        ev.expect(r"^READY", "device opened")
        start = "\n".join(ev.lines)
        if "state=active" not in start:
            raise RuntimeError(f"port not ACTIVE at start:\n{start}")
        table = ev.table()
        if not table or not re.match(r"GID 0 fe80::", table[0]) or \
                f"::ffff:{link.addr[0]}" not in table[1] or link.addr6[0] not in table[2]:
            raise RuntimeError(f"GID table not link-local, IPv4, IPv6: {table}")
        sh("ip", "-n", ns, "addr", "add", "198.18.1.77/24", "dev", ifname)
        ev.expect(r"^EVENT GID table change", "GID_CHANGE on add")
        ev.expect(r"^END", "table after add")
        if not any("::ffff:198.18.1.77" in ln for ln in ev.table()):
            raise RuntimeError(f"added address not in the table: {ev.table()}")
        sh("ip", "-n", ns, "addr", "del", "198.18.1.77/24", "dev", ifname)
        ev.expect(r"^EVENT GID table change", "GID_CHANGE on delete")
        ev.expect(r"^END", "table after delete")
        if any("198.18.1.77" in ln for ln in ev.table()):
            raise RuntimeError(f"deleted address still in the table: {ev.table()}")
        if table[1] not in ev.table():
            raise RuntimeError(f"the IPv4 GID moved: {table[1]} not in {ev.table()}")
        sh("ip", "-n", ns, "link", "set", ifname, "down")
        ev.expect(r"^EVENT port error", "PORT_ERR on link down")
        ev.expect(r"^PORT state=down", "state DOWN")
        sh("ip", "-n", ns, "link", "set", ifname, "up")
        ev.expect(r"^EVENT port active", "PORT_ACTIVE on link up")
        ev.expect(r"^PORT state=active", "state ACTIVE")
    except RuntimeError as e:
        ev.close()
        return fail(f"{case.name}: {e}", ev.pair)
    ev.close()
    print(f"PASS {case.name}\n" + "\n".join(ev.lines))
    return 0


# --- link flap and a real bottleneck -------------------------------------------------------------

def run_flap(case, link, build):
    tool = os.path.join(build, "bin", "uroce_xdp_tool")
    times = []  # when the link went down, when it was up again (monotonic s)

    def redirected():
        out = sh("ip", "netns", "exec", link.ns[0], tool, "counts", link.ifs[0], check=False)
        m = re.search(r"redirected=(\d+)", out)
        return int(m.group(1)) if m else 0

    def during(p):
        # Once RoCE frames flow into A (its XDP program redirected some), B loses its carrier
        # for 0.2 s (R's end of the veth goes down; B's stays administratively up, so its
        # routes stay): shorter than the QPs' timeout x retries (--ack-timeout 16: 268 ms x 7;
        # the router re-resolving B after the link returns is part of the outage).
        wait_for(lambda: redirected() > 200 or p.sides[1].poll() is not None,
                 time.monotonic() + 60, "RoCE frames into A")
        times.append(time.monotonic())
        sh("ip", "-n", link.router, "link", "set", link.rifs[1], "down")
        time.sleep(0.2)  # the outage itself, not a synchronisation
        sh("ip", "-n", link.router, "link", "set", link.rifs[1], "up")
        times.append(time.monotonic())
        return None
    rc, p = run_verify_pair(case, link, build, during, extra=VERIFY + ["--ack-timeout", "16"])
    if rc == 0:
        print(f"PASS {case.name}\n{p.sides[1].output()}")
    else:
        # What the kernels did around the outage, for a failure that does not repeat alone:
        # the router's and B's neighbour entries and link counters, the outage's length.
        if len(times) == 2:
            print(f"outage (down to up returned): {(times[1] - times[0]) * 1000:.0f} ms")
        for ns, dev in ((link.router, link.rifs[1]), (link.ns[1], link.ifs[1])):
            for what in (["neigh", "show", "dev", dev], ["-s", "link", "show", "dev", dev]):
                print(f"---- {ns}: ip {' '.join(what)}\n"
                      + sh("ip", "-n", ns, *what, check=False))
    return rc


def run_bottleneck(case, link, build):
    toml = case.kw.get("toml", "")
    t0 = time.monotonic()
    rc, p = run_verify_pair(case, link, build, extra=["-o", "write", "-s", "1048576", "-n", "30"],
                            toml=toml)
    wall = time.monotonic() - t0
    if rc:
        return rc
    stats = sh("ip", "netns", "exec", link.router, "tc", "-s", "qdisc", "show", "dev",
               link.rifs[1])
    m = re.search(r"dropped (\d+)", stats)
    if not m or int(m.group(1)) == 0:
        return fail(f"{case.name}: the bottleneck dropped nothing: {stats}", p)
    out = p.sides[0].output() + p.sides[1].output()
    if not re.search(r"roce_adp_retrans=[1-9]|local_ack_timeout_err=[1-9]|"
                     r"packet_seq_err=[1-9]|out_of_sequence=[1-9]", out):
        return fail(f"{case.name}: {m.group(1)} drops but no recovery counted", p)
    if toml and not re.search(r"sr_loss_events=[1-9]", out):
        return fail(f"{case.name}: selective repeat on, but no loss event of it counted", p)
    print(f"PASS {case.name}: tbf dropped {m.group(1)} frames in {wall:.1f} s (30 MiB, "
          f"both processes' start included); data checked\n{out}")
    return 0


# --- a crashed process's program --------------------------------------------------------------

def xdp_prog(link, side):
    out = sh("ip", "-n", link.ns[side], "-d", "link", "show", link.ifs[side])
    m = re.search(r"prog/xdp id \d+ name (\S+)", out)
    return m.group(1) if m else None


def run_crash(case, link, build):
    ev = Events(link, build)
    try:
        ev.expect(r"^READY", "device opened")
    except RuntimeError as e:
        ev.close()
        return fail(f"{case.name}: {e}", ev.pair)
    ev.proc.kill()
    ev.proc.wait(10)
    if xdp_prog(link, 0) != "uroce_roce":
        return fail(f"{case.name}: no uroce program left after SIGKILL: {xdp_prog(link, 0)}")
    doctor = subprocess.run(link.wrap(0) + [os.path.join(build, "bin", "uroce"), "doctor"],
                            env=ev.pair.env(0), capture_output=True, text=True, timeout=60)
    if not re.search(r"(?i)stale", doctor.stdout):
        return fail(f"{case.name}: uroce doctor did not call the program stale:\n"
                    f"{doctor.stdout}")
    rc, p = run_verify_pair(case, link, build, extra=["-o", "write", "-s", "65536", "-n", "20"])
    if rc:
        return rc
    if xdp_prog(link, 0) or xdp_prog(link, 1):
        return fail(f"{case.name}: XDP program left after the processes exited: "
                    f"{xdp_prog(link, 0)}, {xdp_prog(link, 1)}", p)
    print(f"PASS {case.name}")
    return 0


# --- open, use, close and open again ----------------------------------------------------------

def run_reopen(case, link, build):
    p = Pair(link, build)
    port = pairmod.free_tcp_port()
    deadline = time.monotonic() + case.timeout - 20
    srv = p.start(0, reopen.server_argv(build, port, link.gid_index))
    if not p.wait_listen(srv, port, deadline):
        return fail(f"{case.name}: the server did not listen", p)
    cli = reopen.start_client("client", p.command(1, reopen.client_argv(
        build, port, link.gid_index, link.oob_host())), p.env(1),
        os.path.join(p.dir, "client.out"))
    p.procs.append(cli)
    if not reopen.wait_closed(cli, deadline):
        p.stop_all()
        return fail(f"{case.name}: the client did not finish its cycles", p)
    problem = reopen.check_output(cli.output())
    # The process lives on with no context open: the netdev is free again.
    if not problem and xdp_prog(link, 1):
        problem = f"XDP program {xdp_prog(link, 1)} left on B's netdev after the last close"
    if not problem:
        doctor = subprocess.run(link.wrap(1) + [os.path.join(build, "bin", "uroce"), "doctor"],
                                env=p.env(1), capture_output=True, text=True, timeout=60)
        if not re.search(r"xdp program: none on", doctor.stdout):
            problem = f"uroce doctor does not see a free netdev:\n{doctor.stdout}"
    if not problem:
        other = subprocess.run(link.wrap(1) + ["ibv_devinfo", "-d", DEVICE], env=p.env(1),
                               capture_output=True, text=True, timeout=60)
        if other.returncode != 0:
            problem = (f"another process cannot open the device: ibv_devinfo rc="
                       f"{other.returncode}\n{other.stdout}{other.stderr}")
    rc_cli = reopen.release(cli, deadline - time.monotonic())
    srv.wait(deadline - time.monotonic())
    p.stop_all()
    if problem:
        return fail(f"{case.name}: {problem}", p)
    if rc_cli != 0 or srv.rc != 0:
        return fail(f"{case.name}: exit codes client={rc_cli} server={srv.rc}", p)
    if xdp_prog(link, 0) or xdp_prog(link, 1):
        return fail(f"{case.name}: XDP program left after the processes exited", p)
    print(f"PASS {case.name}\n{cli.output()}")
    return 0


# --- bad input ------------------------------------------------------------------------------------

def run_bad(case, link, build):
    what = case.kw["what"]
    ns = link.ns[0]
    ifname = link.ifs[0]
    expect = {
        "missing": r"no such netdev",
        "down": r"is down",
        "no_address": r"has no IP address",
        "no_xdp": r"cannot attach an XDP program: .*(MTU|too large)",
        "foreign_xdp": r"not uroce's",
    }[what]
    if what == "missing":
        ifname = "nosuch0"
    elif what == "down":
        sh("ip", "-n", ns, "link", "set", ifname, "down")
    elif what == "no_address":
        sh("ip", "-n", ns, "addr", "flush", "dev", ifname)
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{ifname}.disable_ipv6=1")
    elif what == "no_xdp":
        # Native XDP on a veth refuses a peer MTU above ~3.5 KB.
        sh("ip", "-n", link.router, "link", "set", link.rifs[0], "mtu", "9000")
    elif what == "foreign_xdp":
        sh("ip", "netns", "exec", ns, os.path.join(build, "bin", "uroce_xdp_tool"), "foreign",
           ifname)
    from e2e import link_tmp
    cfg = os.path.join(link_tmp(), f"{case.name}.toml")
    with open(cfg, "w") as f:
        f.write(f'[[device]]\nname = "{DEVICE}"\nnetdev = "{ifname}"\n')
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "lib"), UROCE_CONFIG=cfg)
    r = subprocess.run(link.wrap(0) + ["ibv_devinfo", "-d", DEVICE], env=env,
                       capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    lines = [ln for ln in out.splitlines() if ln.startswith("uroce:")]
    if r.returncode == 0 or len(lines) != 1 or not re.search(expect, lines[0]):
        return fail(f"{case.name}: ibv_devinfo rc={r.returncode}, want one 'uroce:' line "
                    f"matching /{expect}/:\n{out}")
    if what != "missing":
        xdp = sh("ip", "-n", ns, "-d", "link", "show", ifname)
        left = re.search(r"prog/xdp id \d+ name (\S+)", xdp)
        if left and (what != "foreign_xdp" or left.group(1) != "not_uroce"):
            return fail(f"{case.name}: XDP program left on {ifname}: {xdp}")
        if what == "foreign_xdp" and not left:
            return fail(f"{case.name}: the foreign program was removed")
    doctor = subprocess.run(link.wrap(0) + [os.path.join(build, "bin", "uroce"), "doctor"],
                            env=env, capture_output=True, text=True, timeout=60)
    doc_expect = {"missing": r"FAIL .*netdev.*no netdev", "down": r"FAIL .*link",
                  "no_address": r"FAIL .*address", "no_xdp": r"FAIL .*native xdp",
                  "foreign_xdp": r"FAIL .*xdp program"}[what]
    if doctor.returncode == 0 or not re.search(doc_expect, doctor.stdout):
        return fail(f"{case.name}: uroce doctor did not report /{doc_expect}/:\n{doctor.stdout}")
    os.remove(cfg)
    print(f"PASS {case.name}: {lines[0]}")
    return 0


RUNNERS = {"host_capture": run_capture, "host_beside": run_beside, "host_events": run_events,
           "host_flap": run_flap, "host_bottleneck": run_bottleneck, "host_bad": run_bad,
           "host_crash": run_crash, "host_reopen": run_reopen}
