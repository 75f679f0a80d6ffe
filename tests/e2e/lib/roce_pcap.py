"""Checks a capture of uroce's traffic with two implementations that are not ours:

  - tshark: every RoCE frame (RoCEv2: UDP/4791; RoCE v1: EtherType 0x8915) decodes as
    InfiniBand with a BTH, and no frame is malformed. The InfiniBand payload heuristics
    (RPC-over-RDMA, SMB Direct, ...) are turned off: they guess at the application payload, and
    perftest's payload is not any of those protocols.
  - scapy's RoCE layer (scapy.contrib.roce): every RoCEv2 frame's ICRC (IBTA Annex 17.3.3: CRC-32
    over a pseudo-LRH of 8 bytes of 1s, the IPv4 header with TOS/TTL/checksum masked, the UDP
    header with its checksum masked, the BTH with FECN/BECN/resv6 masked, and the payload) is
    recomputed and compared with the frame's last 4 bytes. scapy parses RoCE v1 frames into its
    GRH and BTH layers but has no RoCE v1 ICRC: for those this module masks the pseudo-header
    itself (IBA Vol 1 7.8.1 for a global packet: 8 bytes of 1s for the LRH, GRH TClass,
    FlowLabel and HopLmt, BTH byte 4) and uses zlib.crc32.

A check is for one RoCE version (`version`): frames of the other one fail it, so a RoCE v1 case
proves that its traffic really was RoCE v1.

Needs the system python3 (/usr/bin/python3) where python3-scapy is installed.
"""

import subprocess

ROCE_PORT = 4791
ROCE_V2 = f"udp.dstport == {ROCE_PORT}"
ROCE_V1 = "(eth.type == 0x8915 || vlan.etype == 0x8915)"


def _heuristics_off():
    """tshark options that turn off the dissectors guessing at InfiniBand payloads."""
    out = subprocess.run(["tshark", "-G", "heuristic-decodes"], capture_output=True,
                         text=True).stdout
    args = []
    for line in out.splitlines():
        parts = line.split("\t")
        # "ethertype" is EoIB's guess through the Ethernet dissector: keep Ethernet itself.
        if len(parts) >= 2 and parts[0] == "infiniband.payload" and parts[1] != "ethertype":
            args += ["--disable-protocol", parts[1]]
    return args


def _tshark_count(path, display_filter):
    p = subprocess.run(["tshark", "-n", "-r", path, *_heuristics_off(), "-Y", display_filter,
                        "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"tshark -Y '{display_filter}': {p.stderr.strip()}")
    return len([ln for ln in p.stdout.splitlines() if ln.strip()])


def roce_frames(path):
    """RoCE frames (RoCEv2 or v1) in a capture file, which may still be being written."""
    p = subprocess.run(["tshark", "-n", "-r", path, "-Y", f"{ROCE_V2} || {ROCE_V1}",
                        "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    if p.returncode != 0 and not p.stdout:
        raise RuntimeError(p.stderr.strip())
    return len([ln for ln in p.stdout.splitlines() if ln.strip()])


def check_tshark(path, addrs=("198.18.0.1", "198.18.0.2"), version=2):
    """Returns (ok, message); both addresses must have sent frames, all of the given version."""
    n_v2 = _tshark_count(path, ROCE_V2)
    n_v1 = _tshark_count(path, ROCE_V1)
    n_ib = _tshark_count(path, f"({ROCE_V2} || {ROCE_V1}) && infiniband.bth.opcode")
    n_bad = _tshark_count(path, "_ws.malformed || _ws.expert.severity == error")
    if version == 1:
        # The GRH's SGID: an IPv4 address's RoCE v1 GID is ::ffff:a.b.c.d.
        n_dirs = [_tshark_count(path, f"infiniband.grh.sgid == ::ffff:{a} && infiniband.bth")
                  for a in addrs]
        n_want, n_other = n_v1, n_v2
    else:
        n_dirs = [_tshark_count(path, f"infiniband && ip.src == {a}") for a in addrs]
        n_want, n_other = n_v2, n_v1
    msg = (f"tshark: {n_v2} RoCEv2 frames, {n_v1} RoCE v1 frames, {n_ib} decoded as InfiniBand"
           f" BTH, {n_bad} malformed, per direction {n_dirs} (want RoCE v{version} only)")
    ok = n_want > 0 and n_other == 0 and n_ib == n_want and n_bad == 0 and min(n_dirs) > 0
    return ok, msg


def icrc_v1(frame, grh_offset):
    """The ICRC of a RoCE v1 frame (GRH at grh_offset, no Ethernet padding), 4 wire bytes."""
    import struct
    import zlib
    b = bytearray(frame[grh_offset:len(frame) - 4])
    b[0] |= 0x0f                 # TClass (low nibble of byte 0 and high of byte 1)
    b[1] = b[2] = b[3] = 0xff    # TClass + FlowLabel
    b[7] = 0xff                  # HopLmt
    b[40 + 4] = 0xff             # BTH FECN|BECN|Resv6
    return struct.pack("<I", zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xffffffff)


def check_icrc(path, version=2):
    """Recomputes every RoCE frame's ICRC: RoCEv2 with scapy, RoCE v1 (parsed by scapy's GRH and
    BTH layers) with icrc_v1(). Returns (ok, message)."""
    from scapy.contrib.roce import BTH, GRH
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Padding, bind_layers

    bind_layers(Dot1Q, GRH, type=0x8915)  # scapy binds the GRH under Ethernet only
    from scapy.utils import RawPcapReader

    n, n_v1, bad, first_bad = 0, 0, 0, None
    for frame_no, (data, _meta) in enumerate(RawPcapReader(path), start=1):
        pkt = Ether(data)
        if GRH in pkt and BTH in pkt:
            n_v1 += 1
            grh = pkt[GRH]
            # Ethernet padding (frames shorter than 60 bytes) is not part of the packet.
            grh_offset = 18 if Dot1Q in pkt else 14
            end = grh_offset + 40 + grh.paylen
            frame = bytes(data[:end])
            wire, want = frame[-4:], icrc_v1(frame, grh_offset)
            ok = grh.ipver == 6 and grh.nexthdr == 0x1b and end <= len(data) and wire == want
            if not ok:
                bad += 1
                if first_bad is None:
                    first_bad = (f"frame {frame_no}: RoCE v1 nexthdr {grh.nexthdr}, wire"
                                 f" {wire.hex()}, computed {want.hex()}")
            continue
        if UDP not in pkt or pkt[UDP].dport != ROCE_PORT or BTH not in pkt:
            continue
        n += 1
        if Padding in pkt:
            pkt[Padding].underlayer.remove_payload()
        wire = pkt[BTH].icrc
        pkt[BTH].icrc = None  # scapy recomputes it on build
        rebuilt = bytes(pkt)
        if rebuilt[-4:] != wire.to_bytes(4, "big"):
            bad += 1
            if first_bad is None:
                first_bad = (f"frame {frame_no}: wire {wire.to_bytes(4, 'big').hex()},"
                             f" scapy {rebuilt[-4:].hex()}")
    msg = f"scapy: {n} RoCEv2 frames, {n_v1} RoCE v1 frames, {bad} with a bad ICRC" + (
        f" (first: {first_bad})" if first_bad else "")
    want, other = (n_v1, n) if version == 1 else (n, n_v1)
    return want > 0 and other == 0 and bad == 0, msg


if __name__ == "__main__":
    import sys
    v = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    ok1, m1 = check_tshark(sys.argv[1], version=v)
    ok2, m2 = check_icrc(sys.argv[1], version=v)
    print(m1)
    print(m2)
    sys.exit(0 if ok1 and ok2 else 1)
