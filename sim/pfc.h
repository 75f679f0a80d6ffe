/**
 * @file pfc.h
 * @brief IEEE 802.1Qbb priority flow control frames: build, parse, and quanta to time.
 *
 * Layout (IEEE 802.1Qbb §36.1.3, 802.3 Annex 31D): DA 01:80:C2:00:00:01, SA, EtherType 0x8808,
 * opcode 0x0101, priority-enable vector (16 bits, bit p = priority p), eight 16-bit pause
 * times in quanta of 512 bit times, zero padding to the 60-byte minimum (no FCS).
 * Units: quanta (512 bit times), ns, bytes.
 */
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/time.h"
#include "common/types.h"
#include "sim/frame_bytes.h"

namespace uroce::sim {

inline constexpr uint16_t kPfcOpcode = 0x0101;
inline constexpr size_t kPfcFrameBytes = 60;
inline constexpr MacAddr kPfcDestMac = {{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01}};

struct PfcFrame {
  uint8_t enable = 0;                ///< bit p: the time for priority p is valid
  std::array<uint16_t, 8> quanta{};  ///< pause time per priority; 0 = resume (XON)
};

/// Writes a PFC frame from `src` into `out` (resized to 60 bytes).
inline void build_pfc(const MacAddr& src, const PfcFrame& pfc, std::vector<uint8_t>& out) {
  out.assign(kPfcFrameBytes, 0);
  for (int i = 0; i < 6; ++i) {
    out[i] = kPfcDestMac.b[i];
    out[6 + i] = src.b[i];
  }
  out[12] = kEtherTypeMacControl >> 8;
  out[13] = kEtherTypeMacControl & 0xff;
  out[14] = kPfcOpcode >> 8;
  out[15] = kPfcOpcode & 0xff;
  out[16] = 0;
  out[17] = pfc.enable;
  for (int p = 0; p < 8; ++p) {
    out[18 + 2 * p] = static_cast<uint8_t>(pfc.quanta[p] >> 8);
    out[19 + 2 * p] = static_cast<uint8_t>(pfc.quanta[p]);
  }
}

/// Parses a PFC frame; false when `b` is not one.
inline bool parse_pfc(std::span<const uint8_t> b, PfcFrame* out) {
  if (b.size() < 34 || load_be16(b, 12) != kEtherTypeMacControl) return false;
  if (load_be16(b, 14) != kPfcOpcode) return false;
  out->enable = b[17];
  for (int p = 0; p < 8; ++p) out->quanta[p] = load_be16(b, 18 + 2 * p);
  return true;
}

/// Pause time of `quanta` at `rate_bps`: quanta * 512 bit times, rounded up to a ns.
constexpr Duration pfc_pause_time(uint16_t quanta, uint64_t rate_bps) {
  uint64_t bits = uint64_t{quanta} * 512u;
  return Duration::nanos(static_cast<int64_t>((bits * 1'000'000'000ull + rate_bps - 1) / rate_bps));
}

}  // namespace uroce::sim
