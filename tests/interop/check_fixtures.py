#!/usr/bin/python3
"""
@file check_fixtures.py
@brief Validates the Soft-RoCE captures in tests/fixtures/ (issue #7) with two decoders that no
       one here wrote: tshark's InfiniBand-over-UDP-4791 dissector and scapy's RoCEv2 ICRC.

For every fixture rxe_<name>.pcap it checks:
  1. tshark decodes every frame as RoCEv2 (UDP 4791, a BTH opcode), none malformed (with the
     heuristic guesses at upper protocols in the payload turned off);
  2. scapy parses the same BTH (opcode, destination QP, PSN) as tshark, and the ICRC that
     scapy computes (IBA Annex 17 A17.4.1: masked IPv4/UDP/BTH pseudo-header, CRC-32) equals
     the one on the wire, for every frame;
  3. the frames hold what the fixture is for (e.g. rxe_rc_read has READ request and all four
     READ response opcodes; rxe_rc_write_loss has a NAK-PSN-sequence-error and a retransmit);
  4. the sidecar rxe_<name>.tsv (frame, opcode, dest QPN, PSN, AETH syndrome; what tshark
     says) matches, so that tests in C++ can replay the pcap against it without tshark;
  5. the file is smaller than 200 KB.
Usage: check_fixtures.py [--write-expect] FIXTURE_DIR
       check_fixtures.py --any [--rxe-flush-icrc] PCAP...
  --write-expect rewrites the .tsv sidecars from tshark (make-fixtures.sh does this).
  --any checks only 1 and 2 on any RoCEv2 capture (e.g. the rxe-vs-uroce VM test's).
  --rxe-flush-icrc: every RC FLUSH (opcode 0x1c) must carry Linux rxe's ICRC instead of IBA's
    (IBA's continued over the BTH, FETH and RETH once more; uroce's [device] rxe_flush_icrc,
    docs/limits.md), and is left out of the scapy sample.
Exit status 0 when every check passes; prints "N passed, N failed".
"""
import pathlib
import struct
import subprocess
import sys
import zlib

from scapy.all import rdpcap, Ether, IP, UDP  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

MAX_BYTES = 200 * 1024

# BTH opcodes (IBA Vol 1 table 37) each fixture must contain.
RC_SEND = {0x00, 0x01, 0x02, 0x04, 0x11}
REQUIRED = {
    "rc_send": RC_SEND,
    "ud_send": {0x64},
    "rc_write": {0x06, 0x07, 0x08, 0x0A, 0x11},
    "rc_read": {0x0C, 0x0D, 0x0E, 0x0F, 0x10},
    "rc_atomic": {0x12, 0x13, 0x14},
    "rc_send_bw": {0x00, 0x01, 0x02, 0x11},
    "rc_write_loss": {0x06, 0x08, 0x11},
}
AETH_NAK_PSN_SEQ = 0x60  # AETH syndrome: NAK (011b), code 0 = PSN sequence error (IBA 9.7.5.2.8)

TSHARK_FIELDS = ["frame.number", "udp.dstport", "infiniband.bth.opcode",
                 "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.aeth.syndrome",
                 "_ws.malformed"]
TSV_HEADER = "# frame\topcode\tdest_qpn\tpsn\taeth_syndrome   (hex; '-' = no AETH) from tshark"


def fast_icrc_ok(frame):
    """ICRC check without scapy (IBA A17.4.1 for IPv4, no VLAN): CRC-32 over 8 bytes of 0xff,
    the IP header with TOS, TTL and checksum set to 0xff, the UDP header with checksum 0xffff,
    the BTH with its byte 4 (FECN, BECN, resv6) set to 0xff, then the rest up to the ICRC,
    compared with the last 4 bytes (little-endian on the wire). Returns None if not
    Ether/IPv4/UDP. About 100 times faster than scapy; the fixtures check both agree."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    ip_len = struct.unpack_from("!H", frame, 16)[0]
    pkt = bytearray(frame[14:14 + ip_len])
    pkt[1] = 0xFF                   # TOS (DSCP + ECN)
    pkt[8] = 0xFF                   # TTL
    pkt[10:12] = b"\xff\xff"        # IP header checksum
    pkt[ihl + 6:ihl + 8] = b"\xff\xff"  # UDP checksum
    pkt[ihl + 8 + 4] = 0xFF         # BTH FECN/BECN/resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(pkt[:-4])) & 0xFFFFFFFF
    return struct.pack("<I", crc) == bytes(pkt[-4:])


RC_FLUSH = 0x1C


def rxe_flush_icrc_ok(frame):
    """Linux rxe's ICRC of an RC FLUSH: fast_icrc_ok()'s CRC continued over the packet from the
    BTH on as it is on the wire (rxe's opcode table has no payload offset for RC_FLUSH, so its
    ICRC takes the BTH, FETH and RETH for payload too). None if not Ether/IPv4/UDP."""
    if len(frame) < 14 + 20 + 8 + 12 + 4 or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    ip_len = struct.unpack_from("!H", frame, 16)[0]
    pkt = bytearray(frame[14:14 + ip_len])
    bth = bytes(pkt[ihl + 8:-4])
    pkt[1] = 0xFF
    pkt[8] = 0xFF
    pkt[10:12] = b"\xff\xff"
    pkt[ihl + 6:ihl + 8] = b"\xff\xff"
    pkt[ihl + 8 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(pkt[:-4]))
    crc = zlib.crc32(bth, crc) & 0xFFFFFFFF
    return struct.pack("<I", crc) == bytes(pkt[-4:])


_HEURISTICS = None


def payload_heuristics_off():
    """tshark options that turn off every heuristic dissector of InfiniBand payloads: they
    guess at upper protocols (RPC-over-RDMA, iSER, SMB Direct...) from random test bytes and
    then report the frame malformed, e.g. a 1-byte SEND_ONLY."""
    global _HEURISTICS
    if _HEURISTICS is None:
        res = subprocess.run(["tshark", "-G", "heuristic-decodes"], capture_output=True,
                             text=True, check=True)
        _HEURISTICS = []
        for line in res.stdout.splitlines():
            c = line.split("\t")
            # (ethertype is the table's EoIB fallback and also Ethernet's own: keep it.)
            if len(c) >= 2 and c[0] == "infiniband.payload" and c[1] != "ethertype":
                _HEURISTICS += ["--disable-protocol", c[1]]
    return _HEURISTICS


def tshark_rows(pcap):
    """One tuple per frame: (frame, dport, opcode, dqpn, psn, syndrome or None, malformed)."""
    cmd = ["tshark", "-n", *payload_heuristics_off(), "-r", str(pcap), "-T", "fields",
           "-E", "separator=\t", "-E", "occurrence=f"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    rows = []
    for line in res.stdout.splitlines():
        c = line.split("\t")
        c += [""] * (len(TSHARK_FIELDS) - len(c))
        num = lambda s: int(s, 0) if s else None  # noqa: E731
        rows.append((int(c[0]), num(c[1]), num(c[2]), num(c[3]), num(c[4]), num(c[5]),
                     bool(c[6])))
    return rows


def tsv_text(rows):
    lines = [TSV_HEADER]
    for frame, _, op, qpn, psn, syn, _ in rows:
        s = "-" if syn is None else f"0x{syn:02x}"
        lines.append(f"{frame}\t0x{op:02x}\t0x{qpn:06x}\t0x{psn:06x}\t{s}")
    return "\n".join(lines) + "\n"


def check_one(pcap, write_expect, decode_only=False, rxe_flush=False):
    """Returns (number of frames, list of error strings; empty = passed)."""
    errors = []
    name = pcap.stem[len("rxe_"):]
    if not decode_only and pcap.stat().st_size >= MAX_BYTES:
        errors.append(f"{pcap.stat().st_size} bytes, limit {MAX_BYTES}")
    rows = tshark_rows(pcap)
    if not rows:
        return 0, errors + ["no frames"]
    for frame, dport, op, _, _, _, malformed in rows:
        if dport != 4791 or op is None:
            errors.append(f"frame {frame}: tshark does not see RoCEv2 (dport {dport})")
        if malformed:
            errors.append(f"frame {frame}: tshark reports it malformed")

    if decode_only:
        # Large captures (the VM test's): the fast ICRC on every frame, scapy on a sample.
        raw_frames = [bytes(p) for p in rdpcap(str(pcap))]
        flushes = 0
        for (frame, _, op, *_), data in zip(rows, raw_frames):
            if rxe_flush and op == RC_FLUSH:
                flushes += 1
                if rxe_flush_icrc_ok(data) is not True:
                    errors.append(f"frame {frame}: RC FLUSH without rxe's ICRC")
            elif fast_icrc_ok(data) is not True:
                errors.append(f"frame {frame}: bad ICRC (or not Ether/IPv4/UDP)")
        if rxe_flush:
            print(f"     {pcap.name}: {flushes} RC FLUSH frames with rxe's ICRC")
        sample = [d for (_, _, op, *_), d in zip(rows, raw_frames)
                  if not (rxe_flush and op == RC_FLUSH)]
        sample = sample[::max(1, len(sample) // 200)]
        for data in sample:
            b = Ether(data)[BTH]
            if struct.pack("!I", b.icrc) != b.compute_icrc(None):
                errors.append("scapy disagrees: bad ICRC in the sample")
        return len(rows), errors
    pkts = rdpcap(str(pcap))
    if len(pkts) != len(rows):
        errors.append(f"scapy reads {len(pkts)} frames, tshark {len(rows)}")
    for (frame, _, op, qpn, psn, _, _), p in zip(rows, pkts):
        if not (p.haslayer(Ether) and p.haslayer(IP) and p.haslayer(UDP) and p.haslayer(BTH)):
            errors.append(f"frame {frame}: scapy finds no Ether/IPv4/UDP/BTH")
            continue
        b = p[BTH]
        if (b.opcode, b.dqpn, b.psn) != (op, qpn, psn):
            errors.append(f"frame {frame}: scapy BTH ({b.opcode:#x}, {b.dqpn:#x}, {b.psn:#x})"
                          f" != tshark ({op:#x}, {qpn:#x}, {psn:#x})")
        wire = struct.pack("!I", b.icrc)
        computed = b.compute_icrc(None)
        if wire != computed:
            errors.append(f"frame {frame}: ICRC on the wire {wire.hex()} != computed "
                          f"{computed.hex()}")
        elif fast_icrc_ok(bytes(p)) is not True:
            errors.append(f"frame {frame}: scapy accepts the ICRC, fast_icrc_ok does not")

    ops = {r[2] for r in rows}
    missing = REQUIRED.get(name, set()) - ops
    if name not in REQUIRED:
        errors.append(f"unknown fixture {name}: add its required opcodes to REQUIRED")
    if missing:
        errors.append("missing opcodes " + ", ".join(f"{m:#04x}" for m in sorted(missing)))
    if name == "rc_write_loss":
        if not any(r[5] == AETH_NAK_PSN_SEQ for r in rows):
            errors.append("no NAK with syndrome 0x60 (PSN sequence error)")
        seen, retransmit = set(), False
        for _, _, op, qpn, psn, _, _ in rows:
            if op in (0x06, 0x07, 0x08, 0x0A):
                retransmit |= (qpn, psn) in seen
                seen.add((qpn, psn))
        if not retransmit:
            errors.append("no retransmitted WRITE packet (same QPN and PSN twice)")

    tsv = pcap.with_suffix(".tsv")
    text = tsv_text(rows)
    if write_expect:
        tsv.write_text(text)
    elif not tsv.exists():
        errors.append(f"{tsv.name} missing (run with --write-expect)")
    elif tsv.read_text() != text:
        errors.append(f"{tsv.name} does not match tshark's decode")
    return len(rows), errors


def main(argv):
    write_expect = "--write-expect" in argv
    dirs = [a for a in argv if not a.startswith("--")]
    if "--any" in argv:
        failed = 0
        for pcap in map(pathlib.Path, dirs):
            frames, errors = check_one(pcap, False, decode_only=True,
                                       rxe_flush="--rxe-flush-icrc" in argv)
            print(f"{'FAIL' if errors else 'ok  '} {pcap.name}: {frames} frames")
            for e in errors[:20]:
                print(f"  {e}")
            failed += bool(errors)
        print(f"{len(dirs) - failed} passed, {failed} failed")
        return 0 if dirs and failed == 0 else 1
    if len(dirs) != 1:
        print(__doc__)
        return 2
    folder = pathlib.Path(dirs[0])
    pcaps = sorted(folder.glob("rxe_*.pcap"))
    passed = failed = 0
    for name in sorted(set(REQUIRED) - {p.stem[len("rxe_"):] for p in pcaps}):
        print(f"FAIL rxe_{name}.pcap: missing")
        failed += 1
    for pcap in pcaps:
        frames, errors = check_one(pcap, write_expect)
        if errors:
            failed += 1
            print(f"FAIL {pcap.name}:")
            for e in errors[:20]:
                print(f"  {e}")
        else:
            passed += 1
            print(f"ok   {pcap.name}: {frames} frames")
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
