/**
 * @file pfc_frame.h
 * @brief IEEE 802.1Qbb PFC and 802.3x PAUSE MAC-control frames: parse and build
 * (docs/dcqcn-pfc.md §3.3). Units: pause times in quanta of 512 bit times; frames in bytes.
 *
 * Layout: DA 01:80:C2:00:00:01 | SA | EtherType 0x8808 | opcode (0x0101 PFC, 0x0001 PAUSE) |
 * PFC: class-enable vector (2 octets: 0x00, then e7..e0, bit 0 = priority 0) and 8 × uint16 BE
 * time[0..7] | PAUSE: one uint16 BE time | zero pad to 60 bytes | FCS (4 bytes, CRC-32,
 * little-endian on the wire). Untagged, link-local.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "common/types.h"

namespace uroce::dcqcn {

inline constexpr uint16_t kEtherTypeMacControl = 0x8808;  ///< IEEE 802.3 MAC Control
inline constexpr uint16_t kOpcodePause = 0x0001;          ///< 802.3x global PAUSE
inline constexpr uint16_t kOpcodePfc = 0x0101;            ///< 802.1Qbb per-priority pause
inline constexpr size_t kPfcFrameLen = 60;                ///< frame without FCS (minimum size)
inline constexpr MacAddr kPfcDestMac{{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01}};

/// A received or to-be-sent pause frame.
struct PauseFrame {
  bool global = false;               ///< 802.3x PAUSE: quanta[0] applies to every priority
  uint8_t class_enable = 0;          ///< PFC: bit p set = time[p] is valid for priority p
  std::array<uint16_t, 8> quanta{};  ///< pause time per priority, 512-bit-time quanta; 0 = XON
};

/// Parses an Ethernet frame starting at the DA (FCS optional, not checked).
/// @return std::nullopt if it is not a MAC-control PAUSE/PFC frame or is too short.
std::optional<PauseFrame> parse_pause_frame(std::span<const uint8_t> frame);

/// Writes a 60-byte frame (no FCS) from `src`. For f.global, writes an 802.3x PAUSE with
/// f.quanta[0]. @return kPfcFrameLen.
size_t build_pause_frame(const PauseFrame& f, const MacAddr& src,
                         std::span<uint8_t, kPfcFrameLen> out);

/// Ethernet FCS: CRC-32 (reflected, poly 0xEDB88320, as zlib) over `bytes`; append it
/// little-endian.
uint32_t ethernet_fcs(std::span<const uint8_t> bytes);

/// Pause duration of `quanta` at `link_bps`, ns, rounded up: quanta · 512 / link_bps.
int64_t pause_quanta_ns(uint16_t quanta, uint64_t link_bps);

}  // namespace uroce::dcqcn
