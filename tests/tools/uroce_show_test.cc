/**
 * @file uroce_show_test.cc
 * @brief `uroce show roce | counters | qp` and `uroce clear counters` run as a program against
 * a synthetic segment (cli_support.h make_segment: known values), plus the bad-input cases:
 * stale segments (removed, one summary line) and unreadable ones, an unknown QP, a malformed
 * config.
 */
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "cli_support.h"
#include "mini_json.h"
#include "stats/layout.h"

namespace uroce::test {
namespace {

class UroceShowTest : public ::testing::Test {
 protected:
  RunResult run(const std::string& args) {
    return run_uroce(dir_.path, args, "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  }
  void SetUp() override {
    cfg_ = dir_.path + "/uroce.toml";
    write_file(
        cfg_,
        "[[device]]\nname = \"cfgdev\"\naddresses = [\"198.18.0.1/15\"]\nprofile = \"lossy\"\n");
  }
  TempDir dir_;
  std::string cfg_;
};

TEST_F(UroceShowTest, ShowRoceJson) {
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run("show roce --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  ASSERT_EQ(j["devices"].arr.size(), 1u);
  const Json& d = j["devices"][0];
  EXPECT_EQ(d["device"].str, "uroce0");
  EXPECT_EQ(d["state"].str, "running");
  EXPECT_EQ(d["pid"].num, getpid());
  EXPECT_EQ(d["profile"].str, "lossless");
  EXPECT_TRUE(d["lossless"].b);
  EXPECT_EQ(d["trust"].str, "dscp");
  EXPECT_EQ(d["roce_priority"].num, 3);
  EXPECT_EQ(d["cnp_priority"].num, 6);
  EXPECT_EQ(d["pfc"]["xoff_bytes"].num, 65536);
  ASSERT_EQ(d["priorities"].arr.size(), 8u);
  const Json& p3 = d["priorities"][3];
  EXPECT_EQ(p3["priority"].num, 3);
  EXPECT_TRUE(p3["pfc"].b);
  EXPECT_TRUE(p3["ecn"].b);
  EXPECT_FALSE(d["priorities"][0]["pfc"].b);
  ASSERT_EQ(p3["dscp"].arr.size(), 8u);  // DSCP 24..31
  EXPECT_EQ(p3["dscp"][2].num, 26);
  EXPECT_EQ(p3["tx_queue"].num, 3);
  EXPECT_EQ(p3["rx_prio_pause"].num, 4);
  EXPECT_EQ(p3["rx_prio_pause_duration"].num, 250);
  EXPECT_EQ(p3["tx_prio_pause"].num, 2);
  EXPECT_EQ(p3["tx_prio_queue_depth"].num, 1500);
  EXPECT_EQ(p3["tx_prio_queue_high_water"].num, 9000);
  EXPECT_EQ(d["dcqcn"]["mode"].str, "nvidia");
  EXPECT_EQ(d["dcqcn"]["params"]["rpg_time_reset"].num, 300);
  EXPECT_EQ(d["congestion"]["np_cnp_sent"].num, 7);
  EXPECT_EQ(d["congestion"]["rp_cnp_handled"].num, 5);
  EXPECT_EQ(d["congestion"]["np_ecn_marked_roce_packets"].num, 11);
  EXPECT_EQ(d["reliability"]["roce_adp_retrans"].num, 3);
  EXPECT_EQ(d["reliability"]["local_ack_timeout_err"].num, 1);
  EXPECT_EQ(d["qps"].num, 1);
}

TEST_F(UroceShowTest, ShowRoceTable) {
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run("show roce");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("uroce0  pid " + std::to_string(getpid())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("profile lossless  lossless on  trust dscp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("RoCE dscp 26 -> prio 3  CNP dscp 48 -> prio 6"), std::string::npos);
  // Priority 3 row: dscp 24-31, pcp 3, txq 3, pfc on, ecn on, queue 1500, hwm 9000, rx pause 4.
  std::regex row(R"(\n +3 24-31 +3 +3 +on +on +1500 +9000 +4 +250 +2 )");
  EXPECT_TRUE(std::regex_search(r.out, row)) << r.out;
  EXPECT_NE(r.out.find("CNP sent 7  CNP handled 5"), std::string::npos);
  EXPECT_NE(r.out.find("retransmits 3  ACK timeouts 1"), std::string::npos);
  EXPECT_NE(r.out.find("qps: 1 RTS 1"), std::string::npos);
}

TEST_F(UroceShowTest, ShowRoceWatchRefreshesUntilStopped) {
  // --watch --interval 1 under a 2.5 s timeout: the screen is cleared and the table drawn at
  // 0 s and 1 s (and maybe 2 s), then timeout stops it (exit status 124).
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run_uroce(dir_.path, "show roce --watch --interval 1",
                          "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_ + " timeout 2.5");
  EXPECT_EQ(r.status, 124) << r.err;
  size_t clears = 0, tables = 0;
  for (size_t at = r.out.find("\033[H\033[2J"); at != std::string::npos;
       at = r.out.find("\033[H\033[2J", at + 1))
    ++clears;
  for (size_t at = r.out.find("CNP sent 7"); at != std::string::npos;
       at = r.out.find("CNP sent 7", at + 1))
    ++tables;
  EXPECT_GE(clears, 2u) << r.out;
  EXPECT_LE(clears, 3u) << r.out;
  EXPECT_EQ(tables, clears) << r.out;
}

TEST_F(UroceShowTest, ShowRoceWithoutProgramsShowsConfig) {
  RunResult r = run("show roce --json");
  ASSERT_EQ(r.status, 0) << r.err;
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  ASSERT_EQ(j["devices"].arr.size(), 1u);
  EXPECT_EQ(j["devices"][0]["device"].str, "cfgdev");
  EXPECT_EQ(j["devices"][0]["state"].str, "configured");
  EXPECT_EQ(j["devices"][0]["profile"].str, "lossy");
  EXPECT_FALSE(j["devices"][0]["lossless"].b);
  // The lossy profile: DCQCN and the delay-based control, selective repeat.
  EXPECT_EQ(j["devices"][0]["congestion_control"]["algorithm"].str, "dcqcn+delay");
  EXPECT_EQ(j["devices"][0]["congestion_control"]["delay"]["target_queue_us"].num, 100);
  EXPECT_EQ(j["devices"][0]["loss_recovery"].str, "selective");
  r = run("show roce");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("congestion control dcqcn+delay  loss recovery selective"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("delay: target queue 100 us  base rtt learnt"), std::string::npos) << r.out;
}

TEST_F(UroceShowTest, ShowCounters) {
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run("show counters");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  np_cnp_sent +7\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  rx_prio3_pause +4\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n  out_of_sequence +0\n)")));
  EXPECT_EQ(r.out.find("rx_prio0_pause "), std::string::npos);  // zero: only with --all
  r = run("show counters --all --device uroce0");
  EXPECT_NE(r.out.find("rx_prio0_pause "), std::string::npos);

  r = run("show counters --json");
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  const Json& c = j["devices"][0]["counters"];
  EXPECT_EQ(c["np_cnp_sent"].num, 7);
  EXPECT_EQ(c["rx_prio3_pause_duration"].num, 250);
  EXPECT_EQ(c["tx_prio3_queue_high_water"].num, 9000);
  EXPECT_EQ(c.obj.size(),
            kCounterCount + 8 * std::size(stats::kPrioStats) + std::size(stats::kPortStats));

  r = run("show counters --qp 0x12 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  EXPECT_EQ(j["devices"][0]["qp"].num, 0x12);
  EXPECT_EQ(j["devices"][0]["counters"]["retransmits"].num, 4);

  r = run("show counters --qp 99");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no QP 99"), std::string::npos) << r.err;
}

TEST_F(UroceShowTest, ShowQp) {
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run("show qp --json");
  ASSERT_EQ(r.status, 0) << r.err;
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  ASSERT_EQ(j["qps"].arr.size(), 1u);
  const Json& q = j["qps"][0];
  EXPECT_EQ(q["qpn"].num, 0x12);
  EXPECT_EQ(q["type"].str, "RC");
  EXPECT_EQ(q["state"].str, "RTS");
  EXPECT_EQ(q["peer_gid"].str, "198.18.0.2");
  EXPECT_EQ(q["peer_qpn"].num, 0x34);
  EXPECT_EQ(q["sq_psn"].num, 100);
  EXPECT_EQ(q["rq_psn"].num, 200);
  EXPECT_EQ(q["rate_mbps"].num, 2500);
  EXPECT_EQ(q["target_mbps"].num, 10000);
  EXPECT_EQ(q["alpha"].num, 0.25);
  EXPECT_EQ(q["loss_recovery"].str, "selective");
  EXPECT_EQ(q["congestion_control"].str, "dcqcn+delay");
  EXPECT_TRUE(q["delay_in_force"].b);
  EXPECT_TRUE(q["peer_timestamps"].b);
  EXPECT_EQ(q["delay_rate_mbps"].num, 2500);
  EXPECT_EQ(q["rtt_us"].num, 17.5);
  EXPECT_EQ(q["target_delay_us"].num, 15);
  r = run("show qp");
  EXPECT_NE(r.out.find("RTS"), std::string::npos);
  EXPECT_NE(r.out.find("198.18.0.2"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"( sr +dcqcn\+delay\* +17\.5\n)"))) << r.out;
}

TEST_F(UroceShowTest, ClearCounters) {
  auto seg = make_segment(dir_.path);
  ASSERT_TRUE(seg);
  RunResult r = run("clear counters");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("cleared uroce0"), std::string::npos);
  seg->counters()->inc(Counter::np_cnp_sent, 2);
  r = run("show counters --json");
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  EXPECT_EQ(j["devices"][0]["counters"]["np_cnp_sent"].num, 2);
  EXPECT_EQ(j["devices"][0]["counters"]["rx_prio3_pause"].num, 0);
  // High-water marks restart at the current depth.
  EXPECT_EQ(j["devices"][0]["counters"]["tx_prio3_queue_high_water"].num, 1500);
  r = run("show counters --json --raw");
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  EXPECT_EQ(j["devices"][0]["counters"]["np_cnp_sent"].num, 9);
}

TEST_F(UroceShowTest, StaleSegmentRemoved) {
  stats::CreateOptions o;
  o.run_dir = dir_.path;
  o.pid = dead_pid();
  o.start_time = 1;
  std::string err;
  auto seg = stats::StatsSegment::create("ghost", lossless_summary(), &err, o);
  ASSERT_TRUE(seg) << err;
  write_file(seg->path() + ".baseline", "x");
  auto live = make_segment(dir_.path);
  RunResult r = run("show roce --json");
  EXPECT_EQ(r.status, 0) << r.err;
  Json j;
  ASSERT_TRUE(parse_json(r.out, &j)) << r.out;
  ASSERT_EQ(j["devices"].arr.size(), 1u);
  EXPECT_EQ(j["devices"][0]["device"].str, "uroce0");
  EXPECT_EQ(j["stale"].arr.size(), 0u);
  EXPECT_EQ(r.err,
            "uroce: removed 1 stale segment in " + dir_.path + " (their processes are gone)\n");
  EXPECT_FALSE(std::filesystem::exists(seg->path()));
  EXPECT_FALSE(std::filesystem::exists(seg->path() + ".baseline"));
  // Nothing left to remove: no line at all.
  r = run("show roce --json");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

TEST_F(UroceShowTest, UnreadableSegmentFails) {
  write_file(dir_.path + "/uroce.broken.77", std::string(8192, '\x5a'));
  auto seg = make_segment(dir_.path);
  RunResult r = run("show counters");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("uroce.broken.77: not a uroce stats segment (bad magic)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("np_cnp_sent"), std::string::npos);  // the good one is still shown
}

TEST_F(UroceShowTest, MalformedConfigFails) {
  write_file(cfg_, "[[device]]\nname = \"x\"\naddresses = [\"198.18.0.1/15\"\n");
  RunResult r = run("show roce");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(cfg_ + ": line"), std::string::npos) << r.err;
}

TEST_F(UroceShowTest, UnknownDeviceFails) {
  RunResult r = run("show roce --device nosuch");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("device nosuch: not running and not in"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace uroce::test
