/**
 * @file icrc.h
 * @brief RoCEv2 Invariant CRC (IBA Annex 17; the masking as docs/dcqcn-pfc.md §3.1 gives it).
 *
 * ICRC = CRC-32 (the Ethernet/zlib polynomial, reflected, init and final XOR 0xFFFFFFFF) over
 *   8 bytes of 0xFF (the masked LRH), the IP header with its variant fields set to all ones
 *   (IPv4: TOS, TTL, header checksum; IPv6: traffic class, flow label, hop limit), the UDP header
 *   with checksum 0xFFFF, the BTH with byte 4 (FECN|BECN|Resv6) 0xFF, then everything after the
 *   BTH up to the ICRC (extended headers, payload, pad).
 * The result is appended little-endian (zlib value 0xEF1BFCDA -> bytes DA FC 1B EF).
 *
 * RoCE v1 (IBA Annex A16) has no IP or UDP header: its ICRC is the base specification's for a
 * global packet (IBA Vol 1 §7.8.1), the LRH (absent on Ethernet) again 8 bytes of 0xFF, the GRH
 * with TClass, FlowLabel and HopLmt set to all ones (the same bytes as IPv6's traffic class, flow
 * label and hop limit), the BTH with byte 4 0xFF, then everything after the BTH. It is RoCEv2's
 * IPv6 computation without the UDP header.
 *
 * The CRC uses ISA-L's vectorised crc32_gzip_refl. It is incremental: a running value `crc`
 * (zlib convention, start at kCrc32Init) is continued with crc32_update(), so the transport can
 * compute the header part first and fold in the payload as it copies it. Units: bytes.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace uroce::wire {

inline constexpr size_t kIcrcLen = 4;
/// The running value before any byte (zlib's crc32(0, NULL, 0)).
inline constexpr uint32_t kCrc32Init = 0;

/// Continues a zlib-convention CRC-32 over data (vectorised, ISA-L crc32_gzip_refl).
uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data);

/// CRC-32 over the masked pseudo-header: 8x0xFF, then the IP header, UDP header and BTH found
/// at l3 (l3[0] = first byte of the IP header), with the variant fields masked. `ipv4_ihl_bytes`
/// is the IPv4 header length (20..60) or 0 for IPv6. l3 must hold ip + 8 + 12 bytes.
/// Returns the running CRC, to be continued over what follows the BTH.
uint32_t icrc_pseudo_header(const uint8_t* l3, size_t ipv4_ihl_bytes);

/// icrc_pseudo_header() of a RoCE v1 packet: 8x0xFF, then the GRH at grh and the BTH after it,
/// with the variant fields masked. grh must hold 40 + 12 bytes.
uint32_t icrc_pseudo_header_grh(const uint8_t* grh);

/// The complete ICRC of a RoCE v1 packet: grh spans the GRH through the last pad byte.
uint32_t icrc_compute_grh(std::span<const uint8_t> grh);

/// The complete ICRC of a RoCEv2 packet: l3 spans the IP header through the last pad byte
/// (everything except the ICRC itself). Returns the final CRC value (zlib convention).
uint32_t icrc_compute(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes);

/// The ICRC Linux rxe (kernel 6.2 on; seen with 6.12) puts on, and expects of, an RC FLUSH
/// (opcode 0x1c): icrc_compute()'s CRC continued once more over the BTH, FETH and RETH as they
/// are on the wire (unmasked). rxe's opcode table gives RC_FLUSH no payload offset, so it takes
/// the packet from the BTH on for the payload its ICRC covers (rxe_icrc.c: rxe_icrc_hdr() then
/// payload_addr()/payload_size()). IBA's ICRC covers those bytes once: rxe drops a FLUSH that has
/// the standard one. l3 and ipv4_ihl_bytes as for icrc_compute(); RoCEv2 only (rxe has no v1).
uint32_t icrc_compute_rxe_flush(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes);

/// Writes an ICRC value at p, little-endian (the wire order of the CRC-32 remainder).
inline void store_icrc(uint8_t* p, uint32_t crc) {
  p[0] = static_cast<uint8_t>(crc);
  p[1] = static_cast<uint8_t>(crc >> 8);
  p[2] = static_cast<uint8_t>(crc >> 16);
  p[3] = static_cast<uint8_t>(crc >> 24);
}
inline uint32_t load_icrc(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

}  // namespace uroce::wire
