/**
 * @file notification_point_test.cc
 * @brief NP CNP pacing, docs/dcqcn-pfc.md §1.3 and §6 item 3 (exact CNP counts and times).
 */
#include "dcqcn/notification_point.h"

#include <gtest/gtest.h>

#include <vector>

namespace uroce::dcqcn {
namespace {

Timestamp us(int64_t v) { return Timestamp{v * 1000}; }

/// Feeds CE packets at `ce` (sorted), runs the NP timer at its deadlines, returns CNP times
/// up to `end` (inclusive).
std::vector<Timestamp> cnp_times(NotificationPoint& np, const std::vector<Timestamp>& ce,
                                 Timestamp end) {
  std::vector<Timestamp> out;
  size_t i = 0;
  while (true) {
    const Timestamp next_ce = i < ce.size() ? ce[i] : Timestamp::never();
    const Timestamp next = earliest(next_ce, np.next_deadline());
    if (next > end) break;
    if (np.next_deadline() <= next_ce) {  // timers first at one instant
      if (np.on_timer(next)) out.push_back(next);
    } else {
      if (np.on_ce_marked(next_ce)) out.push_back(next_ce);
      ++i;
    }
  }
  return out;
}

// §6 item 3: a CE-marked packet every 1 µs for 1000 µs (t = 0..999) with N = 50 µs gives
// exactly 20 CNPs in [0, 1000) µs, at 0, 50, ..., 950. The CEs of 951..999 µs are coalesced
// into one more CNP when the interval ends at 1000 µs.
TEST(NotificationPoint, CePerMicrosecondGivesOneCnpPer50us) {
  NotificationPoint np(Duration::micros(50));
  std::vector<Timestamp> ce;
  for (int t = 0; t < 1000; ++t) ce.push_back(us(t));
  auto cnps = cnp_times(np, ce, us(999));
  ASSERT_EQ(cnps.size(), 20u);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(cnps[k], us(50 * k));
  EXPECT_EQ(np.stats().np_ecn_marked_roce_packets, 1000u);
  EXPECT_EQ(np.stats().np_cnp_sent, 20u);
  EXPECT_TRUE(np.pending());
  EXPECT_EQ(np.next_deadline(), us(1000));
  EXPECT_TRUE(np.on_timer(us(1000)));
  EXPECT_EQ(np.next_deadline(), Timestamp::never());
}

// §6 item 3: one CE then silence: exactly one CNP, no timer left.
TEST(NotificationPoint, SingleCeOneCnp) {
  NotificationPoint np(Duration::micros(50));
  auto cnps = cnp_times(np, {us(7)}, us(10000));
  ASSERT_EQ(cnps.size(), 1u);
  EXPECT_EQ(cnps[0], us(7));
  EXPECT_EQ(np.next_deadline(), Timestamp::never());
  EXPECT_EQ(np.stats().np_cnp_sent, 1u);
}

// §6 item 3: CE at 0 and 10 µs: CNPs at 0 and 50 µs (the second coalesced to the interval end).
TEST(NotificationPoint, SecondCeInsideIntervalWaitsForItsEnd) {
  NotificationPoint np(Duration::micros(50));
  auto cnps = cnp_times(np, {us(0), us(10)}, us(10000));
  ASSERT_EQ(cnps.size(), 2u);
  EXPECT_EQ(cnps[0], us(0));
  EXPECT_EQ(cnps[1], us(50));
  EXPECT_EQ(np.stats().np_ecn_marked_roce_packets, 2u);
  EXPECT_EQ(np.stats().np_cnp_coalesced, 1u);
}

// A CE that finds the coalesced CNP overdue (caller ran no timer) sends exactly one CNP.
TEST(NotificationPoint, OverdueTimerAndNewCeSendOneCnp) {
  NotificationPoint np(Duration::micros(50));
  EXPECT_TRUE(np.on_ce_marked(us(0)));
  EXPECT_FALSE(np.on_ce_marked(us(10)));
  EXPECT_TRUE(np.on_ce_marked(us(80)));  // the pending one goes now and covers this CE
  EXPECT_EQ(np.stats().np_cnp_sent, 2u);
  EXPECT_FALSE(np.pending());
  EXPECT_FALSE(np.on_ce_marked(us(100)));  // 20 µs after the CNP at 80: coalesced
  EXPECT_EQ(np.next_deadline(), us(130));
}

// N = 0 (HPCC: a CNP for every CE packet).
TEST(NotificationPoint, ZeroIntervalEveryCe) {
  NotificationPoint np(Duration{});
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(np.on_ce_marked(us(0)));
  EXPECT_EQ(np.stats().np_cnp_sent, 5u);
}

}  // namespace
}  // namespace uroce::dcqcn
