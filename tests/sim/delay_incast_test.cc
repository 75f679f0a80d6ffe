/**
 * @file delay_incast_test.cc
 * @brief The delay-based congestion control (lib/cc delay.h) on the simulator, where switches
 * mark no ECN and send no pause: a 16:1 incast at 40 Gb/s, 1 us links, 1 KB packets, one switch
 * with a shallow 256 KB shared buffer, selective repeat on every QP.
 *  - with the delay control the bottleneck queue stays near the target delay (10 us of queue
 *    at 40 Gb/s = 50 KB, plus a round trip of overshoot), the link stays busy, the flows share
 *    it fairly, and only the first burst overflows the buffer (a loss cuts the rate too);
 *  - without congestion control the same incast keeps the buffer full and drops tens of
 *    thousands of frames (only selective repeat's in-flight cap limits the senders);
 *  - a short flow beside the incast completes its messages in tens of microseconds with the
 *    delay control, and in milliseconds behind a full, dropping buffer without it.
 * Deterministic (simulated time). UROCE_SIM_CSV_DIR=<dir> writes each time series.
 * Units: bytes, bit/s, ns; us in the series.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "sim/incast.h"

namespace uroce::sim::test {
namespace {

IncastSpec lossy_incast(CcAlgorithm a) {
  IncastSpec s;
  s.senders = 16;
  s.ecn.enabled = false;
  s.pfc.enabled = false;
  s.buffer_bytes = 256 * 1024;
  s.algorithm = a;
  s.delay.target_queue = Duration::micros(10);
  // Two 1 us links each way, frames and ACKs serialised at 40 Gb/s: about 5 us through empty
  // queues. Learnt, the base would include the queue the synchronised start builds at once.
  s.delay.base_rtt = Duration::micros(5);
  s.recovery = transport::LossRecovery::kSelective;
  s.run = Duration::millis(20);
  return s;
}

uint64_t drops(IncastRun& r) { return r.sw().stats().buffer_drops + r.sw().stats().headroom_drops; }

double percentile_us(std::vector<Duration> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))].us();
}

void print(const char* name, IncastRun& r, double from_us) {
  std::printf(
      "%s: util %.4f, Jain %.4f, queue mean %.1f KB p99 %.1f KB, drops %llu, retransmits %llu\n",
      name, r.mean(kUtil, from_us), r.jain(from_us), r.mean(kQueue, from_us) / 1024,
      r.quantile(kQueue, 0.99, from_us) / 1024, static_cast<unsigned long long>(drops(r)),
      static_cast<unsigned long long>(r.total(Counter::roce_adp_retrans)));
}

TEST(DelayIncastTest, SixteenToOneWithoutEcnKeepsTheQueueNearTheTarget) {
  IncastSpec s = lossy_incast(CcAlgorithm::kDelay);
  s.csv_name = "incast_16to1_40g_delay.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("16:1 delay-based", r, 5'000);
  EXPECT_GE(r.mean(kUtil, 5'000), 0.85);
  EXPECT_GE(r.jain(5'000), 0.85);
  EXPECT_LE(r.quantile(kQueue, 0.99, 5'000), 200 * 1024);
  EXPECT_LE(drops(r), 5000u);
  EXPECT_EQ(r.sw().stats().ecn_marked, 0u);
}

TEST(DelayIncastTest, WithoutCongestionControlTheBufferFillsAndDrops) {
  IncastSpec s = lossy_incast(CcAlgorithm::kOff);
  s.csv_name = "incast_16to1_40g_no_cc.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("16:1 without congestion control", r, 5'000);
  EXPECT_GE(r.quantile(kQueue, 0.99, 5'000), 240 * 1024);
  EXPECT_GE(drops(r), 20000u);
}

TEST(DelayIncastTest, BothReactionsWithoutEcnBehaveAsTheDelayControl) {
  // dcqcn+delay (the lossy profile's choice) where no switch marks: DCQCN never cuts, the
  // delay control keeps the queue short.
  IncastSpec s = lossy_incast(CcAlgorithm::kDcqcnDelay);
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("16:1 dcqcn+delay, no ECN", r, 5'000);
  EXPECT_GE(r.mean(kUtil, 5'000), 0.85);
  EXPECT_LE(r.quantile(kQueue, 0.99, 5'000), 200 * 1024);
  EXPECT_EQ(r.total(Counter::np_cnp_sent), 0u);
}

TEST(DelayIncastTest, ShortFlowBesideTheIncastCompletesQuickly) {
  std::vector<double> p99;
  for (CcAlgorithm a : {CcAlgorithm::kDelay, CcAlgorithm::kOff}) {
    IncastSpec s = lossy_incast(a);
    s.short_bytes = 4096;
    IncastRun r(s);
    ASSERT_TRUE(r.run()) << r.error();
    const RcStream& f = r.flow(r.flow_count() - 1);
    ASSERT_GT(f.completion_times().size(), 10u);
    p99.push_back(percentile_us(f.completion_times(), 0.99));
    std::printf("short 4 KB flow beside 16:1, %s: %zu messages, p50 %.1f us p99 %.1f us\n",
                a == CcAlgorithm::kDelay ? "delay-based" : "no congestion control",
                f.completion_times().size(), percentile_us(f.completion_times(), 0.5), p99.back());
  }
  EXPECT_LE(p99[0], 100);          // about one queue at the target, and a round trip
  EXPECT_GE(p99[1], 10 * p99[0]);  // behind a full buffer, and losses repaired
}

}  // namespace
}  // namespace uroce::sim::test
