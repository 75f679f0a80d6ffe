#!/usr/bin/python3
"""Reference RoCEv2 frames from scapy (scapy.contrib.roce), for tests/wire/scapy_test.cc and
tshark_test.cc. Written independently of uroce's C++ wire code.

  scapy_frames.py gen          prints one line per frame:
                               FRAME <name> <hex> key=value ... (the fields the frame was built with)
  scapy_frames.py check PCAP   recomputes the ICRC of every frame in PCAP and prints
                               ICRC <index> ok|bad <expected> <found>  and  DECODE <index> k=v ...

ICRC over IPv4: scapy's BTH.compute_icrc (contrib/roce.py). scapy does not support IPv6 there
("TODO support IPv6"), so for IPv6 this script masks the pseudo-header itself (IBA Annex 17 as
docs/dcqcn-pfc.md 3.1: TC, flow label, hop limit, UDP checksum, BTH byte 4 set to ones)
and uses zlib.crc32.
UD/RC extended headers other than AETH are not modelled by scapy: they are packed here with
struct from IBA Vol 1 9.3 (FLUSH's FETH from IBA 1.5 Annex A19 as Linux rxe lays it out).
RoCE v1 (IBA Annex A16): Ether(type 0x8915) / scapy's GRH / BTH; scapy has no RoCE v1 ICRC, so
this script computes it (IBA Vol 1 7.8.1 for a global packet: 8 bytes of ones for the LRH, GRH
TClass, FlowLabel and HopLmt and BTH byte 4 set to ones, no UDP header) with zlib.crc32.
"""
import ipaddress
import struct
import sys
import zlib

from scapy.all import Ether, Dot1Q, IP, IPv6, UDP, Raw, rdpcap, raw  # noqa: E402
from scapy.contrib.roce import BTH, AETH, GRH, cnp  # noqa: E402
from scapy.packet import bind_layers  # noqa: E402

# scapy binds the GRH to Ethernet's EtherType 0x8915 only; a tagged RoCE v1 frame needs it under
# 802.1Q as well.
bind_layers(Dot1Q, GRH, type=0x8915)

SRC_MAC = "02:00:00:00:00:0a"
DST_MAC = "02:00:00:00:00:0b"
V4 = ("198.18.0.10", "198.19.255.1")
V6 = ("2001:2::a", "2001:2:1::b")


def reth(va, rkey, dlen):
    return struct.pack("!QII", va, rkey, dlen)


def atomiceth(va, rkey, swap, cmp):
    return struct.pack("!QIQQ", va, rkey, swap, cmp)


def deth(qkey, srcqp):
    return struct.pack("!II", qkey, srcqp & 0xffffff)


def be32(v):
    return struct.pack("!I", v)


def be64(v):
    return struct.pack("!Q", v)


def icrc_ipv6(frame_bytes, l3):
    """ICRC of an IPv6 RoCEv2 frame (everything from l3 to the end minus the 4 ICRC bytes)."""
    ip = bytearray(frame_bytes[l3:len(frame_bytes) - 4])
    ip[0] |= 0x0f
    ip[1] = ip[2] = ip[3] = 0xff       # traffic class + flow label
    ip[7] = 0xff                       # hop limit
    ip[40 + 6] = ip[40 + 7] = 0xff     # UDP checksum
    ip[48 + 4] = 0xff                  # BTH FECN|BECN|Resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip)) & 0xffffffff
    return struct.pack("<I", crc)


def icrc_v1(frame_bytes, l3):
    """ICRC of a RoCE v1 frame whose GRH starts at l3 (the frame ends with the ICRC)."""
    g = bytearray(frame_bytes[l3:len(frame_bytes) - 4])
    g[0] |= 0x0f
    g[1] = g[2] = g[3] = 0xff          # TClass + FlowLabel
    g[7] = 0xff                        # HopLmt
    g[40 + 4] = 0xff                   # BTH FECN|BECN|Resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(g)) & 0xffffffff
    return struct.pack("<I", crc)


def gid_int(text):
    """A GID as scapy's 128-bit GRH field: IPv6 text, or IPv4 text as ::ffff:a.b.c.d."""
    a = ipaddress.ip_address(text)
    if a.version == 4:
        a = ipaddress.IPv6Address("::ffff:" + text)
    return int(a)


def make_v1(v4_gids, opcode, ext=b"", payload=b"", pad=0, aeth=None, vlan=None, bth_kw=None,
            dscp=26, ecn=2, hoplmt=64, flow=0):
    """A RoCE v1 frame: Ethernet (0x8915) / GRH / BTH / ... / ICRC, and its expected fields."""
    bth_kw = dict(bth_kw or {})
    src, dst = V4 if v4_gids else V6
    l2 = Ether(src=SRC_MAC, dst=DST_MAC, type=0x8915)
    if vlan is not None:
        l2 = Ether(src=SRC_MAC, dst=DST_MAC) / Dot1Q(prio=vlan[0], vlan=vlan[1], type=0x8915)
    grh = GRH(ipver=6, tclass=(dscp << 2) | ecn, flowlabel=flow, paylen=0, nexthdr=0x1b,
              hoplmt=hoplmt, sgid=gid_int(src), dgid=gid_int(dst))
    bth = BTH(opcode=opcode, padcount=pad, icrc=0, **bth_kw)
    pkt = l2 / grh / bth
    if aeth is not None:
        pkt = pkt / AETH(syndrome=aeth[0], msn=aeth[1])
    body = ext + payload + b"\x00" * pad
    if body:
        pkt = pkt / Raw(body)
    b = bytearray(raw(pkt))
    l3 = 14 + (4 if vlan is not None else 0)
    b[l3 + 4:l3 + 6] = struct.pack("!H", len(b) - l3 - 40)  # PayLen: BTH .. ICRC
    b[-4:] = icrc_v1(bytes(b), l3)
    exp = {
        "v1": 1, "ipver": 6, "src": src, "dst": dst, "dscp": dscp, "ecn": ecn, "ttl": hoplmt,
        "flow": flow, "sport": 0,
        "opcode": opcode, "se": bth_kw.get("solicited", 0), "m": bth_kw.get("migreq", 0),
        "pad": pad, "tver": 0, "pkey": bth_kw.get("pkey", 0xffff),
        "fecn": bth_kw.get("fecn", 0), "becn": bth_kw.get("becn", 0),
        "dqpn": bth_kw.get("dqpn", 0), "ackreq": bth_kw.get("ackreq", 0),
        "psn": bth_kw.get("psn", 0), "payload": payload.hex() if payload else "-",
        "vlan": 0 if vlan is None else 1,
    }
    if vlan is not None:
        exp["pcp"], exp["vid"] = vlan
    if aeth is not None:
        exp["aeth_syn"], exp["aeth_msn"] = aeth
    return bytes(b), exp


def frames_v1():
    """RoCE v1 frames: RC SEND/WRITE/READ response/ACK, UC, UD, over IPv6 and IPv4-mapped GIDs,
    one 802.1Q-tagged."""
    out = []
    data = bytes(range(256))
    k = dict(dqpn=0x0a0b0c, psn=0x00fffe, ackreq=1, pkey=0x8001)
    for v4 in (False, True):
        v = "v1v4" if v4 else "v1v6"
        b, e = make_v1(v4, 0x04, payload=data[:5], pad=3, bth_kw=k, flow=0x12345)
        out.append(("rc_send_only_" + v, b, e))
        b, e = make_v1(v4, 0x06, ext=reth(0x7f0012345678, 0x1234abcd, 8192), payload=data[:256],
                       bth_kw=k, hoplmt=3)
        e.update({"reth_va": 0x7f0012345678, "reth_rkey": 0x1234abcd, "reth_len": 8192})
        out.append(("rc_write_first_" + v, b, e))
        b, e = make_v1(v4, 0x10, aeth=(0x1f, 0x000005), payload=data[:32], bth_kw=k)
        out.append(("rc_read_response_only_" + v, b, e))
        b, e = make_v1(v4, 0x11, aeth=(0x60, 0x000042), bth_kw=k, ecn=3)
        out.append(("rc_nak_" + v, b, e))
        b, e = make_v1(v4, 0x24, payload=data[:20], bth_kw=k, vlan=(3, 100) if v4 else None)
        out.append(("uc_send_only_" + v, b, e))
        ku = dict(dqpn=0x000002, psn=0x000007, pkey=0xffff, solicited=1)
        b, e = make_v1(v4, 0x64, ext=deth(0x80010000, 0x0000c1), payload=data[:64], bth_kw=ku)
        e.update({"qkey": 0x80010000, "srcqp": 0xc1})
        out.append(("ud_send_only_" + v, b, e))
    return out


def make(ipv6, opcode, ext=b"", payload=b"", pad=0, aeth=None, vlan=None, bth_kw=None,
         dscp=26, ecn=2, ttl=64, flow=0, sport=0xc0de):
    bth_kw = dict(bth_kw or {})
    tos = (dscp << 2) | ecn
    l2 = Ether(src=SRC_MAC, dst=DST_MAC)
    if vlan is not None:
        l2 = l2 / Dot1Q(prio=vlan[0], vlan=vlan[1])
    if ipv6:
        l3 = IPv6(src=V6[0], dst=V6[1], tc=tos, fl=flow, hlim=ttl)
        l4 = UDP(sport=sport, dport=4791, chksum=0)
    else:
        l3 = IP(src=V4[0], dst=V4[1], tos=tos, ttl=ttl, id=0x4242, flags="DF")
        l4 = UDP(sport=sport, dport=4791)  # scapy computes a UDP checksum: must be ignored
    bth = BTH(opcode=opcode, padcount=pad, **bth_kw)
    if ipv6:
        bth.icrc = 0
    pkt = l2 / l3 / l4 / bth
    if aeth is not None:
        pkt = pkt / AETH(syndrome=aeth[0], msn=aeth[1])
    body = ext + payload + b"\x00" * pad
    if body:
        pkt = pkt / Raw(body)
    b = bytearray(raw(pkt))
    if ipv6:
        l3_off = 14 + (4 if vlan is not None else 0)
        b[-4:] = icrc_ipv6(bytes(b), l3_off)
    exp = {
        "ipver": 6 if ipv6 else 4, "src": (V6 if ipv6 else V4)[0], "dst": (V6 if ipv6 else V4)[1],
        "dscp": dscp, "ecn": ecn, "ttl": ttl, "flow": flow if ipv6 else 0, "sport": sport,
        "opcode": opcode, "se": bth_kw.get("solicited", 0), "m": bth_kw.get("migreq", 0),
        "pad": pad, "tver": 0, "pkey": bth_kw.get("pkey", 0xffff),
        "fecn": bth_kw.get("fecn", 0), "becn": bth_kw.get("becn", 0),
        "dqpn": bth_kw.get("dqpn", 0), "ackreq": bth_kw.get("ackreq", 0),
        "psn": bth_kw.get("psn", 0), "payload": payload.hex() if payload else "-",
        "vlan": 0 if vlan is None else 1,
    }
    if vlan is not None:
        exp["pcp"], exp["vid"] = vlan
    if aeth is not None:
        exp["aeth_syn"], exp["aeth_msn"] = aeth
    return bytes(b), exp


def frames():
    out = []
    data = bytes(range(256)) * 2
    for ipv6 in (False, True):
        v = "v6" if ipv6 else "v4"
        k = dict(dqpn=0x0a0b0c, psn=0x00fffe, ackreq=1, pkey=0x8001)

        def add(name, *a, **kw):
            b, e = make(ipv6, *a, **kw)
            e.update(kw.pop("_extra", {}) if "_extra" in kw else {})
            out.append((name + "_" + v, b, e))
        # RC SEND
        add("rc_send_first", 0x00, payload=data[:256], bth_kw=k)
        add("rc_send_middle", 0x01, payload=data[:256], bth_kw=dict(k, psn=0xffffff))
        add("rc_send_last", 0x02, payload=data[:12], bth_kw=dict(k, psn=0, solicited=1))
        add("rc_send_only_pad", 0x04, payload=data[:5], pad=3, bth_kw=k)
        b, e = make(ipv6, 0x05, ext=be32(0x11223344), payload=data[:8], bth_kw=k)
        e["imm"] = 0x11223344
        out.append(("rc_send_only_imm_" + v, b, e))
        b, e = make(ipv6, 0x03, ext=be32(0xcafebabe), payload=data[:6], pad=2, bth_kw=k)
        e["imm"] = 0xcafebabe
        out.append(("rc_send_last_imm_" + v, b, e))
        b, e = make(ipv6, 0x17, ext=be32(0x0badf00d), payload=data[:16], bth_kw=k)
        e["ieth"] = 0x0badf00d
        out.append(("rc_send_only_inv_" + v, b, e))
        # RC WRITE
        r = reth(0x00007f0012345678, 0x1234abcd, 8192)
        re = {"reth_va": 0x00007f0012345678, "reth_rkey": 0x1234abcd, "reth_len": 8192}
        b, e = make(ipv6, 0x06, ext=r, payload=data[:256], bth_kw=k)
        e.update(re)
        out.append(("rc_write_first_" + v, b, e))
        add("rc_write_middle", 0x07, payload=data[:256], bth_kw=k)
        add("rc_write_last", 0x08, payload=data[:64], bth_kw=k)
        b, e = make(ipv6, 0x09, ext=be32(0x01020304), payload=data[:3], pad=1, bth_kw=k)
        e["imm"] = 0x01020304
        out.append(("rc_write_last_imm_" + v, b, e))
        b, e = make(ipv6, 0x0a, ext=r, payload=data[:100], bth_kw=k)
        e.update(re)
        out.append(("rc_write_only_" + v, b, e))
        b, e = make(ipv6, 0x0b, ext=r + be32(0xa5a5a5a5), payload=data[:40], bth_kw=k)
        e.update(re)
        e["imm"] = 0xa5a5a5a5
        out.append(("rc_write_only_imm_" + v, b, e))
        # RC READ
        b, e = make(ipv6, 0x0c, ext=reth(0x1000, 0x77, 1 << 20), bth_kw=k)
        e.update({"reth_va": 0x1000, "reth_rkey": 0x77, "reth_len": 1 << 20})
        out.append(("rc_read_request_" + v, b, e))
        kr = dict(dqpn=0x000011, psn=0x000100, pkey=0xffff)
        add("rc_read_response_first", 0x0d, aeth=(0x1f, 0x000005), payload=data[:256], bth_kw=kr)
        add("rc_read_response_middle", 0x0e, payload=data[:256], bth_kw=kr)
        add("rc_read_response_last", 0x0f, aeth=(0x00, 0x000006), payload=data[:1], pad=3,
            bth_kw=kr)
        add("rc_read_response_only", 0x10, aeth=(0x03, 0xabcdef), payload=data[:32], bth_kw=kr)
        # ACK / NAK
        add("rc_ack", 0x11, aeth=(0x1f, 0x000042), bth_kw=kr)
        add("rc_nak_psn_seq", 0x11, aeth=(0x60, 0x000042), bth_kw=kr)
        add("rc_nak_remote_access", 0x11, aeth=(0x62, 0x000043), bth_kw=kr)
        add("rc_rnr_nak", 0x11, aeth=(0x2e, 0x000044), bth_kw=kr)
        # Atomics
        b, e = make(ipv6, 0x13, ext=atomiceth(0x2000, 0x99, 0xfedcba9876543210, 0x0123456789abcdef),
                    bth_kw=k)
        e.update({"atomic_va": 0x2000, "atomic_rkey": 0x99, "atomic_swap": 0xfedcba9876543210,
                  "atomic_cmp": 0x0123456789abcdef})
        out.append(("rc_cmp_swap_" + v, b, e))
        b, e = make(ipv6, 0x14, ext=atomiceth(0x2008, 0x98, 5, 0), bth_kw=k)
        e.update({"atomic_va": 0x2008, "atomic_rkey": 0x98, "atomic_swap": 5, "atomic_cmp": 0})
        out.append(("rc_fetch_add_" + v, b, e))
        b, e = make(ipv6, 0x12, aeth=(0x1f, 0x000009), ext=be64(0x1122334455667788), bth_kw=kr)
        e["orig"] = 0x1122334455667788
        out.append(("rc_atomic_ack_" + v, b, e))
        # IBA 1.5 Annex A19 (rxe's rxe_opcode.c / rxe_hdr.h): FLUSH = FETH (selectivity level in
        # bits 5:4, placement type in bits 3:0) then RETH, no payload; ATOMIC WRITE = RETH and
        # the 8 bytes
        b, e = make(ipv6, 0x1c, ext=be32((1 << 4) | 1) + reth(0x3000, 0x66, 4096), bth_kw=k)
        e.update({"feth_plt": 1, "feth_sel": 1, "reth_va": 0x3000, "reth_rkey": 0x66,
                  "reth_len": 4096})
        out.append(("rc_flush_" + v, b, e))
        b, e = make(ipv6, 0x1d, ext=reth(0x4008, 0x67, 8), payload=be64(0x0102030405060708),
                    bth_kw=k)
        e.update({"reth_va": 0x4008, "reth_rkey": 0x67, "reth_len": 8})
        out.append(("rc_atomic_write_" + v, b, e))
        # UC
        add("uc_send_only", 0x24, payload=data[:20], bth_kw=k)
        b, e = make(ipv6, 0x2a, ext=r, payload=data[:20], bth_kw=k)
        e.update(re)
        out.append(("uc_write_only_" + v, b, e))
        # UD
        ku = dict(dqpn=0x000002, psn=0x000007, pkey=0xffff, solicited=1)
        b, e = make(ipv6, 0x64, ext=deth(0x80010000, 0x0000c1), payload=data[:64], bth_kw=ku)
        e.update({"qkey": 0x80010000, "srcqp": 0xc1})
        out.append(("ud_send_only_" + v, b, e))
        b, e = make(ipv6, 0x65, ext=deth(0x11111111, 0xfffffe) + be32(0x7), payload=data[:2],
                    pad=2, bth_kw=ku)
        e.update({"qkey": 0x11111111, "srcqp": 0xfffffe, "imm": 7})
        out.append(("ud_send_only_imm_" + v, b, e))
        # XRC (IBA 9.3.9): the XRCETH (Resv8, then the 24-bit XRC SRQ number) right after the
        # BTH of a request, before RETH / ImmDt / AtomicETH; responses carry none. The reserved
        # byte of the SEND's XRCETH is set: a receiver ignores it.
        b, e = make(ipv6, 0xa4, ext=bytes([0xff]) + be32(0x123456)[1:], payload=data[:24],
                    bth_kw=k)
        e["xrc_srqn"] = 0x123456
        out.append(("xrc_send_only_" + v, b, e))
        b, e = make(ipv6, 0xab, ext=be32(0x000042) + r + be32(0x5a5a5a5a), payload=data[:8],
                    bth_kw=k)
        e.update(re)
        e.update({"xrc_srqn": 0x42, "imm": 0x5a5a5a5a})
        out.append(("xrc_write_only_imm_" + v, b, e))
        b, e = make(ipv6, 0xb3, ext=be32(0xabcdef) + atomiceth(0x2010, 0x97, 9, 8), bth_kw=k)
        e.update({"xrc_srqn": 0xabcdef, "atomic_va": 0x2010, "atomic_rkey": 0x97,
                  "atomic_swap": 9, "atomic_cmp": 8})
        out.append(("xrc_cmp_swap_" + v, b, e))
        add("xrc_ack", 0xb1, aeth=(0x1f, 0x000045), bth_kw=kr)
        # FECN/BECN and ECN CE on a WRITE middle, a VLAN-tagged SEND, a CNP
        add("rc_write_middle_fecn", 0x07, payload=data[:16], bth_kw=dict(k, fecn=1, becn=1),
            ecn=3, dscp=0, ttl=1, flow=0xfffff)
        add("rc_send_only_vlan", 0x04, payload=data[:8], bth_kw=k, vlan=(3, 100))
        out.append(("cnp_" + v,) + cnp_frame(ipv6))
    return out


def cnp_frame(ipv6):
    l3 = (IPv6(src=V6[0], dst=V6[1], tc=(48 << 2) | 1, hlim=64) if ipv6
          else IP(src=V4[0], dst=V4[1], tos=(48 << 2) | 1, ttl=64, flags="DF"))
    c = cnp(0x00c0de)
    if ipv6:
        c.icrc = 0
    pkt = Ether(src=SRC_MAC, dst=DST_MAC) / l3 / UDP(sport=0x1234, dport=4791, chksum=0) / c
    b = bytearray(raw(pkt))
    if ipv6:
        b[-4:] = icrc_ipv6(bytes(b), 14)
    exp = {"ipver": 6 if ipv6 else 4, "src": (V6 if ipv6 else V4)[0],
           "dst": (V6 if ipv6 else V4)[1], "dscp": 48, "ecn": 1, "ttl": 64, "flow": 0,
           "sport": 0x1234, "opcode": 0x81, "se": 0, "m": 0, "pad": 0, "tver": 0,
           "pkey": 0xffff, "fecn": 0, "becn": 1, "dqpn": 0xc0de, "ackreq": 0, "psn": 0,
           "payload": "-", "vlan": 0}
    return bytes(b), exp


def gen():
    for name, b, exp in frames() + frames_v1():
        kv = " ".join("%s=%s" % (k, v) for k, v in exp.items())
        print("FRAME %s %s %s" % (name, b.hex(), kv))


def check(path):
    for i, pkt in enumerate(rdpcap(path)):
        b = raw(pkt)
        if GRH in pkt:
            # RoCE v1: scapy parses the GRH and BTH; the ICRC is this script's.
            grh = pkt[GRH]
            l3 = 18 if Dot1Q in pkt else 14
            expected = icrc_v1(b[:l3 + 40 + grh.paylen], l3)
            found = b[l3 + 40 + grh.paylen - 4:l3 + 40 + grh.paylen]
            print("ICRC %d %s %s %s" % (i, "ok" if expected == found else "bad", expected.hex(),
                                        found.hex()))
            bth = pkt[BTH]
            print("DECODE %d opcode=%d dqpn=%d psn=%d pkey=%d fecn=%d becn=%d ackreq=%d pad=%d "
                  "se=%d v1=1 ipver=%d nexthdr=%d paylen=%d hoplmt=%d flow=%d sgid=%s dgid=%s"
                  % (i, bth.opcode, bth.dqpn, bth.psn, bth.pkey, bth.fecn, bth.becn, bth.ackreq,
                     bth.padcount, bth.solicited, grh.ipver, grh.nexthdr, grh.paylen, grh.hoplmt,
                     grh.flowlabel, ipaddress.IPv6Address(grh.sgid),
                     ipaddress.IPv6Address(grh.dgid)))
            continue
        if IPv6 in pkt:
            l3 = len(b) - len(raw(pkt[IPv6]))
            expected = icrc_ipv6(b, l3)
        else:
            # scapy's own ICRC: rebuild the BTH layer with the ICRC left to compute_icrc().
            bth = pkt[BTH]
            expected = bth.compute_icrc(None)
        found = b[-4:]
        print("ICRC %d %s %s %s" % (i, "ok" if expected == found else "bad", expected.hex(),
                                    found.hex()))
        bth = pkt[BTH]
        print("DECODE %d opcode=%d dqpn=%d psn=%d pkey=%d fecn=%d becn=%d ackreq=%d pad=%d se=%d"
              % (i, bth.opcode, bth.dqpn, bth.psn, bth.pkey, bth.fecn, bth.becn, bth.ackreq,
                 bth.padcount, bth.solicited))


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "gen":
        gen()
    elif len(sys.argv) >= 3 and sys.argv[1] == "check":
        check(sys.argv[2])
    else:
        sys.exit("usage: scapy_frames.py gen | check PCAP")
