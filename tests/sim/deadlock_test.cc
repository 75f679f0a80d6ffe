/**
 * @file deadlock_test.cc
 * @brief A PFC deadlock through a cyclic buffer dependency (sim/ring.h): three switches in a
 * ring, one host on each, every host streaming to the host two switches further clockwise and
 * every switch routing those flows clockwise (the long way round), 40 Gb/s, 1 us links, 1 KB
 * packets, 1 MB of buffer per switch.
 *  - with PFC (+ ECN + DCQCN, go-back-N) the three clockwise queues pause each other for good:
 *    the cycle watch finds them all paused, non-empty and sending nothing from early on to the
 *    end, no flow completes a byte after that, and no switch sends an XON again while XOFFs keep
 *    being refreshed;
 *  - without PFC (ECN + DCQCN with go-back-N or selective repeat, or the delay-based control
 *    with selective repeat) the same routes carry every flow to the end;
 *  - with PFC and the shortest routes (no cycle) nothing deadlocks either.
 * Deterministic (simulated time). Units: bytes, bit/s, ns; us and Gb/s in the series.
 */
#include <gtest/gtest.h>

#include <cstdio>

#include "sim/ring.h"

namespace uroce::sim::test {
namespace {

using transport::LossRecovery;

constexpr double kFromUs = 5'000;

void print(const char* name, RingRun& r) {
  const PauseCycleWatch& w = r.watch();
  std::printf(
      "%s: goodput %.2f Gb/s from 5 ms, cycle frozen %s%.1f us (for %.1f us, %llu stretches), "
      "failed QPs %zu, XOFF %llu, XON %llu, drops %llu, resent %llu, CNPs %llu\n",
      name, r.goodput_gbps(kFromUs), w.frozen_since().is_never() ? "never " : "since ",
      w.frozen_since().is_never() ? 0.0 : static_cast<double>(w.frozen_since().ns) / 1e3,
      w.frozen_for().us(), static_cast<unsigned long long>(w.stretches()), r.failed_flows(),
      static_cast<unsigned long long>(r.sum(&SwitchStats::xoff_sent)),
      static_cast<unsigned long long>(r.sum(&SwitchStats::xon_sent)),
      static_cast<unsigned long long>(r.drops()),
      static_cast<unsigned long long>(r.total(Counter::roce_adp_retrans)),
      static_cast<unsigned long long>(r.total(Counter::np_cnp_sent)));
  for (size_t k = 0; k < r.flow_count(); ++k)
    std::printf("  flow %zu: %.2f Gb/s from 5 ms%s%s\n", k, r.mean_gbps(k, kFromUs),
                r.flow(k).error().empty() ? "" : ", ", r.flow(k).error().c_str());
}

TEST(RingDeadlockTest, WithPfcTheCycleOfPausesHoldsForGood) {
  RingSpec s;
  RingRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("ring, PFC + ECN + DCQCN, long way round", r);
  const PauseCycleWatch& w = r.watch();
  // Formed within the first millisecond and held to the end of the 20 ms run.
  ASSERT_FALSE(w.frozen_since().is_never());
  EXPECT_LT(w.frozen_since(), Timestamp{} + Duration::millis(1));
  EXPECT_TRUE(w.deadlocked(Duration::millis(19)));
  // From the first sample period wholly after it formed: no byte completes, no XON, XOFF
  // refreshes continue.
  const double from_us = static_cast<double>(w.frozen_since().ns) / 1e3 + 100;
  const std::vector<double>* first = nullptr;
  for (const auto& row : r.rows()) {
    if (row[kRingT] < from_us) continue;
    if (!first) first = &row;
    for (size_t k = 0; k < r.flow_count(); ++k) EXPECT_EQ(row[kRingFlow0 + k], 0.0) << row[kRingT];
    EXPECT_EQ(row[kRingXon], (*first)[kRingXon]) << row[kRingT];
  }
  ASSERT_NE(first, nullptr);
  EXPECT_GT(r.rows().back()[kRingXoff], (*first)[kRingXoff] + 10);
  // Every clockwise queue still paused and holding frames at the end.
  for (int i = 0; i < 3; ++i) {
    EXPECT_GT(r.ring_link(i).queued_bytes(RingRun::kRocePriority), 0u) << i;
    EXPECT_GT(r.sw(i).stats().xoff_sent, 0u) << i;
  }
}

struct NoPfc {
  const char* name;
  bool ecn;
  CcAlgorithm algorithm;
  LossRecovery recovery;
};

class RingWithoutPfcTest : public ::testing::TestWithParam<NoPfc> {};

TEST_P(RingWithoutPfcTest, TheSameRoutesDeliver) {
  const NoPfc& c = GetParam();
  RingSpec s;
  s.pfc.enabled = false;
  s.ecn.enabled = c.ecn;
  s.algorithm = c.algorithm;
  s.recovery = c.recovery;
  RingRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print(c.name, r);
  EXPECT_EQ(r.sum(&SwitchStats::xoff_sent), 0u);
  EXPECT_EQ(r.watch().stretches(), 0u);
  EXPECT_EQ(r.failed_flows(), 0u);
  // Each clockwise link carries two flows: about 18 Gb/s each at best, 55 in all. ECN + DCQCN
  // with go-back-N cuts hard on its first burst and climbs back by additive increase (about 32
  // Gb/s in all from 5 ms); the others keep 45 to 51.
  EXPECT_GE(r.goodput_gbps(kFromUs), 25.0);
  for (size_t k = 0; k < r.flow_count(); ++k)
    EXPECT_GE(r.mean_gbps(k, kFromUs), 8.0) << "flow " << k;
}

INSTANTIATE_TEST_SUITE_P(
    Configs, RingWithoutPfcTest,
    ::testing::Values(NoPfc{"ecn-gbn", true, CcAlgorithm::kDcqcn, LossRecovery::kGoBackN},
                      NoPfc{"ecn-sr", true, CcAlgorithm::kDcqcn, LossRecovery::kSelective},
                      NoPfc{"delay-sr", false, CcAlgorithm::kDelay, LossRecovery::kSelective}),
    [](const ::testing::TestParamInfo<NoPfc>& p) {
      std::string n = p.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(RingDeadlockTest, WithPfcAndShortestRoutesNothingDeadlocks) {
  RingSpec s;
  s.long_way = false;
  RingRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("ring, PFC + ECN + DCQCN, shortest routes", r);
  EXPECT_EQ(r.watch().stretches(), 0u);
  EXPECT_EQ(r.failed_flows(), 0u);
  // One hop each: every flow has a link to itself.
  for (size_t k = 0; k < r.flow_count(); ++k)
    EXPECT_GE(r.mean_gbps(k, kFromUs), 30.0) << "flow " << k;
}

TEST(RingDeadlockTest, RejectsARingItCannotBuild) {
  RingSpec s;
  s.switches = 2;
  RingRun r(s);
  EXPECT_FALSE(r.run());
  EXPECT_FALSE(r.error().empty());
}

}  // namespace
}  // namespace uroce::sim::test
