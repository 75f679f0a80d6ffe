/**
 * @file rp_golden_test.cc
 * @brief Golden traces G1, G1b, G2 (paper RP) and G3, G3b, G4 (nvidia RP) of docs/dcqcn-pfc.md
 * §1.6, checked to 1e-9 relative (§6 items 1 and 2) against the reference model's own numbers
 * (golden_traces.inc, regenerated from tests/dcqcn/model/dcqcn_golden.py by gen_golden.py).
 */
#include <gtest/gtest.h>

#include "dcqcn/nvidia_rp.h"
#include "dcqcn/paper_rp.h"
#include "golden.h"

namespace uroce::dcqcn {
namespace {

using testing::GoldenRow;

/// The model's paper_rp() defaults: C 40G, g 1/256, K = T = 55 µs, B 10 MB, F 5, R_AI 40,
/// R_HAI 400 Mb/s, no R_min floor in reach.
DcqcnParams model_paper_params() {
  DcqcnParams p = paper_preset();
  p.rpg_hai_rate = 400;
  return p;
}

/// Compares our events with the model's rows. After our limiter release (Rc == Rt == C) the
/// model keeps logging increase events that change nothing; those rows must sit at C.
void expect_matches(const std::vector<RpEvent>& all, const std::vector<GoldenRow>& golden,
                    bool paper, int64_t offset_ns, double c, size_t min_rows) {
  const auto ours = testing::without_release(all);
  const bool released = !all.empty() && all.back().kind == RpEventKind::kRelease;
  ASSERT_GE(ours.size(), min_rows);
  ASSERT_LE(ours.size(), golden.size());
  for (size_t i = 0; i < golden.size(); ++i) {
    const GoldenRow& g = golden[i];
    SCOPED_TRACE("row " + std::to_string(i) + " t=" + std::to_string(g.t_us) + "us " + g.kind);
    if (i >= ours.size()) {
      ASSERT_TRUE(released) << "our trace ended early without a release";
      EXPECT_EQ(g.rc_bps, c);
      EXPECT_EQ(g.rt_bps, c);
      continue;
    }
    const RpEvent& e = ours[i];
    EXPECT_EQ(e.at, testing::at_us(g.t_us, offset_ns));
    EXPECT_EQ(testing::model_kind(e.kind, paper), g.kind);
    EXPECT_TRUE(testing::rel_eq(e.rc_bps, g.rc_bps)) << e.rc_bps << " vs " << g.rc_bps;
    EXPECT_TRUE(testing::rel_eq(e.rt_bps, g.rt_bps)) << e.rt_bps << " vs " << g.rt_bps;
    EXPECT_TRUE(testing::rel_eq(e.alpha, g.alpha)) << e.alpha << " vs " << g.alpha;
  }
}

// docs/dcqcn-pfc.md §1.6 G1: paper RP, 40G, one CNP at 0, htsim FR convention (events 1..5 are FR).
TEST(PaperRpGolden, G1SingleCnpHtsimConvention) {
  PaperRp rp(model_paper_params(), 40e9);
  auto trace = testing::replay(rp, {Timestamp{0}}, testing::at_us(6000));
  // Expect: 20, 30, 35, 37.5, 38.75, 39.375 Gb/s (FR), then AI 39.7075 ... 40 at 550 µs.
  // Rc then halves its distance to C per 55 µs event: reaching C to the last bit takes ~45
  // more events (~2.5 ms), so the replay runs to 6 ms before the limiter must be released.
  expect_matches(trace, testing::kG1, true, 0, 40e9, 11);
  EXPECT_EQ(rp.stats().rp_rate_increase_fr, 5u);
  EXPECT_EQ(rp.rate_bps(), 40e9);
  EXPECT_FALSE(rp.active());
}

// §1.6 G1b: QCN/ns3-rdma convention: the 5th event (275 µs) is already AI, Rc = 39.395.
TEST(PaperRpGolden, G1bQcnConvention) {
  DcqcnParams p = model_paper_params();
  p.fr_count = FrCount::kExclusive;
  PaperRp rp(p, 40e9);
  auto trace = testing::replay(rp, {Timestamp{0}}, testing::at_us(3000));
  expect_matches(trace, testing::kG1b, true, 0, 40e9, 6);
  ASSERT_GE(trace.size(), 6u);
  EXPECT_EQ(trace[5].kind, RpEventKind::kAdditive);
  EXPECT_NEAR(trace[5].rc_bps, 39.395e9, 1.0);
}

// §1.6 G2: two CNPs 10 µs apart: Rc 20 → 10 Gb/s, Rt 40 → 20; FR 15, 17.5, 18.75, 19.375.
TEST(PaperRpGolden, G2TwoCnps) {
  PaperRp rp(model_paper_params(), 40e9);
  auto trace = testing::replay(rp, {Timestamp{0}, testing::at_us(10)}, testing::at_us(3000));
  expect_matches(trace, testing::kG2, true, 0, 40e9, 6);
  EXPECT_EQ(rp.stats().rp_cnp_handled, 2u);
  EXPECT_EQ(rp.stats().rp_rate_decrease_events, 2u);
}

// G1 without the limiter release and with bytes actually sent at Rc (1000-byte frames back to
// back): the byte counter fires once 10 MB have gone since the cut, as in the fluid model
// (model: BAI at 2054.778 µs), within 1 µs (5 frame times at 40G: frames are sent at the rate
// in force when they start, the model integrates Rc exactly).
TEST(PaperRpGolden, G1ByteCounterWithTraffic) {
  DcqcnParams p = model_paper_params();
  p.release_at_line_rate = false;
  PaperRp rp(p, 40e9);
  std::vector<RpEvent> trace;
  rp.set_trace(&trace);
  Timestamp t{0};
  rp.on_cnp(t);
  double next_tx_ns = 0;
  const Timestamp end = testing::at_us(3000);
  while (true) {
    Timestamp tx{static_cast<int64_t>(std::ceil(next_tx_ns))};
    Timestamp dl = rp.next_deadline();
    if (earliest(tx, dl) > end) break;
    if (dl < tx) {
      rp.on_timer(dl);
    } else {
      rp.on_packet_sent(1000, tx);
      next_tx_ns += 8000.0 / rp.rate_bps() * 1e9;
    }
  }
  const auto& g = testing::kG1;
  ASSERT_EQ(trace.size(), g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    SCOPED_TRACE(i);
    if (i == 0) {
      EXPECT_EQ(trace[i].kind, RpEventKind::kCut);
    } else {
      EXPECT_EQ(testing::model_kind(trace[i].kind, true),
                std::string(g[i].kind).replace(0, 1, "T"));
    }
    EXPECT_EQ(trace[i].by_bytes, g[i].kind[0] == 'B');
    EXPECT_TRUE(testing::rel_eq(trace[i].rc_bps, g[i].rc_bps));
    if (g[i].kind[0] == 'B') {
      EXPECT_NEAR(static_cast<double>(trace[i].at.ns), g[i].t_us * 1000.0, 1000.0);
    } else if (i > 0) {
      EXPECT_EQ(trace[i].at, testing::at_us(g[i].t_us));
    }
  }
  EXPECT_EQ(rp.byte_count(), 1u);
}

/// docs/dcqcn-pfc.md §1.6 G3: "NVIDIA-default-like, HPCC model": firmware defaults with the byte
/// counter off, g = 1/256 (dce_tcp_g 1020), α₀ = 1 exactly, R_min 100 Mb/s — set by name as a
/// `[device.dcqcn]` table would.
DcqcnParams g3_params(uint32_t dce_tcp_g) {
  DcqcnParams p = nvidia_firmware_preset();
  const std::map<std::string, double> overrides = {{"rpg_byte_reset", 0},
                                                   {"dce_tcp_g", dce_tcp_g},
                                                   {"initial_alpha_value", 1024},
                                                   {"rpg_min_rate", 100}};
  std::string err;
  EXPECT_TRUE(apply_overrides(&p, overrides, &err)) << err;
  return p;
}

// §1.6 G3: cut at the first 4 µs monitor tick with α = (255/256)^4 to 50.7767 Gb/s, then
// 75.3883 (FR), 87.6942 (AI), 93.8471, 96.9235, 98.4618, 99.2309 (HAI) every 300 µs. The model
// logs the cut at 4.001 µs (its tie-break: α update first); we order ties instead (1 ns offset).
TEST(NvidiaRpGolden, G3FirmwareDefaults) {
  NvidiaRp rp(g3_params(1020), 100e9);
  auto trace = testing::replay(rp, {Timestamp{0}}, testing::at_us(3000));
  expect_matches(trace, testing::kG3, false, 1, 100e9, 10);
  EXPECT_NEAR(trace[0].rc_bps, 50.7767e9, 1e5);
  EXPECT_EQ(trace[0].at, testing::at_us(4));
  EXPECT_NEAR(trace[1].alpha, 0.3043, 1e-4);  // α at the 304 µs increase
}

// §1.6 G3 with the firmware's dce_tcp_g = 1019 (g = 5/1024): cut to 50.9694, α(304) = 0.2258.
TEST(NvidiaRpGolden, G3bFirmwareGain) {
  NvidiaRp rp(g3_params(1019), 100e9);
  auto trace = testing::replay(rp, {Timestamp{0}}, testing::at_us(3000));
  expect_matches(trace, testing::kG3b, false, 1, 100e9, 4);
  EXPECT_NEAR(trace[0].rc_bps, 50.9694e9, 1e5);
  EXPECT_NEAR(trace[1].alpha, 0.2258, 1e-4);
}

// §1.6 G4: HPCC "dcqcn_paper" at 100G: cut at 50 µs to 50.1953, then 75.10, 87.55, 93.77, ...
// every 55 µs.
TEST(NvidiaRpGolden, G4HpccDcqcnPaper) {
  NvidiaRp rp(hpcc_dcqcn_paper_preset(100e9), 100e9);
  auto trace = testing::replay(rp, {Timestamp{0}}, testing::at_us(3000));
  expect_matches(trace, testing::kG4, false, 1, 100e9, 8);
  EXPECT_NEAR(trace[0].rc_bps, 50.1953e9, 1e5);
  EXPECT_EQ(trace[0].at, testing::at_us(50));
}

// §6 item 2 coalescing: 10 CNPs within one 4 µs monitor period give exactly one cut;
// rp_cnp_handled += 10 and rp_cnp_coalesced = 9. The later CNPs still feed α: the α updates
// at 1, 2, 3 µs see a CNP (α stays 1), the one at 4 µs does not, so α = 255/256 at the cut:
// Rc = 100 · (1 − (255/256)/2) = 50.1953 Gb/s.
TEST(NvidiaRpGolden, TenCnpsInOnePeriodCutOnce) {
  NvidiaRp rp(g3_params(1020), 100e9);
  std::vector<Timestamp> cnps;
  for (int i = 0; i < 10; ++i) cnps.push_back(Timestamp{i * 300});  // 0 .. 2.7 µs
  auto trace = testing::replay(rp, cnps, testing::at_us(100));
  ASSERT_EQ(trace.size(), 1u);
  EXPECT_EQ(trace[0].kind, RpEventKind::kCut);
  EXPECT_EQ(trace[0].at, testing::at_us(4));
  EXPECT_TRUE(testing::rel_eq(trace[0].rc_bps, 100e9 * (1.0 - (255.0 / 256.0) / 2.0)));
  EXPECT_EQ(rp.stats().rp_cnp_handled, 10u);
  EXPECT_EQ(rp.stats().rp_cnp_coalesced, 9u);
  EXPECT_EQ(rp.stats().rp_rate_decrease_events, 1u);
}

std::vector<Timestamp> to_times(const std::vector<double>& us_list) {
  std::vector<Timestamp> v;
  for (double t : us_list) v.push_back(testing::at_us(t));
  return v;
}

// Beyond §1.6: irregular, seeded CNP sequences through the reference model (gen_golden.py),
// paper mode: cuts interleaved with fast recovery and additive increase.
TEST(PaperRpGolden, IrregularCnpsMatchModel) {
  PaperRp rp(model_paper_params(), 40e9);
  auto trace = testing::replay(rp, to_times(testing::kR1Cnps),
                               testing::at_us(testing::kR1Cnps.back() + 1500));
  expect_matches(trace, testing::kR1, true, 0, 40e9, 40);
}

// nvidia mode with irregular CNPs: several CNPs per 4 µs period (α +g, coalescing), cuts after
// increase events (clamp_tgt_rate_after_time_inc), a final burst inside one period.
TEST(NvidiaRpGolden, IrregularCnpsMatchModel) {
  NvidiaRp rp(g3_params(1020), 100e9);
  auto trace = testing::replay(rp, to_times(testing::kR2Cnps), testing::at_us(6000));
  expect_matches(trace, testing::kR2, false, 1, 100e9, testing::kR2.size());
  EXPECT_EQ(rp.stats().rp_cnp_handled, testing::kR2Cnps.size());
  EXPECT_GE(rp.stats().rp_cnp_coalesced, 1u);  // the final burst inside one period
}

// Same CNPs, firmware gain 5/1024 and clamp_tgt_rate = 1 (Rt ← Rc on every cut).
TEST(NvidiaRpGolden, IrregularCnpsClampAlwaysMatchModel) {
  DcqcnParams p = g3_params(1019);
  p.clamp_tgt_rate = true;
  NvidiaRp rp(p, 100e9);
  auto trace = testing::replay(rp, to_times(testing::kR2Cnps), testing::at_us(6000));
  expect_matches(trace, testing::kR2b, false, 1, 100e9, testing::kR2b.size());
}

// Same CNPs with HPCC "dcqcn_paper" timing (α and decrease every 50 µs, increase every 55 µs).
TEST(NvidiaRpGolden, IrregularCnpsHpccPaperMatchModel) {
  NvidiaRp rp(hpcc_dcqcn_paper_preset(100e9), 100e9);
  auto trace = testing::replay(rp, to_times(testing::kR2Cnps), testing::at_us(6000));
  expect_matches(trace, testing::kR3, false, 1, 100e9, testing::kR3.size());
}

}  // namespace
}  // namespace uroce::dcqcn
