/**
 * @file factory_test.cc
 * @brief cc::Factory behind the engine's seam: DCQCN per QP (line rate at start, a CNP counted
 * and cutting the rate, the pacer following the reaction point, mode off unpaced), the
 * device-wide notification point (one CNP per QP per min_time_between_cnps, coalesced CEs sent
 * when the interval ends), the delay-based control alone and beside DCQCN (the lower rate is in
 * force, tools see which), and the lookup of live QPs. Fake time; units bit/s, ns.
 */
#include "cc/factory.h"

#include <gtest/gtest.h>

namespace uroce::cc {
namespace {

constexpr uint64_t kLine = 10'000'000'000ull;
Timestamp us(int64_t v) { return Timestamp{v * 1000}; }

TEST(CcFactory, DcqcnCnpCutsTheQpRateAndIsCounted) {
  Factory f(dcqcn::nvidia_firmware_preset());
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

TEST(CcFactory, DcqcnTargetRateAndAlphaAreVisibleForTools) {
  // Paper mode: a CNP sets Rt = Rc (line rate), cuts Rc to Rc(1 - α/2) and raises α; the seam
  // reports all three for `uroce show qp`.
  dcqcn::DcqcnParams p;
  p.mode = dcqcn::RpMode::kPaper;
  Factory f(p);
  std::unique_ptr<QpCongestion> q = f.make_qp(0x21, kLine);
  const Timestamp t{1'000'000};
  EXPECT_EQ(q->state(t).target_rate_bps, kLine);
  q->on_cnp(t);
  const QpCcState s = q->state(t);
  EXPECT_EQ(s.algorithm, CcAlgorithm::kDcqcn);
  EXPECT_LT(s.rate_bps, kLine);
  EXPECT_EQ(s.target_rate_bps, kLine);
  EXPECT_GT(s.alpha, 0.0);
  EXPECT_LE(s.alpha, 1.0);
  EXPECT_NEAR(static_cast<double>(s.rate_bps), kLine * (1 - s.alpha / 2), kLine * 0.01);
  EXPECT_FALSE(s.delay_in_force);
}

// Nvidia mode at 100G: before a CNP frames go at line rate (4096 B = 327.68 ns); after the cut
// 4 µs after the CNP to 50.78 Gb/s the spacing is 4096·8/50.78e9 ≈ 645.3 ns; the increase timer
// 300 µs after the cut raises the rate and the pacer follows.
TEST(CcFactory, PacerFollowsDcqcnRate) {
  Factory f(dcqcn::hpcc_dcqcn_preset(100e9));
  std::unique_ptr<QpCongestion> q = f.make_qp(1, 100'000'000'000ull);
  EXPECT_EQ(q->rate_bps(), 100'000'000'000ull);
  q->on_packet_sent(4096, us(0));
  EXPECT_EQ(q->next_send_time(4096, us(0)), Timestamp{328});
  q->on_cnp(us(1));
  EXPECT_EQ(q->next_deadline(), us(5));  // the monitor grid starts at the first CNP
  q->on_timer(us(5));
  const double rate = static_cast<double>(q->rate_bps());
  EXPECT_NEAR(rate, 50.7767e9, 1e5);
  q->on_packet_sent(4096, us(10));
  const double gap_ns = static_cast<double>((q->next_send_time(4096, us(10)) - us(10)).ns);
  EXPECT_NEAR(gap_ns, 4096 * 8 / rate * 1e9, 1.0);
  q->on_timer(us(305));
  EXPECT_GT(static_cast<double>(q->rate_bps()), rate);
}

TEST(CcFactory, DcqcnModeOffIsUnpaced) {
  dcqcn::DcqcnParams p;
  p.mode = dcqcn::RpMode::kOff;
  Factory f(p);
  std::unique_ptr<QpCongestion> q = f.make_qp(1, 100'000'000'000ull);
  q->on_packet_sent(1u << 20, us(0));
  EXPECT_EQ(q->next_send_time(4096, us(0)), us(0));
  q->on_cnp(us(0));
  EXPECT_EQ(q->rate_bps(), 0u);
  EXPECT_TRUE(q->next_deadline().is_never());
}

TEST(CcFactory, NotificationPointPacesCnpsPerQp) {
  dcqcn::DcqcnParams p = dcqcn::nvidia_firmware_preset();
  p.min_time_between_cnps = 50;  // µs
  Factory f(p);
  std::unique_ptr<NotificationPoint> np = f.make_np();
  ASSERT_NE(np, nullptr);
  const Timestamp t{5'000'000};
  EXPECT_TRUE(np->on_ce_marked(1, t));
  EXPECT_FALSE(np->on_ce_marked(1, t + Duration::micros(10)));
  EXPECT_TRUE(np->on_ce_marked(2, t + Duration::micros(10)));  // another QP
  // The CE inside the interval is sent when it ends.
  EXPECT_EQ(np->next_deadline(), t + Duration::micros(50));
  std::vector<uint32_t> due;
  np->on_timer(t + Duration::micros(50), &due);
  EXPECT_EQ(due, std::vector<uint32_t>{1});
  EXPECT_FALSE(np->on_ce_marked(1, t + Duration::micros(60)));  // a new interval from 50
  EXPECT_TRUE(np->on_ce_marked(1, t + Duration::micros(200)));  // the gap has passed
}

Settings delay_settings(CcAlgorithm a) {
  Settings s;
  s.algorithm = a;
  s.dcqcn = dcqcn::nvidia_firmware_preset();
  s.delay.target_queue = Duration::micros(5);
  s.delay.base_rtt = Duration::micros(10);
  s.delay.beta = 0.8;
  return s;
}

TEST(CcFactory, DelayAloneCutsOnRoundTripsAndIgnoresCnps) {
  Factory f(delay_settings(CcAlgorithm::kDelay));
  std::unique_ptr<QpCongestion> q = f.make_qp(7, kLine);
  q->on_cnp(us(1));
  EXPECT_EQ(q->rate_bps(), 0u);  // no DCQCN: a CNP changes nothing
  EXPECT_TRUE(q->next_deadline().is_never());
  // 30 µs against a 15 µs target: cut by max(1 - 0.8·15/30, 0.5) = 0.6.
  q->on_rtt(Duration::micros(30), us(100));
  EXPECT_EQ(q->rate_bps(), kLine * 6 / 10);
  const QpCcState s = q->state(us(100));
  EXPECT_EQ(s.algorithm, CcAlgorithm::kDelay);
  EXPECT_TRUE(s.delay_in_force);
  EXPECT_EQ(s.delay_rate_bps, kLine * 6 / 10);
  EXPECT_EQ(s.rtt_ns, 30'000);
  EXPECT_EQ(s.base_rtt_ns, 10'000);
  EXPECT_EQ(s.target_delay_ns, 15'000);
  // The pacer spaces frames at the cut rate: 1000 B at 6 Gb/s = 1333 ns.
  q->on_packet_sent(1000, us(100));
  EXPECT_NEAR(static_cast<double>((q->next_send_time(1000, us(100)) - us(100)).ns), 1333.3, 1);
}

TEST(CcFactory, BothSendAtTheLowerRate) {
  Factory f(delay_settings(CcAlgorithm::kDcqcnDelay));
  std::unique_ptr<QpCongestion> q = f.make_qp(8, kLine);
  // The delay control cuts to 0.6 of line rate; DCQCN still at line rate.
  q->on_rtt(Duration::micros(30), us(100));
  EXPECT_EQ(q->rate_bps(), kLine * 6 / 10);
  EXPECT_TRUE(q->state(us(100)).delay_in_force);
  // A CNP: DCQCN's cut (to about half, at the monitor timer) goes below the delay rate.
  q->on_cnp(us(200));
  for (int i = 0; i < 4 && q->rate_bps() == kLine * 6 / 10; ++i) q->on_timer(q->next_deadline());
  EXPECT_LT(q->rate_bps(), kLine * 6 / 10);
  const QpCcState s = q->state(us(300));
  EXPECT_EQ(s.algorithm, CcAlgorithm::kDcqcnDelay);
  EXPECT_FALSE(s.delay_in_force);
  EXPECT_EQ(s.delay_rate_bps, kLine * 6 / 10);
  EXPECT_EQ(s.rate_bps, q->rate_bps());
}

}  // namespace
}  // namespace uroce::cc
