/**
 * @file progress_policy_test.cc
 * @brief device::ProgressPolicy on fake time: each phase (driving, follow-up, alone), its
 * decisions and sleeps, the idle back-off, deep idle, the statistics period, and the bounds of
 * application-driven progress. Units: ns (Duration helpers).
 */
#include "device/progress_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace uroce::device {
namespace {

using Action = ProgressPolicy::Action;

constexpr Timestamp kStart{1'000'000'000'000};  // 1000 s: an app call at 0 is long ago
constexpr Timestamp kNoCall{0};
constexpr Duration us(int64_t v) { return Duration::micros(v); }
constexpr Duration ms(int64_t v) { return Duration::millis(v); }

/// Steps alone (the application long gone) without work until the policy says kBackOff;
/// returns the decisions on the way.
std::vector<Action> idle_until_back_off(ProgressPolicy& p, Timestamp t) {
  std::vector<Action> seen;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(p.look(t, kNoCall).action, Action::kStep);
    Action a = p.after_step(t, 0, false, Timestamp::never()).action;
    seen.push_back(a);
    if (a == Action::kBackOff) break;
  }
  return seen;
}

TEST(ProgressPolicy, AppDrivingLooksAgainLaterDoublingEveryFourLooksUpToTheCap) {
  ProgressPolicy p(kStart);
  Timestamp t = kStart + ms(1);
  std::vector<Duration> sleeps;
  for (int i = 0; i < 40; ++i) {
    ProgressPolicy::Decision d = p.look(t, t - us(5));  // the application called 5 us ago
    ASSERT_EQ(d.action, Action::kSleep);
    sleeps.push_back(d.sleep);
  }
  // Looks 1-3: 8 us; 4-7: 16 us; ...; from look 28 on: 8 us << 7 = 1024 us, capped at 1 ms.
  EXPECT_EQ(std::vector<Duration>(sleeps.begin(), sleeps.begin() + 9),
            (std::vector<Duration>{kFollowUpSleep, us(8), us(8), us(16), us(16), us(16), us(16),
                                   us(32), us(32)}));
  EXPECT_EQ(sleeps[26], us(512));
  for (size_t i = 27; i < sleeps.size(); ++i) EXPECT_EQ(sleeps[i], kDrivingMaxSleep) << i;
}

TEST(ProgressPolicy, AppDrivingEndsAtKAppDriving) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  EXPECT_EQ(p.look(t, t - kAppDriving + Duration::nanos(1)).action, Action::kSleep);
  ProgressPolicy::Decision d = p.look(t, t - kAppDriving);
  EXPECT_EQ(d.action, Action::kStep);
  EXPECT_FALSE(d.stats_due);
  EXPECT_TRUE(p.app_called_recently());  // 20 us < kFollowUp: the step follows the app
}

TEST(ProgressPolicy, StatisticsDueStepEvenWhileTheAppDrives) {
  ProgressPolicy p(kStart);
  Timestamp t = kStart + kStatsRatePeriod - Duration::nanos(1);
  EXPECT_EQ(p.look(t, t).action, Action::kSleep);
  t = kStart + kStatsRatePeriod;
  ProgressPolicy::Decision d = p.look(t, t);
  EXPECT_EQ(d.action, Action::kStep);
  EXPECT_TRUE(d.stats_due);
  p.after_step(t, 0, true, Timestamp::never());
  // Refreshed at t: the next refresh is a period later, the app drives meanwhile.
  EXPECT_EQ(p.look(t + ms(50), t + ms(50)).action, Action::kSleep);
  d = p.look(t + kStatsRatePeriod, t + kStatsRatePeriod);
  EXPECT_EQ(d.action, Action::kStep);
  EXPECT_TRUE(d.stats_due);
}

TEST(ProgressPolicy, StatisticsNotDueWhenTheStepRanWithoutThem) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  EXPECT_FALSE(p.look(t, kNoCall).stats_due);
  p.after_step(t, 0, false, Timestamp::never());
  // The step at t did not refresh, so the period still counts from the start.
  EXPECT_TRUE(p.look(kStart + kStatsRatePeriod, kNoCall).stats_due);
}

TEST(ProgressPolicy, EngineBusyLooksAgainLaterAndAStepResetsTheLooks) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  ASSERT_EQ(p.look(t, t - us(100)).action, Action::kStep);
  std::vector<Duration> sleeps;
  for (int i = 0; i < 5; ++i) {
    ProgressPolicy::Decision d = p.engine_busy();
    ASSERT_EQ(d.action, Action::kSleep);
    sleeps.push_back(d.sleep);
  }
  EXPECT_EQ(sleeps, (std::vector<Duration>{us(8), us(8), us(8), us(16), us(16)}));
  ASSERT_EQ(p.look(t, t - us(100)).action, Action::kStep);
  p.after_step(t, 1, true, Timestamp::never());
  EXPECT_EQ(p.engine_busy().sleep, kFollowUpSleep);  // back to the first look
}

TEST(ProgressPolicy, FollowUpPollsEveryFollowUpSleepWithOrWithoutWork) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  ASSERT_EQ(p.look(t, t - us(100)).action, Action::kStep);
  ASSERT_TRUE(p.app_called_recently());
  ProgressPolicy::Decision d = p.after_step(t, 0, true, Timestamp::never());
  EXPECT_EQ(d.action, Action::kSleep);
  EXPECT_EQ(d.sleep, kFollowUpSleep);
  ASSERT_EQ(p.look(t + us(10), t - us(100)).action, Action::kStep);
  d = p.after_step(t + us(10), 3, true, Timestamp::never());
  EXPECT_EQ(d.action, Action::kSleep);  // work or not: no spinning on the app's core
  EXPECT_EQ(d.sleep, kFollowUpSleep);
}

TEST(ProgressPolicy, FollowUpEndsAtKFollowUp) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  p.look(t, t - kFollowUp + Duration::nanos(1));
  EXPECT_TRUE(p.app_called_recently());
  p.look(t, t - kFollowUp);
  EXPECT_FALSE(p.app_called_recently());
}

TEST(ProgressPolicy, FollowUpSleepStopsAtTheEngineDeadline) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  p.look(t, t - us(100));
  ProgressPolicy::Decision d = p.after_step(t, 0, true, t + us(3));
  EXPECT_EQ(d.action, Action::kSleep);
  EXPECT_EQ(d.sleep, us(3));
}

TEST(ProgressPolicy, BusyPinnedCpuLongAfterTheAppAndTheLastWorkBacksOff) {
  // follow_up from a busy pinned CPU, the app silent for 1 ms: while work was seen within
  // kFollowUp the thread polls every kFollowUpSleep, then sleeps as when idle.
  ProgressPolicy p(kStart);
  Timestamp t = kStart + ms(1);
  const Timestamp app = kStart;
  p.look(t, app);
  ASSERT_FALSE(p.app_called_recently());
  p.after_step(t, 1, true, Timestamp::never());  // work at t
  p.look(t + us(499), app);
  EXPECT_EQ(p.after_step(t + us(499), 0, true, Timestamp::never()).sleep, kFollowUpSleep);
  p.look(t + us(500), app);
  EXPECT_EQ(p.after_step(t + us(500), 0, true, Timestamp::never()).sleep, kMaxSleep);
  p.look(t + ms(11), app);
  EXPECT_EQ(p.after_step(t + ms(11), 0, true, Timestamp::never()).sleep, kDeepSleep);
  p.look(t + ms(1100), app);
  EXPECT_EQ(p.after_step(t + ms(1100), 0, true, Timestamp::never()).sleep, kDeeperSleep);
}

TEST(ProgressPolicy, AloneWithWorkStepsAgainAtOnce) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + ms(1);
  ASSERT_EQ(p.look(t, kNoCall).action, Action::kStep);
  EXPECT_FALSE(p.app_called_recently());
  EXPECT_EQ(p.after_step(t, 5, false, Timestamp::never()).action, Action::kAgain);
  EXPECT_EQ(p.idle_rounds(), 0);
  EXPECT_EQ(p.last_work(), t);
}

TEST(ProgressPolicy, AloneAndIdleSpinsThenYieldsThenBacksOff) {
  ProgressPolicy p(kStart);
  const std::vector<Action> seen = idle_until_back_off(p, kStart + us(1));
  ASSERT_EQ(seen.size(), static_cast<size_t>(kSpinRounds + kYieldRounds));
  for (int i = 0; i < kSpinRounds - 1; ++i) ASSERT_EQ(seen[i], Action::kSpin) << i;
  for (int i = kSpinRounds - 1; i < kSpinRounds + kYieldRounds - 1; ++i)
    ASSERT_EQ(seen[i], Action::kYield) << i;
  EXPECT_EQ(seen.back(), Action::kBackOff);
}

TEST(ProgressPolicy, BackOffSleepsDoubleFromOneMicrosecondToKMaxSleep) {
  ProgressPolicy p(kStart);
  const Timestamp t = kStart + us(1);
  idle_until_back_off(p, t);
  std::vector<Duration> sleeps;
  for (int i = 0; i < 64; ++i) {
    sleeps.push_back(p.back_off_sleep(t, Timestamp::never()));
    p.look(t, kNoCall);
    ASSERT_EQ(p.after_step(t, 0, false, Timestamp::never()).action, Action::kBackOff);
  }
  // 8 rounds at each of 1, 2, 4, ..., 64 us, then 64 us.
  EXPECT_EQ(sleeps[0], us(1));
  EXPECT_EQ(sleeps[7], us(1));
  EXPECT_EQ(sleeps[8], us(2));
  EXPECT_EQ(sleeps[16], us(4));
  EXPECT_EQ(sleeps[40], us(32));
  EXPECT_EQ(sleeps[48], kMaxSleep);
  EXPECT_EQ(sleeps[63], kMaxSleep);
}

TEST(ProgressPolicy, BackOffEntersDeepIdleAfterKDeepIdleWithoutWork) {
  ProgressPolicy p(kStart);
  idle_until_back_off(p, kStart + us(1));
  // No work since the start: the clock read before sleeping decides.
  EXPECT_EQ(p.back_off_sleep(kStart + kDeepIdle, Timestamp::never()), us(1));
  EXPECT_EQ(p.back_off_sleep(kStart + kDeepIdle + Duration::nanos(1), Timestamp::never()),
            kDeepSleep);
  EXPECT_EQ(p.back_off_sleep(kStart + kDeeperIdle, Timestamp::never()), kDeepSleep);
  EXPECT_EQ(p.back_off_sleep(kStart + kDeeperIdle + Duration::nanos(1), Timestamp::never()),
            kDeeperSleep);
}

TEST(ProgressPolicy, BackOffSleepStopsAtTheEngineDeadline) {
  ProgressPolicy p(kStart);
  idle_until_back_off(p, kStart + us(1));
  const Timestamp t = kStart + ms(20);
  EXPECT_EQ(p.back_off_sleep(t, t + us(40)), us(40));
  EXPECT_EQ(p.back_off_sleep(t, t + ms(1)), kDeepSleep);
  EXPECT_LE(p.back_off_sleep(t, t - us(1)).ns, 0);  // overdue: no sleep
}

TEST(ProgressPolicy, WorkWakesTheThreadFromDeepIdleToSpinning) {
  ProgressPolicy p(kStart);
  idle_until_back_off(p, kStart + us(1));
  const Timestamp t = kStart + Duration::seconds(2);
  ASSERT_EQ(p.back_off_sleep(t, Timestamp::never()), kDeeperSleep);
  p.look(t, kNoCall);
  EXPECT_EQ(p.after_step(t, 1, false, Timestamp::never()).action, Action::kAgain);
  p.look(t + us(1), kNoCall);
  EXPECT_EQ(p.after_step(t + us(1), 0, false, Timestamp::never()).action, Action::kSpin);
  // Work was seen at t: the next back-off starts short again.
  idle_until_back_off(p, t + us(2));
  EXPECT_EQ(p.back_off_sleep(t + us(3), Timestamp::never()), us(1));
}

TEST(ProgressPolicy, AloneAfterFollowUpSleepsBeforeSpinningAgain) {
  ProgressPolicy p(kStart);
  Timestamp t = kStart + ms(1);
  p.look(t, t - us(100));
  p.after_step(t, 0, true, Timestamp::never());
  EXPECT_EQ(p.idle_rounds(), kSpinRounds + kYieldRounds);
  t = t + ms(1);  // the application stopped calling 1.1 ms ago: alone
  p.look(t, t - us(1100));
  ASSERT_FALSE(p.app_called_recently());
  EXPECT_EQ(p.after_step(t, 0, false, Timestamp::never()).action, Action::kBackOff);
  EXPECT_EQ(p.back_off_sleep(t, Timestamp::never()), us(1));
}

TEST(ProgressPolicy, OnlySleepsNeedTheDeadline) {
  EXPECT_TRUE(ProgressPolicy::needs_deadline(0, false));
  EXPECT_TRUE(ProgressPolicy::needs_deadline(0, true));
  EXPECT_TRUE(ProgressPolicy::needs_deadline(3, true));
  EXPECT_FALSE(ProgressPolicy::needs_deadline(3, false));
}

TEST(ProgressPolicy, SleepHelpers) {
  EXPECT_EQ(driving_sleep(1), us(8));
  EXPECT_EQ(driving_sleep(kDrivingLooksMax), kDrivingMaxSleep);
  EXPECT_EQ(idle_sleep(ms(10)), kMaxSleep);
  EXPECT_EQ(idle_sleep(ms(11)), kDeepSleep);
  EXPECT_EQ(idle_sleep(Duration::seconds(2)), kDeeperSleep);
  EXPECT_EQ(until(us(64), Timestamp::never(), kStart), us(64));
  EXPECT_EQ(until(us(64), kStart + us(10), kStart), us(10));
  EXPECT_EQ(until(us(64), kStart + ms(1), kStart), us(64));
}

TEST(AppDrivenProgress, APostPollsRxOnlyWhenNobodyHasForKPostRxGap) {
  EXPECT_FALSE(post_polls_rx(kStart + kPostRxGap - Duration::nanos(1), kStart));
  EXPECT_TRUE(post_polls_rx(kStart + kPostRxGap, kStart));
}

TEST(AppDrivenProgress, AnotherStepOnlyWhenTheLastLeftWork) {
  int asked = 0;
  auto left = [&asked](bool v) {
    return [&asked, v] {
      ++asked;
      return v;
    };
  };
  EXPECT_TRUE(step_again(kRxBurst, 0, left(false)));  // a full RX burst: more may wait
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(step_again(kRxBurst - 1, 0, left(true)));  // nothing sent: done
  EXPECT_EQ(asked, 0);
  EXPECT_FALSE(step_again(3, 2, left(false)));  // sent all it had
  EXPECT_EQ(asked, 1);
  EXPECT_TRUE(step_again(3, 2, left(true)));  // the port refused a frame still ready
  EXPECT_EQ(asked, 2);
}

TEST(ProgressPolicy, ATuningFromTheConfigurationReplacesTheDefaults) {
  // [device.progress]: names the configuration checked, values in their units (µs).
  const ProgressTuning k = progress_tuning({{"spin_rounds", 2},
                                            {"yield_rounds", 1},
                                            {"max_sleep_us", 4},
                                            {"follow_up_sleep_us", 3},
                                            {"driving_max_sleep_us", 6},
                                            {"app_driving_us", 50},
                                            {"rx_burst", 8},
                                            {"drive_rounds", 2},
                                            {"post_rx_gap_us", 0.5},
                                            {"slice_us", 0}});
  EXPECT_EQ(k.spin_rounds, 2);
  EXPECT_EQ(k.slice, Duration{});  // 0: the scheduler's default slice
  EXPECT_EQ(k.rx_burst, 8u);
  EXPECT_EQ(k.drive_rounds, 2);
  EXPECT_EQ(k.post_rx_gap, Duration::nanos(500));
  EXPECT_EQ(k.follow_up, kFollowUp);  // not named: the default
  ProgressPolicy p(kStart, k);
  // Idle rounds 1 (spin), 2 (the spin rounds used up: yield), 3 (the yield too: back off).
  EXPECT_EQ(idle_until_back_off(p, kStart + ms(1)),
            (std::vector<Action>{Action::kSpin, Action::kYield, Action::kBackOff}));
  // The back-off never sleeps longer than max_sleep.
  EXPECT_EQ(p.back_off_sleep(kStart + ms(1), Timestamp::never()), us(1));
  for (int i = 0; i < 100; ++i) p.after_step(kStart + ms(1), 0, false, Timestamp::never());
  EXPECT_EQ(p.back_off_sleep(kStart + ms(1), Timestamp::never()), us(4));
  // Driving: from follow_up_sleep, capped at driving_max_sleep, within app_driving.
  const Timestamp t = kStart + ms(2);
  EXPECT_EQ(p.look(t, t - us(40)).sleep, us(3));
  for (int i = 0; i < 10; ++i) p.look(t, t - us(40));
  EXPECT_EQ(p.look(t, t - us(40)).sleep, us(6));
  EXPECT_EQ(p.look(t, t - us(50)).action, Action::kStep);
  EXPECT_TRUE(step_again(
      8, 0, [] { return false; }, k));
  EXPECT_FALSE(step_again(
      7, 0, [] { return false; }, k));
  EXPECT_TRUE(post_polls_rx(t, t - Duration::nanos(500), k));
  EXPECT_FALSE(post_polls_rx(t, t - Duration::nanos(499), k));
}

}  // namespace
}  // namespace uroce::device
