#!/usr/bin/python3
"""Crafted RoCEv2 and PFC frames at a running uroce process (issue #8, "Hostile peers").

Sends, from a raw AF_PACKET socket on the link the victim's legitimate peer also uses, a mix of
frames that a correct RoCE stack must reject without harm to its QPs or memory; each kind names
the victim counter that must record it:

  unknown_qp   RC WRITE_ONLY to random QPNs that do not exist          -> rx_unknown_qp
  forged_psn   RC WRITE_ONLY to the victim's QPN, random PSN, rkey, VA -> out_of_sequence /
               (spoofed from the peer's MAC and IP)                      duplicate_request
  bad_icrc     a valid WRITE with its ICRC flipped                     -> rx_icrc_encapsulated
  truncated    UDP/4791 with a 6-byte BTH                              -> rx_malformed
  bad_opcode   a reserved RC opcode (0x1f) with a valid ICRC           -> rx_unknown_opcode
  cnp          CNPs to the victim's QPN                                -> rp_cnp_handled
  pause        802.1Qbb XOFF (quanta 0xffff) for priority 3 every 100 us for --pause-ms
               -> rx_prio3_pause, and the pause-storm watchdog: tx_pause_storm_warning_events

Prints one `sent kind=N ...` line. Usage (as root, in the sending namespace):
  hostile.py --iface IF --dst-mac M --src-mac M --dst-ip A --src-ip A --qpn N|- [--count N]
             [--cnps N] [--pause-ms MS] [--seed S]
With --qpn -, it prints `ready` once scapy is loaded and reads the victim's QPN from stdin
(so that a test can start it before the victim's QP exists).
"""
import argparse
import os
import random
import socket
import struct
import sys
import time

from scapy.contrib.roce import BTH, CNPPadding
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw, raw

ROCE_PORT = 4791
WRITE_ONLY = 0x0A
CNP = 0x81


def roce(args, opcode, qpn, psn, payload=b"", ackreq=0):
    return raw(Ether(dst=args.dst_mac, src=args.src_mac) /
               IP(src=args.src_ip, dst=args.dst_ip, tos=(26 << 2) | 2, flags="DF") /
               UDP(sport=0xc000 | random.getrandbits(14), dport=ROCE_PORT, chksum=0) /
               BTH(opcode=opcode, dqpn=qpn, psn=psn, ackreq=ackreq) / Raw(payload))


def reth_write(rng, n=64):
    return struct.pack(">QII", rng.getrandbits(64), rng.getrandbits(32), n) + bytes(n)


def pfc_xoff(src_mac, prio=3, quanta=0xffff):
    dst = bytes.fromhex("0180c2000001")
    times = [0] * 8
    times[prio] = quanta
    body = struct.pack(">HH", 0x0101, 1 << prio) + struct.pack(">8H", *times)
    f = dst + bytes.fromhex(src_mac.replace(":", "")) + struct.pack(">H", 0x8808) + body
    return f + bytes(60 - len(f))


def main():
    ap = argparse.ArgumentParser()
    for k in ("iface", "dst-mac", "src-mac", "dst-ip", "src-ip"):
        ap.add_argument("--" + k, required=True)
    ap.add_argument("--qpn", required=True, help="the victim's QPN, or - to read it from stdin")
    ap.add_argument("--count", type=int, default=100, help="frames of each RoCE kind")
    ap.add_argument("--cnps", type=int, default=50)
    ap.add_argument("--pause-ms", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.qpn == "-":
        print("ready", flush=True)
        args.qpn = int(sys.stdin.readline())
    else:
        args.qpn = int(args.qpn, 0)
    rng = random.Random(args.seed)
    random.seed(args.seed)
    frames = {k: [] for k in ("unknown_qp", "forged_psn", "bad_icrc", "truncated", "bad_opcode",
                              "cnp")}
    for _ in range(args.count):
        q = rng.getrandbits(24)
        while (q & 0xffff) == (args.qpn & 0xffff) or q < 2:
            q = rng.getrandbits(24)
        frames["unknown_qp"].append(roce(args, WRITE_ONLY, q, rng.getrandbits(24),
                                         reth_write(rng), 1))
        frames["forged_psn"].append(roce(args, WRITE_ONLY, args.qpn, rng.getrandbits(24),
                                         reth_write(rng), 1))
        good = bytearray(roce(args, WRITE_ONLY, args.qpn, rng.getrandbits(24), reth_write(rng)))
        good[-1] ^= 0xff
        frames["bad_icrc"].append(bytes(good))
        t = roce(args, WRITE_ONLY, args.qpn, 0)
        cut = 14 + 20 + 8 + 6
        short = bytearray(t[:cut])
        struct.pack_into(">H", short, 14 + 2, cut - 14)       # IPv4 total length
        struct.pack_into(">H", short, 14 + 20 + 4, cut - 34)  # UDP length
        short[14 + 10:14 + 12] = b"\0\0"
        s = sum(struct.unpack(">10H", bytes(short[14:34])))
        while s >> 16:
            s = (s & 0xffff) + (s >> 16)
        struct.pack_into(">H", short, 14 + 10, ~s & 0xffff)
        frames["truncated"].append(bytes(short) + bytes(max(0, 60 - len(short))))
        frames["bad_opcode"].append(roce(args, 0x1F, args.qpn, rng.getrandbits(24), bytes(16)))
    for _ in range(args.cnps):
        frames["cnp"].append(raw(Ether(dst=args.dst_mac, src=args.src_mac) /
                                 IP(src=args.src_ip, dst=args.dst_ip, tos=48 << 2, flags="DF") /
                                 UDP(sport=0xc123, dport=ROCE_PORT, chksum=0) /
                                 BTH(opcode=CNP, dqpn=args.qpn, becn=1) / CNPPadding()))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((args.iface, 0))
    sent = {}
    # Interleaved, a few frames at a time, so the legitimate traffic keeps flowing between them.
    order = [(k, f) for k, fs in frames.items() for f in fs]
    rng.shuffle(order)
    for i, (k, f) in enumerate(order):
        s.send(f)
        sent[k] = sent.get(k, 0) + 1
        if i % 16 == 15:
            time.sleep(0.001)  # pacing of an attack, not a synchronisation
    # Pause storm: XOFF refreshed every 100 us, well before it expires (3.4 ms at the 10 Gb/s
    # af_packet reports), for pause_ms. Real-time priority for it: on 2 cores filled by the
    # busy-polling victim and peer, a normal thread is descheduled for longer than a pause
    # lasts, and a storm with gaps is no storm. The victim's poller may itself be descheduled
    # for longer than a pause lasts: its watchdog judges continuity by when it last found its RX
    # queue empty, not by when it reads each XOFF (docs/dcqcn-pfc.md §4.3).
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    except (AttributeError, PermissionError, OSError):
        pass
    xoff = pfc_xoff(args.src_mac)
    end = time.monotonic() + args.pause_ms / 1000
    n = 0
    while time.monotonic() < end:
        s.send(xoff)
        n += 1
        time.sleep(0.0001)
    sent["pause"] = n
    print("sent " + " ".join(f"{k}={v}" for k, v in sent.items()), flush=True)


if __name__ == "__main__":
    main()
