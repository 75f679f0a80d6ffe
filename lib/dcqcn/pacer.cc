/**
 * @file pacer.cc
 * @brief GCRA token-bucket pacer. Units: bit/s, bytes, ns (with a fractional remainder).
 */
#include "dcqcn/pacer.h"

#include <algorithm>
#include <cmath>

namespace uroce::dcqcn {

void Pacer::set_rate(double rate_bps) {
  rate_bps_ = (std::isfinite(rate_bps) && rate_bps > 0) ? rate_bps : 0.0;
}

double Pacer::cost_ns(uint64_t bytes) const {
  if (rate_bps_ <= 0) return 0;
  return static_cast<double>(bytes) * 8e9 / rate_bps_;
}

Timestamp Pacer::earliest_send_time(uint32_t, Timestamp now) const {
  if (rate_bps_ <= 0) return now;
  // Conforming when tat - tolerance <= now; tolerance = the burst's transmission time.
  const double rel_ns = tat_frac_ns_ - cost_ns(burst_bytes_);  // allowed = tat_ns_ + rel_ns
  const int64_t allowed_ns = tat_ns_ + static_cast<int64_t>(std::ceil(rel_ns));
  return allowed_ns <= now.ns ? now : Timestamp{allowed_ns};  // rounded up to the next ns
}

void Pacer::on_sent(uint32_t bytes, Timestamp now) {
  if (rate_bps_ <= 0) return;
  // Idle (tat passed): restart from now. A send within the ns that earliest_send_time()
  // rounded up to keeps the exact tat, so the rounding does not drift the rate.
  if (tat_ns_ < now.ns - 1) {
    tat_ns_ = now.ns;
    tat_frac_ns_ = 0;
  }
  const double total = tat_frac_ns_ + cost_ns(bytes);
  const double whole = std::floor(total);
  tat_ns_ += static_cast<int64_t>(whole);
  tat_frac_ns_ = total - whole;
}

}  // namespace uroce::dcqcn
