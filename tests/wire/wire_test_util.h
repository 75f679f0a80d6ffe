/**
 * @file wire_test_util.h
 * @brief Helpers for the wire tests: a default FrameSpec, frame building into a vector, hex,
 * and re-sealing a mutated frame (IPv4 checksum + ICRC) so a test hits exactly one check.
 * Units: bytes.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/types.h"
#include "transport/wire/build.h"
#include "transport/wire/icrc.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/parse.h"

namespace uroce::wire::test {

inline Gid gid(const std::string& text) {
  Gid g;
  if (!Gid::parse(text, &g)) std::abort();
  return g;
}

/// An RC WRITE_FIRST from 198.18.0.1 to 198.18.0.2 with every field set to something non-zero.
inline FrameSpec default_spec(Opcode op = Opcode::kRcRdmaWriteFirst, bool ipv6 = false) {
  FrameSpec s;
  s.src_mac = {{0x02, 0, 0, 0, 0, 0x01}};
  s.dst_mac = {{0x02, 0, 0, 0, 0, 0x02}};
  s.src_ip = ipv6 ? gid("2001:2::1") : gid("198.18.0.1");
  s.dst_ip = ipv6 ? gid("2001:2::2") : gid("198.18.0.2");
  s.dscp = 26;
  s.ecn = 2;
  s.ttl = 64;
  s.flow_label = ipv6 ? 0x12345 : 0;
  s.ip_id = 0x1234;
  s.udp_sport = 0xc123;
  s.opcode = op;
  s.pkey = 0xffff;
  s.dest_qpn = Qpn(0x000abc);
  s.psn = Psn(0x123456);
  s.ackreq = true;
  s.se = false;
  s.reth = {0x1122334455667788ull, 0xaabbccdd, 4096};
  s.feth = {0x1, 0x1};  // global visibility, whole region
  s.aeth = {0x1f, Msn(0x000777)};
  s.atomic_eth = {0x0102030405060708ull, 0x99887766, 0x1111222233334444ull, 0x5555666677778888ull};
  s.atomic_ack_orig = 0xdeadbeefcafef00dull;
  s.imm = 0x11223344;
  s.ieth_rkey = 0x55667788;
  s.deth = {0x11111111, Qpn(0x000123)};
  s.xrc_srqn = 0x00abcd;
  return s;
}

/// Builds a whole frame with payload bytes 0, 1, 2, ... (payload_len of them).
inline std::vector<uint8_t> build_frame(const FrameSpec& s, size_t payload_len,
                                        FrameLayout* layout_out = nullptr) {
  std::vector<uint8_t> buf(payload_len + kMaxFrameOverhead + ext_len(s));
  const FrameLayout l = build_headers(s, buf);
  if (l.payload_offset == 0) return {};
  for (size_t i = 0; i < payload_len; ++i) buf[l.payload_offset + i] = static_cast<uint8_t>(i);
  const size_t len = finalize(buf, l, payload_len);
  buf.resize(len);
  if (layout_out) *layout_out = l;
  return buf;
}

/// Recomputes the IPv4 header checksum (untagged IPv4 frame) and the ICRC over the lengths the
/// frame declares, so the frame is valid except for what the test changed on purpose.
inline void reseal_ipv4(std::vector<uint8_t>& f, size_t l3 = 14) {
  uint8_t* ip = f.data() + l3;
  const size_t ihl = static_cast<size_t>(ip[0] & 0x0f) * 4;
  ip[10] = ip[11] = 0;
  const uint16_t c = ipv4_checksum(ip, ihl);
  ip[10] = static_cast<uint8_t>(c >> 8);
  ip[11] = static_cast<uint8_t>(c);
  const size_t total = (size_t{ip[2]} << 8) | ip[3];
  if (total >= ihl + 8 + 12 + 4 && l3 + total <= f.size()) {
    const uint32_t crc = icrc_compute(std::span<const uint8_t>(ip, total - 4), ihl);
    store_icrc(ip + total - 4, crc);
  }
}

inline std::string hex(std::span<const uint8_t> b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t x : b) {
    s += d[x >> 4];
    s += d[x & 15];
  }
  return s;
}

inline std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> v;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int hi = -1;
  for (char c : s) {
    const int n = nib(c);
    if (n < 0) continue;
    if (hi < 0) {
      hi = n;
    } else {
      v.push_back(static_cast<uint8_t>(hi << 4 | n));
      hi = -1;
    }
  }
  return v;
}

}  // namespace uroce::wire::test
