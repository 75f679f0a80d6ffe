/**
 * @file frame_prio.h
 * @brief The priority (PFC class, 0..7) of a client's frame as uroce's engine chose it: the
 * 802.1Q PCP when tagged, else the DSCP's class selector (DSCP >> 3, the engine's default
 * dscp_to_prio), else 0. uroce-hostd queues the frame by it on the netdev's TX pipeline.
 */
#pragma once

#include <cstdint>
#include <span>

namespace uroce::hostd {

inline uint8_t frame_priority(std::span<const uint8_t> f) {
  if (f.size() < 14) return 0;
  const uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (type == 0x8100 || type == 0x88a8) return f.size() >= 15 ? f[14] >> 5 : 0;
  if (type == 0x0800 && f.size() >= 16) return static_cast<uint8_t>(f[15] >> 5);  // TOS >> 2 >> 3
  if (type == 0x86dd && f.size() >= 16)  // traffic class: low 4 bits of byte 14, high 4 of 15
    return static_cast<uint8_t>(((f[14] & 0x0f) << 4 | f[15] >> 4) >> 5);
  return 0;
}

}  // namespace uroce::hostd
