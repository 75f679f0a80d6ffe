/**
 * @file shaper.cc
 * @brief TokenBucket (see shaper.h). Units: bit/s, bytes, ns.
 */
#include "uroce-switch/shaper.h"

#include <algorithm>
#include <cmath>

namespace uroce::uswitch {

TokenBucket::TokenBucket(uint64_t rate_bps, uint64_t burst_bytes, Timestamp now)
    : rate_bps_(rate_bps),
      burst_(static_cast<double>(burst_bytes)),
      credit_(static_cast<double>(burst_bytes)),
      last_(now) {}

void TokenBucket::refill(Timestamp now) {
  if (now <= last_) return;
  double add = static_cast<double>((now - last_).ns) * static_cast<double>(rate_bps_) / 8e9;
  credit_ = std::min(burst_, credit_ + add);
  last_ = now;
}

bool TokenBucket::conforms(uint32_t bytes, Timestamp now) {
  if (unshaped()) return true;
  refill(now);
  return credit_ >= static_cast<double>(bytes);
}

void TokenBucket::consume(uint32_t bytes) {
  if (!unshaped()) credit_ -= static_cast<double>(bytes);
}

Timestamp TokenBucket::earliest(uint32_t bytes, Timestamp now) {
  if (conforms(bytes, now)) return now;
  double missing = static_cast<double>(bytes) - credit_;
  auto ns = static_cast<int64_t>(std::ceil(missing * 8e9 / static_cast<double>(rate_bps_)));
  return now + Duration::nanos(ns);
}

}  // namespace uroce::uswitch
