/**
 * @file pacer_test.cc
 * @brief The per-QP token-bucket pacer: sends at the RP's rate on injected time, no drift,
 * burst allowance, unlimited mode (docs/dcqcn-pfc.md §1.3 "bypasses the DCQCN limiter" is the
 * caller's).
 */
#include "dcqcn/pacer.h"

#include <gtest/gtest.h>

#include "dcqcn/congestion_control.h"

namespace uroce::dcqcn {
namespace {

// 1000-byte frames at 50.7767 Gb/s (the G3 cut): each costs 157.55... ns; after 1e6 frames the
// schedule is within 1 ns of the exact 1e6 · 8000 / rate (no rounding drift).
TEST(Pacer, LongRunRateIsExact) {
  Pacer pc;
  const double rate = 50.7767e9;
  pc.set_rate(rate);
  Timestamp t{0};
  for (int i = 0; i < 1000000; ++i) {
    t = pc.earliest_send_time(1000, t);
    pc.on_sent(1000, t);
  }
  const double exact_ns = 999999.0 * 8000.0 / rate * 1e9;  // start of the last frame
  EXPECT_NEAR(static_cast<double>(t.ns), exact_ns, 1.0);
}

TEST(Pacer, SpacingAtRate) {
  Pacer pc;
  pc.set_rate(10e9);  // 1000 B = 800 ns
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{0}), Timestamp{0});
  pc.on_sent(1000, Timestamp{0});
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{0}), Timestamp{800});
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{900}), Timestamp{900});
  pc.on_sent(1000, Timestamp{900});  // idle time is not banked without a burst allowance
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{900}), Timestamp{1700});
}

TEST(Pacer, BurstAllowance) {
  Pacer pc(4000);  // four 1000-byte frames back to back
  pc.set_rate(10e9);
  Timestamp t{1000000};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(pc.earliest_send_time(1000, t), t) << i;
    pc.on_sent(1000, t);
  }
  EXPECT_EQ(pc.earliest_send_time(1000, t), t + Duration::nanos(800));
}

TEST(Pacer, UnlimitedAndRateChange) {
  Pacer pc;
  pc.set_rate(kUnlimitedRate);
  pc.on_sent(100000, Timestamp{0});
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{0}), Timestamp{0});
  pc.set_rate(1e9);
  pc.on_sent(1000, Timestamp{0});  // 8 µs at 1 Gb/s
  pc.set_rate(100e9);              // the debt already charged stands
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{0}), Timestamp{8000});
  pc.on_sent(1000, Timestamp{8000});
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{8000}), Timestamp{8080});
  pc.reset();
  EXPECT_EQ(pc.earliest_send_time(1000, Timestamp{8000}), Timestamp{8000});
}

}  // namespace
}  // namespace uroce::dcqcn
