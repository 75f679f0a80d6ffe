/**
 * @file paper_rp.cc
 * @brief DCQCN reaction point, SIGCOMM'15 form (docs/dcqcn-pfc.md §1.4). Units: bit/s, bytes, ns.
 */
#include "dcqcn/paper_rp.h"

#include <algorithm>
#include <cmath>

namespace uroce::dcqcn {

PaperRp::PaperRp(const DcqcnParams& p, double port_speed_bps)
    : p_(p),
      c_(p.rpg_max_rate ? p.rpg_max_rate * 1e6 : port_speed_bps),
      g_(alpha_gain(p)),
      k_(Duration::micros(p.dce_tcp_rtt)),
      rc_(c_),
      rt_(c_) {
  // Zero periods would make the timer loops spin; the lookup refuses them, a struct may not.
  if (p_.rpg_time_reset == 0) p_.rpg_time_reset = 1;
  if (k_.ns <= 0) k_ = Duration::micros(1);
}

void PaperRp::reset() {
  rc_ = rt_ = c_;
  alpha_base_ = 1.0;
  alpha_epoch_ = Timestamp{};
  alpha_running_ = false;
  active_ = false;
  increased_since_cut_ = false;
  tcnt_ = bccnt_ = 0;
  bytes_acc_ = 0;
  next_inc_ = Timestamp::never();
}

double PaperRp::alpha_at(Timestamp now) const {
  if (!alpha_running_ || now < alpha_epoch_) return alpha_base_;  // no decay before a CNP
  const int64_t ticks = (now - alpha_epoch_).ns / k_.ns;
  return alpha_base_ * std::pow(1.0 - g_, static_cast<double>(ticks));
}

void PaperRp::on_cnp(Timestamp now) {
  on_timer(now);
  ++stats_.rp_cnp_handled;
  ++stats_.rp_rate_decrease_events;
  double alpha = alpha_at(now);
  if (p_.alpha_order == AlphaOrder::kUpdateThenCut) alpha = (1.0 - g_) * alpha + g_;
  const double r_min = std::min(c_, p_.rpg_min_rate * 1e6);
  if (p_.paper_clamp_target) rt_ = rc_;
  rc_ = std::max(r_min, rc_ * (1.0 - alpha / 2.0));
  if (p_.alpha_order == AlphaOrder::kCutThenUpdate) alpha = (1.0 - g_) * alpha + g_;
  alpha_base_ = alpha;
  alpha_epoch_ = now;
  alpha_running_ = true;
  active_ = true;
  increased_since_cut_ = false;
  tcnt_ = bccnt_ = 0;
  bytes_acc_ = 0;
  next_inc_ = now + timer_period();
  record(now, RpEventKind::kCut, false);
}

void PaperRp::on_timer(Timestamp now) {
  while (!next_inc_.is_never() && next_inc_ <= now) {
    const Timestamp at = next_inc_;
    ++tcnt_;
    increase(at, false);
    if (active_) next_inc_ = at + timer_period();
  }
}

void PaperRp::on_packet_sent(uint32_t bytes, Timestamp now) {
  on_timer(now);
  const uint64_t b = byte_threshold();
  if (!active_ || b == 0) return;
  bytes_acc_ += bytes;
  if (bytes_acc_ >= b) {
    bytes_acc_ = 0;  // reset, as htsim and ns3-rdma do
    ++bccnt_;
    increase(now, true);
  }
}

bool PaperRp::in_hyper() const {
  const uint32_t lo = std::min(tcnt_, bccnt_);
  return p_.fr_count == FrCount::kInclusive ? lo > p_.rpg_threshold : lo >= p_.rpg_threshold;
}

Duration PaperRp::timer_period() const {
  Duration t = Duration::micros(p_.rpg_time_reset);
  if (p_.hai_halves_periods && in_hyper()) t.ns /= 2;
  return t;
}

uint64_t PaperRp::byte_threshold() const {
  uint64_t b = p_.rpg_byte_reset;
  if (p_.hai_halves_periods && in_hyper()) b /= 2;
  return b;
}

void PaperRp::increase(Timestamp at, bool by_bytes) {
  const uint32_t f = p_.rpg_threshold;
  const uint32_t hi = std::max(tcnt_, bccnt_), lo = std::min(tcnt_, bccnt_);
  if (p_.qcn_first_increase_quirk && !increased_since_cut_ && rt_ > 10.0 * rc_) rt_ /= 8.0;
  increased_since_cut_ = true;
  const bool fr = p_.fr_count == FrCount::kInclusive ? hi <= f : hi < f;
  RpEventKind kind;
  if (fr) {
    kind = RpEventKind::kFastRecovery;
    ++stats_.rp_rate_increase_fr;
  } else if (in_hyper()) {
    double steps = 1.0;
    if (p_.hai_amount == HaiAmount::kLinear) steps = static_cast<double>(lo - f);
    if (p_.hai_amount == HaiAmount::kLinearPlusOne) steps = static_cast<double>(lo - f + 1);
    rt_ += steps * p_.rpg_hai_rate * 1e6;
    kind = RpEventKind::kHyper;
    ++stats_.rp_rate_increase_hai;
  } else {
    rt_ += p_.rpg_ai_rate * 1e6;
    kind = RpEventKind::kAdditive;
    ++stats_.rp_rate_increase_ai;
  }
  if (p_.cap_target_before_average) rt_ = std::min(rt_, c_);
  rc_ = std::min((rt_ + rc_) / 2.0, c_);
  rt_ = std::min(rt_, c_);
  record(at, kind, by_bytes);
  if (p_.release_at_line_rate && rc_ >= c_ && rt_ >= c_) {
    active_ = false;
    next_inc_ = Timestamp::never();
    bytes_acc_ = 0;
    ++stats_.rp_limiter_released;
    record(at, RpEventKind::kRelease, by_bytes);
  }
}

void PaperRp::record(Timestamp at, RpEventKind k, bool by_bytes) {
  if (trace_) trace_->push_back({at, k, by_bytes, rc_, rt_, alpha_at(at)});
}

}  // namespace uroce::dcqcn
