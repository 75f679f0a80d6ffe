/**
 * @file pfc_frame.cc
 * @brief 802.1Qbb / 802.3x pause frames (docs/dcqcn-pfc.md §3.3). Units: bytes, quanta, ns.
 */
#include "dcqcn/pfc_frame.h"

#include <cstring>

#include "common/byteorder.h"

namespace uroce::dcqcn {
namespace {

inline void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

}  // namespace

std::optional<PauseFrame> parse_pause_frame(std::span<const uint8_t> frame) {
  if (frame.size() < 14 + 2 + 2) return std::nullopt;
  const uint8_t* p = frame.data();
  if (load_be16(p + 12) != kEtherTypeMacControl) return std::nullopt;
  const uint16_t opcode = load_be16(p + 14);
  PauseFrame f;
  if (opcode == kOpcodePause) {
    f.global = true;
    f.class_enable = 0xFF;
    f.quanta.fill(load_be16(p + 16));
    return f;
  }
  if (opcode != kOpcodePfc || frame.size() < 18 + 16) return std::nullopt;
  f.class_enable = p[17];  // p[16] is reserved (0x00)
  for (int i = 0; i < 8; ++i) f.quanta[i] = load_be16(p + 18 + 2 * i);
  return f;
}

size_t build_pause_frame(const PauseFrame& f, const MacAddr& src,
                         std::span<uint8_t, kPfcFrameLen> out) {
  uint8_t* p = out.data();
  std::memset(p, 0, kPfcFrameLen);
  std::memcpy(p, kPfcDestMac.b.data(), 6);
  std::memcpy(p + 6, src.b.data(), 6);
  put_be16(p + 12, kEtherTypeMacControl);
  if (f.global) {
    put_be16(p + 14, kOpcodePause);
    put_be16(p + 16, f.quanta[0]);
    return kPfcFrameLen;
  }
  put_be16(p + 14, kOpcodePfc);
  p[16] = 0;
  p[17] = f.class_enable;
  for (int i = 0; i < 8; ++i) put_be16(p + 18 + 2 * i, f.quanta[i]);
  return kPfcFrameLen;
}

uint32_t ethernet_fcs(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

int64_t pause_quanta_ns(uint16_t quanta, uint64_t link_bps) {
  if (link_bps == 0) return 0;
  const uint64_t bits = static_cast<uint64_t>(quanta) * 512u;
  // ceil(bits · 1e9 / link_bps); bits · 1e9 <= 3.4e16 fits in 64 bits.
  return static_cast<int64_t>((bits * 1'000'000'000ull + link_bps - 1) / link_bps);
}

}  // namespace uroce::dcqcn
