/**
 * @file qp_congestion_test.cc
 * @brief The per-QP bundle the transport calls: the pacer follows the RP rate after a CNP cut
 * and its recovery; CNP pacing goes through the NP; kOff leaves data unpaced (docs/dcqcn-pfc.md
 * §1.3, §1.5, §6 item 2).
 */
#include "dcqcn/qp_congestion.h"

#include <gtest/gtest.h>

namespace uroce::dcqcn {
namespace {

Timestamp us(int64_t v) { return Timestamp{v * 1000}; }

// Nvidia mode at 100G: before a CNP frames go at line rate (4096 B = 327.68 ns); after the cut
// 4 µs after the CNP to 50.78 Gb/s the spacing is 4096·8/50.78e9 ≈ 645.3 ns.
TEST(QpCongestion, PacerFollowsRpRate) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  QpCongestion qc(p, 100e9);
  EXPECT_EQ(qc.rate_bps(), 100e9);
  qc.on_data_sent(4096, us(0));
  EXPECT_EQ(qc.earliest_send_time(4096, us(0)), Timestamp{328});
  qc.on_cnp(us(1));
  EXPECT_EQ(qc.next_deadline(), us(5));  // the monitor grid starts at the first CNP
  EXPECT_FALSE(qc.on_timer(us(5)));
  const double rate = qc.rate_bps();
  EXPECT_NEAR(rate, 50.7767e9, 1e5);
  qc.on_data_sent(4096, us(10));
  const double gap_ns = static_cast<double>((qc.earliest_send_time(4096, us(10)) - us(10)).ns);
  EXPECT_NEAR(gap_ns, 4096 * 8 / rate * 1e9, 1.0);
  // The increase timer 300 µs after the cut raises the rate and the pacer follows.
  EXPECT_FALSE(qc.on_timer(us(305)));
  EXPECT_GT(qc.rate_bps(), rate);
  EXPECT_EQ(qc.pacer().rate_bps(), qc.rate_bps());
}

TEST(QpCongestion, CnpPacingThroughNp) {
  DcqcnParams p = paper_preset();  // N = 50 µs
  QpCongestion qc(p, 40e9);
  EXPECT_TRUE(qc.on_ce_marked(us(0)));
  EXPECT_FALSE(qc.on_ce_marked(us(10)));
  EXPECT_EQ(qc.next_deadline(), us(50));
  EXPECT_TRUE(qc.on_timer(us(50)));
  EXPECT_EQ(qc.np().stats().np_cnp_sent, 2u);
}

TEST(QpCongestion, OffModeIsUnpaced) {
  DcqcnParams p;
  p.mode = RpMode::kOff;
  QpCongestion qc(p, 100e9);
  qc.on_data_sent(1u << 20, us(0));
  EXPECT_EQ(qc.earliest_send_time(4096, us(0)), us(0));
  qc.on_cnp(us(0));
  EXPECT_EQ(qc.rate_bps(), kUnlimitedRate);
  EXPECT_EQ(qc.rp().stats().rp_cnp_ignored, 1u);
}

TEST(DcqcnParams, ValidateStruct) {
  std::string err;
  EXPECT_TRUE(validate(paper_preset(), &err)) << err;
  EXPECT_TRUE(validate(nvidia_firmware_preset(), &err)) << err;
  DcqcnParams bad;
  bad.rpg_time_reset = 0;
  EXPECT_EQ(validate(bad, &err), Status::invalid());
  EXPECT_NE(err.find("rpg_time_reset"), std::string::npos);
}

}  // namespace
}  // namespace uroce::dcqcn
