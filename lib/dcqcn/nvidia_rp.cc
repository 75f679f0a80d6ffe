/**
 * @file nvidia_rp.cc
 * @brief DCQCN reaction point, NVIDIA firmware form (docs/dcqcn-pfc.md §1.5). Units: bit/s, bytes,
 * ns.
 */
#include "dcqcn/nvidia_rp.h"

#include <algorithm>
#include <cmath>

namespace uroce::dcqcn {

NvidiaRp::NvidiaRp(const DcqcnParams& p, double port_speed_bps)
    : p_(p),
      c_(p.rpg_max_rate ? p.rpg_max_rate * 1e6 : port_speed_bps),
      g_(alpha_gain(p)),
      t_alpha_(Duration::micros(p.dce_tcp_rtt)),
      t_dec_(Duration::micros(p.rate_reduce_monitor_period)),
      t_inc_(Duration::micros(p.rpg_time_reset)),
      rc_(c_),
      rt_(c_) {
  // Zero periods would divide by zero / spin; the lookup refuses them, a struct may not.
  if (t_alpha_.ns <= 0) t_alpha_ = Duration::micros(1);
  if (t_dec_.ns <= 0) t_dec_ = Duration::micros(1);
  if (t_inc_.ns <= 0) t_inc_ = Duration::micros(1);
}

void NvidiaRp::reset() {
  rc_ = rt_ = c_;
  active_ = false;
  epoch_ = Timestamp{};
  alpha_ = 1.0;
  alpha_ticks_ = 0;
  cnp_for_alpha_ = cnp_for_dec_ = byte_inc_since_cut_ = false;
  stage_ = 0;
  bytes_acc_ = 0;
  next_dec_ = next_inc_ = Timestamp::never();
}

double NvidiaRp::alpha_at(Timestamp now) const {
  if (!active_ || now < epoch_) return alpha_;
  const int64_t due = (now - epoch_).ns / t_alpha_.ns;
  int64_t n = due - alpha_ticks_;
  if (n <= 0) return alpha_;
  double a = (1.0 - g_) * alpha_ + (cnp_for_alpha_ ? g_ : 0.0);
  --n;
  if (n > 0) a *= std::pow(1.0 - g_, static_cast<double>(n));
  return a;
}

void NvidiaRp::advance_alpha(Timestamp now) {
  if (!active_) return;
  const double a = alpha_at(now);
  const int64_t due = (now - epoch_).ns / t_alpha_.ns;
  if (due > alpha_ticks_) {
    alpha_ = a;
    alpha_ticks_ = due;
    cnp_for_alpha_ = false;
  }
}

void NvidiaRp::on_cnp(Timestamp now) {
  on_timer(now);  // α updates, decrease checks and increases due at `now` come first
  ++stats_.rp_cnp_handled;
  if (!active_) {
    // First CNP (docs/dcqcn-pfc.md §1.5): α from initial_alpha_value, no +g for this CNP.
    active_ = true;
    epoch_ = now;
    alpha_ = p_.initial_alpha_value / 1024.0;
    alpha_ticks_ = 0;
    cnp_for_alpha_ = false;
    if (p_.rate_to_set_on_first_cnp) rc_ = rt_ = std::min(c_, p_.rate_to_set_on_first_cnp * 1e6);
    stage_ = 0;
    byte_inc_since_cut_ = false;
  } else {
    cnp_for_alpha_ = true;
  }
  if (cnp_for_dec_) {
    ++stats_.rp_cnp_coalesced;
    return;
  }
  cnp_for_dec_ = true;
  // The next grid point epoch_ + k·t_dec (k >= 1) at or after `now`.
  const int64_t since = (now - epoch_).ns;
  int64_t k = (since + t_dec_.ns - 1) / t_dec_.ns;
  if (k < 1) k = 1;
  next_dec_ = epoch_ + t_dec_ * k;
}

void NvidiaRp::on_timer(Timestamp now) {
  // Decrease checks and increase timers in time order; α is advanced lazily to each.
  while (true) {
    const Timestamp t = earliest(next_dec_, next_inc_);
    if (t.is_never() || t > now) break;
    advance_alpha(t);
    if (next_dec_ <= next_inc_) {  // decrease check before an increase at the same instant
      next_dec_ = Timestamp::never();
      decrease(t);
    } else {
      const Timestamp at = next_inc_;
      next_inc_ = at + t_inc_;
      increase(at, false);
    }
  }
  advance_alpha(now);
}

void NvidiaRp::on_packet_sent(uint32_t bytes, Timestamp now) {
  on_timer(now);
  // The byte counter runs once a cut engaged the limiter (the increase phase).
  if (!active_ || p_.rpg_byte_reset == 0 || next_inc_.is_never()) return;
  bytes_acc_ += bytes;
  if (bytes_acc_ >= p_.rpg_byte_reset) {
    bytes_acc_ = 0;
    byte_inc_since_cut_ = true;
    increase(now, true);
  }
}

void NvidiaRp::decrease(Timestamp at) {
  cnp_for_dec_ = false;
  const bool clamp =
      p_.clamp_tgt_rate || (p_.clamp_tgt_rate_after_time_inc ? stage_ != 0 : byte_inc_since_cut_);
  if (clamp) rt_ = rc_;
  const double gd = std::ldexp(1.0, static_cast<int>(p_.rpg_gd) - 10);
  double factor = std::max(1.0 - alpha_ / gd, p_.rpg_min_dec_fac / 100.0);
  factor = std::max(factor, 0.0);
  const double r_min = std::min(c_, p_.rpg_min_rate * 1e6);
  rc_ = std::max(r_min, rc_ * factor);
  stage_ = 0;
  byte_inc_since_cut_ = false;
  bytes_acc_ = 0;
  next_inc_ = at + t_inc_;
  ++stats_.rp_rate_decrease_events;
  record(at, RpEventKind::kCut, false);
}

void NvidiaRp::increase(Timestamp at, bool by_bytes) {
  RpEventKind kind;
  if (stage_ < p_.rpg_threshold) {
    kind = RpEventKind::kFastRecovery;
    ++stats_.rp_rate_increase_fr;
  } else if (stage_ == p_.rpg_threshold) {
    rt_ = std::min(c_, rt_ + p_.rpg_ai_rate * 1e6);
    kind = RpEventKind::kAdditive;
    ++stats_.rp_rate_increase_ai;
  } else {
    rt_ = std::min(c_, rt_ + p_.rpg_hai_rate * 1e6);
    kind = RpEventKind::kHyper;
    ++stats_.rp_rate_increase_hai;
  }
  rc_ = std::min(c_, rc_ / 2.0 + rt_ / 2.0);
  ++stage_;
  record(at, kind, by_bytes);
  if (p_.release_at_line_rate && rc_ >= c_ && rt_ >= c_ && !cnp_for_dec_) {
    active_ = false;
    next_inc_ = next_dec_ = Timestamp::never();
    bytes_acc_ = 0;
    ++stats_.rp_limiter_released;
    record(at, RpEventKind::kRelease, by_bytes);
  }
}

void NvidiaRp::record(Timestamp at, RpEventKind k, bool by_bytes) {
  if (trace_) trace_->push_back({at, k, by_bytes, rc_, rt_, alpha_at(at)});
}

}  // namespace uroce::dcqcn
