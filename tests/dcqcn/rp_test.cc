/**
 * @file rp_test.cc
 * @brief Reaction-point behaviour beyond the golden traces: the documented §1.4 options, the
 * nvidia clamp / min_dec_fac / first-CNP rules of §1.5, the byte counter, release, reset,
 * late timers, NoCc and the factory (docs/dcqcn-pfc.md §1.4, §1.5).
 */
#include <gtest/gtest.h>

#include "dcqcn/reaction_point.h"
#include "golden.h"

namespace uroce::dcqcn {
namespace {

using testing::at_us;

// §1.4 choice 1: ns3-rdma updates α before the cut. From α = 1 the update keeps α = 1, so
// the first cut is identical; the difference shows on a second CNP after α decayed.
TEST(PaperRp, AlphaOrderUpdateThenCut) {
  DcqcnParams p = paper_preset();
  PaperRp a(p, 40e9);
  p.alpha_order = AlphaOrder::kUpdateThenCut;
  PaperRp b(p, 40e9);
  for (auto* rp : {&a, &b}) {
    rp->on_cnp(Timestamp{0});
    rp->on_cnp(at_us(110));  // α decayed twice: (255/256)^2 (two K = 55 µs ticks)
  }
  const double g = 1.0 / 256, a2 = std::pow(1 - g, 2);
  // Rc before the 2nd CNP: 20 → FR at 55 µs → 30 → FR at 110 µs → 35 Gb/s (timers first).
  EXPECT_TRUE(testing::rel_eq(a.rate_bps(), 35e9 * (1 - a2 / 2)));
  EXPECT_TRUE(testing::rel_eq(b.rate_bps(), 35e9 * (1 - ((1 - g) * a2 + g) / 2)));
  EXPECT_TRUE(testing::rel_eq(a.alpha_at(at_us(110)), (1 - g) * a2 + g));
}

// §1.4 choice 3: the hyper-increase amount. Drive Tcnt and BCcnt both past F = 1 and compare
// the Rt step of the first hyper event under the three options.
TEST(PaperRp, ByteEventsAloneNeverReachHyper) {
  auto run = [](HaiAmount h, FrCount fr) {
    DcqcnParams p = paper_preset();
    p.rpg_threshold = 1;
    p.rpg_byte_reset = 1000;
    p.rpg_time_reset = 1000;  // 1 ms: no timer event in this test
    p.rpg_hai_rate = 100;
    p.rpg_ai_rate = 10;
    p.hai_amount = h;
    p.fr_count = fr;
    p.release_at_line_rate = false;
    PaperRp rp(p, 100e9);
    rp.on_cnp(Timestamp{0});
    rp.on_cnp(Timestamp{1});  // Rc = 25 Gb/s, Rt = 50: Rt well below C
    std::vector<RpEvent> t;
    rp.set_trace(&t);
    for (int i = 0; i < 4; ++i) rp.on_packet_sent(1000, Timestamp{10 + i});
    return t;
  };
  // Inclusive FR (htsim): BCcnt 1 FR; 2, 3, 4 → AI (min(T,BC) = 0 <= F): no hyper without
  // timer events. So hyper needs both counters: check via exclusive + timer-free min = 0: AI.
  auto t = run(HaiAmount::kLinear, FrCount::kInclusive);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].kind, RpEventKind::kFastRecovery);
  EXPECT_EQ(t[1].kind, RpEventKind::kAdditive);
  EXPECT_EQ(t[3].kind, RpEventKind::kAdditive);
}

// Hyper increase proper: Tcnt and BCcnt both > F. F = 1, timer 10 µs, bytes 1000.
TEST(PaperRp, HyperIncreaseNeedsBothCounters) {
  for (HaiAmount h : {HaiAmount::kLinear, HaiAmount::kLinearPlusOne, HaiAmount::kConstant}) {
    DcqcnParams p = paper_preset();
    p.rpg_threshold = 1;
    p.rpg_byte_reset = 1000;
    p.rpg_time_reset = 10;
    p.rpg_hai_rate = 100;
    p.rpg_ai_rate = 10;
    p.hai_amount = h;
    p.release_at_line_rate = false;
    PaperRp rp(p, 100e9);
    rp.on_cnp(Timestamp{0});
    rp.on_cnp(Timestamp{0});  // Rc 25, Rt 50 Gb/s
    // Two byte events (BCcnt = 2) before any timer: FR then AI.
    rp.on_packet_sent(1000, Timestamp{100});
    rp.on_packet_sent(1000, Timestamp{200});
    // Timer at 10 µs: Tcnt 1 (max 2 > F, min 1 not > F) → AI; at 20 µs Tcnt 2 → min 2 > 1 → hyper.
    std::vector<RpEvent> t;
    rp.set_trace(&t);
    const double rt_before = rp.target_rate_bps();
    rp.on_timer(at_us(10));
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].kind, RpEventKind::kAdditive);
    const double rt_mid = rp.target_rate_bps();
    EXPECT_TRUE(testing::rel_eq(rt_mid, rt_before + 10e6));
    rp.on_timer(at_us(20));
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[1].kind, RpEventKind::kHyper);
    const double step = rp.target_rate_bps() - rt_mid;
    // min(T, BC) = 2, F = 1: htsim (2−1)·R_HAI, ns3 (2−1+1)·R_HAI, constant R_HAI.
    const double expect = h == HaiAmount::kLinearPlusOne ? 200e6 : 100e6;
    EXPECT_NEAR(step, expect, 1.0) << static_cast<int>(h);
  }
}

// §1.4 choice 4: ns3-rdma's QCN quirk: on the first increase after a cut, Rt > 10·Rc → Rt /= 8.
// Reachable only without the paper's Rt ← Rc clamp (ns3-rdma's default ClampTargetRate = 0).
TEST(PaperRp, QcnFirstIncreaseQuirk) {
  for (bool quirk : {false, true}) {
    DcqcnParams p = paper_preset();
    p.rpg_min_rate = 1;
    p.paper_clamp_target = false;
    p.qcn_first_increase_quirk = quirk;
    PaperRp rp(p, 40e9);
    // Four CNPs at one instant: Rc 20, 10, 5, 2.5 Gb/s (α stays 1); Rt stays 40 > 10·2.5.
    for (int i = 0; i < 4; ++i) rp.on_cnp(Timestamp{0});
    EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), 2.5e9));
    EXPECT_EQ(rp.target_rate_bps(), 40e9);
    rp.on_timer(at_us(55));  // FR: quirk → Rt 5, Rc (5 + 2.5)/2; else (40 + 2.5)/2
    EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), quirk ? 3.75e9 : 21.25e9)) << quirk;
    rp.on_timer(at_us(110));  // only the first increase after a cut: no second division
    EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), quirk ? 4.375e9 : 30.625e9)) << quirk;
  }
}

// §1.4 pseudo-code reading: Rt is capped at C before the average (cap_target_before_average):
// the first AI event of G1 gives (40 + 39.375)/2 = 39.6875 instead of the model's 39.7075.
TEST(PaperRp, CapTargetBeforeAverage) {
  DcqcnParams p = paper_preset();
  p.cap_target_before_average = true;
  PaperRp rp(p, 40e9);
  auto t = testing::replay(rp, {Timestamp{0}}, at_us(330));
  ASSERT_EQ(t.size(), 7u);
  EXPECT_EQ(t[6].kind, RpEventKind::kAdditive);
  EXPECT_TRUE(testing::rel_eq(t[6].rc_bps, 39.6875e9));
}

// §1.4 hai_halves_periods: once in hyper stage the timer period is T/2.
TEST(PaperRp, HyperHalvesTimerPeriod) {
  DcqcnParams p = paper_preset();
  p.rpg_threshold = 1;
  p.rpg_byte_reset = 1000;
  p.rpg_time_reset = 10;
  p.hai_halves_periods = true;
  p.release_at_line_rate = false;
  PaperRp rp(p, 100e9);
  rp.on_cnp(Timestamp{0});
  rp.on_packet_sent(1000, Timestamp{1});
  rp.on_packet_sent(1000, Timestamp{2});  // BCcnt 2
  rp.on_timer(at_us(20));                 // Tcnt 2 → hyper; next timer T/2 later
  EXPECT_EQ(rp.next_deadline(), at_us(25));
}

// Late on_timer: every due increase runs in order, at its own deadline.
TEST(PaperRp, LateTimerRunsEveryEvent) {
  PaperRp rp(paper_preset(), 40e9);
  std::vector<RpEvent> t;
  rp.set_trace(&t);
  rp.on_cnp(Timestamp{0});
  rp.on_timer(at_us(200));  // due: 55, 110, 165
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[3].at, at_us(165));
  EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), 37.5e9));
  EXPECT_EQ(rp.next_deadline(), at_us(220));
}

TEST(PaperRp, ResetReturnsToLineRate) {
  PaperRp rp(paper_preset(), 40e9);
  rp.on_cnp(Timestamp{0});
  rp.reset();
  EXPECT_EQ(rp.rate_bps(), 40e9);
  EXPECT_EQ(rp.next_deadline(), Timestamp::never());
  EXPECT_EQ(rp.stats().rp_cnp_handled, 1u);  // counters survive reset
}

// Paper R_min floor and rpg_max_rate as C.
TEST(PaperRp, MinRateFloorAndMaxRate) {
  DcqcnParams p = paper_preset();
  p.rpg_max_rate = 10000;  // C = 10 Gb/s on a 100G port
  p.rpg_min_rate = 3000;
  PaperRp rp(p, 100e9);
  EXPECT_EQ(rp.rate_bps(), 10e9);
  rp.on_cnp(Timestamp{0});  // 5 Gb/s
  rp.on_cnp(Timestamp{0});  // 2.5 → floored at 3
  EXPECT_EQ(rp.rate_bps(), 3e9);
}

// §1.5 clamp rules (ns3-rdma rpr_cnm_received semantics).
TEST(NvidiaRp, ClampTargetRules) {
  auto second_cut_rt = [](bool clamp, bool after_inc, bool with_increase) {
    DcqcnParams p = hpcc_dcqcn_preset(100e9);
    p.clamp_tgt_rate = clamp;
    p.clamp_tgt_rate_after_time_inc = after_inc;
    NvidiaRp rp(p, 100e9);
    rp.on_cnp(Timestamp{0});
    rp.on_timer(at_us(4));  // cut 1: Rc ≈ 50.78, Rt stays 100 (no increase yet)
    EXPECT_EQ(rp.target_rate_bps(), 100e9);
    Timestamp t2 = with_increase ? at_us(400) : at_us(100);  // increase timer at 304 µs
    rp.on_cnp(t2);
    const double rc_before = rp.rate_bps();
    rp.on_timer(t2 + Duration::micros(4));
    return std::pair{rp.target_rate_bps(), rc_before};
  };
  {
    auto [rt, rc] = second_cut_rt(true, false, false);  // clamp always
    EXPECT_EQ(rt, rc);
  }
  {
    auto [rt, rc] = second_cut_rt(false, true, false);  // no increase since the cut: keep Rt
    EXPECT_EQ(rt, 100e9);
  }
  {
    auto [rt, rc] = second_cut_rt(false, true, true);  // a timer increase happened: clamp
    EXPECT_EQ(rt, rc);
  }
  {
    auto [rt, rc] = second_cut_rt(false, false, true);  // only byte increases clamp: keep
    EXPECT_EQ(rt, 100e9);
  }
}

// §1.5 rpg_min_dec_fac: one cut keeps at least that share of the rate; rpg_gd = 10 cuts by α.
TEST(NvidiaRp, MinDecFacAndGd) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  p.rpg_gd = 10;  // cut = α: with α ≈ 0.98 it would drop to ≈ 1.6 Gb/s
  p.rpg_min_dec_fac = 80;
  NvidiaRp rp(p, 100e9);
  rp.on_cnp(Timestamp{0});
  rp.on_timer(at_us(4));
  EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), 80e9));
  p.rpg_min_dec_fac = 0;
  NvidiaRp r2(p, 100e9);
  r2.on_cnp(Timestamp{0});
  r2.on_timer(at_us(4));
  EXPECT_TRUE(testing::rel_eq(r2.rate_bps(), 100e9 * (1 - std::pow(255.0 / 256, 4))));
}

// §1.5 rate_to_set_on_first_cnp: Rc = Rt = that rate on the first CNP, then the cut.
TEST(NvidiaRp, RateToSetOnFirstCnp) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  p.rate_to_set_on_first_cnp = 40000;
  NvidiaRp rp(p, 100e9);
  rp.on_cnp(Timestamp{0});
  EXPECT_EQ(rp.rate_bps(), 40e9);
  EXPECT_EQ(rp.target_rate_bps(), 40e9);
  rp.on_timer(at_us(4));
  EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), 40e9 * (1 - std::pow(255.0 / 256, 4) / 2)));
}

// §1.5 byte counter: every rpg_byte_reset bytes after the cut is an increase event; the
// shared stage counter makes the first FR, the next AI.
TEST(NvidiaRp, ByteCounterIncreases) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  p.rpg_byte_reset = 32767;
  NvidiaRp rp(p, 100e9);
  rp.on_cnp(Timestamp{0});
  rp.on_packet_sent(40000, Timestamp{100});  // before the cut: not counted
  rp.on_timer(at_us(4));
  const double cut = rp.rate_bps();
  std::vector<RpEvent> t;
  rp.set_trace(&t);
  for (int i = 0; i < 8; ++i) rp.on_packet_sent(4096, at_us(5) + Duration::nanos(i));  // 32768
  ASSERT_EQ(t.size(), 1u);
  EXPECT_TRUE(t[0].by_bytes);
  EXPECT_EQ(t[0].kind, RpEventKind::kFastRecovery);
  EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), (cut + 100e9) / 2));
  EXPECT_EQ(rp.stage(), 1u);
}

// A CNP exactly on a decrease-grid point is applied at that point (the model orders CNP
// before the decrease check at one instant).
TEST(NvidiaRp, CnpOnGridPointCutsThere) {
  NvidiaRp rp(hpcc_dcqcn_preset(100e9), 100e9);
  std::vector<RpEvent> t;
  rp.set_trace(&t);
  rp.on_cnp(Timestamp{0});
  rp.on_timer(at_us(4));
  rp.on_cnp(at_us(8));
  EXPECT_EQ(rp.next_deadline(), at_us(8));
  rp.on_timer(at_us(8));
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[1].at, at_us(8));
}

// Release at line rate: Rc reaches C exactly after enough increases; timers stop, and the
// next CNP is a first CNP again (α from initial_alpha_value).
TEST(NvidiaRp, ReleaseAndRestart) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  p.rpg_hai_rate = 100000;  // +100 Gb/s: Rt back to C at once
  NvidiaRp rp(p, 100e9);
  std::vector<RpEvent> t;
  rp.set_trace(&t);
  rp.on_cnp(Timestamp{0});
  rp.on_timer(at_us(100000));
  EXPECT_FALSE(rp.active());
  EXPECT_EQ(rp.rate_bps(), 100e9);
  EXPECT_EQ(rp.next_deadline(), Timestamp::never());
  EXPECT_EQ(t.back().kind, RpEventKind::kRelease);
  EXPECT_EQ(rp.stats().rp_limiter_released, 1u);
  rp.on_cnp(at_us(200000));
  rp.on_timer(at_us(200004));
  EXPECT_TRUE(testing::rel_eq(rp.rate_bps(), 100e9 * (1 - std::pow(255.0 / 256, 4) / 2)));
}

TEST(CongestionControl, FactoryAndNoCc) {
  DcqcnParams p;
  p.mode = RpMode::kOff;
  auto off = make_congestion_control(p, 100e9);
  off->on_cnp(Timestamp{0});
  EXPECT_EQ(off->rate_bps(), kUnlimitedRate);
  EXPECT_EQ(off->next_deadline(), Timestamp::never());
  EXPECT_EQ(off->stats().rp_cnp_ignored, 1u);
  p.mode = RpMode::kNvidia;
  auto nv = make_congestion_control(p, 100e9);
  EXPECT_NE(dynamic_cast<NvidiaRp*>(nv.get()), nullptr);
  p.mode = RpMode::kPaper;
  auto pa = make_congestion_control(p, 100e9);
  EXPECT_NE(dynamic_cast<PaperRp*>(pa.get()), nullptr);
  EXPECT_EQ(pa->rate_bps(), 100e9);
}

}  // namespace
}  // namespace uroce::dcqcn
