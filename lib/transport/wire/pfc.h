/**
 * @file pfc.h
 * @brief MAC Control frames: IEEE 802.1Qbb PFC (opcode 0x0101) and IEEE 802.3x PAUSE
 * (opcode 0x0001), builder and parser (IEEE 802.3 Annex 31B/31D; docs/dcqcn-pfc.md §3.3), and the
 * pause time of a number of quanta. The one codec of these frames: ports (drivers/pipeline),
 * lib/dcqcn's PFC logic, uroce-switch and the simulator's switches all use it.
 *
 * Frame: DA 01:80:C2:00:00:01 | SA | EtherType 0x8808 | opcode | PFC: class-enable vector
 * (2 bytes: 0x00, then e7..e0, bit p = priority p) + 8 x 16-bit pause times; PAUSE: 1 x 16-bit
 * time | zero pad to 60 bytes | FCS (CRC-32 as icrc.h crc32_update, little-endian on the wire;
 * not written here). Times are in quanta of 512 bit times; 0 = XON. Always untagged.
 * Units: quanta, bytes, ns.
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

/// What a PFC or PAUSE frame says: received (parse_mac_control) or to send (build_pause_frame).
struct PauseFrame {
  bool global = false;               ///< 802.3x PAUSE (every priority); false: 802.1Qbb PFC
  uint8_t class_enable = 0;          ///< PFC: bit p set = quanta[p] is valid; parsed PAUSE: 0xff
  std::array<uint16_t, 8> quanta{};  ///< per priority; a PAUSE carries quanta[0], parsed into all 8
};

/// A decoded MAC Control frame.
struct MacControlFrame {
  MacAddr src;
  PauseFrame pause;
};

/// Writes a 60-byte PFC frame from `src`, or for f.global an 802.3x PAUSE with f.quanta[0].
/// Returns 60, or 0 if buf is shorter.
size_t build_pause_frame(std::span<uint8_t> buf, const MacAddr& src, const PauseFrame& f);

enum class MacControlParse : uint8_t {
  kOk,
  kNotMacControl,   ///< EtherType is not 0x8808 (or the frame is shorter than 14 bytes)
  kTruncated,       ///< shorter than the opcode's body
  kUnknownOpcode,   ///< neither PAUSE nor PFC
  kBadDestination,  ///< DA is not 01:80:C2:00:00:01; *out is filled nevertheless
};

/// Parses a PFC or PAUSE frame (FCS optional, not checked). Never reads outside frame.
MacControlParse parse_mac_control(std::span<const uint8_t> frame, MacControlFrame* out);

/// Pause duration of `quanta` at `link_bps` bits/s: quanta x 512 bit times, in ns rounded up
/// (a pause lasts at least what the frame asked); 0 when link_bps is 0.
constexpr int64_t pause_quanta_ns(uint16_t quanta, uint64_t link_bps) {
  if (link_bps == 0) return 0;
  // quanta x 512 x 1e9 <= 3.4e16 fits in 64 bits.
  return static_cast<int64_t>((uint64_t{quanta} * 512u * 1'000'000'000ull + link_bps - 1) /
                              link_bps);
}

}  // namespace uroce::wire
