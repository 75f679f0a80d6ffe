"""Two-host links for uroce's end-to-end tests: a memif pair, or veth pairs between two network
namespaces that this module creates and removes itself.

A link has two sides (0 = server, 1 = client). For each side it gives
  - the DPDK port string of the uroce device (the `port` key of the TOML config),
  - the command prefix that runs a program on that side (`ip netns exec <ns>` or nothing),
  - the address the programs' out-of-band TCP exchange uses (perftest/pingpong's socket).

Addresses (all from 198.18.0.0/15, the benchmarking range):
  - RoCE (owned by uroce in userspace, never given to the kernel): 198.18.0.1/15, 198.18.0.2/15.
  - Out-of-band TCP: memif runs both processes in the caller's namespace over 127.0.0.1 (or,
    NetnsMemifLink, in a namespace of their own whose lo carries the two RoCE addresses, for
    programs that reach the RDMA peer by the address of their TCP peer: qperf -cm1); veth
    runs them in two namespaces joined by a SECOND veth pair with kernel addresses
    198.19.<n>.1/24 and 198.19.<n>.2/24. The veth pair DPDK drives has no kernel IP address
    (the DESIGN's rule): the kernel must not answer ARP or send ICMP for uroce's addresses, and
    the programs' TCP must not share the wire uroce measures.

Cleanup: VethLink removes its namespaces on close(), on normal exit, and on SIGTERM/SIGINT/
SIGHUP; names carry the creating pid, and namespaces of dead creators are removed on start.
"""

import atexit
import os
import re
import signal
import subprocess
import tempfile

PREFIX = "ue2e"  # every namespace/interface this module creates starts with this
ROCE_ADDR = ["198.18.0.1", "198.18.0.2"]
ROCE_PREFIX_LEN = 15
MACS = ["02:00:5e:18:00:01", "02:00:5e:18:00:02"]


def sh(*args, check=True):
    """Runs a command, returns its stdout; raises with its stderr when check fails."""
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_stale_namespaces():
    """Deletes namespaces left by earlier runs whose process has died (e.g. SIGKILLed)."""
    for line in sh("ip", "netns", "list", check=False).splitlines():
        m = re.match(rf"({PREFIX}(\d+)[ab]\w*)", line)
        if m and not _pid_alive(int(m.group(2))):
            sh("ip", "netns", "del", m.group(1), check=False)


class Link:
    name = "?"
    mtu = 1024  # the RoCE path MTU written to both configs

    def fresh(self):
        """Called before each pair of programs starts (see MemifLink)."""

    def port(self, side):
        raise NotImplementedError

    def wrap(self, side):
        """Command prefix that runs a program on `side`."""
        return []

    def oob_host(self):
        """Address of the server side for the programs' TCP exchange."""
        return "127.0.0.1"

    def roce_addr(self, side, v6=False):
        """The RoCE (GID) address of `side`, which librdmacm programs are given."""
        return ROCE_ADDR[side]

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class MemifLink(Link):
    """net_memif between two processes of this namespace; the socket lives in a temp dir.
    zero_copy: the client side (1) runs memif's zero-copy mode (its mbufs are the shared
    memory; the driver adds --single-file-segments), link name `memif_zc`."""

    name = "memif"

    def __init__(self, mtu=4096, tmpdir=None, zero_copy=False):
        self.mtu = mtu
        self.zero_copy = zero_copy
        if zero_copy:
            self.name = "memif_zc"
        self.dir = tmpdir or tempfile.mkdtemp(prefix="ue2e-memif-")
        self.sock = os.path.join(self.dir, "memif.sock")

    def fresh(self):
        """A new socket path, so that no run meets a socket file a killed server left."""
        MemifLink._runs = getattr(MemifLink, "_runs", 0) + 1
        self.sock = os.path.join(self.dir, f"memif{MemifLink._runs}.sock")

    def server_listening(self):
        """True when a memif server listens on the socket. DPDK 22.11's memif uses an
        abstract socket by default (socket-abstract=yes): no file appears, `ss -x` shows it."""
        out = sh("ss", "-Hxl", check=False)
        return any(self.sock in line for line in out.splitlines())

    def port(self, side):
        role = "server" if side == 0 else "client"
        # bsize: memif buffers big enough for one 4096-MTU RoCE frame (4096 + 74 bytes).
        zc = ",zero-copy=yes" if self.zero_copy and side == 1 else ""
        return f"net_memif0,role={role},socket={self.sock},bsize=8192{zc}"


class NetnsMemifLink(MemifLink):
    """net_memif between two processes that both run in one network namespace created here, whose
    loopback interface carries the RoCE addresses 198.18.0.1/32 and 198.18.0.2/32 (kernel
    addresses on `lo` only: the DESIGN rule forbids them on the veths DPDK drives, and there is
    no veth here). Programs that reach their peer's RDMA address over TCP first (qperf -cm1
    resolves the host name of its TCP control connection with rdma_resolve_addr) then find the
    same address over TCP (lo, in the namespace) and over RDMA (memif, owned by uroce).
    The memif socket is abstract, so it lives in the namespace too. Removed like VethLink's.
    addr_dev "veth": the addresses go on one end of a veth pair inside the namespace instead
    (no DPDK port drives it), for programs that skip loopback interfaces when they look for
    their devices' addresses (libfabric's verbs provider, getifaddrs)."""

    name = "memif"
    _counter = 0

    def __init__(self, mtu=4096, tmpdir=None, addr_dev="lo"):
        super().__init__(mtu, tmpdir)
        remove_stale_namespaces()
        NetnsMemifLink._counter += 1
        # `a` after the pid: remove_stale_namespaces() recognises it; `m` keeps it apart from
        # VethLink's names.
        self.ns = f"{PREFIX}{os.getpid()}a{NetnsMemifLink._counter}m"
        self._closed = False
        _register_cleanup(self)
        try:
            sh("ip", "netns", "add", self.ns)
            sh("ip", "-n", self.ns, "link", "set", "lo", "up")
            dev = "lo"
            if addr_dev == "veth":
                dev = "uea"
                sh("ip", "-n", self.ns, "link", "add", dev, "type", "veth", "peer", "name", "ueb")
                for d in (dev, "ueb"):
                    sh("ip", "-n", self.ns, "link", "set", d, "up")
            for a in ROCE_ADDR:
                sh("ip", "-n", self.ns, "addr", "add", f"{a}/32", "dev", dev)
        except Exception:
            self.close()
            raise

    def server_listening(self):
        out = sh(*self.wrap(0), "ss", "-Hxl", check=False)
        return any(self.sock in line for line in out.splitlines())

    def wrap(self, side):
        return ["ip", "netns", "exec", self.ns]

    def oob_host(self):
        return ROCE_ADDR[0]

    def close(self):
        if self._closed:
            return
        self._closed = True
        sh("ip", "netns", "del", self.ns, check=False)


class VethLink(Link):
    """Two namespaces, a veth pair DPDK drives (no kernel IP) and a veth pair for TCP.

    pmd: "af_packet", "af_xdp" or "pcap" (net_pcap with iface=).
    """

    _counter = 0

    def __init__(self, pmd="af_packet", mtu=1024):
        remove_stale_namespaces()
        VethLink._counter += 1
        self.pmd = pmd
        self.name = pmd
        self.mtu = mtu
        tag = f"{PREFIX}{os.getpid()}"
        n = VethLink._counter
        self.ns = [f"{tag}a{n}", f"{tag}b{n}"]
        # Interface names are at most 15 characters: keep them short and unique per run.
        short = f"u{os.getpid() % 100000}{n}"
        self.data_if = [f"{short}d0", f"{short}d1"]
        self.oob_if = [f"{short}o0", f"{short}o1"]
        self.oob_addr = [f"198.19.{n % 250 + 1}.1", f"198.19.{n % 250 + 1}.2"]
        self._closed = False
        _register_cleanup(self)
        try:
            self._create()
        except Exception:
            self.close()
            raise

    def _create(self):
        for ns in self.ns:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        for ifs in (self.data_if, self.oob_if):
            sh("ip", "link", "add", ifs[0], "type", "veth", "peer", "name", ifs[1])
            for side in (0, 1):
                sh("ip", "link", "set", ifs[side], "netns", self.ns[side])
        for side in (0, 1):
            ns = self.ns[side]
            d = self.data_if[side]
            # The DPDK-driven end: up, no IP, no IPv6 autoconf, no kernel chatter on it.
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{d}.disable_ipv6=1")
            sh("ip", "-n", ns, "link", "set", d, "address", MACS[side])
            sh("ip", "-n", ns, "link", "set", d, "mtu", str(self.frame_mtu()))
            sh("ip", "-n", ns, "link", "set", d, "up")
            o = self.oob_if[side]
            sh("ip", "-n", ns, "addr", "add", f"{self.oob_addr[side]}/24", "dev", o)
            sh("ip", "-n", ns, "link", "set", o, "up")

    def frame_mtu(self):
        """The kernel MTU of the data veth: fits a RoCE frame of the path MTU (IP + UDP + BTH +
        RETH + ICRC = mtu + 60 bytes, rounded up), but never below 1500."""
        return max(1500, self.mtu + 128)

    def port(self, side):
        return f"net_{self.pmd}0,iface={self.data_if[side]}"

    def wrap(self, side):
        return ["ip", "netns", "exec", self.ns[side]]

    def oob_host(self):
        return self.oob_addr[0]

    def close(self):
        if self._closed:
            return
        self._closed = True
        for ns in self.ns:
            sh("ip", "netns", "del", ns, check=False)


class RoutedLink(Link):
    """Host mode through a router: namespaces A (side 0), R and B (side 1); veth A-R in subnet
    198.18.1.0/24 + 2001:2:0:1::/64, veth R-B in 198.18.2.0/24 + 2001:2:0:2::/64, kernel
    addresses on every end, default routes in A and B via R, and R forwarding. uroce on A and B
    is bound to their veths (`netdev =`): the RoCE addresses are the kernel's, and the programs'
    TCP exchange shares the veths with RoCE, as on a real host.

    GID table of each side (host mode's order): 0 the IPv6 link-local address, 1 the IPv4
    address, 2 the global IPv6 address. bottleneck: a tbf qdisc (rate, e.g. "200mbit") on R's
    interface towards B, whose tail drops are real loss. queues: RX/TX queue pairs of every veth
    (a NIC's channels; R's kernel spreads forwarded flows over its TX queues by their hash, and
    a veth delivers on the RX queue of the peer's TX queue)."""

    name = "routed"
    _counter = 0
    GID_V4 = 1
    GID_V6 = 2
    gid_index = GID_V4

    def __init__(self, mtu=1024, bottleneck=None, queues=1):
        remove_stale_namespaces()
        RoutedLink._counter += 1
        self.mtu = mtu
        self.queues = queues
        n = RoutedLink._counter
        tag = f"{PREFIX}{os.getpid()}"
        self.ns = [f"{tag}a{n}h", f"{tag}b{n}h"]
        self.router = f"{tag}a{n}r"  # 'a' after the pid: remove_stale_namespaces() finds it
        short = f"u{os.getpid() % 100000}{n}"
        self.ifs = [f"{short}h0", f"{short}h1"]   # A's and B's veth ends
        self.rifs = [f"{short}r0", f"{short}r1"]  # R's ends towards A and B
        self.addr = ["198.18.1.1", "198.18.2.1"]
        self.raddr = ["198.18.1.254", "198.18.2.254"]
        self.addr6 = ["2001:2:0:1::1", "2001:2:0:2::1"]
        self.raddr6 = ["2001:2:0:1::fe", "2001:2:0:2::fe"]
        self._closed = False
        _register_cleanup(self)
        try:
            self._create(bottleneck)
        except Exception:
            self.close()
            raise

    def _create(self, bottleneck):
        for ns in self.ns + [self.router]:
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            # No duplicate address detection: addresses are usable at once.
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0")
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0")
        sh("ip", "netns", "exec", self.router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        sh("ip", "netns", "exec", self.router, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        for side in (0, 1):
            h, r = self.ifs[side], self.rifs[side]
            q = [] if self.queues == 1 else ["numtxqueues", str(self.queues), "numrxqueues",
                                             str(self.queues)]
            sh("ip", "link", "add", h, *q, "type", "veth", "peer", "name", r, *q)
            sh("ip", "link", "set", h, "netns", self.ns[side])
            sh("ip", "link", "set", r, "netns", self.router)
            ns = self.ns[side]
            sh("ip", "-n", ns, "addr", "add", f"{self.addr[side]}/24", "dev", h)
            sh("ip", "-n", ns, "addr", "add", f"{self.addr6[side]}/64", "dev", h, "nodad")
            sh("ip", "-n", self.router, "addr", "add", f"{self.raddr[side]}/24", "dev", r)
            sh("ip", "-n", self.router, "addr", "add", f"{self.raddr6[side]}/64", "dev", r,
               "nodad")
            sh("ip", "-n", ns, "link", "set", h, "up")
            sh("ip", "-n", self.router, "link", "set", r, "up")
            sh("ip", "-n", ns, "route", "add", "default", "via", self.raddr[side])
            sh("ip", "-n", ns, "-6", "route", "add", "default", "via", self.raddr6[side])
        if bottleneck:
            sh("ip", "netns", "exec", self.router, "tc", "qdisc", "add", "dev", self.rifs[1],
               "root", "tbf", "rate", bottleneck, "burst", "32kb", "limit", "64kb")

    def device_toml(self, side):
        return f'netdev = "{self.ifs[side]}"\nmtu = {self.mtu}\n'

    def port(self, side):
        return f"netdev:{self.ifs[side]}"

    def roce_addr(self, side, v6=False):
        return (self.addr6 if v6 else self.addr)[side]

    def wrap(self, side):
        return ["ip", "netns", "exec", self.ns[side]]

    def oob_host(self):
        return self.addr[0]

    def close(self):
        if self._closed:
            return
        self._closed = True
        for ns in self.ns + [self.router]:
            sh("ip", "netns", "del", ns, check=False)


_live = []
_hooks = []  # run before the namespaces go (pair.py kills its programs there)


def on_cleanup(fn):
    """Registers fn to run at exit and on SIGTERM/SIGINT/SIGHUP, before namespaces go."""
    _hooks.append(fn)
    _install_handlers()


def _install_handlers():
    if getattr(_install_handlers, "done", False):
        return
    _install_handlers.done = True
    atexit.register(_cleanup_all)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)


def _register_cleanup(link):
    _install_handlers()
    _live.append(link)


def _cleanup_all():
    for fn in _hooks:
        fn()
    while _live:
        _live.pop().close()


def _on_signal(signum, _frame):
    _cleanup_all()
    raise SystemExit(128 + signum)


def make_link(name, mtu=None, netns=False, bottleneck=None, queues=1):
    """memif | memif_zc | af_packet | af_xdp | pcap | routed -> an open Link (close it, or use `with`).
    netns: memif inside a namespace whose lo carries the RoCE addresses (NetnsMemifLink);
    "veth": a veth inside it carries them. queues: the routed link's queue pairs per veth."""
    if name == "memif" and netns:
        return NetnsMemifLink(mtu=mtu or 4096, addr_dev="veth" if netns == "veth" else "lo")
    if name in ("memif", "memif_zc"):
        return MemifLink(mtu=mtu or 4096, zero_copy=name == "memif_zc")
    if name in ("af_packet", "af_xdp", "pcap"):
        return VethLink(pmd=name, mtu=mtu or 1024)
    if name == "routed":
        return RoutedLink(mtu=mtu or 1024, bottleneck=bottleneck, queues=queues)
    raise ValueError(f"unknown link {name}")
