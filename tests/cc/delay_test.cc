/**
 * @file delay_test.cc
 * @brief The delay-based control (cc/delay.h) on fake time: additive increase below the
 * target, a cut in proportion to the excess (bounded by max_mdf) at most once per round trip,
 * the floor and the ceiling, the base round trip learnt from the smallest sample, reset, and
 * parameter validation. Units: bit/s, ns.
 */
#include "cc/delay.h"

#include <gtest/gtest.h>

namespace uroce::cc {
namespace {

constexpr double kLine = 100e9;
Timestamp us(int64_t v) { return Timestamp{v * 1000}; }
Duration rtt_us(int64_t v) { return Duration::micros(v); }

DelayParams params() {
  DelayParams p;
  p.target_queue = Duration::micros(10);
  p.ai_bps = 1e9;
  p.beta = 0.8;
  return p;
}

TEST(DelayControl, StartsAtLineRateAndLearnsTheBase) {
  DelayControl d(params(), kLine);
  EXPECT_EQ(d.rate_bps(), kLine);
  EXPECT_EQ(d.target_delay(), Duration{});  // nothing measured yet
  d.on_rtt(rtt_us(12), us(0));
  EXPECT_EQ(d.base_rtt(), rtt_us(12));
  d.on_rtt(rtt_us(8), us(20));
  EXPECT_EQ(d.base_rtt(), rtt_us(8));
  d.on_rtt(rtt_us(9), us(40));
  EXPECT_EQ(d.base_rtt(), rtt_us(8));  // the smallest sample
  EXPECT_EQ(d.target_delay(), rtt_us(18));
  EXPECT_EQ(d.rate_bps(), kLine);  // below target at line rate: nothing to raise
  EXPECT_EQ(d.stats().samples, 3u);
  EXPECT_EQ(d.stats().cuts, 0u);
}

TEST(DelayControl, CutsInProportionToTheExcessOncePerRoundTrip) {
  DelayParams p = params();
  p.base_rtt = rtt_us(10);  // target 20 µs
  DelayControl d(p, kLine);
  // 25 µs: 1 - 0.8·5/25 = 0.84.
  d.on_rtt(rtt_us(25), us(100));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine * 0.84);
  // Within one round trip (25 µs) of the cut: no second cut.
  d.on_rtt(rtt_us(25), us(110));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine * 0.84);
  // A round trip later: cut again. 100 µs against 20: 1 - 0.8·80/100 = 0.36 < 0.5 = max_mdf.
  d.on_rtt(rtt_us(100), us(200));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine * 0.84 * 0.5);
  EXPECT_EQ(d.stats().cuts, 2u);
}

TEST(DelayControl, IncreasesAdditivelyUpToLineRate) {
  DelayParams p = params();
  p.base_rtt = rtt_us(10);
  DelayControl d(p, kLine);
  d.on_rtt(rtt_us(100), us(0));  // cut to half
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 2);
  d.on_rtt(rtt_us(12), us(200));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 2 + 1e9);
  for (int i = 0; i < 100; ++i) d.on_rtt(rtt_us(12), us(300 + i * 20));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine);
  EXPECT_EQ(d.stats().increases, 50u);  // 50 Gb/s in steps of 1 Gb/s, then nothing to raise
}

TEST(DelayControl, LossCutsOnlyWithALongQueueOncePerRoundTrip) {
  DelayParams p = params();
  p.base_rtt = rtt_us(10);  // target 20 us
  DelayControl d(p, kLine);
  d.on_loss(us(0));  // no sample yet: cut by max_mdf
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 2);
  d.on_rtt(rtt_us(12), us(5));  // below target: an increase
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 2 + 1e9);
  d.on_loss(us(30));  // the queue is short: not congestion
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 2 + 1e9);
  d.on_rtt(rtt_us(40), us(40));  // 40 against 20: a delay cut by 1 - 0.8·20/40 = 0.6
  const double after_delay_cut = (kLine / 2 + 1e9) * 0.6;
  EXPECT_DOUBLE_EQ(d.rate_bps(), after_delay_cut);
  d.on_loss(us(50));  // within a round trip (40 us) of the last cut
  EXPECT_DOUBLE_EQ(d.rate_bps(), after_delay_cut);
  d.on_loss(us(80));
  EXPECT_DOUBLE_EQ(d.rate_bps(), after_delay_cut / 2);
  EXPECT_EQ(d.stats().loss_cuts, 2u);
  EXPECT_EQ(d.stats().cuts, 1u);
}

TEST(DelayControl, NeverBelowTheFloor) {
  DelayParams p = params();
  p.base_rtt = rtt_us(10);
  p.min_rate_bps = 10e9;
  DelayControl d(p, kLine);
  for (int i = 0; i < 10; ++i) d.on_rtt(rtt_us(1000), us(i * 2000));
  EXPECT_DOUBLE_EQ(d.rate_bps(), 10e9);
}

TEST(DelayControl, DefaultsFollowTheLineRate) {
  DelayParams p;
  p.base_rtt = rtt_us(10);
  DelayControl d(p, kLine);
  for (int i = 0; i < 40; ++i) d.on_rtt(rtt_us(1000), us(i * 2000));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 1000);  // floor: line / 1000
  d.on_rtt(rtt_us(11), us(100'000));
  EXPECT_DOUBLE_EQ(d.rate_bps(), kLine / 1000 + kLine / 200);  // ai: line / 200
}

TEST(DelayControl, ResetForgetsTheRateAndTheLearntBase) {
  DelayControl d(params(), kLine);
  d.on_rtt(rtt_us(10), us(0));
  d.on_rtt(rtt_us(100), us(20));
  EXPECT_LT(d.rate_bps(), kLine);
  d.reset();
  EXPECT_EQ(d.rate_bps(), kLine);
  EXPECT_EQ(d.base_rtt(), Duration{});
  EXPECT_EQ(d.stats().cuts, 1u);  // counters are kept
}

TEST(DelayControl, IgnoresNonPositiveSamples) {
  DelayControl d(params(), kLine);
  d.on_rtt(Duration{}, us(0));
  d.on_rtt(Duration{-5}, us(0));
  EXPECT_EQ(d.stats().samples, 0u);
  EXPECT_EQ(d.base_rtt(), Duration{});
}

TEST(DelayControl, Validate) {
  std::string err;
  EXPECT_TRUE(validate(DelayParams{}, &err)) << err;
  DelayParams p;
  p.beta = 0;
  EXPECT_FALSE(validate(p, &err));
  EXPECT_NE(err.find("beta"), std::string::npos);
  p = {};
  p.max_mdf = 1;
  EXPECT_FALSE(validate(p, &err));
  EXPECT_NE(err.find("max_mdf"), std::string::npos);
  p = {};
  p.target_queue = Duration{};
  EXPECT_FALSE(validate(p, &err));
  EXPECT_NE(err.find("target_queue_us"), std::string::npos);
}

}  // namespace
}  // namespace uroce::cc
