/**
 * @file frame_edit.cc
 * @brief classify() and mark_ce() (see frame_edit.h). Units: bytes.
 */
#include "uroce-switch/frame_edit.h"

namespace uroce::uswitch {
namespace {

constexpr uint16_t kEtherIpv4 = 0x0800;
constexpr uint16_t kEtherIpv6 = 0x86DD;
constexpr uint16_t kEtherVlan = 0x8100;
constexpr uint16_t kEtherMacControl = 0x8808;

uint16_t be16(std::span<const uint8_t> b, size_t at) {
  return static_cast<uint16_t>((b[at] << 8) | b[at + 1]);
}

}  // namespace

FrameInfo classify(std::span<const uint8_t> frame, const Classifier& c) {
  FrameInfo info;
  if (frame.size() < 14) return info;
  info.valid = true;
  size_t at = 12;
  uint16_t type = be16(frame, at);
  if (type == kEtherVlan && frame.size() >= 18) {
    info.prio = c.pcp_to_prio[frame[14] >> 5];
    at += 4;
    type = be16(frame, at);
  }
  at += 2;
  if (type == kEtherMacControl) {
    info.mac_control = true;
    return info;
  }
  uint8_t tos = 0;
  if (type == kEtherIpv4 && frame.size() >= at + 20 && (frame[at] >> 4) == 4) {
    tos = frame[at + 1];
    info.ip_len = be16(frame, at + 2);
  } else if (type == kEtherIpv6 && frame.size() >= at + 40 && (frame[at] >> 4) == 6) {
    tos = static_cast<uint8_t>(((frame[at] & 0x0f) << 4) | (frame[at + 1] >> 4));
    info.ipv6 = true;
    info.ip_len = be16(frame, at + 4) + 40u;
  } else {
    return info;
  }
  info.ip_offset = static_cast<uint32_t>(at);
  uint8_t ecn = tos & 3;
  info.ect = ecn == 1 || ecn == 2;
  info.ce = ecn == 3;
  if (!c.trust_pcp) info.prio = c.dscp_to_prio[tos >> 2];
  return info;
}

void mark_ce(std::span<uint8_t> frame, const FrameInfo& info) {
  size_t ip = info.ip_offset;
  if (info.ipv6) {
    frame[ip + 1] = static_cast<uint8_t>(frame[ip + 1] | 0x30);
    return;
  }
  // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m = the 16-bit word holding the TOS.
  uint16_t old_word = be16(frame, ip);
  frame[ip + 1] = static_cast<uint8_t>(frame[ip + 1] | 0x03);
  uint16_t new_word = be16(frame, ip);
  uint32_t sum = static_cast<uint16_t>(~be16(frame, ip + 10));
  sum += static_cast<uint16_t>(~old_word);
  sum += new_word;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  auto hc = static_cast<uint16_t>(~sum);
  frame[ip + 10] = static_cast<uint8_t>(hc >> 8);
  frame[ip + 11] = static_cast<uint8_t>(hc);
}

}  // namespace uroce::uswitch
