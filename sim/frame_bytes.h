/**
 * @file frame_bytes.h
 * @brief The few header fields the fabric looks at (MACs, 802.1Q PCP, IP DSCP/ECN, the
 * RoCEv2 UDP port), read and written in place on raw frame bytes. Switches do not use the
 * transport's parser on purpose: the fabric must not depend on what it is testing.
 *
 * References: IEEE 802.3 / 802.1Q (Ethernet, VLAN tag), RFC 791 (IPv4 header and checksum),
 * RFC 8200 (IPv6), RFC 3168 (ECN codepoints), IBA Annex 17 (RoCEv2, UDP port 4791).
 * Units: byte offsets.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/types.h"

namespace uroce::sim {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr uint16_t kRoceUdpPort = 4791;
inline constexpr size_t kBthBytes = 12;

/// ECN codepoints (RFC 3168 §5).
enum class Ecn : uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

inline uint16_t load_be16(std::span<const uint8_t> b, size_t off) {
  return static_cast<uint16_t>((b[off] << 8) | b[off + 1]);
}

inline MacAddr dst_mac(std::span<const uint8_t> b) {
  MacAddr m;
  if (b.size() >= 6)
    for (int i = 0; i < 6; ++i) m.b[i] = b[i];
  return m;
}

/// Where the EtherType of the payload sits (12, or 16 behind one 802.1Q tag); 0 if short.
inline size_t ethertype_offset(std::span<const uint8_t> b) {
  if (b.size() < 14) return 0;
  if (load_be16(b, 12) == kEtherTypeVlan) return b.size() >= 18 ? 16 : 0;
  return 12;
}

inline uint16_t ethertype(std::span<const uint8_t> b) {
  size_t o = ethertype_offset(b);
  return o ? load_be16(b, o) : 0;
}

/// 802.1Q PCP of a tagged frame, or -1 when untagged.
inline int vlan_pcp(std::span<const uint8_t> b) {
  if (b.size() >= 18 && load_be16(b, 12) == kEtherTypeVlan) return b[14] >> 5;
  return -1;
}

/// Offset of the IP header, 0 when the frame is not IPv4/IPv6 or too short.
inline size_t ip_offset(std::span<const uint8_t> b) {
  size_t o = ethertype_offset(b);
  if (!o) return 0;
  uint16_t et = load_be16(b, o);
  size_t ip = o + 2;
  if (et == kEtherTypeIpv4 && b.size() >= ip + 20) return ip;
  if (et == kEtherTypeIpv6 && b.size() >= ip + 40) return ip;
  return 0;
}

/// The 8-bit traffic class (IPv4 TOS / IPv6 TC), or -1 when not IP.
inline int traffic_class(std::span<const uint8_t> b) {
  size_t ip = ip_offset(b);
  if (!ip) return -1;
  if ((b[ip] >> 4) == 4) return b[ip + 1];
  return ((b[ip] & 0x0f) << 4) | (b[ip + 1] >> 4);
}

/// ECN field of an IP frame (kNotEct when not IP).
inline Ecn ecn(std::span<const uint8_t> b) {
  int tc = traffic_class(b);
  return tc < 0 ? Ecn::kNotEct : static_cast<Ecn>(tc & 3);
}

/// Sets the ECN field in place; for IPv4 the header checksum is recomputed (RFC 791).
inline void set_ecn(std::span<uint8_t> b, Ecn e) {
  size_t ip = ip_offset(b);
  if (!ip) return;
  uint8_t v = static_cast<uint8_t>(e);
  if ((b[ip] >> 4) == 4) {
    b[ip + 1] = static_cast<uint8_t>((b[ip + 1] & 0xfc) | v);
    size_t ihl = (b[ip] & 0x0f) * 4u;
    if (ihl < 20 || b.size() < ip + ihl) return;
    b[ip + 10] = 0;
    b[ip + 11] = 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < ihl; i += 2)
      sum += static_cast<uint32_t>((b[ip + i] << 8) | b[ip + i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    uint16_t c = static_cast<uint16_t>(~sum);
    b[ip + 10] = static_cast<uint8_t>(c >> 8);
    b[ip + 11] = static_cast<uint8_t>(c);
  } else {
    // IPv6: TC is bits 4..11 of the first 32-bit word; ECN is its low 2 bits (byte 1, 5:4).
    b[ip + 1] = static_cast<uint8_t>((b[ip + 1] & 0xcf) | (v << 4));
  }
}

/// Offset of the first byte after the BTH of a RoCEv2 frame (UDP dport 4791), else 0.
inline size_t roce_payload_offset(std::span<const uint8_t> b) {
  size_t ip = ip_offset(b);
  if (!ip) return 0;
  size_t udp;
  if ((b[ip] >> 4) == 4) {
    if (b[ip + 9] != 17) return 0;
    udp = ip + (b[ip] & 0x0f) * 4u;
  } else {
    if (b[ip + 6] != 17) return 0;
    udp = ip + 40;
  }
  if (b.size() < udp + 8 + kBthBytes) return 0;
  if (load_be16(b, udp + 2) != kRoceUdpPort) return 0;
  return udp + 8 + kBthBytes;
}

/// Offset of the BTH of a RoCEv2 frame, else 0.
inline size_t bth_offset(std::span<const uint8_t> b) {
  size_t p = roce_payload_offset(b);
  return p ? p - kBthBytes : 0;
}

}  // namespace uroce::sim
