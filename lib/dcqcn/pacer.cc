/**
 * @file pacer.cc
 * @brief GCRA token-bucket pacer. Units: bit/s, bytes, ns (ps internally).
 */
#include "dcqcn/pacer.h"

#include <algorithm>
#include <cmath>

namespace uroce::dcqcn {

void Pacer::set_rate(double rate_bps) {
  rate_bps_ = (std::isfinite(rate_bps) && rate_bps > 0) ? rate_bps : 0.0;
}

int64_t Pacer::cost_ps(uint64_t bytes) const {
  if (rate_bps_ <= 0) return 0;
  return static_cast<int64_t>(std::llround(static_cast<double>(bytes) * 8e12 / rate_bps_));
}

Timestamp Pacer::earliest_send_time(uint32_t, Timestamp now) const {
  if (rate_bps_ <= 0) return now;
  // Conforming when tat - tolerance <= now; tolerance = the burst's transmission time.
  const int64_t tol_ps = cost_ps(burst_bytes_);
  const int64_t rel_ps = tat_frac_ps_ - tol_ps;  // allowed time = tat_ns_ + rel_ps/1000
  const int64_t allowed_ns = tat_ns_ + (rel_ps >= 0 ? (rel_ps + 999) / 1000 : -((-rel_ps) / 1000));
  return allowed_ns <= now.ns ? now : Timestamp{allowed_ns};  // rounded up to the next ns
}

void Pacer::on_sent(uint32_t bytes, Timestamp now) {
  if (rate_bps_ <= 0) return;
  if (tat_ns_ < now.ns) {
    tat_ns_ = now.ns;
    tat_frac_ps_ = 0;
  }
  const int64_t total = tat_frac_ps_ + cost_ps(bytes);
  tat_ns_ += total / 1000;
  tat_frac_ps_ = total % 1000;
}

}  // namespace uroce::dcqcn
