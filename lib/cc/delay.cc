/**
 * @file delay.cc
 * @brief The delay-based control's AIMD (delay.h). Units: bit/s, ns.
 */
#include "cc/delay.h"

#include <algorithm>

namespace uroce::cc {

bool validate(const DelayParams& p, std::string* err) {
  auto fail = [&](const char* what) {
    if (err) *err = what;
    return false;
  };
  if (p.target_queue.ns <= 0) return fail("target_queue_us: must be > 0");
  if (p.base_rtt.ns < 0) return fail("base_rtt_us: must be >= 0");
  if (p.ai_bps < 0) return fail("ai_mbps: must be >= 0");
  if (!(p.beta > 0 && p.beta <= 1)) return fail("beta: must be in (0, 1]");
  if (!(p.max_mdf > 0 && p.max_mdf < 1)) return fail("max_mdf: must be in (0, 1)");
  if (p.min_rate_bps < 0) return fail("min_rate_mbps: must be >= 0");
  return true;
}

DelayControl::DelayControl(const DelayParams& p, double line_bps)
    : p_(p),
      line_(line_bps),
      ai_(p.ai_bps > 0 ? p.ai_bps : line_bps / 200),
      min_rate_(std::min(line_bps, p.min_rate_bps > 0 ? p.min_rate_bps : line_bps / 1000)),
      rate_(line_bps),
      base_(p.base_rtt) {}

Duration DelayControl::target_delay() const {
  return base_.ns > 0 ? base_ + p_.target_queue : Duration{};
}

void DelayControl::on_rtt(Duration rtt, Timestamp now) {
  if (rtt.ns <= 0) return;
  // ai per round trip however many samples it brings: each adds the share of a round trip
  // since the one before (all of it for the first).
  const double share = last_rtt_.ns == 0
                           ? 1.0
                           : std::min(1.0, static_cast<double>((now - last_sample_at_).ns) /
                                               static_cast<double>(rtt.ns));
  ++stats_.samples;
  last_rtt_ = rtt;
  last_sample_at_ = now;
  if (p_.base_rtt.ns == 0 && (base_.ns == 0 || rtt < base_)) base_ = rtt;
  const Duration target = target_delay();
  if (rtt < target) {
    if (rate_ < line_) {
      rate_ = std::min(line_, rate_ + ai_ * share);
      ++stats_.increases;
    }
    return;
  }
  if (!may_cut(rtt, now)) return;
  const double over = static_cast<double>((rtt - target).ns) / static_cast<double>(rtt.ns);
  const double factor = std::max(1 - p_.beta * over, 1 - p_.max_mdf);
  rate_ = std::max(min_rate_, rate_ * factor);
  last_cut_ = now;
  ++stats_.cuts;
}

void DelayControl::on_loss(Timestamp now) {
  // A loss while a recent round trip was below the target is not congestion (a bit error, a
  // flaky link): the queue was short. Without a sample, or with none for kStaleRtts round trips
  // (timed packets lost in an overflowing queue), there is nothing to tell them apart.
  const bool recent = last_rtt_.ns > 0 && now - last_sample_at_ < target_delay() * kStaleRtts;
  if (recent && last_rtt_ < target_delay()) return;
  if (!may_cut(std::max(last_rtt_, p_.target_queue), now)) return;
  rate_ = std::max(min_rate_, rate_ * (1 - p_.max_mdf));
  last_cut_ = now;
  ++stats_.loss_cuts;
}

void DelayControl::reset() {
  rate_ = line_;
  base_ = p_.base_rtt;
  last_rtt_ = {};
  last_cut_ = Timestamp::never();
}

}  // namespace uroce::cc
