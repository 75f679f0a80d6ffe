/**
 * @file eth.h
 * @brief Ethernet II header and the IEEE 802.1Q VLAN tag, as packed big-endian structs.
 *
 * Units: bytes. Frames are handled without the FCS (the port adds/strips it).
 * References: IEEE 802.3 §3.1.1 (MAC frame), IEEE 802.1Q §9.6 (tag: TPID 0x8100, TCI = PCP(3)
 * DEI(1) VID(12)).
 */
#pragma once

#include <cstdint>
#include <type_traits>

#include "common/byteorder.h"
#include "common/types.h"

namespace uroce::wire {

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;        ///< 802.1Q TPID
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;  ///< 802.3 Annex 31B (PAUSE / PFC)
/// RoCE v1 (IBA Annex A16): a GRH, then the BTH, straight after the Ethernet header.
inline constexpr uint16_t kEtherTypeRoce = 0x8915;

/// Minimum Ethernet frame length without the FCS (64 - 4).
inline constexpr size_t kEthMinFrameLen = 60;

/// Ethernet II header (14 bytes).
struct EthHdr {
  MacAddr dst;     ///< destination MAC
  MacAddr src;     ///< source MAC
  Be16 ethertype;  ///< EtherType, or kEtherTypeVlan when an 802.1Q tag follows
};
static_assert(sizeof(EthHdr) == 14 && alignof(EthHdr) == 1 && std::is_trivially_copyable_v<EthHdr>);

inline constexpr uint16_t kVlanPcpMask = 0xe000;  ///< TCI bits 15:13, priority code point
inline constexpr uint16_t kVlanPcpShift = 13;
inline constexpr uint16_t kVlanDeiMask = 0x1000;  ///< TCI bit 12, drop eligible indicator
inline constexpr uint16_t kVlanVidMask = 0x0fff;  ///< TCI bits 11:0, VLAN identifier

/// The 4 bytes that follow the source MAC after a TPID of 0x8100: TCI and the inner EtherType.
/// (The TPID itself is EthHdr::ethertype.)
struct VlanTag {
  Be16 tci;        ///< PCP(15:13) DEI(12) VID(11:0)
  Be16 ethertype;  ///< EtherType of the payload

  constexpr uint8_t pcp() const { return static_cast<uint8_t>(tci.load() >> kVlanPcpShift); }
  constexpr bool dei() const { return (tci.load() & kVlanDeiMask) != 0; }
  constexpr uint16_t vid() const { return tci.load() & kVlanVidMask; }
  constexpr void set(uint8_t pcp, bool dei, uint16_t vid) {
    tci.store(static_cast<uint16_t>(((pcp & 7u) << kVlanPcpShift) | (dei ? kVlanDeiMask : 0u) |
                                    (vid & kVlanVidMask)));
  }
};
static_assert(sizeof(VlanTag) == 4 && alignof(VlanTag) == 1 &&
              std::is_trivially_copyable_v<VlanTag>);

}  // namespace uroce::wire
