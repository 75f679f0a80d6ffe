/**
 * @file progress_policy.cc
 * @brief The progress thread's decisions (progress_policy.h). Units: ns.
 */
#include "device/progress_policy.h"

#include <algorithm>
#include <cstdint>

namespace uroce::device {

Duration driving_sleep(int n) {
  // From kFollowUpSleep, doubling every 4 looks.
  return std::min(kFollowUpSleep * (int64_t{1} << (n / 4)), kDrivingMaxSleep);
}

Duration idle_sleep(Duration quiet) {
  if (quiet > kDeeperIdle) return kDeeperSleep;
  if (quiet > kDeepIdle) return kDeepSleep;
  return kMaxSleep;
}

Duration until(Duration d, Timestamp deadline, Timestamp t) {
  if (!deadline.is_never() && deadline - t < d) return deadline - t;
  return d;
}

ProgressPolicy::Decision ProgressPolicy::look_again_later() {
  driving_ = std::min(driving_ + 1, kDrivingLooksMax);
  return {Action::kSleep, driving_sleep(driving_), false};
}

ProgressPolicy::Decision ProgressPolicy::look(Timestamp t, Timestamp last_app_call) {
  since_app_ = t - last_app_call;
  stats_due_ = t - last_rates_ >= kStatsRatePeriod;
  // The statistics wait for nobody: when due, step even while the application drives.
  if (since_app_ < kAppDriving && !stats_due_) return look_again_later();
  return {Action::kStep, Duration{}, stats_due_};
}

ProgressPolicy::Decision ProgressPolicy::engine_busy() { return look_again_later(); }

ProgressPolicy::Decision ProgressPolicy::after_step(Timestamp t, size_t work, bool follow_up,
                                                    Timestamp deadline) {
  driving_ = 0;  // the thread got the engine
  if (stats_due_) last_rates_ = t;
  if (work > 0) last_work_ = t;
  if (follow_up) {
    idle_ = kSpinRounds + kYieldRounds;  // once alone, sleep before spinning again
    // Short polls while a reply may be due; a busy application that stopped calling long ago
    // (it computes) gets the idle back-off instead.
    Duration d = kFollowUpSleep;
    if (since_app_ >= kFollowUp && t - last_work_ >= kFollowUp) d = idle_sleep(t - last_work_);
    return {Action::kSleep, until(d, deadline, t), false};
  }
  // Alone.
  if (work > 0) {
    idle_ = 0;
    return {Action::kAgain, Duration{}, false};
  }
  ++idle_;
  if (idle_ < kSpinRounds) return {Action::kSpin, Duration{}, false};
  if (idle_ < kSpinRounds + kYieldRounds) return {Action::kYield, Duration{}, false};
  return {Action::kBackOff, Duration{}, false};
}

Duration ProgressPolicy::back_off_sleep(Timestamp t, Timestamp deadline) const {
  // 1 us doubling every 8 idle rounds, up to kMaxSleep; the deep sleeps after kDeepIdle.
  const int shift = std::min((idle_ - kSpinRounds - kYieldRounds) / 8, 6);
  Duration d = std::min(Duration::micros(int64_t{1} << shift), kMaxSleep);
  if (t - last_work_ > kDeepIdle) d = idle_sleep(t - last_work_);
  return until(d, deadline, t);
}

}  // namespace uroce::device
