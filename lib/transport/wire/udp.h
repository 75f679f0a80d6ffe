/**
 * @file udp.h
 * @brief UDP header (RFC 768) as a packed big-endian struct; the RoCEv2 port.
 *
 * Units: bytes. RoCEv2 (IBTA Annex 17) uses destination port 4791; the source port is
 * chosen per QP for ECMP entropy.
 */
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"

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

}  // namespace uroce::wire
