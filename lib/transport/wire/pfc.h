/**
 * @file pfc.h
 * @brief MAC Control frames: IEEE 802.1Qbb PFC (opcode 0x0101) and IEEE 802.3x PAUSE
 * (opcode 0x0001), builder and parser (IEEE 802.3 Annex 31B/31D; docs/dcqcn-pfc.md §3.3).
 *
 * Frame: DA 01:80:C2:00:00:01 | SA | EtherType 0x8808 | opcode | PFC: class-enable vector
 * (2 bytes, bit p = priority p) + 8 x 16-bit pause times; PAUSE: 1 x 16-bit time | zero pad to
 * 60 bytes. Times are in quanta of 512 bit times; 0 = XON. Always untagged. Units: quanta, bytes.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "common/byteorder.h"
#include "common/types.h"
#include "transport/wire/eth.h"

namespace uroce::wire {

inline constexpr uint16_t kMacControlOpPause = 0x0001;  ///< 802.3x PAUSE
inline constexpr uint16_t kMacControlOpPfc = 0x0101;    ///< 802.1Qbb PFC
inline constexpr MacAddr kMacControlDst = {{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}};
/// Length of a PFC/PAUSE frame without FCS (the Ethernet minimum).
inline constexpr size_t kMacControlFrameLen = 60;

/// PFC body after the Ethernet header (20 bytes).
struct PfcBody {
  Be16 opcode;               ///< kMacControlOpPfc
  Be16 class_enable;         ///< bits 7:0 = e7..e0 (bit p enables time[p]); 15:8 zero
  std::array<Be16, 8> time;  ///< pause time per priority, quanta
};
static_assert(sizeof(PfcBody) == 20 && alignof(PfcBody) == 1 &&
              std::is_trivially_copyable_v<PfcBody>);

/// PAUSE body after the Ethernet header (4 bytes).
struct PauseBody {
  Be16 opcode;  ///< kMacControlOpPause
  Be16 time;    ///< pause time, quanta
};
static_assert(sizeof(PauseBody) == 4 && alignof(PauseBody) == 1 &&
              std::is_trivially_copyable_v<PauseBody>);

/// A decoded PFC or PAUSE frame.
struct MacControlFrame {
  MacAddr src;
  bool pfc = false;                  ///< true: PFC; false: 802.3x PAUSE
  uint8_t class_enable = 0;          ///< PFC: bit p set = time[p] is valid; PAUSE: 0xff
  std::array<uint16_t, 8> quanta{};  ///< PFC: per priority; PAUSE: quanta[0..7] all = the time
};

/// Writes a 60-byte PFC frame. Returns 60, or 0 if buf is shorter.
size_t build_pfc(std::span<uint8_t> buf, const MacAddr& src, uint8_t class_enable,
                 const std::array<uint16_t, 8>& quanta);

/// Writes a 60-byte 802.3x PAUSE frame. Returns 60, or 0 if buf is shorter.
size_t build_pause(std::span<uint8_t> buf, const MacAddr& src, uint16_t quanta);

enum class MacControlParse : uint8_t {
  kOk,
  kNotMacControl,   ///< EtherType is not 0x8808 (or the frame is shorter than 14 bytes)
  kTruncated,       ///< shorter than the opcode's body
  kUnknownOpcode,   ///< neither PAUSE nor PFC
  kBadDestination,  ///< DA is not 01:80:C2:00:00:01
};

/// Parses a PFC or PAUSE frame (without FCS). Never reads outside frame.
MacControlParse parse_mac_control(std::span<const uint8_t> frame, MacControlFrame* out);

/// Pause duration of `quanta` at `link_bps` bits/s, in nanoseconds (512 bit times per quantum).
constexpr uint64_t pause_quanta_to_ns(uint16_t quanta, uint64_t link_bps) {
  return link_bps == 0 ? 0 : (uint64_t{quanta} * 512u * 1000000000u) / link_bps;
}

}  // namespace uroce::wire
