/**
 * @file open_loop_test.cc
 * @brief Open-loop short messages (sim/open_loop.h) beside a 4:1 incast on the simulator:
 * 4-64 KB WRITEs arriving by a Poisson process at 20 % of a 40 Gb/s link into the incast's
 * receiver, no PFC, no ECN, the delay-based control and selective repeat.
 *  - arrivals come at the configured rate, their gaps have the exponential distribution's
 *    coefficient of variation (1), every size is drawn, and every message completes;
 *  - the same seed gives the same arrivals and completion times, another seed others.
 * Deterministic (simulated time). Units: bytes, bit/s, ns.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "sim/incast.h"

namespace uroce::sim::test {
namespace {

IncastSpec open_loop_spec(uint64_t seed) {
  IncastSpec s;
  s.senders = 4;
  s.ecn.enabled = false;
  s.pfc.enabled = false;
  s.buffer_bytes = 1 << 20;
  s.algorithm = CcAlgorithm::kDelay;
  s.delay.base_rtt = Duration::micros(5);
  s.recovery = transport::LossRecovery::kSelective;
  s.run = Duration::millis(10);
  s.open_loop = OpenLoopConfig{.load = 0.2, .seed = seed, .stop = Duration::millis(9)};
  return s;
}

double percentile_us(std::vector<Duration> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))].us();
}

TEST(OpenLoopTest, PoissonArrivalsAtTheConfiguredLoadAllComplete) {
  IncastRun r(open_loop_spec(1));
  ASSERT_TRUE(r.run()) << r.error();
  const OpenLoopWrites& o = *r.open_loop();
  const auto& m = o.messages();
  // Mean size 24.8 KiB at 8 Gb/s: a gap of 25.4 us, about 354 arrivals in 9 ms.
  EXPECT_NEAR(static_cast<double>(o.mean_gap().ns), 25'395.0, 1.0);
  const double expect = 9e6 / static_cast<double>(o.mean_gap().ns);
  EXPECT_NEAR(static_cast<double>(m.size()), expect, 0.15 * expect);
  double sum = 0, sum2 = 0;
  for (size_t i = 1; i < m.size(); ++i) {
    const double g = static_cast<double>((m[i].arrival - m[i - 1].arrival).ns);
    sum += g;
    sum2 += g * g;
  }
  const double n = static_cast<double>(m.size() - 1);
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, static_cast<double>(o.mean_gap().ns), 0.15 * mean);
  EXPECT_NEAR(sd / mean, 1.0, 0.15);  // exponential gaps
  std::map<uint32_t, size_t> sizes;
  for (const auto& x : m) ++sizes[x.bytes];
  EXPECT_EQ(sizes.size(), 5u);
  for (const auto& [b, k] : sizes) EXPECT_GE(k, m.size() / 10) << b;
  EXPECT_EQ(o.refused(), 0u);
  EXPECT_EQ(o.unfinished(Timestamp{}), 0u);
  const auto fct = o.completion_times(Timestamp{});
  ASSERT_EQ(fct.size(), m.size());
  const double p50 = percentile_us(fct, 0.5), p99 = percentile_us(fct, 0.99);
  std::printf("open loop beside 4:1, delay-sr: %zu messages, p50 %.1f us, p99 %.1f us\n", m.size(),
              p50, p99);
  // At least a 4 KB message's wire time and the 5 us round trip.
  EXPECT_GE(*std::min_element(fct.begin(), fct.end()), Duration::micros(5));
  EXPECT_GE(p99, p50);
}

TEST(OpenLoopTest, TheSeedDecidesTheArrivals) {
  IncastRun a(open_loop_spec(1)), b(open_loop_spec(1)), c(open_loop_spec(2));
  ASSERT_TRUE(a.run()) << a.error();
  ASSERT_TRUE(b.run()) << b.error();
  ASSERT_TRUE(c.run()) << c.error();
  const auto &ma = a.open_loop()->messages(), &mb = b.open_loop()->messages(),
             &mc = c.open_loop()->messages();
  ASSERT_EQ(ma.size(), mb.size());
  for (size_t i = 0; i < ma.size(); ++i) {
    EXPECT_EQ(ma[i].arrival, mb[i].arrival) << i;
    EXPECT_EQ(ma[i].bytes, mb[i].bytes) << i;
    EXPECT_EQ(ma[i].done, mb[i].done) << i;
  }
  size_t same = 0;
  for (size_t i = 0; i < std::min(ma.size(), mc.size()); ++i)
    same += ma[i].arrival == mc[i].arrival ? 1 : 0;
  EXPECT_LT(same, 5u);
}

}  // namespace
}  // namespace uroce::sim::test
