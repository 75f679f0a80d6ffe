/**
 * @file build.cc
 * @brief RoCEv2 and RoCE v1 frame builder (IBA Annex 17, Annex A16; IBA Vol 1 §8.3, §9.2-9.3).
 * Units: bytes.
 */
#include "transport/wire/build.h"

#include <array>
#include <bit>
#include <cstring>

#include "common/byteorder.h"
#include "transport/wire/bth.h"
#include "transport/wire/eth.h"
#include "transport/wire/icrc.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/ipv6.h"
#include "transport/wire/udp.h"

namespace uroce::wire {
namespace {

constexpr uint8_t kIpv4DefaultVersionIhl = 0x45;
constexpr uint8_t kV4MappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/// Adds a 16-bit word to a ones' complement sum kept unfolded in 32 bits.
constexpr uint32_t fold16(uint32_t sum) {
  sum = (sum & 0xffffu) + (sum >> 16);
  return (sum & 0xffffu) + (sum >> 16);
}

/// Assembles a FrameLayout in two 64-bit registers. GCC otherwise builds the returned struct with
/// 16-bit stack stores and reloads it with 64-bit loads, a store-forwarding stall that cost
/// ~40% of build_headers().
inline FrameLayout make_layout(uint16_t l3, uint16_t l4, uint16_t bth, uint16_t payload,
                               uint16_t sum, bool ipv6, bool roce_v1) {
  if constexpr (std::endian::native == std::endian::little) {
    const std::array<uint64_t, 2> w = {
        uint64_t{l3} | (uint64_t{l4} << 16) | (uint64_t{bth} << 32) | (uint64_t{payload} << 48),
        uint64_t{sum} | (uint64_t{ipv6} << 16) | (uint64_t{roce_v1} << 24)};
    return std::bit_cast<FrameLayout>(w);
  } else {
    FrameLayout l;
    l.l3_offset = l3;
    l.l4_offset = l4;
    l.bth_offset = bth;
    l.payload_offset = payload;
    l.ipv4_sum_partial = sum;
    l.ipv6 = ipv6;
    l.roce_v1 = roce_v1;
    return l;
  }
}

/// Gid::is_ipv4_mapped() as one 12-byte compare.
inline bool v4_mapped(const Gid& g) { return std::memcmp(g.raw.data(), kV4MappedPrefix, 12) == 0; }

/// An IPv6 header or a GRH follows the Ethernet header: every RoCE v1 frame, and RoCEv2 unless
/// both GIDs are IPv4-mapped.
inline bool l3_is_ipv6(const FrameSpec& s) {
  return s.roce_v1 || !(v4_mapped(s.src_ip) && v4_mapped(s.dst_ip));
}

}  // namespace

size_t frame_len_for(const FrameSpec& spec, size_t payload_len) {
  const bool ipv6 = l3_is_ipv6(spec);
  return sizeof(EthHdr) + (spec.vlan ? sizeof(VlanTag) : 0) +
         (ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr)) + (spec.roce_v1 ? 0 : sizeof(UdpHdr)) +
         opcode_info(spec.opcode).length + ext_len(spec) + payload_len + ((0u - payload_len) & 3u) +
         kIcrcLen;
}

FrameLayout build_headers(const FrameSpec& spec, std::span<uint8_t> buf) {
  // The layout is assembled from locals at the end: filling a returned struct field by field
  // makes the caller's register load of it stall on store forwarding.
  const OpcodeInfo& info = opcode_info(spec.opcode);
  if (!info.valid) return FrameLayout{};
  const bool v1 = spec.roce_v1;
  const bool ipv6 = l3_is_ipv6(spec);
  uint16_t ipv4_sum_partial = 0;
  const size_t l2 = sizeof(EthHdr) + (spec.vlan ? sizeof(VlanTag) : 0);
  const size_t l3 = ipv6 ? sizeof(Ipv6Hdr) : sizeof(Ipv4Hdr);
  const size_t l4 = v1 ? 0 : sizeof(UdpHdr);
  const size_t xlen = ext_len(spec);
  const size_t need = l2 + l3 + l4 + info.length + xlen;
  if (buf.size() < need) return FrameLayout{};
  uint8_t* p = buf.data();

  // Ethernet (+ 802.1Q).
  std::memcpy(p, spec.dst_mac.b.data(), 6);
  std::memcpy(p + 6, spec.src_mac.b.data(), 6);
  const uint16_t ethertype = v1 ? kEtherTypeRoce : ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
  if (spec.vlan) {
    store_be16(p + 12, kEtherTypeVlan);
    store_be16(p + 14,
               static_cast<uint16_t>(((spec.pcp & 7u) << kVlanPcpShift) |
                                     (spec.dei ? kVlanDeiMask : 0u) | (spec.vid & kVlanVidMask)));
    store_be16(p + 16, ethertype);
  } else {
    store_be16(p + 12, ethertype);
  }
  uint8_t* ip = p + l2;
  const uint8_t tos = static_cast<uint8_t>((spec.dscp << kTosDscpShift) | (spec.ecn & kTosEcnMask));

  // IP (or the GRH, whose layout is the IPv6 header's); lengths and checksum are written by
  // finalize_lengths().
  if (ipv6) {
    store_be32(
        ip, (6u << 28) | (uint32_t{tos} << kIpv6TcShift) | (spec.flow_label & kIpv6FlowLabelMask));
    store_be16(ip + 4, 0);
    ip[6] = v1 ? kGrhNxtHdrIba : kIpProtoUdp;
    ip[7] = spec.ttl;
    std::memcpy(ip + 8, spec.src_ip.raw.data(), 16);
    std::memcpy(ip + 24, spec.dst_ip.raw.data(), 16);
  } else {
    const uint32_t src = spec.src_ip.ipv4();
    const uint32_t dst = spec.dst_ip.ipv4();
    const uint32_t w0 = (uint32_t{kIpv4DefaultVersionIhl} << 8) | tos;
    const uint32_t w4 = (uint32_t{spec.ttl} << 8) | kIpProtoUdp;
    // Whole-word stores: version..total length, id..fragment, TTL..checksum, addresses.
    store_be32(ip, w0 << 16);
    store_be32(ip + 4, (uint32_t{spec.ip_id} << 16) | kIpv4FlagDf);
    store_be32(ip + 8, w4 << 16);
    store_be32(ip + 12, src);
    store_be32(ip + 16, dst);
    ipv4_sum_partial =
        static_cast<uint16_t>(fold16(w0 + spec.ip_id + kIpv4FlagDf + w4 + (src >> 16) +
                                     (src & 0xffffu) + (dst >> 16) + (dst & 0xffffu)));
  }

  // UDP; length by finalize_lengths(), checksum 0 (see build.h).
  uint8_t* udp = ip + l3;
  if (!v1) {
    store_be16(udp, spec.udp_sport);
    store_be16(udp + 2, spec.udp_dport);
    store_be32(udp + 4, 0);
  }

  // BTH; pad count by finalize_lengths().
  uint8_t* bth = udp + l4;
  bth[0] = static_cast<uint8_t>(spec.opcode);
  bth[1] = static_cast<uint8_t>((spec.se ? kBthSeMask : 0) | (spec.migreq ? kBthMigReqMask : 0));
  store_be16(bth + 2, spec.pkey);
  store_be32(bth + 4, (spec.fecn ? kBthFecnMask : 0) | (spec.becn ? kBthBecnMask : 0) |
                          spec.dest_qpn.value());
  store_be32(bth + 8, (spec.ackreq ? kBthAckReqMask : 0) |
                          (spec.ext != UroceExt::kNone ? kBthUroceExtMask : 0) |
                          (spec.has_tseth ? kBthUroceTsMask : 0) | spec.psn.value());

  // Extended headers at the table's offsets.
  const HdrMask h = info.hdrs;
  if (h.has(ExtHdr::kDeth)) {
    uint8_t* x = bth + info.offset_of(ExtHdr::kDeth);
    store_be32(x, spec.deth.qkey);
    store_be32(x + 4, spec.deth.src_qpn.value());
  }
  if (h.has(ExtHdr::kXrcEth)) {
    store_be32(bth + info.offset_of(ExtHdr::kXrcEth), spec.xrc_srqn & kXrcSrqnMask);
  }
  if (h.has(ExtHdr::kFeth)) {
    store_be32(
        bth + info.offset_of(ExtHdr::kFeth),
        (spec.feth.placement & kFethPlacementMask) |
            ((uint32_t{spec.feth.selectivity} << kFethSelectivityShift) & kFethSelectivityMask));
  }
  if (h.has(ExtHdr::kReth)) {
    uint8_t* x = bth + info.offset_of(ExtHdr::kReth);
    store_be64(x, spec.reth.va);
    store_be32(x + 8, spec.reth.rkey);
    store_be32(x + 12, spec.reth.dma_len);
  }
  if (h.has(ExtHdr::kAtomicEth)) {
    uint8_t* x = bth + info.offset_of(ExtHdr::kAtomicEth);
    store_be64(x, spec.atomic_eth.va);
    store_be32(x + 8, spec.atomic_eth.rkey);
    store_be64(x + 12, spec.atomic_eth.swap_add);
    store_be64(x + 20, spec.atomic_eth.compare);
  }
  if (h.has(ExtHdr::kAeth)) {
    store_be32(bth + info.offset_of(ExtHdr::kAeth),
               (uint32_t{spec.aeth.syndrome} << 24) | spec.aeth.msn.value());
  }
  if (h.has(ExtHdr::kAtomicAckEth)) {
    store_be64(bth + info.offset_of(ExtHdr::kAtomicAckEth), spec.atomic_ack_orig);
  }
  if (h.has(ExtHdr::kImmDt)) store_be32(bth + info.offset_of(ExtHdr::kImmDt), spec.imm);
  if (h.has(ExtHdr::kIeth)) store_be32(bth + info.offset_of(ExtHdr::kIeth), spec.ieth_rkey);
  if (h.has(ExtHdr::kCnpReserved)) {
    std::memset(bth + info.offset_of(ExtHdr::kCnpReserved), 0, sizeof(CnpReserved));
  }
  if (spec.ext == UroceExt::kSreth) {
    uint8_t* x = bth + info.length;
    store_be32(x, spec.sreth.recv_seq);
    store_be32(x + 4, spec.sreth.rkey);
    store_be64(x + 8, spec.sreth.place);
  } else if (spec.ext == UroceExt::kSack) {
    uint8_t* x = bth + info.length;
    store_be32(x, (uint32_t{spec.sack.nwords} << kSackWordsShift) | spec.sack.base.value());
    for (size_t k = 0; k < spec.sack.nwords; ++k) store_be32(x + 4 + 4 * k, spec.sack.bits[k]);
  }
  if (spec.has_tseth) {
    uint8_t* x = bth + info.length + ext_len(spec.ext, spec.sack);
    store_be32(x, spec.tseth.stamp);
    if (spec.opcode == Opcode::kRcAcknowledge) store_be32(x + 4, spec.tseth.hold);
  }
  return make_layout(static_cast<uint16_t>(l2), static_cast<uint16_t>(l2 + l3),
                     static_cast<uint16_t>(l2 + l3 + l4),
                     static_cast<uint16_t>(l2 + l3 + l4 + info.length + xlen), ipv4_sum_partial,
                     ipv6, v1);
}

size_t finalize_lengths(std::span<uint8_t> buf, const FrameLayout& l, size_t payload_len) {
  if (l.payload_offset == 0) return 0;
  uint8_t* p = buf.data();
  uint8_t* bth = p + l.bth_offset;
  if (payload_len != 0 && !kOpcodeTable[bth[0]].has_payload()) return 0;
  const size_t pad = (0u - payload_len) & 3u;
  const size_t frame_len = l.payload_offset + payload_len + pad + kIcrcLen;
  if (frame_len > buf.size() || frame_len - l.l3_offset > 0xffff) return 0;

  uint8_t* pad_at = p + l.payload_offset + payload_len;
  for (size_t i = 0; i < pad; ++i) pad_at[i] = 0;
  bth[1] = static_cast<uint8_t>((bth[1] & ~kBthPadCntMask) | (pad << kBthPadCntShift));

  uint8_t* ip = p + l.l3_offset;
  const size_t ip_len = frame_len - l.l3_offset;
  if (l.ipv6) {
    store_be16(ip + 4, static_cast<uint16_t>(ip_len - sizeof(Ipv6Hdr)));
  } else {
    store_be16(ip + 2, static_cast<uint16_t>(ip_len));
    // RFC 1624: add the total length to the partial sum computed by build_headers().
    const uint32_t sum = fold16(uint32_t{l.ipv4_sum_partial} + static_cast<uint32_t>(ip_len));
    store_be16(ip + 10, static_cast<uint16_t>(~sum & 0xffffu));
  }
  if (!l.roce_v1) store_be16(p + l.l4_offset + 4, static_cast<uint16_t>(frame_len - l.l4_offset));
  return frame_len;
}

void write_icrc(std::span<uint8_t> buf, const FrameLayout& l, size_t frame_len) {
  const uint8_t* l3 = buf.data() + l.l3_offset;
  const size_t covered = frame_len - l.l3_offset - kIcrcLen;
  const std::span<const uint8_t> packet(l3, covered);
  const uint32_t crc =
      l.roce_v1 ? icrc_compute_grh(packet) : icrc_compute(packet, l.ipv6 ? 0 : sizeof(Ipv4Hdr));
  store_icrc(buf.data() + frame_len - kIcrcLen, crc);
}

void write_icrc_rxe_flush(std::span<uint8_t> buf, const FrameLayout& l, size_t frame_len) {
  if (l.roce_v1) return;
  const uint8_t* l3 = buf.data() + l.l3_offset;
  const std::span<const uint8_t> packet(l3, frame_len - l.l3_offset - kIcrcLen);
  store_icrc(buf.data() + frame_len - kIcrcLen,
             icrc_compute_rxe_flush(packet, l.ipv6 ? 0 : sizeof(Ipv4Hdr)));
}

uint32_t icrc_headers(std::span<const uint8_t> buf, const FrameLayout& l) {
  const uint8_t* l3 = buf.data() + l.l3_offset;
  const uint32_t crc =
      l.roce_v1 ? icrc_pseudo_header_grh(l3) : icrc_pseudo_header(l3, l.ipv6 ? 0 : sizeof(Ipv4Hdr));
  const size_t ext_begin = l.bth_offset + sizeof(Bth);
  return crc32_update(crc, buf.subspan(ext_begin, l.payload_offset - ext_begin));
}

void finish_icrc(std::span<uint8_t> buf, size_t frame_len, uint32_t crc) {
  store_icrc(buf.data() + frame_len - kIcrcLen, crc);
}

size_t finalize(std::span<uint8_t> buf, const FrameLayout& l, size_t payload_len) {
  const size_t len = finalize_lengths(buf, l, payload_len);
  if (len != 0) write_icrc(buf, l, len);
  return len;
}

size_t build_cnp(const FrameSpec& spec, std::span<uint8_t> buf) {
  FrameSpec s = spec;
  s.opcode = Opcode::kCnp;
  s.se = false;
  s.migreq = false;
  s.fecn = false;
  s.becn = true;
  s.ackreq = false;
  s.psn = Psn(0);
  const FrameLayout l = build_headers(s, buf);
  if (l.payload_offset == 0) return 0;
  return finalize(buf, l, 0);
}

}  // namespace uroce::wire
