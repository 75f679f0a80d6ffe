/**
 * @file parse.cc
 * @brief The RoCEv2 and RoCE v1 receive gate (IBA Annex 17, Annex A16; IBA Vol 1 §8.3,
 * §9.2-9.3). Every read is bounds-checked against the frame before it happens. Units: bytes.
 */
#include "transport/wire/parse.h"

#include <cstring>

#include "common/byteorder.h"
#include "transport/wire/eth.h"
#include "transport/wire/icrc.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/ipv6.h"
#include "transport/wire/udp.h"

namespace uroce::wire {
namespace {

constexpr Counter kDropCounters[] = {
#define X(name, counter) Counter::counter,
    UROCE_WIRE_DROP_REASONS(X)
#undef X
};
constexpr std::string_view kDropNames[] = {
#define X(name, counter) #name,
    UROCE_WIRE_DROP_REASONS(X)
#undef X
};
constexpr size_t kDropReasonCount = sizeof(kDropNames) / sizeof(kDropNames[0]);

}  // namespace

Counter drop_counter(DropReason r) {
  const auto i = static_cast<size_t>(r);
  return i < kDropReasonCount ? kDropCounters[i] : Counter::rx_malformed;
}

std::string_view to_string(DropReason r) {
  const auto i = static_cast<size_t>(r);
  return i < kDropReasonCount ? kDropNames[i] : std::string_view("kInvalid");
}

DropReason parse_headers(std::span<const uint8_t> frame, ParsedPacket* out) {
  const uint8_t* const p = frame.data();
  const size_t n = frame.size();

  // Ethernet, optional 802.1Q.
  if (n < sizeof(EthHdr)) return DropReason::kShortFrame;
  std::memcpy(out->dst_mac.b.data(), p, 6);
  std::memcpy(out->src_mac.b.data(), p + 6, 6);
  uint16_t ethertype = load_be16(p + 12);
  size_t off = sizeof(EthHdr);
  if (ethertype == kEtherTypeVlan) {
    if (n < sizeof(EthHdr) + sizeof(VlanTag)) return DropReason::kShortFrame;
    const uint16_t tci = load_be16(p + off);
    out->has_vlan = true;
    out->pcp = static_cast<uint8_t>(tci >> kVlanPcpShift);
    out->dei = (tci & kVlanDeiMask) != 0;
    out->vid = tci & kVlanVidMask;
    ethertype = load_be16(p + off + 2);
    off += sizeof(VlanTag);
  } else {
    out->has_vlan = false;
    out->pcp = 0;
    out->dei = false;
    out->vid = 0;
  }

  // IP or GRH. After this block: ip = IP header (GRH), ip_hdr_len, l4_len = IP payload.
  const uint8_t* const ip = p + off;
  const size_t avail = n - off;
  size_t ip_hdr_len;
  size_t l4_len;
  const bool v1 = ethertype == kEtherTypeRoce;
  out->roce_v1 = v1;
  if (ethertype == kEtherTypeIpv4) {
    if (avail < sizeof(Ipv4Hdr)) return DropReason::kIpTruncated;
    if ((ip[0] >> 4) != 4) return DropReason::kIpBadVersion;
    ip_hdr_len = static_cast<size_t>(ip[0] & kIpv4IhlMask) * 4;
    if (ip_hdr_len < sizeof(Ipv4Hdr) || ip_hdr_len > avail) return DropReason::kIpBadHeaderLength;
    const size_t total = load_be16(ip + 2);
    if (total < ip_hdr_len || total > avail) return DropReason::kIpBadLength;
    if (ipv4_checksum(ip, ip_hdr_len) != 0) return DropReason::kIpBadChecksum;
    if (load_be16(ip + 6) & (kIpv4FlagMf | kIpv4FragOffsetMask)) return DropReason::kIpFragment;
    if (ip[9] != kIpProtoUdp) return DropReason::kNotUdp;
    l4_len = total - ip_hdr_len;
    out->ip_version = 4;
    out->src_ip = Gid::from_ipv4(load_be32(ip + 12));
    out->dst_ip = Gid::from_ipv4(load_be32(ip + 16));
    out->dscp = ip[1] >> kTosDscpShift;
    out->ecn = ip[1] & kTosEcnMask;
    out->ttl = ip[8];
    out->flow_label = 0;
    out->ip_id = load_be16(ip + 4);
  } else if (ethertype == kEtherTypeIpv6 || v1) {
    // A GRH has the IPv6 header's layout (IBA Vol 1 §8.3); its NxtHdr names the BTH.
    if (avail < sizeof(Ipv6Hdr)) return DropReason::kIpTruncated;
    if ((ip[0] >> 4) != 6) return DropReason::kIpBadVersion;
    ip_hdr_len = sizeof(Ipv6Hdr);
    l4_len = load_be16(ip + 4);
    if (l4_len > avail - ip_hdr_len) return DropReason::kIpBadLength;
    if (ip[6] != (v1 ? kGrhNxtHdrIba : kIpProtoUdp)) return DropReason::kNotUdp;
    const uint32_t vtf = load_be32(ip);
    out->ip_version = 6;
    std::memcpy(out->src_ip.raw.data(), ip + 8, 16);
    std::memcpy(out->dst_ip.raw.data(), ip + 24, 16);
    const uint8_t tc = static_cast<uint8_t>((vtf & kIpv6TcMask) >> kIpv6TcShift);
    out->dscp = tc >> kTosDscpShift;
    out->ecn = tc & kTosEcnMask;
    out->ttl = ip[7];
    out->flow_label = vtf & kIpv6FlowLabelMask;
    out->ip_id = 0;
  } else {
    return DropReason::kNotIp;
  }
  out->ip_header = std::span<const uint8_t>(ip, ip_hdr_len);

  // UDP (RoCEv2 only). After this block: bth, roce_len = BTH .. ICRC.
  const uint8_t* bth = ip + ip_hdr_len;
  size_t roce_len = l4_len;
  if (v1) {
    out->udp_sport = 0;
    out->udp_dport = 0;
  } else {
    if (l4_len < sizeof(UdpHdr)) return DropReason::kUdpTruncated;
    const uint8_t* const udp = ip + ip_hdr_len;
    if (load_be16(udp + 4) != l4_len) return DropReason::kUdpBadLength;
    out->udp_sport = load_be16(udp);
    out->udp_dport = load_be16(udp + 2);
    if (out->udp_dport != kRoceV2Port) return DropReason::kNotRocePort;
    bth = udp + sizeof(UdpHdr);
    roce_len = l4_len - sizeof(UdpHdr);
  }

  // BTH.
  if (roce_len < sizeof(Bth) + kIcrcLen) return DropReason::kBthTruncated;
  const OpcodeInfo& info = kOpcodeTable[bth[0]];
  if (!info.valid) return DropReason::kUnknownOpcode;
  const uint8_t b1 = bth[1];
  out->tver = b1 & kBthTverMask;
  if (out->tver != 0) return DropReason::kBadTver;
  // uroce's extension header (sr_ext.h) sits after the IBA extended headers.
  const uint32_t w2 = load_be32(bth + 8);
  size_t ext_len = 0;
  out->ext = UroceExt::kNone;
  if (w2 & kBthUroceExtMask) {
    if (info.is(OpFlag::kRc) && info.is(OpFlag::kRequest) &&
        (info.is(OpFlag::kSend) || info.is(OpFlag::kWrite))) {
      out->ext = UroceExt::kSreth;
      ext_len = sizeof(Sreth);
    } else if (bth[0] == static_cast<uint8_t>(Opcode::kRcAcknowledge)) {
      out->ext = UroceExt::kSack;
      if (roce_len < info.length + 4 + kIcrcLen) return DropReason::kHeaderTruncated;
      const uint32_t nwords = load_be32(bth + info.length) >> kSackWordsShift;
      if (nwords == 0 || nwords > kSackMaxWords) return DropReason::kBadExtension;
      ext_len = 4 + 4 * nwords;
    } else {
      return DropReason::kBadExtension;
    }
  }
  // uroce's timestamp header (ts_ext.h) follows it.
  const size_t ts_off = info.length + ext_len;
  out->has_tseth = (w2 & kBthUroceTsMask) != 0;
  if (out->has_tseth) {
    if (info.is(OpFlag::kRc) && info.is(OpFlag::kRequest)) {
      ext_len += kTsethRequestLen;
    } else if (bth[0] == static_cast<uint8_t>(Opcode::kRcAcknowledge)) {
      ext_len += kTsethAckLen;
    } else {
      return DropReason::kBadExtension;
    }
  }
  if (roce_len < info.length + ext_len + kIcrcLen) return DropReason::kHeaderTruncated;
  const size_t data_len = roce_len - info.length - ext_len - kIcrcLen;  // payload + pad
  out->padcnt = static_cast<uint8_t>((b1 & kBthPadCntMask) >> kBthPadCntShift);
  if (info.has_payload()) {
    if (out->padcnt > data_len || (data_len & 3) != 0) return DropReason::kBadPad;
  } else {
    if (data_len != 0) return DropReason::kUnexpectedPayload;
    if (out->padcnt != 0) return DropReason::kBadPad;
  }
  out->opcode = static_cast<Opcode>(bth[0]);
  out->info = &info;
  out->se = (b1 & kBthSeMask) != 0;
  out->migreq = (b1 & kBthMigReqMask) != 0;
  out->pkey = load_be16(bth + 2);
  const uint32_t w1 = load_be32(bth + 4);
  out->fecn = (w1 & kBthFecnMask) != 0;
  out->becn = (w1 & kBthBecnMask) != 0;
  out->dest_qpn = Qpn(w1 & kBthQpnMask);
  out->ackreq = (w2 & kBthAckReqMask) != 0;
  out->psn = Psn(w2 & kBthPsnMask);

  // Extended headers: all inside [bth, bth + info.length), checked above.
  const HdrMask h = info.hdrs;
  if (h.has(ExtHdr::kDeth)) {
    const uint8_t* x = bth + info.offset_of(ExtHdr::kDeth);
    out->deth.qkey = load_be32(x);
    out->deth.src_qpn = Qpn(load_be32(x + 4) & kDethSrcQpnMask);
  }
  if (h.has(ExtHdr::kXrcEth)) {
    out->xrc_srqn = load_be32(bth + info.offset_of(ExtHdr::kXrcEth)) & kXrcSrqnMask;
  }
  if (h.has(ExtHdr::kFeth)) {
    const uint32_t v = load_be32(bth + info.offset_of(ExtHdr::kFeth));
    out->feth.placement = static_cast<uint8_t>(v & kFethPlacementMask);
    out->feth.selectivity =
        static_cast<uint8_t>((v & kFethSelectivityMask) >> kFethSelectivityShift);
  }
  if (h.has(ExtHdr::kReth)) {
    const uint8_t* x = bth + info.offset_of(ExtHdr::kReth);
    out->reth.va = load_be64(x);
    out->reth.rkey = load_be32(x + 8);
    out->reth.dma_len = load_be32(x + 12);
  }
  if (h.has(ExtHdr::kAtomicEth)) {
    const uint8_t* x = bth + info.offset_of(ExtHdr::kAtomicEth);
    out->atomic_eth.va = load_be64(x);
    out->atomic_eth.rkey = load_be32(x + 8);
    out->atomic_eth.swap_add = load_be64(x + 12);
    out->atomic_eth.compare = load_be64(x + 20);
  }
  if (h.has(ExtHdr::kAeth)) {
    const uint32_t v = load_be32(bth + info.offset_of(ExtHdr::kAeth));
    out->aeth.syndrome = static_cast<uint8_t>(v >> 24);
    out->aeth.msn = Msn(v & kAethMsnMask);
  }
  if (h.has(ExtHdr::kAtomicAckEth)) {
    out->atomic_ack_orig = load_be64(bth + info.offset_of(ExtHdr::kAtomicAckEth));
  }
  if (h.has(ExtHdr::kImmDt)) out->imm = load_be32(bth + info.offset_of(ExtHdr::kImmDt));
  if (h.has(ExtHdr::kIeth)) out->ieth_rkey = load_be32(bth + info.offset_of(ExtHdr::kIeth));

  if (out->ext == UroceExt::kSreth) {
    const uint8_t* x = bth + info.length;
    out->sreth.recv_seq = load_be32(x);
    out->sreth.rkey = load_be32(x + 4);
    out->sreth.place = load_be64(x + 8);
  } else if (out->ext == UroceExt::kSack) {
    const uint8_t* x = bth + info.length;
    const uint32_t w = load_be32(x);
    out->sack.nwords = static_cast<uint8_t>(w >> kSackWordsShift);
    out->sack.base = Psn(w & kBthPsnMask);
    out->sack.bits = {};
    for (size_t k = 0; k < out->sack.nwords; ++k) out->sack.bits[k] = load_be32(x + 4 + 4 * k);
  }
  if (out->has_tseth) {
    out->tseth.stamp = load_be32(bth + ts_off);
    out->tseth.hold = info.is(OpFlag::kRequest) ? 0 : load_be32(bth + ts_off + 4);
  }
  out->payload = std::span<const uint8_t>(bth + info.length + ext_len, data_len - out->padcnt);
  out->bth_offset = static_cast<uint16_t>(bth - p);
  out->ip_packet_len = static_cast<uint16_t>(ip_hdr_len + l4_len);
  return DropReason::kOk;
}

DropReason check_icrc(std::span<const uint8_t> frame, const ParsedPacket& pkt) {
  (void)frame;  // pkt's spans point into frame; the bounds were checked by parse_headers()
  const uint8_t* l3 = pkt.ip_header.data();
  const size_t covered = pkt.ip_packet_len - kIcrcLen;
  const std::span<const uint8_t> packet(l3, covered);
  const size_t ihl = pkt.ip_version == 4 ? pkt.ip_header.size() : 0;
  const uint32_t crc = pkt.roce_v1 ? icrc_compute_grh(packet) : icrc_compute(packet, ihl);
  return crc == load_icrc(l3 + covered) ? DropReason::kOk : DropReason::kBadIcrc;
}

DropReason check_icrc_rxe_flush(std::span<const uint8_t> frame, const ParsedPacket& pkt) {
  (void)frame;  // as check_icrc()
  if (pkt.roce_v1 || pkt.opcode != Opcode::kRcFlush) return DropReason::kBadIcrc;
  const uint8_t* l3 = pkt.ip_header.data();
  const size_t covered = pkt.ip_packet_len - kIcrcLen;
  const size_t ihl = pkt.ip_version == 4 ? pkt.ip_header.size() : 0;
  const uint32_t crc = icrc_compute_rxe_flush(std::span<const uint8_t>(l3, covered), ihl);
  return crc == load_icrc(l3 + covered) ? DropReason::kOk : DropReason::kBadIcrc;
}

DropReason parse(std::span<const uint8_t> frame, ParsedPacket* out) {
  const DropReason r = parse_headers(frame, out);
  if (r != DropReason::kOk) return r;
  return check_icrc(frame, *out);
}

}  // namespace uroce::wire
