/**
 * @file build.h
 * @brief Frame builder: header fields -> a whole RoCEv2 frame (without FCS) in a caller buffer.
 *
 * Two steps, so that the transport can copy the payload straight into the frame:
 *   FrameLayout l = build_headers(spec, buf);        // Ethernet..extended headers
 *   memcpy(buf.data() + l.payload_offset, data, n);  // the caller's payload
 *   size_t len = finalize(buf, l, n);                // pad, lengths, IPv4 csum, ICRC
 * A fused copy+CRC path uses finalize_lengths() + icrc_pseudo_header()/crc32_update() +
 * finish_icrc() instead of finalize().
 *
 * IP version: IPv4 when both spec.src_ip and spec.dst_ip are IPv4-mapped GIDs, IPv6 otherwise.
 * RoCE v1 (spec.roce_v1, IBA Annex A16): EtherType 0x8915, a 40-byte GRH (IBA Vol 1 §8.3: IPVer
 * 6, TClass, FlowLabel, PayLen, NxtHdr 0x1B, HopLmt, SGID, DGID; laid out as an IPv6 header)
 * and then the BTH: no IP or UDP header, whatever the GIDs.
 * UDP checksum: 0 for IPv4 (RFC 768) and also 0 for IPv6. That is what Linux rxe sends for both
 * (drivers/infiniband/sw/rxe/rxe_net.c prepare_udp_hdr() sets check = 0 before prepare6()), and
 * rxe's UDP tunnel socket accepts zero-checksum IPv6 (RFC 6935/6936 allow it for tunnels; the
 * ICRC covers the packet). The parser does not verify UDP checksums.
 * References: IBA Annex 17, IBA Annex A16, IBA Vol 1 §8.3, §9.2-9.3. Units: bytes.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/types.h"
#include "transport/wire/ext_headers.h"
#include "transport/wire/opcode.h"
#include "transport/wire/sr_ext.h"
#include "transport/wire/ts_ext.h"

namespace uroce::wire {

/// Every header field of a frame. Only the extended headers the opcode uses are written.
struct FrameSpec {
  // L2
  MacAddr src_mac;
  MacAddr dst_mac;
  bool vlan = false;  ///< insert an 802.1Q tag
  uint8_t pcp = 0;    ///< 802.1Q priority (with vlan)
  bool dei = false;   ///< 802.1Q drop eligible (with vlan)
  uint16_t vid = 0;   ///< 802.1Q VLAN id (with vlan); 0 = priority-tagged
  /// RoCE v1: a GRH (SGID src_ip, DGID dst_ip) instead of IP/UDP; the UDP ports and ip_id are
  /// not sent.
  bool roce_v1 = false;
  // L3
  Gid src_ip;  ///< IPv4-mapped GIDs on both ends select IPv4 (RoCEv2)
  Gid dst_ip;
  uint8_t dscp = 0;         ///< 0..63
  uint8_t ecn = 0;          ///< 0..3 (kEcnEct0 for RoCE data)
  uint8_t ttl = 64;         ///< IPv4 TTL / IPv6 (GRH) hop limit
  uint32_t flow_label = 0;  ///< IPv6 / GRH only, 20 bits
  uint16_t ip_id = 0;       ///< IPv4 identification (DF is always set)
  // L4
  uint16_t udp_sport = 0xc000;  ///< per-QP entropy
  uint16_t udp_dport = 4791;
  // BTH
  Opcode opcode = Opcode::kRcSendOnly;
  bool se = false;
  bool migreq = false;
  uint16_t pkey = 0xffff;
  bool fecn = false;
  bool becn = false;
  Qpn dest_qpn;
  bool ackreq = false;
  Psn psn;
  // Extended headers
  RethValue reth;
  FethValue feth;
  AethValue aeth;
  AtomicEthValue atomic_eth;
  uint64_t atomic_ack_orig = 0;
  uint32_t imm = 0;
  uint32_t ieth_rkey = 0;
  DethValue deth;
  uint32_t xrc_srqn = 0;  ///< XRCETH (24 bits)
  // uroce's selective-repeat extension (sr_ext.h): kNone on every frame to an IBA peer.
  UroceExt ext = UroceExt::kNone;
  SrethValue sreth;
  SackValue sack;
  /// uroce's timestamp extension (ts_ext.h): a TSETH after it, 4 bytes on a request, 8 on an
  /// RC Acknowledge.
  bool has_tseth = false;
  TsethValue tseth;
};

/// Where build_headers() put things. Offsets from the start of the frame, bytes.
struct FrameLayout {
  uint16_t l3_offset = 0;       ///< IP header (RoCE v1: GRH)
  uint16_t l4_offset = 0;       ///< UDP header (RoCE v1: none, = bth_offset)
  uint16_t bth_offset = 0;      ///< BTH
  uint16_t payload_offset = 0;  ///< first payload byte; 0 when build_headers() failed
  /// IPv4: ones' complement sum of the header with total length and checksum 0, folded to 16
  /// bits (RFC 1624 incremental update base), so finalize_lengths() need not re-read the header.
  uint16_t ipv4_sum_partial = 0;
  bool ipv6 = false;       ///< IPv6 header or GRH
  bool roce_v1 = false;    ///< GRH and no UDP header
  uint32_t reserved1 = 0;  ///< padding
};
static_assert(sizeof(FrameLayout) == 16);

/// Ethernet + VLAN + IPv6 + UDP + longest transport header: the most header an IBA frame can
/// have (a frame with uroce's extensions adds ext_len()); a RoCE v1 frame (GRH, no UDP) has 8
/// bytes less.
inline constexpr size_t kMaxHeadersLen = 14 + 4 + 40 + 8 + kMaxTransportHeaderLen;
/// Bytes of uroce's extension header a frame carries (sr_ext.h).
constexpr size_t ext_len(UroceExt e, const SackValue& sack = {}) {
  return e == UroceExt::kSreth  ? sizeof(Sreth)
         : e == UroceExt::kSack ? 4 + 4 * size_t{sack.nwords}
                                : 0;
}
/// Bytes of uroce's extension headers spec carries: the selective-repeat one and the TSETH.
constexpr size_t ext_len(const FrameSpec& spec) {
  const bool request = spec.opcode != Opcode::kRcAcknowledge;
  return ext_len(spec.ext, spec.sack) +
         (spec.has_tseth ? (request ? kTsethRequestLen : kTsethAckLen) : 0);
}
/// Bytes a frame needs besides the payload: headers, up to 3 pad bytes and the ICRC.
inline constexpr size_t kMaxFrameOverhead = kMaxHeadersLen + 3 + 4;

/// The length of the frame spec describes around payload_len payload bytes: headers, the
/// extension header, up to 3 pad bytes and the ICRC (what a TX buffer must hold for it).
size_t frame_len_for(const FrameSpec& spec, size_t payload_len);

/// Writes the Ethernet, optional 802.1Q, IP and UDP (RoCE v1: the GRH), BTH and extended headers
/// of spec into buf. Lengths, pad count, checksums and ICRC are left for finalize(). Returns the
/// layout; its payload_offset is 0 if the opcode is unknown or buf is shorter than the headers.
FrameLayout build_headers(const FrameSpec& spec, std::span<uint8_t> buf);

/// Completes a frame whose headers build_headers() wrote and whose payload_len payload bytes are
/// at buf[payload_offset...]: writes the pad bytes and BTH pad count, IP total/payload length
/// (GRH PayLen), IPv4 checksum, UDP length (checksum 0), and the ICRC. Returns the frame
/// length, or 0 if buf is too short. The frame is not padded to the Ethernet minimum (the port
/// does that).
size_t finalize(std::span<uint8_t> buf, const FrameLayout& layout, size_t payload_len);

/// The length part of finalize(): pad bytes + count, IP/UDP lengths, IPv4 checksum. Returns the
/// frame length including the ICRC still to be written, or 0 if buf is too short.
size_t finalize_lengths(std::span<uint8_t> buf, const FrameLayout& layout, size_t payload_len);

/// The ICRC part of finalize() after finalize_lengths(): computes it over the whole frame and
/// writes it into the last 4 bytes of buf[0, frame_len).
void write_icrc(std::span<uint8_t> buf, const FrameLayout& layout, size_t frame_len);

/// write_icrc() with Linux rxe's ICRC of an RC FLUSH (icrc_compute_rxe_flush(); [device]
/// rxe_flush_icrc): for a RoCEv2 frame only, a RoCE v1 one keeps the standard ICRC.
void write_icrc_rxe_flush(std::span<uint8_t> buf, const FrameLayout& layout, size_t frame_len);

/// The running ICRC over the masked pseudo-header and the extended headers, i.e. everything the
/// ICRC covers before the payload; call after finalize_lengths(). A fused copy path continues it:
///   uint32_t crc = icrc_headers(buf, l);
///   crc = crc32_update(crc, payload);             // e.g. chunk by chunk while copying
///   crc = crc32_update(crc, pad bytes (zero));    // frame_len - 4 - payload_offset - payload_len
///   finish_icrc(buf, frame_len, crc);
uint32_t icrc_headers(std::span<const uint8_t> buf, const FrameLayout& layout);

/// Same as write_icrc() for a caller that already holds the running CRC of the whole covered
/// range: crc = crc32_update(icrc_pseudo_header(l3, ihl), bytes after the BTH up to the ICRC),
/// e.g. folded into its payload copy (RoCE v1: icrc_pseudo_header_grh(l3)). Writes
/// store_icrc(buf + frame_len - 4, crc).
void finish_icrc(std::span<uint8_t> buf, size_t frame_len, uint32_t crc);

/// Builds a whole CNP (Annex 17 §9.3, per docs/dcqcn-pfc.md §3.1) from spec's L2/L3/UDP fields,
/// pkey and dest_qpn
/// (= the source QP of the congested flow): opcode 0x81, BECN 1, FECN 0, PSN 0, SE/M/pad/AckReq
/// 0, 16 zero bytes, ICRC. Returns the frame length, or 0 if buf is too short.
size_t build_cnp(const FrameSpec& spec, std::span<uint8_t> buf);

}  // namespace uroce::wire
