/**
 * @file tx_scheduler_test.cc
 * @brief The 8-queue TX scheduler: strict priority for the CNP class first, WRR weights honoured
 * (byte-fair DRR), paused priorities skipped (docs/dcqcn-pfc.md §3.4, §4.2).
 */
#include "dcqcn/tx_scheduler.h"

#include <gtest/gtest.h>

#include "dcqcn/pfc_rx.h"

namespace uroce::dcqcn {
namespace {

using Heads = std::array<uint32_t, kNumPriorities>;

TEST(TxScheduler, StrictCnpClassFirst) {
  TxScheduler s;
  Heads h{};
  h[0] = h[3] = 4096;
  h[6] = 60;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(s.pick(h, nullptr, Timestamp{}), 6);
  h[6] = 0;
  auto p = s.pick(h, nullptr, Timestamp{});
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(*p, 6);
  EXPECT_FALSE(s.pick(Heads{}, nullptr, Timestamp{}).has_value());
}

TEST(TxScheduler, HigherStrictBeforeLower) {
  TxSchedulerConfig c;
  c.strict_mask = (1u << 6) | (1u << 7);
  TxScheduler s(c);
  Heads h{};
  h[6] = h[7] = 100;
  EXPECT_EQ(s.pick(h, nullptr, Timestamp{}), 7);
}

// WRR weights 3:1 between priority 3 (RoCE) and 0, equal frame sizes: served bytes 3:1 over
// whole rounds.
TEST(TxScheduler, WeightsHonoured) {
  TxSchedulerConfig c;
  c.weights = {1, 1, 1, 3, 1, 1, 1, 1};
  c.quantum_bytes = 4096;
  TxScheduler s(c);
  Heads h{};
  h[0] = h[3] = 4096;
  std::array<uint64_t, 8> bytes{};
  for (int i = 0; i < 4000; ++i) {
    auto p = s.pick(h, nullptr, Timestamp{});
    ASSERT_TRUE(p.has_value());
    bytes[*p] += h[*p];
  }
  EXPECT_EQ(bytes[3], 3 * bytes[0]);
}

// Byte fairness with unequal frame sizes and equal weights: within one quantum.
TEST(TxScheduler, ByteFairAcrossFrameSizes) {
  TxScheduler s;  // quantum 9216, weights 1
  Heads h{};
  h[0] = 64;
  h[3] = 4096;
  h[4] = 1500;
  std::array<uint64_t, 8> bytes{};
  for (int i = 0; i < 200000; ++i) {
    auto p = *s.pick(h, nullptr, Timestamp{});
    bytes[p] += h[p];
  }
  const double b0 = static_cast<double>(bytes[0]);
  EXPECT_NEAR(static_cast<double>(bytes[3]) / b0, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(bytes[4]) / b0, 1.0, 0.01);
}

// A paused priority is skipped; the others keep the link; the CNP class is not paused by a
// priority-3 XOFF.
TEST(TxScheduler, SkipsPausedPriority) {
  PfcCounters c;
  PfcRx rx(100'000'000'000ull, {}, &c);
  wire::PauseFrame f;
  f.class_enable = 1u << 3;
  f.quanta[3] = 0xFFFF;
  rx.on_pause_frame(f, Timestamp{0});
  TxScheduler s;
  Heads h{};
  h[0] = h[3] = 4096;
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.pick(h, &rx, Timestamp{1000}), 0);
  h[6] = 60;
  EXPECT_EQ(s.pick(h, &rx, Timestamp{1000}), 6);
  h[0] = h[6] = 0;
  EXPECT_FALSE(s.pick(h, &rx, Timestamp{1000}).has_value());
  EXPECT_EQ(s.pick(h, &rx, Timestamp{335540}), 3);  // the pause has expired
}

}  // namespace
}  // namespace uroce::dcqcn
