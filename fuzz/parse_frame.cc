/**
 * @file parse_frame.cc
 * @brief libFuzzer target for the RoCEv2 and RoCE v1 receive gate (lib/transport/wire/parse.h).
 *
 * 1. parse() must never crash or read outside the input (ASan/UBSan in the fuzz preset), and
 *    must agree with parse_headers() + check_icrc().
 * 2. Round trip: every frame the header checks accept (valid ICRC or not) is rebuilt from its
 * decoded fields with the builder; the rebuilt frame must parse, decode to the same fields, and
 * carry the same transport headers and payload bytes (reserved bits and CNP reserved bytes aside,
 * which the builder zeroes). Units: bytes.
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/wire/bth.h"
#include "transport/wire/build.h"
#include "transport/wire/parse.h"

namespace {

using namespace uroce;
using namespace uroce::wire;

void check(bool ok) {
  if (!ok) std::abort();
}

FrameSpec spec_of(const ParsedPacket& p) {
  FrameSpec s;
  s.src_mac = p.src_mac;
  s.dst_mac = p.dst_mac;
  s.vlan = p.has_vlan;
  s.pcp = p.pcp;
  s.dei = p.dei;
  s.vid = p.vid;
  s.roce_v1 = p.roce_v1;
  s.src_ip = p.src_ip;
  s.dst_ip = p.dst_ip;
  s.dscp = p.dscp;
  s.ecn = p.ecn;
  s.ttl = p.ttl;
  s.flow_label = p.flow_label;
  s.ip_id = p.ip_id;
  s.udp_sport = p.udp_sport;
  s.udp_dport = p.udp_dport;
  s.opcode = p.opcode;
  s.se = p.se;
  s.migreq = p.migreq;
  s.pkey = p.pkey;
  s.fecn = p.fecn;
  s.becn = p.becn;
  s.dest_qpn = p.dest_qpn;
  s.ackreq = p.ackreq;
  s.psn = p.psn;
  s.reth = p.reth;
  s.feth = p.feth;
  s.aeth = p.aeth;
  s.atomic_eth = p.atomic_eth;
  s.atomic_ack_orig = p.atomic_ack_orig;
  s.imm = p.imm;
  s.ieth_rkey = p.ieth_rkey;
  s.deth = p.deth;
  s.xrc_srqn = p.xrc_srqn;
  return s;
}

/// The transport headers + payload of a frame with reserved bits cleared.
std::vector<uint8_t> canonical_transport(const uint8_t* frame, const ParsedPacket& p) {
  const uint8_t* bth = frame + p.bth_offset;
  std::vector<uint8_t> v(bth, bth + p.info->length);
  v.insert(v.end(), p.payload.begin(), p.payload.end());
  v[4] &= static_cast<uint8_t>(~(kBthResv6Mask >> 24));
  v[8] &= static_cast<uint8_t>(~(kBthResv7Mask >> 24));
  if (p.has(ExtHdr::kDeth)) v[p.info->offset_of(ExtHdr::kDeth) + 4] = 0;  // Resv8
  if (p.has(ExtHdr::kXrcEth)) v[p.info->offset_of(ExtHdr::kXrcEth)] = 0;  // Resv8
  if (p.has(ExtHdr::kFeth)) {                                             // FETH bits 31:6
    uint8_t* f = v.data() + p.info->offset_of(ExtHdr::kFeth);
    f[0] = f[1] = f[2] = 0;
    f[3] &= 0x3f;
  }
  if (p.has(ExtHdr::kCnpReserved)) {
    std::memset(v.data() + p.info->offset_of(ExtHdr::kCnpReserved), 0, sizeof(CnpReserved));
  }
  return v;
}

/// Rebuilds p (parsed from data) with the builder and checks the round trip.
void round_trip(const uint8_t* data, size_t size, const ParsedPacket& p) {
  // Everything the parser returned points inside the input.
  check(p.info != nullptr && p.info->valid);
  check(p.payload.empty() ||
        (p.payload.data() >= data && p.payload.data() + p.payload.size() <= data + size));
  check(p.ip_header.data() >= data && p.ip_header.data() + p.ip_header.size() <= data + size);

  // A RoCEv2 IPv6 header carrying IPv4-mapped addresses cannot be expressed by the builder (it
  // picks IPv4 for those; a RoCE v1 GRH is always built); nothing more to compare.
  if (!p.roce_v1 && p.ip_version == 6 && p.src_ip.is_ipv4_mapped() && p.dst_ip.is_ipv4_mapped())
    return;

  const FrameSpec s = spec_of(p);
  std::vector<uint8_t> buf(p.payload.size() + kMaxFrameOverhead);
  const FrameLayout l = build_headers(s, buf);
  check(l.payload_offset != 0);
  if (!p.payload.empty()) {
    std::memcpy(buf.data() + l.payload_offset, p.payload.data(), p.payload.size());
  }
  const size_t len = finalize(buf, l, p.payload.size());
  check(len != 0);
  buf.resize(len);

  ParsedPacket q;
  check(parse(buf, &q) == DropReason::kOk);
  check(q.src_mac == p.src_mac && q.dst_mac == p.dst_mac);
  check(q.has_vlan == p.has_vlan && q.pcp == p.pcp && q.dei == p.dei && q.vid == p.vid);
  check(q.roce_v1 == p.roce_v1);
  check(q.ip_version == p.ip_version && q.src_ip == p.src_ip && q.dst_ip == p.dst_ip);
  check(q.dscp == p.dscp && q.ecn == p.ecn && q.ttl == p.ttl && q.flow_label == p.flow_label);
  check(q.ip_id == p.ip_id && q.udp_sport == p.udp_sport && q.udp_dport == p.udp_dport);
  check(q.opcode == p.opcode && q.se == p.se && q.migreq == p.migreq && q.padcnt == p.padcnt);
  check(q.pkey == p.pkey && q.fecn == p.fecn && q.becn == p.becn);
  check(q.dest_qpn == p.dest_qpn && q.ackreq == p.ackreq && q.psn == p.psn);
  check(q.payload.size() == p.payload.size());
  check(canonical_transport(buf.data(), q) == canonical_transport(data, p));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> frame(data, size);
  ParsedPacket p;
  const DropReason full = parse(frame, &p);
  check(!to_string(full).empty());
  (void)drop_counter(full);

  // A mutated frame almost never has a valid ICRC, so the checks after it would see only the
  // seeds: also take every frame the header checks accept, and round-trip that.
  ParsedPacket h;
  const DropReason headers = parse_headers(frame, &h);
  if (headers != DropReason::kOk) {
    check(full == headers);
    return 0;
  }
  const DropReason icrc = check_icrc(frame, h);
  check(icrc == DropReason::kOk || icrc == DropReason::kBadIcrc);
  check(full == icrc);
  round_trip(data, size, h);
  return 0;
}
