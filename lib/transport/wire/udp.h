/**
 * @file udp.h
 * @brief UDP header (RFC 768) as a packed big-endian struct; the RoCEv2 port, and where a
 * RoCEv2 frame's UDP payload starts (rocev2_udp_payload).
 *
 * Units: bytes. RoCEv2 (IBTA Annex 17) uses destination port 4791; the source port is
 * chosen per QP for ECMP entropy.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>

#include "common/byteorder.h"
#include "transport/wire/eth.h"

namespace uroce::wire {

inline constexpr uint16_t kRoceV2Port = 4791;

/// UDP header (8 bytes).
struct UdpHdr {
  Be16 sport;     ///< source port
  Be16 dport;     ///< destination port (kRoceV2Port)
  Be16 length;    ///< bytes, header + payload
  Be16 checksum;  ///< 0 = not computed (always for IPv4 RoCEv2)
};
static_assert(sizeof(UdpHdr) == 8 && alignof(UdpHdr) == 1 && std::is_trivially_copyable_v<UdpHdr>);

/// Where the UDP payload (the BTH) of a RoCEv2 frame starts, for a frame that is Ethernet II
/// with at most one 802.1Q tag, IPv4 (any IHL) or IPv6 (no extension headers), UDP to
/// kRoceV2Port, and long enough for the UDP header; std::nullopt for any other frame. A quick
/// look that checks no lengths or checksums (parse_frame does); reads nothing past the end.
inline std::optional<size_t> rocev2_udp_payload(std::span<const uint8_t> f) {
  constexpr uint8_t kUdp = 17;
  if (f.size() < 14) return std::nullopt;
  size_t l3 = 14;
  uint16_t type = load_be16(f.data() + 12);
  if (type == kEtherTypeVlan) {
    if (f.size() < 18) return std::nullopt;
    type = load_be16(f.data() + 16);
    l3 = 18;
  }
  size_t l4 = 0;
  if (type == kEtherTypeIpv4) {
    if (f.size() < l3 + 20 || f[l3 + 9] != kUdp) return std::nullopt;
    l4 = l3 + size_t{f[l3] & 0x0Fu} * 4;
  } else if (type == kEtherTypeIpv6) {
    if (f.size() < l3 + 40 || f[l3 + 6] != kUdp) return std::nullopt;
    l4 = l3 + 40;
  } else {
    return std::nullopt;
  }
  if (f.size() < l4 + sizeof(UdpHdr) || load_be16(f.data() + l4 + 2) != kRoceV2Port)
    return std::nullopt;
  return l4 + sizeof(UdpHdr);
}

}  // namespace uroce::wire
