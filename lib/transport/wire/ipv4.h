/**
 * @file ipv4.h
 * @brief IPv4 header (RFC 791) as a packed big-endian struct, plus the header checksum.
 *
 * Units: bytes; TTL in hops. The TOS byte carries DSCP (7:2) and ECN (1:0) (RFC 2474, RFC 3168).
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"

namespace uroce::wire {

inline constexpr uint8_t kIpProtoUdp = 17;

inline constexpr uint8_t kIpv4VersionMask = 0xf0;  ///< version_ihl bits 7:4
inline constexpr uint8_t kIpv4IhlMask = 0x0f;      ///< version_ihl bits 3:0, in 32-bit words
inline constexpr uint8_t kTosDscpShift = 2;        ///< DSCP is TOS bits 7:2
inline constexpr uint8_t kTosEcnMask = 0x03;       ///< ECN is TOS bits 1:0
inline constexpr uint16_t kIpv4FlagDf = 0x4000;    ///< flags_frag: don't fragment
inline constexpr uint16_t kIpv4FlagMf = 0x2000;    ///< flags_frag: more fragments
inline constexpr uint16_t kIpv4FragOffsetMask = 0x1fff;

/// ECN codepoints (RFC 3168 §5).
inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct1 = 1;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

/// IPv4 header without options (20 bytes).
struct Ipv4Hdr {
  uint8_t version_ihl;  ///< Version(7:4) = 4, IHL(3:0) in 32-bit words
  uint8_t tos;          ///< DSCP(7:2) ECN(1:0)
  Be16 total_length;    ///< bytes, header + payload
  Be16 id;              ///< identification
  Be16 flags_frag;      ///< flags(15:13) fragment offset(12:0) in 8-byte units
  uint8_t ttl;          ///< time to live, hops
  uint8_t protocol;     ///< kIpProtoUdp for RoCEv2
  Be16 checksum;        ///< ones' complement header checksum
  Be32 src;             ///< source address
  Be32 dst;             ///< destination address

  constexpr uint8_t version() const { return version_ihl >> 4; }
  constexpr uint8_t ihl() const { return version_ihl & kIpv4IhlMask; }
  constexpr uint8_t dscp() const { return tos >> kTosDscpShift; }
  constexpr uint8_t ecn() const { return tos & kTosEcnMask; }
};
static_assert(sizeof(Ipv4Hdr) == 20 && alignof(Ipv4Hdr) == 1 &&
              std::is_trivially_copyable_v<Ipv4Hdr>);

/// The RFC 1071 ones' complement checksum of len bytes (len even). Computing it over a header
/// whose checksum field holds the right value yields 0.
uint16_t ipv4_checksum(const uint8_t* hdr, size_t len);

}  // namespace uroce::wire
