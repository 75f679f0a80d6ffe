#!/usr/bin/python3
"""Writes the committed seed corpora of the structured fuzz targets:
fuzz/corpus/responder_rx, fuzz/corpus/completer_rx, fuzz/corpus/config_parse and
fuzz/corpus/cm_mad.

The record layouts are the ones the targets' loops read (fuzz/responder_rx.cc,
fuzz/completer_rx.cc): each seed is a well-formed conversation that reaches past the parser
into the protocol logic, for libFuzzer to mutate. parse_frame's seeds come from the rxe
captures instead (tests/interop/make-fixtures.sh). Run: /usr/bin/python3 fuzz/make_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def u8(v):
    return struct.pack(">B", v & 0xff)


def u16(v):
    return struct.pack(">H", v & 0xffff)


def u32(v):
    return struct.pack(">I", v & 0xffffffff)


def responder_record(opcode, psn, off=0, length=0, payload=b"", ackreq=True, ud=False,
                     compare=0, swap=0, recv_seq=None, xrc=None, stamp=None):
    """One structured record of responder_rx: valid keys, address rw+off-64, RETH length as
    is (sel bit 3), DETH Q_Key 0x1234 (sel bit 5), default P_Key; with recv_seq an SRETH
    (sel bit 7: selective repeat, VA or offset from off); with xrc (the XRC mode's records)
    the XRCETH selector byte: 0 the domain's XRC SRQ, 1 another domain's, 2 a basic SRQ; with
    stamp a TSETH (mode bit 2: peer timestamps, on every RC request record)."""
    tag = 1 | (4 if ud else 0) | (32 if ackreq else 0)
    sel = 8 | 32 | (128 if recv_seq is not None else 0)
    rec = u8(tag) + u8(opcode) + u8(psn) + u8(sel) + u16(off + 64) + u16(length)
    rec += u32(compare) + u32(swap)                 # AtomicETH compare / swap-add
    rec += u8(0) + u8(0) + u32(0) + u32(0x11223344) + u32(0)  # AETH, atomic orig, imm, IETH
    rec += u16(7)                                   # DETH source QPN
    rec += u8(2)                                    # ECT(0)
    rec += u16(len(payload))
    if xrc is not None:
        rec += u8(xrc)                              # XRCETH: which SRQ
    if recv_seq is not None:
        rec += u8(recv_seq)                         # SRETH recv_seq
    if stamp is not None:
        rec += u32(stamp)                           # TSETH stamp
    return rec + payload


def completer_record(kind, rel_psn, payload=b"", syndrome=None, msn=0, orig=0, sack=None,
                     ts=None):
    """One structured record of completer_rx: kind indexes its kResponses table, rel_psn counts
    from the QP's first send PSN; sack (base relative to the first send PSN, [bitmap words])
    adds a SACKETH (tag bit 7, selective repeat); ts (age in 16 ns units, hold in 8 ns units)
    the TSETH of an ACK (mode bit 1: peer timestamps, on every ACK record)."""
    tag = 1 | 32 | (16 if syndrome is not None else 0) | (128 if sack else 0)
    rec = u8(tag) + u8(kind) + u8(rel_psn + 4)
    if syndrome is not None:
        rec += u8(syndrome)
    rec += u8(msn) + u32(orig >> 32) + u32(orig) + u8(0)
    rec += u16(len(payload))
    if sack:
        rec += u8(sack[0] + 4) + u8(len(sack[1]) - 1) + b"".join(u32(w) for w in sack[1])
    if ts:
        rec += u16(ts[0]) + u16(ts[1])
    return rec if sack else rec + payload


def write(folder, name, data, mode=None):
    """mode: the engine targets' first input byte (bit 0: selective repeat, else go-back-N;
    responder_rx bit 1: structured frames to its XRC_RECV QP; bit 2: peer timestamps)."""
    if folder in ("responder_rx", "completer_rx"):
        data = u8(mode or 0) + data
    path = os.path.join(HERE, "corpus", folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as f:
        f.write(data)


def responder_seeds():
    p256 = bytes(range(256))
    write("responder_rx", "write_only", responder_record(0x0a, 0, 0, 200, p256[:200]))
    write("responder_rx", "write_first_middle_last",
          responder_record(0x06, 0, 0, 600, p256, ackreq=False) +
          responder_record(0x07, 1, payload=p256, ackreq=False) +
          responder_record(0x08, 2, payload=p256[:88]))
    write("responder_rx", "send_first_last",
          responder_record(0x00, 0, payload=p256, ackreq=False) +
          responder_record(0x02, 1, payload=p256[:10]))
    write("responder_rx", "read_request", responder_record(0x0c, 0, 128, 700))
    write("responder_rx", "atomics",
          responder_record(0x13, 0, 8, compare=0, swap=5) +
          responder_record(0x14, 1, 16, compare=3) +
          responder_record(0x14, 1, 16, compare=3))  # the duplicate answers from the cache
    # IBA 1.5: a WRITE, a FLUSH of its range (FETH 0x01: the first AtomicETH word), an ATOMIC
    # WRITE and its duplicate (answered from the replay record, not written again).
    write("responder_rx", "flush_atomic_write",
          responder_record(0x0a, 0, 0, 200, p256[:200], ackreq=False) +
          responder_record(0x1c, 1, 0, 200, compare=0x01) +
          responder_record(0x1d, 2, 16, 8, p256[:8]) +
          responder_record(0x1d, 2, 16, 8, p256[:8]))
    write("responder_rx", "ud_send", responder_record(0x64, 0, payload=p256[:64], ud=True))
    write("responder_rx", "duplicate_and_gap",
          responder_record(0x04, 0, payload=b"a") + responder_record(0x04, 0, payload=b"a") +
          responder_record(0x04, 3, payload=b"b"))
    # Peer timestamps: every RC request carries a stamp; the ACKs echo them.
    write("responder_rx", "ts_write_send",
          responder_record(0x0a, 0, 0, 200, p256[:200], stamp=1000) +
          responder_record(0x04, 1, payload=b"a", stamp=0xfffffff0) +
          responder_record(0x64, 0, payload=p256[:64], ud=True), mode=4)
    # Selective repeat: packets ahead of the expected PSN placed, then the gap filled.
    write("responder_rx", "sr_write_out_of_order",
          responder_record(0x06, 0, 0, 600, p256, ackreq=False, recv_seq=0) +
          responder_record(0x08, 2, 512, payload=p256[:88], recv_seq=0) +
          responder_record(0x07, 1, 256, payload=p256, ackreq=False, recv_seq=0), mode=1)
    write("responder_rx", "sr_send_out_of_order",
          responder_record(0x02, 1, 256, payload=p256[:10], recv_seq=0) +
          responder_record(0x04, 2, 0, payload=b"x", recv_seq=1) +
          responder_record(0x00, 0, 0, payload=p256, ackreq=False, recv_seq=0), mode=1)
    # XRC (mode bit 1): a SEND to the domain's XRC SRQ, a WRITE, a READ; then a SEND naming
    # another domain's SRQ (an invalid request NAK, the QP to ERR).
    write("responder_rx", "xrc_send_write_read",
          responder_record(0xa4, 0, payload=p256[:100], xrc=0) +
          responder_record(0xaa, 1, 0, 200, p256[:200], xrc=0) +
          responder_record(0xac, 2, 128, 300, xrc=0), mode=2)
    write("responder_rx", "xrc_wrong_domain",
          responder_record(0xa0, 0, payload=p256, ackreq=False, xrc=0) +
          responder_record(0xa2, 1, payload=p256[:10], xrc=1), mode=2)


def completer_seeds():
    # Requests (completer_rx.cc): READ 1000 B (PSN 0..3), WRITE 1000 B (4..7), CAS (8),
    # SEND 1000 B (9..12), READ 1000 B (13..16), FAA (17), then the same six again.
    p256 = bytes(255 - i for i in range(256))
    read0 = (completer_record(0, 0, p256, msn=0) + completer_record(1, 1, p256) +
             completer_record(1, 2, p256) + completer_record(2, 3, p256[:232], msn=1))
    write("completer_rx", "read_then_acks",
          read0 + completer_record(4, 7, msn=2) + completer_record(5, 8, msn=3, orig=42) +
          completer_record(4, 12, msn=4))
    write("completer_rx", "read_only_response", completer_record(3, 0, p256[:200], msn=1))
    write("completer_rx", "psn_sequence_nak", read0 + completer_record(4, 5, syndrome=0x60, msn=1))
    write("completer_rx", "rnr_nak", completer_record(4, 0, syndrome=0x21, msn=0))
    write("completer_rx", "remote_access_nak", completer_record(4, 0, syndrome=0x62, msn=0))
    write("completer_rx", "duplicate_ack", read0 + completer_record(4, 7, msn=2) +
          completer_record(4, 7, msn=2))
    # Selective repeat: the peer holds PSNs 5..7 and 9 (WRITE and CAS), 4 is missing.
    write("completer_rx", "sr_sack", read0 + completer_record(4, 3, msn=1, sack=(5, [0xe8000000])),
          mode=1)
    write("completer_rx", "sr_sack_forged",
          completer_record(4, 0, msn=0, sack=(2, [0xffffffff] * 16)), mode=1)
    # Peer timestamps: echoes 8 µs old held 2 µs, then one from the future (forged).
    write("completer_rx", "ts_acks",
          read0 + completer_record(4, 7, msn=2, ts=(500, 250)) +
          completer_record(4, 12, msn=4, ts=(0, 65535)), mode=4)
    write("completer_rx", "ts_sr_sack",
          read0 + completer_record(4, 3, msn=1, sack=(5, [0xe8000000]), ts=(300, 10)), mode=5)


CONFIGS = {
    "memif": '''[[device]]
name = "uroce0"
port = "net_memif0,role=server,socket=/run/uroce/memif.sock"
addresses = ["198.18.0.1/15"]
mtu = 4096
''',
    "af_packet_lossless": '''[[device]]
name = "uroce1"
port = "net_af_packet0,iface=veth0"
addresses = ["198.18.1.1/24", "fd00::1/64"]
mac = "02:00:00:00:00:01"
neighbors = { "198.18.1.2" = "02:00:00:00:00:02" }
profile = "lossless"
queues = 2
''',
    "pfc_dcqcn": '''[[device]]
name = "uroce0"
port = "loopback"
addresses = ["198.18.0.1/15"]
roce_dscp = 26
cnp_dscp = 48
dscp_to_prio = { "26" = 3, "48" = 6 }
ecn = true
[device.pfc]
enabled = [3]
xoff_bytes = 65536
xon_bytes = 32768
watchdog_detect_ms = 100
[device.dcqcn]
enabled = true
mode = "paper"
max_burst_bytes = 16384
rpg_time_reset = 300
''',
    "lossy_progress": '''[[device]]
name = "uroce0"
port = "loopback"
addresses = ["198.18.0.1/15"]
profile = "lossy"
peer_timestamps = false
congestion_control = "delay"
[device.delay]
target_queue_us = 50
[device.progress]
spin_rounds = 50
max_sleep_us = 16
post_rx_gap_us = 0.5
''',
    "two_devices": '''[[device]]
name = "a"
port = "net_ring0"
addresses = ["198.18.0.1/15"]
eal = ["--log-level=8"]
[[device]]
name = "b"
port = "net_ring1"
addresses = ["198.18.0.2/15"]
''',
}


def config_seeds():
    for name, text in CONFIGS.items():
        write("config_parse", name + ".toml", text.encode())


def cm_mad(attr, body):
    """A 256-byte CM MAD (IBA 13.4.2 header: class 0x07, version 2, Send) around `body`,
    the message at MAD byte 24 (transport/wire/cm.h)."""
    hdr = u8(1) + u8(0x07) + u8(2) + u8(0x03) + u16(0) + u16(0) + struct.pack(">Q", 0x1234)
    hdr += u16(attr) + u16(0) + u32(0)
    return (hdr + body).ljust(256, b"\0")


def cm_seeds():
    gid = lambda last: bytes(10) + b"\xff\xff" + bytes([198, 18, 0, last])
    req = u32(0x1001) + u32(0) + struct.pack(">QQ", 0x106abcd, 0x0202c9fffe000001) + u32(0)
    req += u32(0) + u32(0x000011 << 8 | 16) + u32(8) + u32(20 << 3) + u32(0x000100 << 8 | 19 << 3 | 7)
    req += u16(0xffff) + u8(5 << 4 | 7) + u8(15 << 4) + u16(0xffff) + u16(0xffff)
    req += gid(1) + gid(2) + u32(0) + u8(0) + u8(64) + u8(0) + u8(14 << 3)
    write("cm_mad", "req", cm_mad(0x10, req))
    write("cm_mad", "rep", cm_mad(0x13, u32(0x2001) + u32(0x1001) + u32(0) + u32(0x22 << 8)
                                  + u32(0) + u32(0x200 << 8) + u8(16) + u8(8) + u8(0) + u8(7 << 5)))
    write("cm_mad", "rtu", cm_mad(0x14, u32(0x1001) + u32(0x2001)))
    write("cm_mad", "rej", cm_mad(0x12, u32(0x2001) + u32(0x1001) + u8(0) + u8(0) + u16(28)))
    write("cm_mad", "mra", cm_mad(0x11, u32(0x2001) + u32(0x1001) + u8(0) + u8(20 << 3)))
    write("cm_mad", "dreq", cm_mad(0x15, u32(0x1001) + u32(0x2001) + u32(0x22 << 8)))
    write("cm_mad", "drep", cm_mad(0x16, u32(0x2001) + u32(0x1001)))
    write("cm_mad", "sidr_req", cm_mad(0x17, u32(7) + u16(0xffff) + u16(0)
                                       + struct.pack(">Q", 0x1110007)))
    write("cm_mad", "sidr_rep", cm_mad(0x18, u32(7) + u8(0) + u8(0) + u16(0) + u32(0x33 << 8)
                                       + struct.pack(">Q", 0x1110007) + u32(0x11223344)))


if __name__ == "__main__":
    cm_seeds()
    responder_seeds()
    completer_seeds()
    config_seeds()
