/**
 * @file dcqcn_congestion_test.cc
 * @brief The shared DCQCN adapter (transport/dcqcn_congestion.h): each QP starts at line rate,
 * a CNP is counted and cuts its rate (at the next rate-reduce timer in NVIDIA mode), destroyed QPs leave the lookup, and the notification
 * point allows one CNP per QP per min_time_between_cnps. Fake time; units bit/s, ns.
 */
#include "transport/dcqcn_congestion.h"

#include <gtest/gtest.h>

namespace uroce::transport {
namespace {

constexpr uint64_t kLine = 10'000'000'000ull;

TEST(DcqcnCongestion, CnpCutsTheQpRateAndIsCounted) {
  DcqcnCongestionFactory f(dcqcn::nvidia_firmware_preset());
  std::unique_ptr<QpCongestion> q = f.make_qp(0x11, kLine);
  ASSERT_NE(f.qp(0x11), nullptr);
  EXPECT_EQ(f.qp(0x12), nullptr);
  EXPECT_EQ(q->rate_bps(), kLine);
  const Timestamp t{1'000'000};
  q->on_cnp(t);
  EXPECT_EQ(f.cnps_received(), 1u);
  // NVIDIA mode cuts at the rate-reduce monitor timer after the CNP: fire the due timers.
  for (int i = 0; i < 4 && q->rate_bps() == kLine; ++i) {
    ASSERT_FALSE(q->next_deadline().is_never());
    q->on_timer(q->next_deadline());
  }
  EXPECT_LT(q->rate_bps(), kLine);
  q.reset();
  EXPECT_EQ(f.qp(0x11), nullptr);
}

TEST(DcqcnCongestion, NotificationPointPacesCnpsPerQp) {
  dcqcn::DcqcnParams p = dcqcn::nvidia_firmware_preset();
  p.min_time_between_cnps = 50;  // µs
  DcqcnCongestionFactory f(p);
  std::unique_ptr<NotificationPoint> np = f.make_np();
  ASSERT_NE(np, nullptr);
  const Timestamp t{5'000'000};
  EXPECT_TRUE(np->on_ce_marked(1, t));
  EXPECT_FALSE(np->on_ce_marked(1, t + Duration::micros(10)));
  EXPECT_TRUE(np->on_ce_marked(2, t + Duration::micros(10)));  // another QP
  EXPECT_TRUE(np->on_ce_marked(1, t + Duration::micros(100)));  // the gap has passed
}

}  // namespace
}  // namespace uroce::transport
