/**
 * @file parse.h
 * @brief The receive gate: one Ethernet frame (without FCS) -> ParsedPacket, or a DropReason.
 *
 * Checks, in order: Ethernet (+ optional 802.1Q), EtherType IPv4/IPv6, IP version / IHL /
 * lengths / checksum (IPv4) / no fragments, protocol UDP, UDP length, destination port 4791,
 * BTH opcode in the table, TVer 0, header length from the table (an XRC request shorter than
 * its XRCETH is kHeaderTruncated), uroce's extension headers (sr_ext.h: only on RC SEND/WRITE
 * requests and RC Acknowledge; ts_ext.h: only on RC requests and RC Acknowledge), pad count vs
 * payload, ICRC.
 * RoCE v1 (EtherType 0x8915, IBA Annex A16): the GRH instead of IP and UDP: IPVer 6, PayLen
 * within the frame, NxtHdr 0x1B (the IP drop reasons name these), then the BTH checks as above.
 * It never reads outside `frame`. Bytes after the IP packet (Ethernet padding) are ignored.
 * References: IBA Annex 17 (RoCEv2), Annex A16 (RoCE v1), IBA Vol 1 §8.3 (GRH), §9.2-9.3 (BTH,
 * extended headers).
 * Units: bytes.
 */
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/counters.h"
#include "common/types.h"
#include "transport/wire/ext_headers.h"
#include "transport/wire/opcode.h"
#include "transport/wire/sr_ext.h"
#include "transport/wire/ts_ext.h"

namespace uroce::wire {

// X(name, counter): every reason a frame is dropped and the counter it increments.
#define UROCE_WIRE_DROP_REASONS(X)                                                             \
  X(kOk, rx_malformed)                 /* not a drop */                                        \
  X(kShortFrame, rx_malformed)         /* shorter than an Ethernet header (+ VLAN tag) */      \
  X(kNotIp, rx_not_roce)               /* EtherType neither IPv4, IPv6 nor RoCE (0x8915) */    \
  X(kIpTruncated, rx_malformed)        /* frame ends inside the IP header or GRH */            \
  X(kIpBadVersion, rx_malformed)       /* IP version (GRH IPVer) wrong for the EtherType */    \
  X(kIpBadHeaderLength, rx_malformed)  /* IPv4 IHL < 5 or beyond the frame */                  \
  X(kIpBadLength, rx_malformed)        /* IP total / payload length (GRH PayLen) vs frame */   \
  X(kIpBadChecksum, rx_malformed)      /* IPv4 header checksum wrong */                        \
  X(kIpFragment, rx_malformed)         /* IPv4 fragment (MF or offset set) */                  \
  X(kNotUdp, rx_not_roce)              /* IP protocol / next header not UDP (GRH: not 0x1B) */ \
  X(kUdpTruncated, rx_malformed)       /* IP payload shorter than a UDP header */              \
  X(kUdpBadLength, rx_malformed)       /* UDP length != IP payload length */                   \
  X(kNotRocePort, rx_not_roce)         /* UDP destination port is not 4791 */                  \
  X(kBthTruncated, rx_malformed)       /* UDP payload shorter than BTH + ICRC */               \
  X(kUnknownOpcode, rx_unknown_opcode) /* opcode not in the table */                           \
  X(kBadTver, rx_malformed)            /* BTH TVer != 0 */                                     \
  X(kHeaderTruncated, rx_malformed)    /* extended headers run past the packet */              \
  X(kBadPad, rx_malformed)             /* pad count > payload, or payload+pad not 4-aligned */ \
  X(kUnexpectedPayload, rx_malformed)  /* payload on an opcode that carries none */            \
  X(kBadExtension, rx_malformed)       /* uroce extension bit on an opcode without one, or */  \
                                       /* a SACKETH of 0 or more than 16 words */              \
  X(kBadIcrc, rx_icrc_encapsulated)    /* ICRC mismatch */

enum class DropReason : uint8_t {
#define X(name, counter) name,
  UROCE_WIRE_DROP_REASONS(X)
#undef X
};

/// The counter a drop increments (kOk maps to rx_malformed but must not be counted).
Counter drop_counter(DropReason r);
/// "kBadIcrc" etc.
std::string_view to_string(DropReason r);

/// Everything the transport needs from one received RoCE packet. Decoded, host order.
/// The spans point into the frame passed to parse(); they live as long as it does.
struct ParsedPacket {
  // L2
  MacAddr dst_mac;
  MacAddr src_mac;
  bool has_vlan = false;
  uint8_t pcp = 0;   ///< 802.1Q priority, 0 when untagged
  bool dei = false;  ///< 802.1Q drop eligible
  uint16_t vid = 0;  ///< 802.1Q VLAN id, 0 when untagged
  /// RoCE v1: a GRH and no UDP header. Its fields are in the IPv6 ones below (ip_version 6,
  /// src_ip = SGID, dst_ip = DGID, dscp/ecn from TClass, ttl = HopLmt), udp_* are 0.
  bool roce_v1 = false;
  // L3
  uint8_t ip_version = 0;  ///< 4 or 6
  Gid src_ip;              ///< IPv4-mapped (::ffff:a.b.c.d) for IPv4
  Gid dst_ip;
  uint8_t dscp = 0;
  uint8_t ecn = 0;          ///< kEcnNotEct / kEcnEct1 / kEcnEct0 / kEcnCe
  uint8_t ttl = 0;          ///< IPv4 TTL or IPv6 hop limit
  uint32_t flow_label = 0;  ///< IPv6 only, 0 for IPv4
  uint16_t ip_id = 0;       ///< IPv4 identification, 0 for IPv6
  /// The IP header bytes (20 for IPv4 without options, 40 for IPv6 or a GRH): UD receives
  /// build the 40-byte GRH from it.
  std::span<const uint8_t> ip_header;
  // L4
  uint16_t udp_sport = 0;
  uint16_t udp_dport = 0;
  // BTH
  Opcode opcode{};
  bool se = false;
  bool migreq = false;
  uint8_t padcnt = 0;
  uint8_t tver = 0;
  uint16_t pkey = 0;
  bool fecn = false;
  bool becn = false;
  Qpn dest_qpn;
  bool ackreq = false;
  Psn psn;
  /// uroce's selective-repeat extension (sr_ext.h): which header, and its value.
  UroceExt ext = UroceExt::kNone;
  SrethValue sreth;
  SackValue sack;
  /// uroce's timestamp extension (ts_ext.h): whether the frame carries a TSETH, and its value.
  bool has_tseth = false;
  TsethValue tseth;
  /// The opcode's table row (never null after a successful parse).
  const OpcodeInfo* info = nullptr;
  // Extended headers: valid when info->has(ExtHdr::k...).
  RethValue reth;
  FethValue feth;
  AethValue aeth;
  AtomicEthValue atomic_eth;
  uint64_t atomic_ack_orig = 0;  ///< AtomicAckETH
  uint32_t imm = 0;              ///< ImmDt, as the big-endian number (see ImmDt)
  uint32_t ieth_rkey = 0;        ///< IETH
  DethValue deth;
  uint32_t xrc_srqn = 0;  ///< XRCETH: the XRC SRQ number (24 bits)
  /// Payload without pad and ICRC (empty for opcodes without payload).
  std::span<const uint8_t> payload;
  /// Offset of the BTH in the frame, bytes.
  uint16_t bth_offset = 0;
  /// IP packet length: frame bytes from the IP header (GRH) through the ICRC.
  uint16_t ip_packet_len = 0;

  constexpr bool has(ExtHdr h) const { return info != nullptr && info->has(h); }
};

/// Parses and validates one frame, ICRC included. On kOk *out is filled; on a drop *out is
/// unspecified. Never reads outside frame.
DropReason parse(std::span<const uint8_t> frame, ParsedPacket* out);

/// Same as parse() but stops before the ICRC check: fills *out and returns kOk when every other
/// check passes. Pair with check_icrc() (e.g. to fuse the payload ICRC with its copy).
DropReason parse_headers(std::span<const uint8_t> frame, ParsedPacket* out);

/// Checks the ICRC of a frame that parse_headers() accepted into pkt.
/// Returns kOk or kBadIcrc.
DropReason check_icrc(std::span<const uint8_t> frame, const ParsedPacket& pkt);

/// check_icrc() against Linux rxe's ICRC of an RC FLUSH (icrc_compute_rxe_flush()): kOk only for
/// an RC FLUSH over RoCEv2 that carries it, else kBadIcrc.
DropReason check_icrc_rxe_flush(std::span<const uint8_t> frame, const ParsedPacket& pkt);

}  // namespace uroce::wire
