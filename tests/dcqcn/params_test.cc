/**
 * @file params_test.cc
 * @brief DcqcnParams presets (docs/dcqcn-pfc.md §1.1) and the lookup by NVIDIA name used by the
 * config's `[device.dcqcn]` overrides: unknown names and out-of-range values are refused clearly.
 */
#include "dcqcn/params.h"

#include <gtest/gtest.h>

#include "config/profile.h"

namespace uroce::dcqcn {
namespace {

// §1.1 "NVIDIA FW default" column.
TEST(DcqcnParams, FirmwarePresetMatchesMstconfigDump) {
  const DcqcnParams p = nvidia_firmware_preset();
  EXPECT_EQ(p.mode, RpMode::kNvidia);
  EXPECT_EQ(p.rate_reduce_monitor_period, 4u);
  EXPECT_EQ(p.rpg_time_reset, 300u);
  EXPECT_EQ(p.rpg_byte_reset, 32767u);
  EXPECT_EQ(p.rpg_threshold, 1u);
  EXPECT_EQ(p.rpg_ai_rate, 5u);
  EXPECT_EQ(p.rpg_hai_rate, 50u);
  EXPECT_EQ(p.rpg_gd, 11u);
  EXPECT_EQ(p.rpg_min_dec_fac, 50u);
  EXPECT_EQ(p.rpg_min_rate, 1u);
  EXPECT_EQ(p.rpg_max_rate, 0u);
  EXPECT_EQ(p.dce_tcp_g, 1019u);
  EXPECT_EQ(p.dce_tcp_rtt, 1u);
  EXPECT_EQ(p.initial_alpha_value, 1023u);
  EXPECT_FALSE(p.clamp_tgt_rate);
  EXPECT_TRUE(p.clamp_tgt_rate_after_time_inc);
  EXPECT_EQ(p.rate_to_set_on_first_cnp, 0u);
  EXPECT_EQ(p.min_time_between_cnps, 4u);
  EXPECT_DOUBLE_EQ(alpha_gain(p), 5.0 / 1024);  // §1.1 note on dce_tcp_g
}

// §1.1 "Paper" column and HPCC run.py "dcqcn" / "dcqcn_paper" (scaled to 100G).
TEST(DcqcnParams, PaperAndHpccPresets) {
  const DcqcnParams paper = paper_preset();
  EXPECT_EQ(paper.mode, RpMode::kPaper);
  EXPECT_DOUBLE_EQ(alpha_gain(paper), 1.0 / 256);
  EXPECT_EQ(paper.rpg_time_reset, 55u);
  EXPECT_EQ(paper.dce_tcp_rtt, 55u);
  EXPECT_EQ(paper.rpg_byte_reset, 10000000u);
  EXPECT_EQ(paper.rpg_threshold, 5u);
  EXPECT_EQ(paper.rpg_ai_rate, 40u);
  EXPECT_EQ(paper.min_time_between_cnps, 50u);

  const DcqcnParams h = hpcc_dcqcn_preset(100e9);
  EXPECT_EQ(h.rpg_ai_rate, 20u);  // 5 · 100/25
  EXPECT_EQ(h.rpg_hai_rate, 200u);
  EXPECT_EQ(h.rpg_min_rate, 1000u);
  EXPECT_EQ(h.rpg_byte_reset, 0u);
  EXPECT_EQ(h.rpg_time_reset, 300u);
  EXPECT_DOUBLE_EQ(alpha_gain(h), 1.0 / 256);
  const DcqcnParams hp = hpcc_dcqcn_paper_preset(25e9);
  EXPECT_EQ(hp.rpg_ai_rate, 5u);
  EXPECT_EQ(hp.dce_tcp_rtt, 50u);
  EXPECT_EQ(hp.rate_reduce_monitor_period, 50u);
  EXPECT_EQ(hp.rpg_time_reset, 55u);
}

TEST(DcqcnParams, SetAndGetByNvidiaAndKernelName) {
  DcqcnParams p;
  std::string err;
  EXPECT_TRUE(set_param(&p, "rpg_time_reset", 55, &err)) << err;
  EXPECT_EQ(p.rpg_time_reset, 55u);
  EXPECT_TRUE(set_param(&p, "rp_ai_rate", 40, &err)) << err;  // mlx5 debugfs spelling
  EXPECT_EQ(p.rpg_ai_rate, 40u);
  EXPECT_TRUE(set_param(&p, "np_min_time_between_cnps", 50, &err));
  EXPECT_EQ(p.min_time_between_cnps, 50u);
  EXPECT_TRUE(set_param(&p, "clamp_tgt_rate", 1, &err));
  EXPECT_TRUE(p.clamp_tgt_rate);
  EXPECT_TRUE(set_param(&p, "fr_count", 1, &err));
  EXPECT_EQ(p.fr_count, FrCount::kExclusive);
  EXPECT_EQ(get_param(p, "rpg_time_reset").value(), 55.0);
  EXPECT_EQ(get_param(p, "hai_amount").value(), 0.0);
  EXPECT_FALSE(get_param(p, "nope").is_ok());
}

TEST(DcqcnParams, UnknownNameIsNotFoundWithTheList) {
  DcqcnParams p;
  std::string err;
  EXPECT_EQ(set_param(&p, "rpg_time_rest", 5, &err), Status::not_found());
  EXPECT_NE(err.find("unknown dcqcn parameter 'rpg_time_rest'"), std::string::npos) << err;
  EXPECT_NE(err.find("rpg_time_reset"), std::string::npos) << err;
}

TEST(DcqcnParams, OutOfRangeOrFractionalIsInvalid) {
  DcqcnParams p;
  std::string err;
  EXPECT_EQ(set_param(&p, "rpg_threshold", 0, &err), Status::invalid());
  EXPECT_NE(err.find("rpg_threshold"), std::string::npos);
  EXPECT_NE(err.find("1..31"), std::string::npos) << err;
  EXPECT_EQ(set_param(&p, "dce_tcp_g", 1025, &err), Status::invalid());
  EXPECT_EQ(set_param(&p, "rpg_ai_rate", 2.5, &err), Status::invalid());
  EXPECT_EQ(set_param(&p, "clamp_tgt_rate", 2, &err), Status::invalid());
  EXPECT_EQ(p.rpg_threshold, 1u);  // unchanged
}

TEST(DcqcnParams, ApplyOverridesStopsAtFirstError) {
  DcqcnParams p;
  std::string err;
  EXPECT_TRUE(apply_overrides(&p, {{"rpg_gd", 10}, {"rpg_min_dec_fac", 90}}, &err));
  EXPECT_EQ(p.rpg_gd, 10u);
  EXPECT_EQ(p.rpg_min_dec_fac, 90u);
  EXPECT_FALSE(apply_overrides(&p, {{"bogus", 1}}, &err));
  EXPECT_FALSE(err.empty());
}

// Every name lib/config accepts under [device.dcqcn] maps onto a field (or is a CP knob that
// apply_overrides skips), so a valid config never fails here.
TEST(DcqcnParams, EveryConfigNameIsKnown) {
  for (std::string_view name : config::kDcqcnParamNames) {
    SCOPED_TRACE(std::string(name));
    DcqcnParams p;
    std::string err;
    if (is_cp_param(name)) {
      EXPECT_EQ(set_param(&p, name, 1, &err), Status::not_found());
      EXPECT_NE(err.find("ECN marking"), std::string::npos);
      EXPECT_TRUE(apply_overrides(&p, {{std::string(name), 1.0}}, &err));
      continue;
    }
    const double v = get_param(p, name).value();
    EXPECT_TRUE(set_param(&p, name, v, &err)) << err;
  }
}

TEST(DcqcnParams, ParseMode) {
  EXPECT_EQ(parse_mode("paper").value(), RpMode::kPaper);
  EXPECT_EQ(parse_mode("nvidia").value(), RpMode::kNvidia);
  EXPECT_EQ(parse_mode("off").value(), RpMode::kOff);
  EXPECT_FALSE(parse_mode("dctcp").is_ok());
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
