/**
 * @file np_table_test.cc
 * @brief Device-wide CNP pacing (docs/dcqcn-pfc.md §1.3): per-QP intervals are independent; the
 * coalesced CNP of each QP comes out of on_timer; the per-port reading shares one interval.
 */
#include "dcqcn/np_table.h"

#include <gtest/gtest.h>

namespace uroce::dcqcn {
namespace {

Timestamp us(int64_t v) { return Timestamp{v * 1000}; }

TEST(NpTable, PerQpIntervalsAreIndependent) {
  NpTable t(Duration::micros(50));
  EXPECT_TRUE(t.on_ce_marked(7, us(0)));
  EXPECT_TRUE(t.on_ce_marked(9, us(1)));  // another QP: its own interval
  EXPECT_FALSE(t.on_ce_marked(7, us(10)));
  EXPECT_FALSE(t.on_ce_marked(9, us(20)));
  EXPECT_EQ(t.next_deadline(), us(50));
  std::vector<uint32_t> due;
  t.on_timer(us(50), &due);
  EXPECT_EQ(due, std::vector<uint32_t>{7});
  EXPECT_EQ(t.next_deadline(), us(51));
  t.on_timer(us(51), &due);
  EXPECT_EQ(due, (std::vector<uint32_t>{7, 9}));
  EXPECT_EQ(t.next_deadline(), Timestamp::never());
  const NpStats s = t.stats();
  EXPECT_EQ(s.np_ecn_marked_roce_packets, 4u);
  EXPECT_EQ(s.np_cnp_sent, 4u);
  t.forget(7);
  EXPECT_EQ(t.stats().np_cnp_sent, 4u);  // counters of a destroyed QP are kept
}

TEST(NpTable, ForgetDropsPendingCnp) {
  NpTable t(Duration::micros(50));
  t.on_ce_marked(7, us(0));
  t.on_ce_marked(7, us(1));
  t.forget(7);
  EXPECT_EQ(t.next_deadline(), Timestamp::never());
}

TEST(NpTable, PerPortSharesOneInterval) {
  NpTable t(Duration::micros(50), /*per_port=*/true);
  EXPECT_TRUE(t.on_ce_marked(7, us(0)));
  EXPECT_FALSE(t.on_ce_marked(9, us(1)));  // same port interval
  EXPECT_FALSE(t.on_ce_marked(7, us(2)));
  std::vector<uint32_t> due;
  t.on_timer(us(50), &due);
  EXPECT_EQ(due, std::vector<uint32_t>{9});  // the first CE inside the interval
  EXPECT_EQ(t.stats().np_cnp_sent, 2u);
}

}  // namespace
}  // namespace uroce::dcqcn
