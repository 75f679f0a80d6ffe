/**
 * @file ipv6.h
 * @brief IPv6 fixed header (RFC 8200 §3) as a packed big-endian struct; also the layout of
 * RoCE v1's GRH (IBA Vol 1 §8.3).
 *
 * Units: bytes; hop limit in hops. Traffic class carries DSCP (7:2) and ECN (1:0).
 */
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"

namespace uroce::wire {

inline constexpr uint32_t kIpv6VersionMask = 0xf0000000;  ///< ver_tc_flow bits 31:28
inline constexpr uint32_t kIpv6TcMask = 0x0ff00000;       ///< bits 27:20, traffic class
inline constexpr uint32_t kIpv6TcShift = 20;
inline constexpr uint32_t kIpv6FlowLabelMask = 0x000fffff;  ///< bits 19:0
/// The GRH's NxtHdr for an IBA transport header (IBA Vol 1 §8.3.1): a RoCE v1 GRH, which has
/// the IPv6 header's layout, carries it where RoCEv2's IPv6 header says UDP.
inline constexpr uint8_t kGrhNxtHdrIba = 0x1b;

/// IPv6 fixed header (40 bytes).
struct Ipv6Hdr {
  Be32 ver_tc_flow;             ///< Version(31:28) = 6, Traffic Class(27:20), Flow Label(19:0)
  Be16 payload_length;          ///< bytes after this header
  uint8_t next_header;          ///< kIpProtoUdp for RoCEv2 (no extension headers)
  uint8_t hop_limit;            ///< hops
  std::array<uint8_t, 16> src;  ///< source address
  std::array<uint8_t, 16> dst;  ///< destination address

  constexpr uint8_t version() const { return static_cast<uint8_t>(ver_tc_flow.load() >> 28); }
  constexpr uint8_t traffic_class() const {
    return static_cast<uint8_t>((ver_tc_flow.load() & kIpv6TcMask) >> kIpv6TcShift);
  }
  constexpr uint32_t flow_label() const { return ver_tc_flow.load() & kIpv6FlowLabelMask; }
  constexpr void set_ver_tc_flow(uint8_t tc, uint32_t flow) {
    ver_tc_flow.store((6u << 28) | (uint32_t{tc} << kIpv6TcShift) | (flow & kIpv6FlowLabelMask));
  }
};
static_assert(sizeof(Ipv6Hdr) == 40 && alignof(Ipv6Hdr) == 1 &&
              std::is_trivially_copyable_v<Ipv6Hdr>);

}  // namespace uroce::wire
