/**
 * @file progress_policy.cc
 * @brief The progress thread's decisions (progress_policy.h). Units: ns.
 */
#include "device/progress_policy.h"

#include <algorithm>
#include <cstdint>

namespace uroce::device {

Duration driving_sleep(int n, const ProgressTuning& k) {
  // From follow_up_sleep, doubling every 4 looks.
  return std::min(k.follow_up_sleep * (int64_t{1} << (n / 4)), k.driving_max_sleep);
}

Duration idle_sleep(Duration quiet, const ProgressTuning& k) {
  if (quiet > kDeeperIdle) return kDeeperSleep;
  if (quiet > kDeepIdle) return kDeepSleep;
  return k.max_sleep;
}

ProgressTuning progress_tuning(const std::map<std::string, double>& overrides) {
  ProgressTuning k;
  auto us = [](double v) { return Duration::nanos(static_cast<int64_t>(v * 1000)); };
  for (const auto& [name, v] : overrides) {
    if (name == "spin_rounds") k.spin_rounds = static_cast<int>(v);
    if (name == "yield_rounds") k.yield_rounds = static_cast<int>(v);
    if (name == "max_sleep_us") k.max_sleep = us(v);
    if (name == "app_driving_us") k.app_driving = us(v);
    if (name == "follow_up_us") k.follow_up = us(v);
    if (name == "follow_up_sleep_us") k.follow_up_sleep = us(v);
    if (name == "driving_max_sleep_us") k.driving_max_sleep = us(v);
    if (name == "rx_burst") k.rx_burst = static_cast<size_t>(v);
    if (name == "drive_rounds") k.drive_rounds = static_cast<int>(v);
    if (name == "post_rx_gap_us") k.post_rx_gap = us(v);
    if (name == "slice_us") k.slice = us(v);
  }
  return k;
}

Duration until(Duration d, Timestamp deadline, Timestamp t) {
  if (!deadline.is_never() && deadline - t < d) return deadline - t;
  return d;
}

ProgressPolicy::Decision ProgressPolicy::look_again_later() {
  driving_ = std::min(driving_ + 1, kDrivingLooksMax);
  return {Action::kSleep, driving_sleep(driving_, k_), false};
}

ProgressPolicy::Decision ProgressPolicy::look(Timestamp t, Timestamp last_app_call) {
  since_app_ = t - last_app_call;
  stats_due_ = t - last_rates_ >= kStatsRatePeriod;
  // The statistics wait for nobody: when due, step even while the application drives.
  if (since_app_ < k_.app_driving && !stats_due_) return look_again_later();
  return {Action::kStep, Duration{}, stats_due_};
}

ProgressPolicy::Decision ProgressPolicy::engine_busy() { return look_again_later(); }

ProgressPolicy::Decision ProgressPolicy::after_step(Timestamp t, size_t work, bool follow_up,
                                                    Timestamp deadline) {
  driving_ = 0;  // the thread got the engine
  if (stats_due_) last_rates_ = t;
  if (work > 0) last_work_ = t;
  if (follow_up) {
    idle_ = k_.spin_rounds + k_.yield_rounds;  // once alone, sleep before spinning again
    // Short polls while a reply may be due; a busy application that stopped calling long ago
    // (it computes) gets the idle back-off instead.
    Duration d = k_.follow_up_sleep;
    if (since_app_ >= k_.follow_up && t - last_work_ >= k_.follow_up)
      d = idle_sleep(t - last_work_, k_);
    return {Action::kSleep, until(d, deadline, t), false};
  }
  // Alone.
  if (work > 0) {
    idle_ = 0;
    return {Action::kAgain, Duration{}, false};
  }
  ++idle_;
  if (idle_ < k_.spin_rounds) return {Action::kSpin, Duration{}, false};
  if (idle_ < k_.spin_rounds + k_.yield_rounds) return {Action::kYield, Duration{}, false};
  return {Action::kBackOff, Duration{}, false};
}

Duration ProgressPolicy::back_off_sleep(Timestamp t, Timestamp deadline) const {
  // 1 us doubling every 8 idle rounds, up to max_sleep; the deep sleeps after kDeepIdle.
  const int shift = std::min((idle_ - k_.spin_rounds - k_.yield_rounds) / 8, 6);
  Duration d = std::min(Duration::micros(int64_t{1} << shift), k_.max_sleep);
  if (t - last_work_ > kDeepIdle) d = idle_sleep(t - last_work_, k_);
  return until(d, deadline, t);
}

}  // namespace uroce::device
