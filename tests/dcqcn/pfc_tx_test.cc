/**
 * @file pfc_tx_test.cc
 * @brief XOFF/XON generation from the RX backlog per priority (docs/dcqcn-pfc.md §4.1, §4.3):
 * thresholds, refresh, XON, give-up, counters tx_prio{p}_pause / tx_prio{p}_pause_duration.
 */
#include "dcqcn/pfc_tx.h"

#include <gtest/gtest.h>

namespace uroce::dcqcn {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;
Timestamp us(int64_t v) { return Timestamp{v * 1000}; }

PfcTxConfig cfg() {
  PfcTxConfig c;
  c.enabled_mask = 1u << 3;
  c.xoff_bytes = 100000;
  c.xon_bytes = 50000;
  return c;
}

TEST(PfcTx, XoffAtThresholdRefreshThenXon) {
  PfcCounters c;
  PfcTx tx(k100G, cfg(), &c);
  EXPECT_FALSE(tx.on_backlog(3, 99999, us(0)).has_value());
  auto f = tx.on_backlog(3, 100000, us(1));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->class_enable, 1u << 3);
  EXPECT_EQ(f->quanta[3], 0xFFFF);
  EXPECT_TRUE(tx.asserted(3));
  EXPECT_FALSE(tx.on_backlog(3, 120000, us(2)).has_value());  // already asserted
  // Refresh at half the pause time: 335.54 µs / 2 = 167.77 µs.
  EXPECT_EQ(tx.next_deadline(), us(1) + Duration::nanos(167770));
  EXPECT_FALSE(tx.on_timer(us(100)).has_value());
  auto r = tx.on_timer(us(169));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->quanta[3], 0xFFFF);
  EXPECT_FALSE(tx.on_backlog(3, 50001, us(200)).has_value());  // hysteresis
  auto x = tx.on_backlog(3, 50000, us(301));
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->class_enable, 1u << 3);
  EXPECT_EQ(x->quanta[3], 0);
  EXPECT_FALSE(tx.asserted(3));
  EXPECT_EQ(c.tx_prio_pause[3], 3u);             // XOFF, refresh, XON
  EXPECT_EQ(c.tx_prio_pause_duration[3], 300u);  // 1 µs .. 301 µs
  EXPECT_EQ(tx.next_deadline(), Timestamp::never());
}

TEST(PfcTx, DisabledPriorityOrNoThresholdNeverPauses) {
  PfcCounters c;
  PfcTx tx(k100G, cfg(), &c);
  EXPECT_FALSE(tx.on_backlog(0, 1u << 30, us(0)).has_value());
  PfcTxConfig off = cfg();
  off.xoff_bytes = 0;
  PfcTx tx2(k100G, off, &c);
  EXPECT_FALSE(tx2.on_backlog(3, 1u << 30, us(0)).has_value());
  EXPECT_EQ(c.tx_prio_pause[0] + c.tx_prio_pause[3], 0u);
}

// §4.3 item 2: never XOFF longer than max_xoff when the RX ring does not drain: XON, then no
// new XOFF until the backlog has fallen to xon_bytes.
TEST(PfcTx, GiveUpAfterMaxXoff) {
  PfcCounters c;
  PfcTxConfig g = cfg();
  g.max_xoff = Duration::micros(1000);
  g.refresh = Duration::micros(100);
  PfcTx tx(k100G, g, &c);
  ASSERT_TRUE(tx.on_backlog(3, 200000, us(0)).has_value());
  for (int t = 100; t < 1000; t += 100) ASSERT_TRUE(tx.on_timer(us(t)).has_value());
  auto x = tx.on_timer(us(1000));
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->quanta[3], 0);
  EXPECT_FALSE(tx.asserted(3));
  EXPECT_FALSE(tx.on_backlog(3, 200000, us(1100)).has_value());  // still stuck: stay quiet
  EXPECT_FALSE(tx.on_backlog(3, 1000, us(1200)).has_value());    // drained: re-armed
  EXPECT_TRUE(tx.on_backlog(3, 200000, us(1300)).has_value());
}

TEST(PfcTx, ReconfigureReleasesADisabledPriorityAndAppliesNewThresholds) {
  PfcCounters c;
  PfcTx tx(k100G, cfg(), &c);
  ASSERT_TRUE(tx.on_backlog(3, 100000, us(0)).has_value());
  // Same priority, higher thresholds: still asserted until the backlog says otherwise.
  PfcTxConfig higher = cfg();
  higher.xoff_bytes = 200000;
  higher.xon_bytes = 150000;
  EXPECT_FALSE(tx.reconfigure(higher, us(1)).has_value());
  EXPECT_TRUE(tx.asserted(3));
  auto x = tx.on_backlog(3, 140000, us(2));  // below the new xon
  ASSERT_TRUE(x.has_value());
  EXPECT_EQ(x->quanta[3], 0);
  EXPECT_FALSE(tx.on_backlog(3, 150000, us(3)).has_value());  // under the new xoff
  ASSERT_TRUE(tx.on_backlog(3, 200000, us(4)).has_value());
  // PFC moved to priority 4: priority 3 is released at once, 4 follows its backlog.
  PfcTxConfig four = higher;
  four.enabled_mask = 1u << 4;
  auto r = tx.reconfigure(four, us(5));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->class_enable, 1u << 3);
  EXPECT_EQ(r->quanta[3], 0);
  EXPECT_FALSE(tx.asserted(3));
  EXPECT_EQ(tx.next_deadline(), Timestamp::never());
  EXPECT_FALSE(tx.on_backlog(3, 1u << 30, us(6)).has_value());
  EXPECT_TRUE(tx.on_backlog(4, 200000, us(7)).has_value());
  // PFC off altogether: released.
  PfcTxConfig off = four;
  off.xoff_bytes = 0;
  auto o = tx.reconfigure(off, us(8));
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->class_enable, 1u << 4);
  EXPECT_FALSE(tx.asserted(4));
}

}  // namespace
}  // namespace uroce::dcqcn
