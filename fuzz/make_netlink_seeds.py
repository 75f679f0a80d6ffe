#!/usr/bin/python3
"""Writes fuzz/corpus/netlink_msg/: real rtnetlink notifications and dump replies, captured
from the kernel while a veth pair in a private network namespace is configured (addresses
from 198.18.0.0/15 and 2001:2::/48 only; the host's interfaces are never touched). One file
per datagram as read from the socket (one or more netlink messages; the first three of each
step). In the namespace lo is ifindex 1, va 2 and vb 3 (fuzz/netlink_msg.cc applies them to
both).
Run as root: /usr/bin/python3 fuzz/make_netlink_seeds.py
"""
import os
import socket
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "netlink_msg")

# RTMGRP_LINK | NEIGH | IPV4_IFADDR | IPV4_ROUTE | IPV6_IFADDR | IPV6_ROUTE
GROUPS = 0x1 | 0x4 | 0x10 | 0x40 | 0x100 | 0x400
RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE, RTM_GETNEIGH = 18, 22, 26, 30
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300

STEPS = [
    "ip link add va address 02:00:00:00:00:01 type veth peer name vb "
    "address 02:00:00:00:00:02",
    "ip link set va up",
    "ip link set vb up",
    "ip addr add 198.18.0.1/24 dev va",
    "ip addr add 198.18.0.2/24 dev vb",
    "ip addr add 2001:2::1/64 dev va nodad",
    "ip addr add fe80::1/64 dev va nodad",
    "ip route add 198.19.0.0/16 via 198.18.0.254",
    "ip -6 route add 2001:2:1::/64 via 2001:2::fe",
    "ip neigh add 198.18.0.50 lladdr 02:00:00:00:00:50 dev va nud permanent",
    "ip -6 neigh add 2001:2::50 lladdr 02:00:00:00:00:50 dev va nud reachable",
    "ip link set va mtu 1400",
    "ip addr del 198.18.0.1/24 dev va",
    "ip link set va down",
    "ip link del va",
]


def dump(sock, msgtype, family, seq):
    """A dump request: nlmsghdr + the family byte (rtgenmsg) padded to 4."""
    body = struct.pack("B3x", family)
    hdr = struct.pack("=IHHII", 16 + len(body), msgtype, NLM_F_REQUEST | NLM_F_DUMP, seq, 0)
    sock.send(hdr + body)


def done(data):
    """True when the datagram holds NLMSG_DONE (the end of a dump)."""
    off = 0
    while off + 16 <= len(data):
        length, msgtype = struct.unpack_from("=IH", data, off)
        if msgtype == 3:
            return True
        if length < 16:
            return False
        off += (length + 3) & ~3
    return False


def main():
    if os.environ.get("UROCE_SEEDS_NETNS") != "1":
        env = dict(os.environ, UROCE_SEEDS_NETNS="1")
        sys.exit(subprocess.call(["unshare", "-n", sys.executable] + sys.argv, env=env))
    for conf in ("all", "default"):
        with open(f"/proc/sys/net/ipv6/conf/{conf}/accept_dad", "w") as f:
            f.write("0")
    os.makedirs(OUT, exist_ok=True)
    for name in os.listdir(OUT):
        if not name.startswith("regress-"):  # crashes found by fuzzing stay as seeds
            os.unlink(os.path.join(OUT, name))
    mon = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    mon.bind((0, GROUPS))
    mon.setblocking(False)
    n = 0

    def drain(tag):
        """Keeps the first few notifications of a step (a link change brings many alike)."""
        nonlocal n
        kept = 0
        while True:
            try:
                data = mon.recv(65536)
            except BlockingIOError:
                return
            kept += 1
            if kept > 3:
                continue
            with open(os.path.join(OUT, f"{n:03d}-{tag}"), "wb") as f:
                f.write(data)
            n += 1

    for i, step in enumerate(STEPS):
        subprocess.run(step.split(), check=True)
        if i == 10:  # fully configured: dump replies too (several messages per datagram)
            req = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
            for seq, (t, fam) in enumerate([(RTM_GETLINK, 0), (RTM_GETADDR, 0),
                                            (RTM_GETROUTE, 0), (RTM_GETNEIGH, 0)]):
                dump(req, t, fam, seq + 1)
                while True:
                    data = req.recv(65536)
                    with open(os.path.join(OUT, f"{n:03d}-dump{t}"), "wb") as f:
                        f.write(data)
                    n += 1
                    if done(data):
                        break
            req.close()
        words = [w for w in step.split()[1:] if not w.startswith("-")]
        drain(words[0] + "-" + words[1])
    print(f"wrote {n} seeds to {OUT}")


if __name__ == "__main__":
    main()
