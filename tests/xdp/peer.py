#!/usr/bin/python3
"""Kernel-socket ends for tests/xdp/host_mode.sh.

  peer.py udp-sink OUT PORT...              binds UDP PORT on 0.0.0.0 and :: (v6-only) for each
                                            PORT, counts datagrams per port; OUT is rewritten
                                            (atomically) as "P1=N P2=M" on every datagram.
  peer.py udp-send ADDR PORT COUNT FILE KEY sends COUNT 100-byte datagrams in batches of 50;
                                            after each batch waits until FILE says KEY=N with
                                            N >= (its value at the start) + sent, 10 s at most
                                            (closed loop: nothing is lost to a full ring).
  peer.py vlan-send IF DSTMAC VID SRC DST PORT COUNT FILE KEY
                                            the same with 802.1Q-tagged IPv4/UDP frames written
                                            whole on a packet socket on IF.
  peer.py tcp-echo ADDR PORT READY          accepts connections, echoes until EOF; creates the
                                            file READY once listening.
  peer.py tcp-check ADDR PORT BYTES         connects, sends BYTES bytes, expects them back.
"""
import os
import re
import select
import socket
import struct
import sys
import time


def read_key(path, key):
    try:
        with open(path) as f:
            m = re.search(r"\b%s=(\d+)" % re.escape(key), f.read())
            return int(m.group(1)) if m else 0
    except FileNotFoundError:
        return 0


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text + "\n")
    os.replace(path + ".tmp", path)


def udp_sink(out, ports):
    socks = {}
    for p in ports:
        s4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s4.bind(("0.0.0.0", p))
        s6 = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s6.bind(("::", p))
        socks[s4] = socks[s6] = p
    counts = {p: 0 for p in ports}
    show = lambda: " ".join("%d=%d" % (p, counts[p]) for p in ports)
    write_atomic(out, show())
    while True:
        ready, _, _ = select.select(list(socks), [], [])
        for s in ready:
            s.recv(65536)
            counts[socks[s]] += 1
        write_atomic(out, show())


def closed_loop(send, count, path, key):
    base = read_key(path, key)
    sent = 0
    while sent < count:
        for _ in range(min(50, count - sent)):
            send()
            sent += 1
        deadline = time.monotonic() + 10
        while read_key(path, key) < base + sent:
            if time.monotonic() > deadline:
                sys.exit("udp-send: %s says %s=%d after %d sent (base %d)" %
                         (path, key, read_key(path, key), sent, base))
            time.sleep(0.002)


def udp_send(addr, port, count, path, key):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    closed_loop(lambda: s.sendto(bytes(100), (addr, port)), count, path, key)


def vlan_send(ifname, dst_mac, vid, src, dst, port, count, path, key):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    src_mac = open("/sys/class/net/%s/address" % ifname).read().strip()
    payload = bytes(100)
    udp = struct.pack("!HHHH", 50000, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    csum = sum(struct.unpack("!10H", ip))
    csum = (csum & 0xFFFF) + (csum >> 16)
    csum = ~((csum & 0xFFFF) + (csum >> 16)) & 0xFFFF
    ip = ip[:10] + struct.pack("!H", csum) + ip[12:]
    frame = (bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) +
             struct.pack("!HHH", 0x8100, vid, 0x0800) + ip + udp)
    closed_loop(lambda: s.send(frame), count, path, key)


def tcp_echo(addr, port, ready):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    srv = socket.socket(fam, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port))
    srv.listen(4)
    open(ready, "w").close()
    while True:
        c, _ = srv.accept()
        with c:
            while data := c.recv(65536):
                c.sendall(data)


def tcp_check(addr, port, n):
    payload = bytes(i % 251 for i in range(n))
    with socket.create_connection((addr, port), timeout=10) as c:
        c.sendall(payload)
        c.shutdown(socket.SHUT_WR)
        got = b""
        while data := c.recv(65536):
            got += data
    if got != payload:
        sys.exit("tcp-check: %d bytes sent, %d came back%s" %
                 (n, len(got), "" if len(got) != n else " (different)"))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "udp-sink":
        udp_sink(args[0], [int(p) for p in args[1:]])
    elif cmd == "udp-send":
        udp_send(args[0], int(args[1]), int(args[2]), args[3], args[4])
    elif cmd == "vlan-send":
        vlan_send(args[0], args[1], int(args[2]), args[3], args[4], int(args[5]), int(args[6]),
                  args[7], args[8])
    elif cmd == "tcp-echo":
        tcp_echo(args[0], int(args[1]), args[2])
    elif cmd == "tcp-check":
        tcp_check(args[0], int(args[1]), int(args[2]))
    else:
        sys.exit("peer.py: unknown command " + cmd)


if __name__ == "__main__":
    main()
