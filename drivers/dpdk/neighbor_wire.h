/**
 * @file neighbor_wire.h
 * @brief Byte layouts of the frames the port answers itself: Ethernet II, ARP for IPv4 over
 * Ethernet (RFC 826), and IPv6 neighbour solicitation/advertisement (RFC 4861 §4.3, §4.4) with
 * the link-layer address option (§4.6.1). All multi-byte fields are big-endian.
 */
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"
#include "transport/wire/eth.h"

namespace uroce::dpdk::wire {

// Ethernet II and its EtherTypes are the transport's (transport/wire/eth.h); ARP is only here.
using uroce::wire::EthHdr;
using uroce::wire::kEtherTypeIpv4;
using uroce::wire::kEtherTypeIpv6;
using uroce::wire::kEtherTypeMacControl;
using uroce::wire::kEtherTypeVlan;
inline constexpr uint16_t kEtherTypeArp = 0x0806;

inline constexpr uint16_t kArpHtypeEthernet = 1;
inline constexpr uint16_t kArpOpRequest = 1;
inline constexpr uint16_t kArpOpReply = 2;

/// ARP packet for IPv4 over Ethernet (RFC 826): htype 1, ptype 0x0800, hlen 6, plen 4.
struct ArpPkt {
  Be16 htype;                  ///< hardware type: kArpHtypeEthernet
  Be16 ptype;                  ///< protocol type: kEtherTypeIpv4
  uint8_t hlen;                ///< 6
  uint8_t plen;                ///< 4
  Be16 op;                     ///< kArpOpRequest / kArpOpReply
  std::array<uint8_t, 6> sha;  ///< sender hardware address
  Be32 spa;                    ///< sender protocol address
  std::array<uint8_t, 6> tha;  ///< target hardware address (zero in requests)
  Be32 tpa;                    ///< target protocol address
};

/// Fixed IPv6 header (RFC 8200 §3).
struct Ipv6Hdr {
  Be32 ver_tc_flow;             ///< version(31:28) traffic class(27:20) flow label(19:0)
  Be16 payload_len;             ///< bytes after this header
  uint8_t next_header;          ///< kIpProtoIcmpv6 for ND
  uint8_t hop_limit;            ///< 255 for ND (RFC 4861 §7.1.1)
  std::array<uint8_t, 16> src;  ///< source address
  std::array<uint8_t, 16> dst;  ///< destination address
};

inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr uint8_t kIcmpv6NeighborSolicit = 135;
inline constexpr uint8_t kIcmpv6NeighborAdvert = 136;
inline constexpr uint8_t kNdOptSourceLinkAddr = 1;
inline constexpr uint8_t kNdOptTargetLinkAddr = 2;
inline constexpr uint32_t kNaFlagSolicited = 0x40000000;  ///< S flag (RFC 4861 §4.4)
inline constexpr uint32_t kNaFlagOverride = 0x20000000;   ///< O flag

/// Neighbour solicitation / advertisement body, followed by one link-layer address option.
struct NdMsg {
  uint8_t type;                    ///< kIcmpv6NeighborSolicit / kIcmpv6NeighborAdvert
  uint8_t code;                    ///< 0
  Be16 checksum;                   ///< ICMPv6 checksum over the pseudo-header (RFC 8200 §8.1)
  Be32 flags;                      ///< NA: R/S/O flags; NS: reserved (0)
  std::array<uint8_t, 16> target;  ///< target address
};

/// Link-layer address option for Ethernet (RFC 4861 §4.6.1): length 1 (8 bytes).
struct NdLinkOpt {
  uint8_t type;                ///< kNdOptSourceLinkAddr / kNdOptTargetLinkAddr
  uint8_t len;                 ///< in units of 8 bytes: 1
  std::array<uint8_t, 6> mac;  ///< the link-layer address
};

static_assert(sizeof(EthHdr) == 14 && alignof(EthHdr) == 1);
static_assert(sizeof(ArpPkt) == 28 && alignof(ArpPkt) == 1);
static_assert(sizeof(Ipv6Hdr) == 40 && alignof(Ipv6Hdr) == 1);
static_assert(sizeof(NdMsg) == 24 && alignof(NdMsg) == 1);
static_assert(sizeof(NdLinkOpt) == 8 && alignof(NdLinkOpt) == 1);
static_assert(std::is_trivially_copyable_v<ArpPkt> && std::is_trivially_copyable_v<NdMsg>);

/// Frame sizes of what the port sends (without FCS; PMDs pad to 60 bytes where needed).
inline constexpr size_t kArpFrameLen = sizeof(EthHdr) + sizeof(ArpPkt);
inline constexpr size_t kNdFrameLen =
    sizeof(EthHdr) + sizeof(Ipv6Hdr) + sizeof(NdMsg) + sizeof(NdLinkOpt);

}  // namespace uroce::dpdk::wire
