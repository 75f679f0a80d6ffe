/**
 * @file describe.cc
 * @brief Text form of ParsedPacket (see describe.h). Units: bytes.
 */
#include "transport/wire/describe.h"

#include <cinttypes>
#include <cstdio>

namespace uroce::wire {
namespace {

void append(std::string* s, const char* fmt, auto... args) {
  char buf[160];
  const int n = std::snprintf(buf, sizeof(buf), fmt, args...);
  if (n > 0)
    s->append(buf, static_cast<size_t>(n) < sizeof(buf) ? static_cast<size_t>(n) : sizeof(buf) - 1);
}

}  // namespace

std::string describe(const ParsedPacket& p) {
  std::string s(to_string(p.opcode));
  s += ' ';
  s += p.src_ip.to_string();
  append(&s, ":%u > ", unsigned{p.udp_sport});
  s += p.dst_ip.to_string();
  append(&s, " dqpn=0x%06x psn=%u", p.dest_qpn.value(), p.psn.value());
  if (p.ackreq) s += " A";
  if (p.se) s += " SE";
  if (p.migreq) s += " M";
  if (p.fecn) s += " FECN";
  if (p.becn) s += " BECN";
  append(&s, " pkey=0x%04x dscp=%u ecn=%u", unsigned{p.pkey}, unsigned{p.dscp}, unsigned{p.ecn});
  if (p.has_vlan) append(&s, " vlan=%u pcp=%u", unsigned{p.vid}, unsigned{p.pcp});
  if (p.has(ExtHdr::kDeth)) {
    append(&s, " DETH(qkey=0x%08x srcqp=0x%06x)", p.deth.qkey, p.deth.src_qpn.value());
  }
  if (p.has(ExtHdr::kXrcEth)) {
    append(&s, " XRCETH(srqn=0x%06x)", p.xrc_srqn);
  }
  if (p.has(ExtHdr::kFeth)) {
    append(&s, " FETH(placement=%u selectivity=%u)", unsigned{p.feth.placement},
           unsigned{p.feth.selectivity});
  }
  if (p.has(ExtHdr::kReth)) {
    append(&s, " RETH(va=0x%016" PRIx64 " rkey=0x%08x len=%u)", p.reth.va, p.reth.rkey,
           p.reth.dma_len);
  }
  if (p.has(ExtHdr::kAtomicEth)) {
    append(&s,
           " AtomicETH(va=0x%016" PRIx64 " rkey=0x%08x swap_add=0x%" PRIx64 " compare=0x%" PRIx64
           ")",
           p.atomic_eth.va, p.atomic_eth.rkey, p.atomic_eth.swap_add, p.atomic_eth.compare);
  }
  if (p.has(ExtHdr::kAeth)) {
    const char* type = p.aeth.is_ack()       ? "ACK"
                       : p.aeth.is_rnr_nak() ? "RNR_NAK"
                       : p.aeth.is_nak()     ? "NAK"
                                             : "RESERVED";
    append(&s, " AETH(%s value=%u msn=%u)", type, unsigned{p.aeth.value()}, p.aeth.msn.value());
  }
  if (p.has(ExtHdr::kAtomicAckEth))
    append(&s, " AtomicAckETH(orig=0x%" PRIx64 ")", p.atomic_ack_orig);
  if (p.has(ExtHdr::kImmDt)) append(&s, " ImmDt(0x%08x)", p.imm);
  if (p.has(ExtHdr::kIeth)) append(&s, " IETH(rkey=0x%08x)", p.ieth_rkey);
  if (p.info != nullptr && p.info->has_payload()) {
    append(&s, " payload=%zu", p.payload.size());
    if (p.padcnt) append(&s, " pad=%u", unsigned{p.padcnt});
  }
  return s;
}

}  // namespace uroce::wire
