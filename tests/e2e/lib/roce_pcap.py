"""Checks a capture of uroce's traffic with two implementations that are not ours:

  - tshark: every UDP/4791 frame decodes as InfiniBand (RoCEv2) with a BTH, and no frame is
    malformed. The InfiniBand payload heuristics (RPC-over-RDMA, SMB Direct, ...) are turned off:
    they guess at the application payload, and perftest's payload is not any of those protocols.
  - scapy's RoCE layer (scapy.contrib.roce): every frame's ICRC (IBTA Annex 17.3.3: CRC-32 over
    a pseudo-LRH of 8 bytes of 1s, the IPv4 header with TOS/TTL/checksum masked, the UDP header
    with its checksum masked, the BTH with FECN/BECN/resv6 masked, and the payload) is recomputed
    and compared with the frame's last 4 bytes.

Needs the system python3 (/usr/bin/python3) where python3-scapy is installed.
"""

import subprocess

ROCE_PORT = 4791


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
    """RoCEv2 frames (UDP/4791) in a capture file, which may still be being written."""
    p = subprocess.run(["tshark", "-n", "-r", path, "-Y", f"udp.dstport == {ROCE_PORT}",
                        "-T", "fields", "-e", "frame.number"], capture_output=True, text=True)
    if p.returncode != 0 and not p.stdout:
        raise RuntimeError(p.stderr.strip())
    return len([ln for ln in p.stdout.splitlines() if ln.strip()])


def check_tshark(path, addrs=("198.18.0.1", "198.18.0.2")):
    """Returns (ok, message); both addresses must have sent frames."""
    n_udp = _tshark_count(path, f"udp.dstport == {ROCE_PORT}")
    n_ib = _tshark_count(path, f"udp.dstport == {ROCE_PORT} && infiniband.bth.opcode")
    n_bad = _tshark_count(path, "_ws.malformed || _ws.expert.severity == error")
    n_dirs = [_tshark_count(path, f"infiniband && ip.src == {a}") for a in addrs]
    msg = (f"tshark: {n_udp} RoCEv2 frames, {n_ib} decoded as InfiniBand BTH, {n_bad} malformed,"
           f" per direction {n_dirs}")
    ok = n_udp > 0 and n_ib == n_udp and n_bad == 0 and min(n_dirs) > 0
    return ok, msg


def check_icrc(path):
    """Recomputes every RoCEv2 frame's ICRC with scapy. Returns (ok, message)."""
    from scapy.contrib.roce import BTH  # noqa: F401  (binds UDP/4791 -> BTH)
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import Ether
    from scapy.packet import Padding
    from scapy.utils import RawPcapReader

    n, bad, first_bad = 0, 0, None
    for frame_no, (data, _meta) in enumerate(RawPcapReader(path), start=1):
        pkt = Ether(data)
        if UDP not in pkt or pkt[UDP].dport != ROCE_PORT or BTH not in pkt:
            continue
        n += 1
        # Ethernet padding (frames shorter than 60 bytes) is not part of the ICRC'd packet.
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
    msg = f"scapy: {n} RoCEv2 frames, {bad} with a bad ICRC" + (
        f" (first: {first_bad})" if first_bad else "")
    return n > 0 and bad == 0, msg


if __name__ == "__main__":
    import sys
    ok1, m1 = check_tshark(sys.argv[1])
    ok2, m2 = check_icrc(sys.argv[1])
    print(m1)
    print(m2)
    sys.exit(0 if ok1 and ok2 else 1)
