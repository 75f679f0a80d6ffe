#!/usr/bin/python3
"""uroce's end-to-end tests: Debian 12's own, unmodified ibverbs-utils and perftest binaries (and
the project's programs) as two processes over uroce, on a memif pair or a veth pair between two
network namespaces (tests/e2e/lib/links.py explains the addressing).

  e2e.py --build <dir> list          one line per case: name<TAB>labels<TAB>timeout
  e2e.py --build <dir> run <case>    runs one case; exit 0 = pass
  e2e.py --build <dir> run-all [--labels REGEX]
  e2e.py --build <dir> demo          ib_write_bw over memif, as scripts/demo.sh shows it

tests/e2e/CMakeLists.txt registers every case of `list` with ctest. Case names read
<link>.<program>.<variant>; links: memif, af_packet, af_xdp (veth) and pcap (veth, net_pcap,
traffic captured and checked by tshark and scapy). UCX (ucx_perftest) and Open MPI cases:
lib/ucx_cases.py (label ucx). Labels: e2e, the link's family (memif or veth),
and `long` for everything beyond the short default set (memif defaults plus one veth and one
pcap case), so that a plain `ctest -LE long` stays within a few minutes on 2 cores.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))

import host_cases  # noqa: E402
import links  # noqa: E402
import pair as pairmod  # noqa: E402
import ucx_cases  # noqa: E402
from pair import DEVICE, GID_INDEX, Pair, fail, wait_one  # noqa: E402

MIB = 1 << 20

# An error line in any side's output fails the case (perftest and the pingpongs print these).
# ("not supported" is not one: ibv_devinfo -v lists absent capabilities that way.)
ERROR_RE = re.compile(r"(?i)(\berror\b|\bfailed\b|\bfailure\b|couldn't|could not|\bunable\b|"
                      r"segmentation|aborted|\bcore dumped\b)")


# A run's time limits times this (tests/stress/stress.py sets it: a case beside busy loops gets
# longer to finish; what it checks stays the same).
TIMEOUT_FACTOR = float(os.environ.get("UROCE_E2E_TIMEOUT_FACTOR", "1") or 1)


class Case:
    def __init__(self, name, kind, link, labels, timeout, **kw):
        self.name, self.kind, self.link, self.labels = name, kind, link, labels
        self.timeout = timeout * TIMEOUT_FACTOR
        self.kw = kw


def link_family(link):
    return "memif" if link.startswith("memif") else "veth"


def link_mtu(link):
    """Default RoCE path MTU of a case per link: memif 4096; the veth links 1024, so that the
    default cases also cover multi-packet messages at a small MTU. Cases that need more set
    Case(mtu=...): af_packet carries 4096 and af_xdp 2048 (drivers/dpdk/PMDS.md)."""
    return 4096 if link.startswith("memif") else 1024


# ---------------------------------------------------------------------------------------------
# The case table.

PINGPONGS = ["ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong"]
PERFTESTS = ["ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw",
             "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat"]


def pingpong_variants(tool, link):
    mtu = link_mtu(link)
    if tool == "ibv_ud_pingpong":
        # UD messages fit one packet: -s up to the path MTU (the tool refuses more). Its default
        # size (2048) needs a 2048+ MTU, so the default case runs on memif only.
        v = {"s1": ["-s", "1"], f"s{mtu}": ["-s", str(mtu)], "e": ["-e", "-s", str(mtu)],
             "chk": ["-c", "-s", str(mtu)]}
        if mtu >= 2048:
            v = {"default": [], **v}
        return v
    iters_1m = ["-n", "20"] if tool == "ibv_srq_pingpong" else ["-n", "100"]
    return {"default": [], "s1": ["-s", "1"], "s4096": ["-s", "4096"],
            "s1M": ["-s", str(MIB)] + iters_1m, "e": ["-e"], "chk": ["-c", "-s", "4096"]}


# ibv_xsrq_pingpong (XRC: an XRC SRQ per side, XRC_SEND/XRC_RECV QPs; each process opens its
# XRC domain on /tmp/xrc_domain): its default 4096-byte messages, 1 byte, 1 MiB, completion
# events, 200 round trips.
XSRQ_VARIANTS = {"default": [], "s1": ["-s", "1"], "s1M": ["-s", str(MIB), "-n", "20"],
                 "e": ["-e"], "n200": ["-n", "200"]}


def perftest_variants(tool):
    bw = tool.endswith("_bw")
    v = {"default": [],
         # every size 2 B .. 8 MiB: few iterations per size keep it bounded
         "a": ["-a", "-n", "20" if bw else "50"],
         "q4": ["-q", "4"] if bw else None,   # perftest's latency tests run one QP only
         "old": ["--use_old_post_send"]}
    if tool.startswith("ib_atomic"):
        v["a"] = None  # atomics are 8 bytes; perftest refuses -a for them
    return {k: a for k, a in v.items() if a is not None}


VERIFY_VARIANTS = {
    "write": ["-o", "write", "-s", "65536", "-n", "50"],
    "write1M": ["-o", "write", "-s", str(MIB), "-n", "10"],
    "read": ["-o", "read", "-s", "65536", "-n", "50"],
    "send": ["-o", "send", "-s", "4096", "-n", "200"],
    "atomic": ["-o", "atomic", "-n", "200"],
    # Memory windows: type 1 and 2 bound on the server, WRITE + READ through their rkeys, then
    # unbind, SEND_WITH_INV, LOCAL_INV and a WRITE past a window's end, each refused.
    "mw": ["-o", "mw", "-s", "10000", "-n", "20"],
}

SHORT = {  # the default (not `long`) set beyond the memif defaults
    "af_packet.ibv_rc_pingpong.default", "af_packet.ib_write_bw.default",
    "pcap.ibv_rc_pingpong.s4096",
    # af_xdp lost the passive side's frames until its pool had one mbuf per page (PMDS.md)
    "af_xdp.ib_read_bw.default",
}


def all_cases():
    cases = []

    def add(name, kind, link, timeout, **kw):
        labels = ["e2e", link_family(link)] + ([link] if link != "memif" else [])
        labels += kw.pop("labels", [])
        default_set = (link == "memif" and name.endswith(".default")) or name in SHORT or \
            kw.pop("short", False)
        if kw.pop("long_only", False):
            default_set = False
        if not default_set:
            labels.append("long")
        cases.append(Case(name, kind, link, labels, timeout, **kw))

    for link in ("memif", "af_packet", "af_xdp", "pcap"):
        add(f"{link}.ibv_devices.default", "devices", link, 60)
        add(f"{link}.ibv_devinfo.default", "devinfo", link, 60)
        # af_xdp is the veth variant: its defaults only; af_packet carries the full matrix.
        only_default = link == "af_xdp"
        for tool in PINGPONGS:
            for var, args in pingpong_variants(tool, link).items():
                if only_default and var not in ("default", "s1024"):
                    continue
                if link == "pcap":
                    # Captured runs stay small: scapy reads every frame (~1k frames/s).
                    n = "5" if "1M" in var else "100"
                    args = [a for i, a in enumerate(args)
                            if a != "-n" and (i == 0 or args[i - 1] != "-n")] + ["-n", n]
                    if tool == "ibv_srq_pingpong":
                        args += ["-q", "2"]  # 2 QPs instead of 16
                add(f"{link}.{tool}.{var}", "pingpong", link, 180 if "1M" in var else 120,
                    tool=tool, args=args)
        for var, args in XSRQ_VARIANTS.items():
            if only_default and var != "default":
                continue
            if link == "pcap" and var not in ("default", "s1"):
                continue  # captured runs stay small
            add(f"{link}.ibv_xsrq_pingpong.{var}", "xsrq", link, 180 if "1M" in var else 120,
                short=var == "default" and link in ("memif", "af_packet", "pcap"), args=args)
        for tool in PERFTESTS:
            for var, args in perftest_variants(tool).items():
                if only_default and var != "default":
                    continue
                if link == "pcap" and var == "a":
                    continue  # -a moves ~300k frames: too many for scapy; memif/af_packet run it
                if link == "pcap":
                    # Captured runs stay small so that scapy checks every frame in seconds.
                    args = args + (["-n", "20"] if "-n" not in args else [])
                    if tool.endswith("_bw") and not tool.startswith("ib_atomic"):
                        args += ["-s", "4096"]  # atomics are 8 bytes, perftest refuses -s
                add(f"{link}.{tool}.{var}", "perftest", link, 300 if var == "a" else 120,
                    tool=tool, args=args)
    # ibv_ud_pingpong's default message (2048 bytes) needs a path MTU of 2048 or more: on veth
    # af_packet carries mtu 4096 (framesz 8192) and af_xdp 2048 (one page per frame).
    add("af_packet.ibv_ud_pingpong.default", "pingpong", "af_packet", 120, mtu=4096,
        tool="ibv_ud_pingpong", args=[])
    add("af_xdp.ibv_ud_pingpong.default", "pingpong", "af_xdp", 120, mtu=2048,
        tool="ibv_ud_pingpong", args=[])
    add("pcap.ibv_ud_pingpong.default", "pingpong", "pcap", 120, mtu=4096,
        tool="ibv_ud_pingpong", args=["-n", "100"])
    # RoCE v1 (docs/design.md): roce_v1 = true puts the RoCE v1 GID of the one address at
    # index 1 (GID 0 stays RoCEv2); the pingpongs run over it with -g 1. On pcap the captured
    # frames must be RoCE v1 (EtherType 0x8915), decoded by tshark and scapy, ICRC checked.
    add("memif.ibv_devinfo.v1", "devinfo", "memif", 60, short=True, toml="roce_v1 = true",
        roce_v1=True)
    for link in ("memif", "af_packet", "pcap"):
        # Captured runs stay small (scapy reads every frame); elsewhere the tools' 1000
        # iterations, so that the run takes long enough to measure.
        n = ["-n", "100"] if link == "pcap" else []
        for tool, args in (("ibv_rc_pingpong", ["-s", "4096"] + n), ("ibv_uc_pingpong", n),
                           ("ibv_ud_pingpong", ["-s", "1024"] + n)):
            add(f"{link}.{tool}.v1", "pingpong", link, 120, tool=tool, args=args, gid=1,
                toml="roce_v1 = true", roce_v1=True,
                short=tool == "ibv_rc_pingpong" and link in ("memif", "pcap"))
    for var in ("write", "read"):
        add(f"af_xdp.uroce_verify.{var}", "verify", "af_xdp", 120, short=var == "read",
            args=VERIFY_VARIANTS[var])
    # memif with the client in zero-copy mode (its frames are built in and read from the shared
    # memory; the driver adds --single-file-segments): data checked both ways.
    for var in ("write", "read", "send"):
        add(f"memif_zc.uroce_verify.{var}", "verify", "memif_zc", 120, short=var != "send",
            args=VERIFY_VARIANTS[var])
    for link in ("memif", "af_packet"):
        # examples/uroce_verify: data checked byte for byte on both sides.
        for var, args in VERIFY_VARIANTS.items():
            add(f"{link}.uroce_verify.{var}", "verify", link, 120,
                short=var == "write" or (var == "mw" and link == "memif"), args=args)
        # The default set kills the peer on af_packet: DPDK 22.11's memif client does not always
        # reconnect to a restarted server (drivers/dpdk/PMDS.md), so round 2 of the memif case
        # fails in some runs through no fault of uroce's; it stays in the long set.
        add(f"{link}.peer_kill.default", "peer_kill", link, 120, short=(link == "af_packet"),
            long_only=(link == "memif"))
        # Two RX/TX queue pairs per port (config `queues`): several QPs, data checked.
        add(f"{link}.uroce_verify.queues2", "verify", link, 120, short=True, queues=2,
            args=VERIFY_VARIANTS["write"])
        add(f"{link}.ib_write_bw.queues2", "perftest", link, 120, queues=2,
            tool="ib_write_bw", args=["-q", "4"])
        # 802.1Q: every frame tagged VID 42 (RoCE with PCP = its priority 3, ARP with PCP 0),
        # no static neighbour (ARP over the VLAN), trust pcp with PCP 3 -> priority 5: each
        # side must count what it received on priority 5 and nothing on another priority.
        add(f"{link}.uroce_verify.vlan", "verify", link, 120, short=(link == "memif"),
            args=VERIFY_VARIANTS["write"], arp=True, env={"UROCE_PRINT_COUNTERS": "1"},
            toml='vlan = 42\ntrust = "pcp"\npcp_to_prio = [0, 1, 2, 5, 4, 5, 6, 7]',
            expect=r"counters at close:.* rx_prio5_packets=[1-9]",
            reject=r"rx_prio[0-46-7]_packets=")
        # issue #3 also asks for an async event on the failed QP: its own case.
        add(f"{link}.peer_kill.async_event", "peer_kill", link, 120,
            short=(link == "af_packet"), async_event=True)
    # Soak (issue #8): mixed operations over memif with RSS and fds checked stable; CI runs the
    # 20 s form, label soak the 10 min one.
    add("memif.soak.short", "soak", "memif", 90, short=True, secs=20)
    # Hostile frames injected on the wire of a running transfer (raw socket: veth only).
    add("af_packet.hostile.default", "hostile", "af_packet", 120, short=True, secs=12)
    cases.append(Case("memif.soak.long", "soak", "memif", ["e2e", "memif", "soak"], 700,
                      secs=600))
    # librdmacm (issue #9): Debian's rdmacm-utils, perftest -R and qperf over uroce's
    # librdmacm.so.1, the connection made by the CM on QP1 (lib/rdmacm).
    for name, kw in RDMACM_CASES.items():
        add(f"memif.{name}", "rdmacm", "memif", kw.pop("timeout", 120), short=True, **kw)
    # qperf -cm1 (see run_qperf): both processes in a namespace whose lo has the RoCE
    # addresses, so that qperf's TCP peer is also a uroce address; 1 s per test.
    for test in ("rc_bw", "rc_lat", "rc_rdma_write_bw", "rc_rdma_read_bw"):
        add(f"memif.qperf.{test}", "qperf", "memif", 60, short=True, netns=True, test=test,
            args=["-t", "1"])
    # libfabric's fi_pingpong, verbs provider: UD (dgram) and RC through the RDMA CM (msg),
    # 100 round trips of 64 B, data checked.
    for ep in ("dgram", "msg"):
        add(f"memif.fi_pingpong.{ep}", "fabric", "memif", 60, short=True, netns="veth", ep=ep,
            args=["-I", "100", "-S", "64"], rows=1)
    for name in ("rping.default", "udaddy.default"):
        kw = dict(RDMACM_CASES_TEMPLATE()[name])
        add(f"af_packet.{name}", "rdmacm", "af_packet", kw.pop("timeout", 120),
            short=name.startswith("rping"), **kw)
    # Host mode (docs/host-mode.md): uroce bound to the kernel's veths of two namespaces with
    # a Linux router between them, the kernel's addresses as GIDs, its routes and neighbours;
    # the programs' TCP exchange shares the veths. GID 1 is the IPv4 address, 2 the IPv6 one.
    v6 = {"gid": links.RoutedLink.GID_V6}
    add("routed.ibv_rc_pingpong.default", "pingpong", "routed", 120, short=True,
        tool="ibv_rc_pingpong", args=[])
    add("routed.ibv_rc_pingpong.v6", "pingpong", "routed", 120, short=True,
        tool="ibv_rc_pingpong", args=["-s", "4096"], **v6)
    add("routed.ibv_ud_pingpong.v6", "pingpong", "routed", 120, tool="ibv_ud_pingpong",
        args=["-s", "1024"], **v6)
    for tool in ("ib_write_bw", "ib_read_bw", "ib_send_bw"):
        add(f"routed.{tool}.default", "perftest", "routed", 120, short=True, tool=tool, args=[])
    add("routed.ib_write_bw.v6", "perftest", "routed", 120, short=True, tool="ib_write_bw",
        args=[], **v6)
    for var in ("write", "read", "send", "atomic", "mw"):
        add(f"routed.uroce_verify.{var}", "verify", "routed", 120, short=var in ("write", "read"),
            args=VERIFY_VARIANTS[var])
    add("routed.uroce_verify.v6", "verify", "routed", 120, short=True,
        args=VERIFY_VARIANTS["write1M"], **v6)
    # Exclusive mode on veths of two queue pairs: an af_xdp ethdev per queue, both sockets in
    # the one attached program's map (drivers/host/host_port.cc).
    add("routed.uroce_verify.twoqueues", "verify", "routed", 120, short=True,
        args=VERIFY_VARIANTS["write"], queues=2)
    for name in ("rping.default", "ib_write_bw.R", "ib_send_bw.R", "ucmatose.default"):
        kw = dict(RDMACM_CASES_TEMPLATE()[name])
        add(f"routed.{name}", "rdmacm", "routed", kw.pop("timeout", 120), short=True, **kw)
    kw = dict(RDMACM_CASES_TEMPLATE()["rping.default"])
    add("routed.rping.v6", "rdmacm", "routed", kw.pop("timeout", 120), short=True, v6=True, **kw)
    host_cases.cases(add)
    # qperf -cm1 between the hosts A and B by their kernel addresses (no special namespace).
    for test in ("rc_bw", "rc_lat"):
        add(f"routed.qperf.{test}", "qperf", "routed", 60, short=True, test=test, args=["-t", "1"])
    # UCX (ucx_perftest) and Open MPI over uroce (issue #9): lib/ucx_cases.py.
    ucx_cases.cases(add)
    return cases


# A result row of rstream/riostream: name bytes xfers iters total time Gb/sec usec/xfer.
RSTREAM_ROW = r"(?m)^\S+(\s+[\d.]+[kmg]?){4}\s+[\d.]+s\s+[\d.]+\s+[\d.]+$"


def rstream_case(prog, *args):
    """rstream/riostream with the same options on both sides; both print one result row."""
    return dict(server=[prog, "-b", "{addr}", "-p", "{port}", *args],
                client=[prog, "-s", "{addr}", "-p", "{port}", *args],
                expect=RSTREAM_ROW, expect_client=RSTREAM_ROW)


# librdmacm programs (rdmacm-utils, perftest -R, qperf -cm1): {addr} is the server's RoCE
# address (198.18.0.1), {port} the CM port. expect/expect_client: regexes each side's output
# must match; rc: the exit codes wanted (server, client).
def RDMACM_CASES_TEMPLATE():
    return {
        # rping: 100 pings, each payload checked by rping itself (-V), printed (-v).
        "rping.default": dict(
            server=["rping", "-s", "-a", "{addr}", "-p", "{port}", "-V", "-C", "100"],
            client=["rping", "-c", "-a", "{addr}", "-p", "{port}", "-V", "-v", "-C", "100"],
            expect_client=r"ping data: rdma-ping-99: ",
            count_client=(r"ping data: rdma-ping-\d+: ", 100)),
        "ucmatose.default": dict(
            server=["ucmatose", "-b", "{addr}", "-p", "{port}"],
            client=["ucmatose", "-s", "{addr}", "-p", "{port}"],
            expect=r"data transfers complete", expect_client=r"data transfers complete"),
        "ucmatose.c4": dict(
            server=["ucmatose", "-b", "{addr}", "-p", "{port}", "-c", "4", "-C", "50", "-S", "4096"],
            client=["ucmatose", "-s", "{addr}", "-p", "{port}", "-c", "4", "-C", "50", "-S", "4096"],
            expect=r"data transfers complete", expect_client=r"data transfers complete"),
        # udaddy's -p is the port space; it always uses port 7174.
        "udaddy.default": dict(
            server=["udaddy", "-b", "{addr}"],
            client=["udaddy", "-s", "{addr}"], port=7174,
            expect=r"data transfers complete", expect_client=r"data transfers complete"),
        # perftest -R: the connection by rdma_cm (librdmacm), not a TCP exchange. Its server
        # listens twice on the port (a control connection, then the data QPs); the client's
        # second connect waits for the second listen (connect_when_listening), or perftest's
        # own race could fail the run (docs/testing.md).
        "ib_write_bw.R": dict(
            server=["ib_write_bw", "-d", DEVICE, "-R", "-p", "{port}"],
            client=["ib_write_bw", "-d", DEVICE, "-R", "-p", "{port}", "{addr}"],
            expect_client=r"#bytes", connect_when_listening=True),
        "ib_send_bw.R": dict(
            server=["ib_send_bw", "-d", DEVICE, "-R", "-p", "{port}"],
            client=["ib_send_bw", "-d", DEVICE, "-R", "-p", "{port}", "{addr}"],
            expect_client=r"#bytes", connect_when_listening=True),
        # Bad input: a connect to a port nobody listens on is answered with a REJ
        # ("invalid service ID", 8): rping reports RDMA_CM_EVENT_REJECTED and fails; the
        # listening server on another port is untouched and killed at the end.
        "rping.rejected": dict(
            server=["rping", "-s", "-a", "{addr}", "-p", "{port}"],
            client=["rping", "-c", "-a", "{addr}", "-p", "{port1}", "-C", "1"],
            client_only=True, client_rc_nonzero=True, errors_ok=True,
            expect_client=r"RDMA_CM_EVENT_REJECTED, error 8"),
        # A peer that is gone before the REQ: the CM resends it, then reports UNREACHABLE
        # (status -ETIMEDOUT) after its retries (~4 s); nothing hangs.
        "rping.unreachable": dict(
            server=["rping", "-s", "-a", "{addr}", "-p", "{port}"],
            client=["rping", "-c", "-a", "{addr}", "-p", "{port}", "-C", "1"],
            kill_server_first=True, client_only=True, client_rc_nonzero=True, errors_ok=True,
            expect_client=r"RDMA_CM_EVENT_UNREACHABLE, error -110"),
        # rsockets (lib/rdmacm/rsocket.h): rstream's and riostream's streams over RDMA WRITE
        # WITH IMMEDIATE into the peer's receive ring, riostream's also over riowrite into
        # the peer's iomapped buffer; data checked by the programs themselves (-T v).
        # rstream.default runs rstream's own latency and bandwidth set (64 B .. 1 MiB).
        "rstream.default": dict(
            server=["rstream", "-b", "{addr}", "-p", "{port}"],
            client=["rstream", "-s", "{addr}", "-p", "{port}"],
            expect=RSTREAM_ROW, expect_client=RSTREAM_ROW, count=(RSTREAM_ROW, 8)),
        # -S all: 64 B .. 6 MiB in 66 latency and bandwidth tests, 13-45 s here (long set only).
        "rstream.all": dict(
            server=["rstream", "-b", "{addr}", "-p", "{port}", "-S", "all"],
            client=["rstream", "-s", "{addr}", "-p", "{port}", "-S", "all"],
            expect=RSTREAM_ROW, expect_client=RSTREAM_ROW, count=(RSTREAM_ROW, 66),
            long_only=True, timeout=300),
        # riostream's own set: its latency loop spins on the iomapped buffer without calling
        # the library, so uroce's progress thread (follow-up polling) places each write.
        "riostream.default": dict(
            server=["riostream", "-b", "{addr}", "-p", "{port}"],
            client=["riostream", "-s", "{addr}", "-p", "{port}"],
            expect=RSTREAM_ROW, expect_client=RSTREAM_ROW, count=(RSTREAM_ROW, 8)),
        "rstream.verify": rstream_case("rstream", "-S", "65536", "-C", "200", "-T", "v"),
        # A 4 KiB socket buffer (8 KiB rings): messages split at every ring half, credits
        # and ring space are returned all the time.
        "rstream.small_buf": rstream_case("rstream", "-B", "4096", "-S", "65536", "-C", "100",
                                          "-T", "v"),
        # -T a -T b: every transfer waits in a blocking rpoll (completion-channel sleeps).
        "rstream.rpoll": rstream_case("rstream", "-S", "4096", "-C", "2000", "-T", "v", "-T", "a",
                                      "-T", "b"),
        "riostream.verify": rstream_case("riostream", "-S", "65536", "-C", "200", "-T", "v"),
        # Round trips where each side spins on the last byte of its iomapped buffer (riowrite
        # of 64 B, inline). Few: only the progress thread places each write (docs/design.md).
        "riostream.lat": rstream_case("riostream", "-S", "64", "-C", "1", "-I", "20", "-T", "v"),
        # A connect to a port nobody listens on: the CM's REJ makes rstream's non-blocking
        # rconnect fail (rpoll, then SO_ERROR = ECONNREFUSED); it must not hang.
        "rstream.refused": dict(
            server=["rstream", "-b", "{addr}", "-p", "{port}"],
            client=["rstream", "-s", "{addr}", "-p", "{port1}", "-S", "64", "-C", "1"],
            client_only=True, client_rc_nonzero=True, errors_ok=True,
            expect_client=r"Connection refused"),
        # fio's rdma engine (the packaged storage benchmark): the client asks rdma_connect for
        # 10 retries, which the kernel's CM clamps to 7 (docs/limits.md, "What the kernel lets
        # through"); 64 MiB in 64 KiB RDMA WRITEs, READs or SENDs, 16 in flight. The server
        # (rw=read) ends when the client's last message arrives. In send mode fio accepts with
        # rnr_retry_count 0, so one SEND that finds no receive posted fails the run (an RNR
        # NAK is final, as with the kernel): the server keeps 64 receives posted, and still
        # the client's first SENDs race the server's first receives (fio sleeps 0.5 s for
        # that), which a loaded machine can lose: long set only.
        **{f"fio.{verb}": dict(
            server=["fio", "--name=server", "--ioengine=rdma", "--port={port}", "--rw=read",
                    "--bs=64k", "--size=64m", f"--iodepth={64 if verb == 'send' else 16}",
                    "--thread"],
            client=["fio", "--name=client", "--ioengine=rdma", "--hostname={addr}",
                    "--port={port}", f"--verb={verb}", "--rw=write", "--bs=64k", "--size=64m",
                    "--iodepth=16", "--thread"],
            expect_client=r"WRITE: bw=[1-9]", long_only=verb == "send")
           for verb in ("write", "read", "send")},
        # cmtime: 100 connections made and torn down, each step timed (its server serves
        # until killed; rdma_listen with backlog 0, the kernel's maximum).
        "cmtime.default": dict(
            server=["cmtime", "-b", "{addr}", "-p", "{port}"],
            client=["cmtime", "-s", "{addr}", "-p", "{port}", "-c", "100"],
            client_only=True, expect_client=r"(?s)connect\s+:\s+[\d.]+.*destroy\s+:"),
        # rdma_xserver/rdma_xclient over RC, and over XRC (-c x: rdma_create_ep's XRC_RECV QP
        # per request and its XRC SRQ on the server, an XRC_SEND QP sending to the SRQ number
        # the accept carries; RDMA_PS_IB): each sends one message and ends with status 0.
        **{f"rdma_xserver.{mode}": dict(
            server=["rdma_xserver", "-p", "{port}", "-c", flag],
            client=["rdma_xclient", "-s", "{addr}", "-p", "{port}", "-c", flag],
            expect=r"rdma_xserver: end 0", expect_client=r"rdma_xclient: end 0")
           for mode, flag in (("rc", "r"), ("xrc", "x"))},
        "rdma_server.default": dict(
            server=["rdma_server", "-s", "{addr}", "-p", "{port}"],
            client=["rdma_client", "-s", "{addr}", "-p", "{port}"],
            expect=r"rdma_server: end 0", expect_client=r"rdma_client: end 0"),
    }


RDMACM_CASES = RDMACM_CASES_TEMPLATE()


# ---------------------------------------------------------------------------------------------
# Output checks.

PINGPONG_RE = re.compile(r"(\d+) bytes in ([\d.]+) seconds = ([\d.]+) Mbit/sec")


def check_pingpong(out):
    m = PINGPONG_RE.findall(out)
    if not m:
        return "no 'bytes in .. seconds = .. Mbit/sec' line"
    # Mbit/sec has two decimals: 100 one-byte messages read 0.00; judge bytes and time.
    nbytes, secs = int(m[-1][0]), float(m[-1][1])
    if nbytes <= 0 or secs <= 0:
        return f"nothing moved: {m[-1]}"
    return None


def check_xsrq(out):
    """ibv_xsrq_pingpong prints both ends' QPNs and SRQ numbers, then "success" when every
    message arrived and the termination handshake passed."""
    if not re.search(r"^success$", out, re.M):
        return "no 'success' line"
    remote = re.search(r"remote: LID \w+, QPN RECV (\w+) SEND (\w+), PSN \w+, SRQN (\w+)", out)
    if not remote:
        return "no 'remote: ... SRQN' line"
    return None


def perftest_rows(out):
    """The numeric rows of perftest's result table."""
    rows, in_table = [], False
    for line in out.splitlines():
        if line.strip().startswith("#bytes"):
            in_table = True
            continue
        if in_table:
            parts = line.split()
            try:
                rows.append([float(x) for x in parts])
            except ValueError:
                if line.startswith("---"):
                    in_table = False
    return [r for r in rows if len(r) >= 5]


def check_perftest(tool, out, variant_args):
    rows = perftest_rows(out)
    if not rows:
        return "no result table"
    for r in rows:
        # bw: #bytes #iterations BW_peak BW_average MsgRate; lat: #bytes #iter t_min t_max
        # t_typical ... For bw the message rate is checked: perftest prints MB/s with two
        # decimals, which reads 0.00 for a few thousand 4-byte messages a second.
        figure = r[4]  # MsgRate[Mpps] for bw, t_typical[usec] for lat
        if figure <= 0:
            return f"zero figure in row {r}"
    if "-a" in variant_args and len(rows) < 20:
        return f"-a printed {len(rows)} sizes, expected 2 B .. 8 MiB"
    return None


def error_lines(text):
    return [ln for ln in text.splitlines() if ERROR_RE.search(ln)]


# ---------------------------------------------------------------------------------------------
# Runners.

def run_xsrq(case, link, build):
    port = pairmod.free_tcp_port()
    base = ["ibv_xsrq_pingpong", "-d", DEVICE, "-i", "1", "-g", gid(case, link), "-p", str(port)]
    base += case.kw["args"]

    def check(outs):
        return check_xsrq(outs[0]) or check_xsrq(outs[1])
    return run_two(case, link, build, base, base, port, check)[0]


def tool_path(name, build):
    """System binaries by name; the project's programs from <build>/bin."""
    local = os.path.join(build, "bin", name)
    return local if os.path.exists(local) else name


def run_two(case, link, build, server_args, client_args, port, check):
    p = Pair(link, build, queues=case.kw.get("queues", 1), extra_toml=case.kw.get("toml", ""),
             arp=case.kw.get("arp", False), env=case.kw.get("env"))
    srv, cli = p.run(server_args, client_args + [link.oob_host()], port, case.timeout - 10)
    outs = [s.output() if s else "" for s in p.sides]
    if p.timed_out:
        return fail(f"{case.name}: timed out", p), p
    if srv != 0 or cli != 0:
        return fail(f"{case.name}: exit codes server={srv} client={cli}", p), p
    errs = error_lines(outs[0]) + error_lines(outs[1])
    if errs:
        return fail(f"{case.name}: error lines: {errs[:3]}", p), p
    problem = check(outs)
    if problem:
        return fail(f"{case.name}: {problem}", p), p
    print(f"PASS {case.name}")
    print(outs[1])
    return 0, p


def gid(case, link):
    """The GID index a case's programs use: the case's own (routed IPv6 cases), else the
    link's (host mode: the IPv4 address), else GID_INDEX."""
    return str(case.kw.get("gid", getattr(link, "gid_index", GID_INDEX)))


def run_pingpong(case, link, build):
    port = pairmod.free_tcp_port()
    base = [case.kw["tool"], "-d", DEVICE, "-i", "1", "-g", gid(case, link), "-p", str(port)]
    base += case.kw["args"]

    def check(outs):
        return check_pingpong(outs[0]) or check_pingpong(outs[1])
    return run_two(case, link, build, base, base, port, check)[0]


def run_perftest(case, link, build):
    port = pairmod.free_tcp_port()
    tool = case.kw["tool"]
    base = [tool, "-d", DEVICE, "-i", "1", "-x", gid(case, link), "-p", str(port)]
    base += case.kw["args"]
    return run_two(case, link, build, base, base, port,
                   lambda outs: check_perftest(tool, outs[1], case.kw["args"]))[0]


def run_single(case, link, build, argv, patterns):
    p = Pair(link, build, extra_toml=case.kw.get("toml", ""))
    s = p.start(0, argv)
    out, failed = wait_one(case.name, p, s, case.timeout - 10)
    if failed:
        return failed
    if error_lines(out):
        return fail(f"{case.name}: error lines {error_lines(out)[:3]}", p)
    for pat in patterns:
        if not re.search(pat, out):
            return fail(f"{case.name}: output lacks /{pat}/", p)
    print(f"PASS {case.name}\n{out}")
    return 0


def run_devices(case, link, build):
    return run_single(case, link, build, ["ibv_devices"], [rf"\n\s*{DEVICE}\s+[0-9a-f]{{16}}"])


def run_devinfo(case, link, build):
    a = links.ROCE_ADDR[0]
    patterns = [
        rf"hca_id:\s+{DEVICE}", r"link_layer:\s+Ethernet", r"transport:\s+InfiniBand",
        r"active_mtu:\s+\d+ \(\d\)", rf"GID\[\s*0\]:\s+::ffff:{re.escape(a)}, RoCE v2"]
    if case.kw.get("roce_v1"):
        # The address's RoCE v1 GID after its RoCEv2 one; ibv_devinfo prints a RoCE v1 GID as
        # eight hex groups, not as an address.
        q = [int(x) for x in a.split(".")]
        raw = "0000:" * 5 + f"ffff:{q[0]:02x}{q[1]:02x}:{q[2]:02x}{q[3]:02x}"
        patterns.append(rf"GID\[\s*1\]:\s+{raw}, RoCE v1")
    return run_single(case, link, build, ["ibv_devinfo", "-v"], patterns)


class Capture:
    """dumpcap on side 0's data veth while a case runs."""

    def __init__(self, link, path):
        self.path = path
        self.log = path + ".log"
        self.proc = subprocess.Popen(
            link.wrap(0) + ["dumpcap", "-i", link.data_if[0], "-w", path],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with open(self.log) as f:
                if "Capturing on" in f.read():
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)  # polling dumpcap's "Capturing on" with a deadline
        raise RuntimeError(f"dumpcap did not start: {open(self.log).read()}")

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def settle(cap_path, timeout=15):
    """Waits until dumpcap has written the run's frames: libpcap hands TPACKET_V3 blocks over
    when they fill or their timeout expires, and frames of a block still open when dumpcap is
    interrupted are lost, so a short run could leave an empty capture. Polls the live file
    until its RoCEv2 frame count is non-zero and unchanged across two reads, or the deadline."""
    import roce_pcap
    deadline = time.monotonic() + timeout
    last = -1
    while time.monotonic() < deadline:
        try:
            n = roce_pcap.roce_frames(cap_path)
        except RuntimeError:
            n = -1  # the file's first block is not written yet
        if n > 0 and n == last:
            return
        last = n
        time.sleep(0.3)  # polling the capture file's frame count with a deadline


def run_captured(case, link, build, inner):
    import roce_pcap
    cap_path = os.path.join(link_tmp(), f"{case.name}.pcapng")
    cap = Capture(link, cap_path)
    try:
        rc = inner(case, link, build)
        if rc == 0:
            settle(cap_path)
    finally:
        cap.stop()
    if rc != 0:
        return rc
    version = 1 if case.kw.get("roce_v1") else 2
    ok1, m1 = roce_pcap.check_tshark(cap_path, version=version)
    ok2, m2 = roce_pcap.check_icrc(cap_path, version=version)
    print(m1)
    print(m2)
    if not (ok1 and ok2):
        return fail(f"{case.name}: capture {cap_path} does not check out: {m1}; {m2}")
    os.remove(cap_path)  # kept only when it fails
    return 0


def link_tmp():
    d = os.environ.get("UROCE_E2E_TMP", "/tmp/uroce-e2e")
    os.makedirs(d, exist_ok=True)
    return d


def run_verify(case, link, build):
    prog = os.path.join(build, "bin", "uroce_verify")
    if not os.path.exists(prog):
        return fail(f"{case.name}: {prog} is not built (examples/uroce_verify)")
    port = pairmod.free_tcp_port()
    args = [prog, "-d", DEVICE, "-g", gid(case, link), "-p", str(port)] + case.kw["args"]

    def check(outs):
        for side, out in enumerate(outs):
            if case.kw.get("expect") and not re.search(case.kw["expect"], out):
                return f"side {side} output lacks /{case.kw['expect']}/"
            if case.kw.get("reject") and re.search(case.kw["reject"], out):
                return f"side {side} output has /{case.kw['reject']}/"
        return None
    return run_two(case, link, build, args, args, port, check)[0]


def proc_sample(pid):
    """(VmRSS KiB, open fds) of a running process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return None


def run_soak(case, link, build):
    """uroce_verify -o mixed for case.kw["secs"] seconds (WRITE + READ back, FETCH_ADD, SEND per
    iteration, every byte checked) while each side's RSS and open fds are sampled; after the
    first quarter (start-up: EAL, pools, QP) neither may grow: RSS by at most 1 MiB, fds not
    at all (fewer is no leak: the last sample can catch a side closing its port at the end)."""
    prog = os.path.join(build, "bin", "uroce_verify")
    secs = case.kw["secs"]
    port = pairmod.free_tcp_port()
    args = [prog, "-d", DEVICE, "-g", str(GID_INDEX), "-p", str(port), "-o", "mixed",
            "-s", "65536", "-D", str(secs)]
    p = Pair(link, build)
    deadline = time.monotonic() + case.timeout - 10
    srv = p.start(0, args)
    if not p.wait_listen(srv, port, deadline):
        p.stop_all()
        return fail(f"{case.name}: server did not listen", p)
    cli = p.start(1, args + [link.oob_host()])
    t0 = time.monotonic()
    samples = {0: [], 1: []}
    while time.monotonic() < deadline and (srv.poll() is None or cli.poll() is None):
        for side, s in ((0, srv), (1, cli)):
            x = proc_sample(s.proc.pid) if s.poll() is None else None
            if x:
                samples[side].append((time.monotonic() - t0, *x))
        time.sleep(0.5)  # the sampling period of a measurement, not a synchronisation
    p.stop_all()
    if srv.rc != 0 or cli.rc != 0 or "OK" not in cli.output():
        return fail(f"{case.name}: exit codes server={srv.rc} client={cli.rc}", p)
    m = re.search(r"op=mixed size=\d+ iters=(\d+)", cli.output())
    print(f"{case.name}: {m.group(1) if m else '?'} iterations in {secs} s")
    for side, name in ((0, "server"), (1, "client")):
        steady = [x for x in samples[side] if x[0] >= secs / 4]
        if len(steady) < 4:
            return fail(f"{case.name}: {len(steady)} samples of the {name} after start-up", p)
        (t1, rss1, fd1), (t2, rss2, fd2) = steady[0], steady[-1]
        print(f"{case.name}: {name} RSS {rss1} KiB at {t1:.1f} s -> {rss2} KiB at {t2:.1f} s "
              f"(max {max(x[1] for x in steady)}), fds {fd1} -> {fd2}")
        if rss2 - rss1 > 1024 or fd2 > fd1:
            return fail(f"{case.name}: {name} grew: RSS {rss1} -> {rss2} KiB, fds {fd1} -> {fd2}",
                        p)
    print(f"PASS {case.name}")
    return 0


def server_qpn(build, pid, deadline):
    """The QPN of the RTS QP of process `pid` (from `uroce show qp --json`), None on timeout."""
    import json
    while time.monotonic() < deadline:
        p = subprocess.run([os.path.join(build, "bin", "uroce"), "show", "qp", "--json"],
                           capture_output=True, text=True, timeout=10)
        try:
            for q in json.loads(p.stdout)["qps"] if p.returncode == 0 else []:
                if q["pid"] == pid and q["state"] == "RTS":
                    return q["qpn"]
        except (json.JSONDecodeError, KeyError):
            pass
        time.sleep(0.1)  # polling a condition with a deadline
    return None


# What each kind of hostile frame must leave in the victim's counters (lib/hostile.py).
HOSTILE_COUNTERS = ["rx_unknown_qp", "rx_icrc_encapsulated", "rx_malformed", "rx_unknown_opcode",
                    "rp_cnp_handled", "rx_prio3_pause", "tx_pause_storm_warning_events"]


def run_hostile(case, link, build):
    """A legitimate uroce_verify -o mixed transfer (every byte checked) while lib/hostile.py
    sends crafted frames from the client's side of the wire at the server: the transfer must
    succeed, and the server's counters must record each kind of rejection. The server's pause
    watchdog detects after 100 ms and then ignores pause (so the storm cannot stall it)."""
    secs = case.kw["secs"]
    port = pairmod.free_tcp_port()
    # ACK timeout 17 (0.54 s, as the kernel's RDMA CM gives RoCE connections): the storm pauses
    # both sides' priority 3 (the client's af_packet port sees the injector's frames too) until
    # each watchdog acts; at 14 (67 ms) the client's retries ran out once under load.
    args = [os.path.join(build, "bin", "uroce_verify"), "-d", DEVICE, "-g", str(GID_INDEX), "-p",
            str(port), "-o", "mixed", "-s", "16384", "-D", str(secs), "--ack-timeout", "17"]
    p = Pair(link, build, env={"UROCE_PRINT_COUNTERS": "1"}, extra_toml=(
        "pfc = { enabled = [3], watchdog_detect_ms = 100, watchdog_restore_ms = 10000, "
        "watchdog_ignore_pause = true }"))
    deadline = time.monotonic() + case.timeout - 10
    # The injector loads scapy before the transfer starts; it gets the QPN once that exists.
    inj = subprocess.Popen(link.wrap(1) + [
        "/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib",
                                         "hostile.py"),
        "--iface", link.data_if[1], "--dst-mac", links.MACS[0], "--src-mac", links.MACS[1],
        "--dst-ip", links.ROCE_ADDR[0], "--src-ip", links.ROCE_ADDR[1], "--qpn", "-"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if inj.stdout.readline().strip() != "ready":
        inj.kill()
        return fail(f"{case.name}: the injector did not start: {inj.communicate()[0][-500:]}")
    srv = p.start(0, args)
    if not p.wait_listen(srv, port, deadline):
        p.stop_all()
        inj.kill()
        return fail(f"{case.name}: server did not listen", p)
    cli = p.start(1, args + [link.oob_host()])
    t0 = time.monotonic()
    qpn = server_qpn(build, srv.proc.pid, deadline)
    if qpn is None:
        p.stop_all()
        inj.kill()
        return fail(f"{case.name}: the server's QP never reached RTS", p)
    inj_out, _ = inj.communicate(f"{qpn}\n", timeout=max(10, deadline - time.monotonic()))
    print(f"{case.name}: server QPN {qpn:#x}; injector done {time.monotonic() - t0:.1f} s after "
          f"the client started: {inj_out.strip()[-800:]}")
    for s in (srv, cli):
        s.wait(max(0, deadline - time.monotonic()))
    p.stop_all()
    if inj.returncode != 0 or "sent " not in inj_out:
        return fail(f"{case.name}: the injector failed", p)
    if srv.rc != 0 or cli.rc != 0 or "OK" not in cli.output():
        return fail(f"{case.name}: the legitimate transfer failed: rc server={srv.rc} "
                    f"client={cli.rc}", p)
    m = re.search(r"counters at close:(.*)", srv.output())
    got = dict(x.split("=") for x in m.group(1).split()) if m else {}
    print(f"{case.name}: server counters: {got}")
    missing = [c for c in HOSTILE_COUNTERS if int(got.get(c, 0)) == 0]
    if int(got.get("out_of_sequence", 0)) + int(got.get("duplicate_request", 0)) == 0:
        missing.append("out_of_sequence|duplicate_request")
    if missing:
        return fail(f"{case.name}: no rejection counted in {missing}", p)
    print(f"PASS {case.name}")
    return 0


def run_rdmacm(case, link, build):
    """A librdmacm server and client: the client starts once the server's rdma_listen has
    happened (librdmacm notes it in $UROCE_RDMACM_LISTEN_FILE: there is no socket to poll);
    both must exit 0 (or case rc), with no error line, each matching its expect regex."""
    import tempfile
    port = case.kw.get("port") or pairmod.free_tcp_port()
    work = tempfile.mkdtemp(prefix="ue2e-cm-")
    listen_file = os.path.join(work, "listen")
    env = dict(case.kw.get("env", {}))
    env["UROCE_RDMACM_LISTEN_FILE"] = listen_file
    if case.kw.get("connect_when_listening"):
        env["UROCE_RDMACM_CONNECT_WHEN_LISTENING"] = listen_file
    p = Pair(link, build, workdir=work, env=env)
    fmt = {"addr": link.roce_addr(0, case.kw.get("v6", False)), "port": port, "port1": port + 1,
           "oob": link.oob_host()}
    server = [a.format(**fmt) for a in case.kw["server"]]
    client = [a.format(**fmt) for a in case.kw["client"]]
    deadline = time.monotonic() + case.timeout - 10
    srv = p.start(0, server)
    listening_ = False
    while time.monotonic() < deadline and srv.poll() is None:
        if pairmod.cm_listening(listen_file, port):
            listening_ = True
            break
        time.sleep(0.05)  # polling a condition with a deadline
    if not listening_:
        p.stop_all()
        return fail(f"{case.name}: the server never listened", p)
    if case.kw.get("kill_server_first"):
        srv.kill()
        srv.wait(5)
    cli = p.start(1, client)
    if case.kw.get("client_only"):
        cli.wait(deadline - time.monotonic())
        if cli.rc is None:
            p.timed_out = True
        p.stop_all()
        if cli.rc is None:
            return fail(f"{case.name}: the client hung", p)
        if case.kw.get("client_rc_nonzero") and cli.rc == 0:
            return fail(f"{case.name}: the client succeeded", p)
        if not case.kw.get("client_rc_nonzero") and cli.rc != 0:
            return fail(f"{case.name}: the client's exit code is {cli.rc}", p)
        pat = case.kw.get("expect_client")
        if pat and not re.search(pat, cli.output()):
            return fail(f"{case.name}: client output lacks /{pat}/", p)
        print(f"PASS {case.name}")
        print(cli.output()[-2000:])
        return 0
    for s_ in (cli, srv):
        s_.wait(deadline - time.monotonic())
    if cli.rc is None or srv.rc is None:
        p.timed_out = True
        p.stop_all()
        return fail(f"{case.name}: timed out", p)
    want = case.kw.get("rc", (0, 0))
    if (srv.rc, cli.rc) != tuple(want):
        return fail(f"{case.name}: exit codes server={srv.rc} client={cli.rc}, want {want}", p)
    outs = [srv.output(), cli.output()]
    if not case.kw.get("errors_ok"):
        errs = error_lines(outs[0]) + error_lines(outs[1])
        if errs:
            return fail(f"{case.name}: error lines: {errs[:3]}", p)
    for side, key in ((0, "expect"), (1, "expect_client")):
        pat = case.kw.get(key)
        if pat and not re.search(pat, outs[side]):
            return fail(f"{case.name}: side {side} output lacks /{pat}/", p)
    if case.kw.get("count"):
        pat, n = case.kw["count"]
        for side in (0, 1):
            got = len(re.findall(pat, outs[side]))
            if got != n:
                return fail(f"{case.name}: side {side} printed /{pat}/ {got} times, want {n}", p)
    if case.kw.get("count_client"):
        pat, n = case.kw["count_client"]
        got = len(re.findall(pat, outs[1]))
        if got != n:
            return fail(f"{case.name}: client printed /{pat}/ {got} times, want {n}", p)
    print(f"PASS {case.name}")
    print(outs[1][-2000:])
    return 0


# qperf's result lines: "bw  =  2.93 GB/sec", "latency  =  12.3 us".
QPERF_BW_RE = re.compile(r"^\s*bw\s*=\s*([\d.]+) ([KMG]?)B/sec", re.M)
QPERF_LAT_RE = re.compile(r"^\s*latency\s*=\s*([\d.]+) (ns|us|ms|sec)", re.M)
# qperf prints decimal (MB) or binary (MiB) units, by the size of the figure.
QPERF_RECV_BYTES_RE = re.compile(r"^\s*recv_bytes\s*=\s*([\d.]+) ([KMG]?i?)B", re.M)
UNIT = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}


def counters_at(out, when="exit"):
    """The counters uroce printed (UROCE_PRINT_COUNTERS=1) as {name: value}."""
    m = re.search(rf"counters at {when}:(.*)", out)
    return {k: int(v) for k, v in (x.split("=") for x in m.group(1).split())} if m else {}


def run_qperf(case, link, build):
    """qperf over uroce's librdmacm (-cm1; without it qperf's address vector has no GRH, which
    RoCE requires): the server (`qperf -lp PORT`, which serves until killed) and the client
    `qperf 198.18.0.1 -cm1 TEST` run in one namespace whose lo carries both RoCE addresses
    (links.NetnsMemifLink), so the client's rdma_resolve_addr of its TCP peer finds a uroce
    address. The client must exit 0 with no error line and report a non-zero bandwidth or
    latency, and its uroce counters (printed at exit) must show the test's traffic: at least
    the bytes the receiving end got (bandwidth tests) or RDMA packets both ways (latency).
    (qperf's UD tests cannot run over RoCE: they ignore -cm1 and build a GRH-less address
    handle.)"""
    port = pairmod.free_tcp_port()
    test = case.kw["test"]
    p = Pair(link, build, env={"UROCE_PRINT_COUNTERS": "1"})
    deadline = time.monotonic() + case.timeout - 10
    srv = p.start(0, ["qperf", "-lp", str(port)])
    if not p.wait_listen(srv, port, deadline):
        p.stop_all()
        return fail(f"{case.name}: the qperf server never listened on {port}", p)
    cli = p.start(1, ["qperf", link.oob_host(), "-lp", str(port), "-cm1", "-vvs"] +
                  case.kw.get("args", []) + [test])
    cli.wait(deadline - time.monotonic())
    timed_out = cli.rc is None
    p.stop_all()  # the qperf server serves until killed
    p.timed_out = timed_out
    out = cli.output()
    if timed_out:
        return fail(f"{case.name}: the client timed out", p)
    if cli.rc != 0:
        return fail(f"{case.name}: client exit code {cli.rc}", p)
    errs = error_lines(out) + error_lines(srv.output())
    if errs:
        return fail(f"{case.name}: error lines: {errs[:3]}", p)
    ctr = counters_at(out)
    if test.endswith("_bw"):
        m = QPERF_BW_RE.search(out)
        if not m or float(m.group(1)) <= 0:
            return fail(f"{case.name}: no non-zero 'bw = .. B/sec' line", p)
        got = QPERF_RECV_BYTES_RE.search(out)
        if not got:
            return fail(f"{case.name}: no recv_bytes line (-vvs)", p)
        # The bytes the receiving end got (qperf rounds to 3 digits) must have crossed the
        # client's uroce: sent by it (payload + headers at least that much), or, for READ,
        # received by it. (send_bytes would not do: it counts messages posted, including those
        # flushed at the end.)
        nbytes = float(got.group(1)) * UNIT[got.group(2)]
        way = "rx" if "read" in test else "tx"
        moved = ctr.get(f"{way}_vport_rdma_unicast_bytes", 0)
        if moved < 0.995 * nbytes:
            return fail(f"{case.name}: qperf says {nbytes:.0f} bytes were received, the client's "
                        f"uroce counted {way}_vport_rdma_unicast_bytes={moved}", p)
        print(f"{case.name}: bw {m.group(1)} {m.group(2)}B/sec; {nbytes:.0f} B received, "
              f"client's uroce {way} {moved} B")
    else:
        m = QPERF_LAT_RE.search(out)
        if not m or float(m.group(1)) <= 0:
            return fail(f"{case.name}: no non-zero 'latency = ..' line", p)
        tx = ctr.get("tx_vport_rdma_unicast_packets", 0)
        rx = ctr.get("rx_vport_rdma_unicast_packets", 0)
        if tx < 100 or rx < 100:
            return fail(f"{case.name}: uroce counted tx {tx} rx {rx} RDMA packets", p)
        print(f"{case.name}: latency {m.group(1)} {m.group(2)}; uroce tx {tx} rx {rx} packets")
    print(f"PASS {case.name}")
    print(out[-2000:])
    return 0


def run_peer_kill(case, link, build):
    import peer_kill
    return peer_kill.run(case, link, build)


# A result row of fi_pingpong: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec.
FI_PINGPONG_ROW = re.compile(
    r"(?m)^\d+\w?\s+\d+\w?\s+=?\d+\w?\s+\d+\w?\s+[\d.]+s(\s+[\d.]+){3}\s*$")


def run_fabric(case, link, build):
    """libfabric's fi_pingpong on its verbs provider (-p verbs) over uroce: both processes in
    one namespace where a veth carries both RoCE addresses (links.NetnsMemifLink), since the
    provider finds its devices' addresses among the kernel's non-loopback interfaces
    (getifaddrs) and the programs exchange addresses over TCP; data checked by fi_pingpong
    itself (-c). Both must exit 0, with no error line, and print a result row each."""
    port = pairmod.free_tcp_port()
    args = ["fi_pingpong", "-p", "verbs", "-e", case.kw["ep"], "-c"] + case.kw.get("args", [])
    p = Pair(link, build)
    deadline = time.monotonic() + case.timeout - 10
    srv = p.start(0, args + ["-B", str(port)])
    if not p.wait_listen(srv, port, deadline):
        p.stop_all()
        return fail(f"{case.name}: the fi_pingpong server never listened on {port}", p)
    cli = p.start(1, args + ["-P", str(port), link.oob_host()])
    cli.wait(deadline - time.monotonic())
    srv.wait(max(1, deadline - time.monotonic()))
    p.timed_out = cli.rc is None or srv.rc is None
    p.stop_all()
    if p.timed_out:
        return fail(f"{case.name}: timed out", p)
    if (srv.rc, cli.rc) != (0, 0):
        return fail(f"{case.name}: exit codes server={srv.rc} client={cli.rc}", p)
    errs = error_lines(srv.output()) + error_lines(cli.output())
    if errs:
        return fail(f"{case.name}: error lines: {errs[:3]}", p)
    for side, proc in (("server", srv), ("client", cli)):
        rows = FI_PINGPONG_ROW.findall(proc.output())
        if len(rows) < case.kw["rows"]:
            return fail(f"{case.name}: the {side} printed {len(rows)} result rows, want "
                        f"{case.kw['rows']}", p)
    print(f"PASS {case.name}")
    print(cli.output()[-1500:])
    return 0


RUNNERS = {"devices": run_devices, "fabric": run_fabric, "devinfo": run_devinfo, "pingpong": run_pingpong,
           "xsrq": run_xsrq,
           "perftest": run_perftest, "verify": run_verify, "peer_kill": run_peer_kill,
           "soak": run_soak, "hostile": run_hostile, "rdmacm": run_rdmacm, "qperf": run_qperf,
           **ucx_cases.RUNNERS, **host_cases.RUNNERS}


def run_case(case, build):
    """Runs one case; its temporary files are removed when it passes."""
    with pairmod.Scratch(f"ue2e-{case.name}-") as scratch:
        with links.make_link(case.link, case.kw.get("mtu", link_mtu(case.link)),
                             netns=case.kw.get("netns", False),
                             bottleneck=case.kw.get("bottleneck"),
                             queues=case.kw.get("queues", 1)) as link:
            runner = RUNNERS[case.kind]
            if case.link == "pcap" and case.kind in ("pingpong", "perftest", "xsrq"):
                rc = run_captured(case, link, build, runner)
            else:
                rc = runner(case, link, build)
        scratch.keep = rc != 0
        return rc


def demo(build):
    """scripts/demo.sh: ib_write_bw between two processes over uroce on a memif pair; prints
    both command lines and the client's perftest table."""
    with links.make_link("memif", link_mtu("memif")) as link:
        port = pairmod.free_tcp_port()
        argv = ["ib_write_bw", "-d", DEVICE, "-x", str(GID_INDEX), "-p", str(port), "-F"]
        p = Pair(link, build)
        print("uroce demo: two processes, one uroce device each, joined by a memif pair")
        for side in (0, 1):
            print(f"  {'server' if side == 0 else 'client'}: UROCE_CONFIG={p.configs[side]} "
                  f"LD_LIBRARY_PATH={build}/lib "
                  f"{' '.join(p.command(side, argv + ([link.oob_host()] if side else [])))}")
        print(flush=True)
        srv, cli = p.run(argv, argv + [link.oob_host()], port, 100)
        if srv != 0 or cli != 0 or p.timed_out:
            return fail("ib_write_bw over uroce did not complete", p)
        print(p.sides[1].output())
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build folder (holds lib/ and bin/)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    sub.add_parser("demo")
    r = sub.add_parser("run")
    r.add_argument("case")
    ra = sub.add_parser("run-all")
    ra.add_argument("--labels", default="")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cases = {c.name: c for c in all_cases()}
    if a.cmd == "list":
        for c in cases.values():
            print(f"{c.name}\t{','.join(c.labels)}\t{c.timeout}")
        return 0
    if a.cmd == "demo":
        return demo(build)
    if a.cmd == "run":
        if a.case not in cases:
            print(f"unknown case {a.case}", file=sys.stderr)
            return 2
        return run_case(cases[a.case], build)
    failed = []
    for c in cases.values():
        if a.labels and not re.search(a.labels, ";".join(c.labels)):
            continue
        if run_case(c, build) != 0:
            failed.append(c.name)
    print(f"{len(failed)} failed: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
