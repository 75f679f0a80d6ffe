/**
 * @file dcqcn_congestion_test.cc
 * @brief The shared DCQCN adapter (transport/dcqcn_congestion.h): each QP starts at line rate,
 * a CNP is counted and cuts its rate (at the next rate-reduce timer in NVIDIA mode), destroyed QPs
 * leave the lookup, and the notification point allows one CNP per QP per min_time_between_cnps.
 * Fake time; units bit/s, ns.
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

TEST(DcqcnCongestion, TargetRateAndAlphaAreVisibleForTools) {
  // Paper mode (docs/dcqcn-pfc.md §1.2): a CNP sets Rt = Rc (line rate), cuts Rc to Rc(1 - α/2) and
  // raises α; the seam reports all three for `uroce show qp`.
  dcqcn::DcqcnParams p;
  p.mode = dcqcn::RpMode::kPaper;
  DcqcnCongestionFactory f(p);
  std::unique_ptr<QpCongestion> q = f.make_qp(0x21, kLine);
  const Timestamp t{1'000'000};
  EXPECT_EQ(q->target_rate_bps(), kLine);
  q->on_cnp(t);
  EXPECT_LT(q->rate_bps(), kLine);
  EXPECT_EQ(q->target_rate_bps(), kLine);
  EXPECT_GT(q->alpha(t), 0.0);
  EXPECT_LE(q->alpha(t), 1.0);
  EXPECT_NEAR(static_cast<double>(q->rate_bps()), kLine * (1 - q->alpha(t) / 2), kLine * 0.01);
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
  EXPECT_TRUE(np->on_ce_marked(2, t + Duration::micros(10)));   // another QP
  EXPECT_TRUE(np->on_ce_marked(1, t + Duration::micros(100)));  // the gap has passed
}

}  // namespace
}  // namespace uroce::transport
