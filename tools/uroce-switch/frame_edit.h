/**
 * @file frame_edit.h
 * @brief What the switch reads from and writes into an Ethernet frame: destination/source MAC,
 * the traffic class (trust DSCP: dscp_to_prio[DSCP] of IPv4/IPv6, else pcp_to_prio[PCP] of a
 * VLAN tag, else 0; trust PCP: pcp_to_prio[PCP] of a VLAN tag, else 0), the IP packet's length,
 * whether the IP ECN field is ECT, and marking it CE (RFC 3168 §5) with the IPv4 header
 * checksum updated incrementally (RFC 1624). RoCEv2's ICRC masks the ECN bits, so marking
 * keeps the ICRC valid. MAC-control (0x8808) frames are recognised for PFC. Units: bytes.
 */
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "config/config.h"

namespace uroce::uswitch {

/// What decides a frame's traffic class (a switch port's "trust" and its maps).
struct Classifier {
  bool trust_pcp = false;
  /// Default: the class selector DSCP >> 3 (RoCE DSCP 26 -> 3, CNP DSCP 48 -> 6).
  std::array<uint8_t, 64> dscp_to_prio = config::default_dscp_to_prio();
  std::array<uint8_t, 8> pcp_to_prio = {0, 1, 2, 3, 4, 5, 6, 7};
};

struct FrameInfo {
  bool valid = false;        ///< at least an Ethernet header
  bool mac_control = false;  ///< EtherType 0x8808 (PAUSE/PFC): consumed by the switch
  uint8_t prio = 0;          ///< traffic class
  bool ect = false;          ///< ECN field 01 or 10
  bool ce = false;           ///< ECN field 11
  uint32_t ip_offset = 0;    ///< offset of the IP header (0 = not IP)
  uint32_t ip_len = 0;       ///< the IP packet's length by its header (IPv6: payload + 40)
  bool ipv6 = false;
};

FrameInfo classify(std::span<const uint8_t> frame, const Classifier& c);

/// Sets ECN = CE in the frame `info` describes (must be ECT); fixes the IPv4 checksum.
void mark_ce(std::span<uint8_t> frame, const FrameInfo& info);

}  // namespace uroce::uswitch
