/**
 * @file dcqcn_incast_test.cc
 * @brief DCQCN scenarios on the simulator (issue #5), real engines with lib/dcqcn plugged into
 * their congestion-control seam, one switch with RED/ECN (reference-model CP: Kmin 5 KB,
 * Kmax 200 KB, Pmax 1 %, dequeue marking) and PFC on priority 3 with XOFF above Kmax, 40 Gb/s,
 * 1 us links, 1 KB packets, SIGCOMM'15 paper RP/NP parameters (docs/dcqcn-pfc.md §1.1, §2.3):
 *  - 2:1 incast: utilisation >= 0.99, Jain >= 0.99, queue mostly <= 100 KB, no PFC pause;
 *  - 2:1, 4:1, 8:1: the queue grows with N, same order as the reference model;
 *  - flow join: the second flow's arrival cuts both deeply, utilisation takes ~14 ms to pass
 *    97 % again (the known weakness, docs/dcqcn-pfc.md §2.3 S1);
 *  - without DCQCN the same incast fills the queue to XOFF and PFC pauses the senders.
 * UROCE_SIM_CSV_DIR=<dir> writes each scenario's time series (t_us, util, queue_bytes, CNPs,
 * XOFFs, per-flow Gb/s). Units: bytes, bit/s, ns, us in the series.
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "sim/incast.h"

namespace uroce::sim::test {
namespace {

void print(const char* name, IncastRun& r, double from_us) {
  std::printf(
      "%s: util %.4f, Jain %.4f, queue mean %.1f KB p90 %.1f KB p99 %.1f KB, CNPs %llu, "
      "XOFF %llu, drops %llu\n",
      name, r.mean(kUtil, from_us), r.jain(from_us), r.mean(kQueue, from_us) / 1024,
      r.quantile(kQueue, 0.9, from_us) / 1024, r.quantile(kQueue, 0.99, from_us) / 1024,
      static_cast<unsigned long long>(r.receiver().counters().get(Counter::np_cnp_sent)),
      static_cast<unsigned long long>(r.sw().stats().xoff_sent),
      static_cast<unsigned long long>(r.sw().stats().buffer_drops + r.sw().stats().headroom_drops));
}

TEST(DcqcnIncastTest, TwoToOneAt40GFullFairShortQueueNoPause) {
  IncastSpec s;
  s.csv_name = "incast_2to1_40g.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  // Measure over 60..120 ms: with R_AI = 40 Mb/s per 55 us and B = 10 MB the flows need
  // ~25 ms to climb back from the first cuts.
  const double from = 60'000;
  print("2:1", r, from);
  EXPECT_GT(r.receiver().counters().get(Counter::np_cnp_sent), 0u);
  EXPECT_GT(r.sender(0).counters().get(Counter::rp_cnp_handled), 0u);
  EXPECT_GE(r.mean(kUtil, from), 0.99);
  EXPECT_GE(r.jain(from), 0.99);
  EXPECT_LE(r.quantile(kQueue, 0.9, from), 100 * 1024);  // "mostly <= 100 KB"
  EXPECT_EQ(r.sw().stats().xoff_sent, 0u);               // Kmax 200 KB < XOFF 400 KB
  EXPECT_EQ(r.sw().stats().buffer_drops + r.sw().stats().headroom_drops, 0u);
}

TEST(DcqcnIncastTest, TwoToOneAt100GWithHpccThresholdsNvidiaMode) {
  // docs/dcqcn-pfc.md §2.2 R2: HPCC production ECN (Kmin 400 KB, Kmax 1.6 MB, Pmax 0.2),
  // nvidia-mode RP with HPCC's parameters; expected ~50 Gb/s per flow, queue within Kmin..Kmax, no
  // drops.
  IncastSpec s;
  s.rate_bps = 100'000'000'000ull;
  s.ecn = EcnConfig{.enabled = true,
                    .kmin_bytes = 400 * 1024,
                    .kmax_bytes = 1600 * 1024,
                    .pmax = 0.2,
                    .at_dequeue = true};
  s.pfc.xoff_bytes = 2 * 1024 * 1024;
  s.pfc.xon_bytes = 1792 * 1024;
  s.params = dcqcn::hpcc_dcqcn_preset(100e9);
  s.path_mtu = 5;  // 4 KB packets at 100 Gb/s
  s.run = Duration::millis(40);
  s.csv_name = "incast_2to1_100g_hpcc.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  const double from = 10'000;
  print("2:1 100G HPCC", r, from);
  EXPECT_GT(r.receiver().counters().get(Counter::np_cnp_sent), 0u);
  // The bar for the 2:1 scenarios (measured 0.9986 and 0.9988, bench/RESULTS.md).
  EXPECT_GE(r.mean(kUtil, from), 0.99);
  EXPECT_GE(r.jain(from), 0.99);
  EXPECT_LE(r.quantile(kQueue, 0.99, from), 1700 * 1024);  // about Kmax at most
  EXPECT_EQ(r.sw().stats().buffer_drops + r.sw().stats().headroom_drops, 0u);
  EXPECT_EQ(r.sw().stats().xoff_sent, 0u);
}

TEST(DcqcnIncastTest, QueueGrowsWithTheNumberOfSenders) {
  // Reference-model mean queues (docs/dcqcn-pfc.md §2.3): 2:1 16 KB, 4:1 36 KB, 8:1 76 KB.
  const int kN[] = {2, 4, 8};
  const double kRefKb[] = {16, 36, 76};
  double q[3];
  for (int i = 0; i < 3; ++i) {
    IncastSpec s;
    s.senders = kN[i];
    s.run = Duration::millis(60);
    s.csv_name = "queue_growth_" + std::to_string(kN[i]) + "to1_40g.csv";
    IncastRun r(s);
    ASSERT_TRUE(r.run()) << r.error();
    const double from = 30'000;
    char name[16];
    std::snprintf(name, sizeof name, "%d:1", kN[i]);
    print(name, r, from);
    q[i] = r.mean(kQueue, from) / 1024;
    // Expect: the same order of magnitude as the reference model, the link kept busy.
    EXPECT_GE(q[i], kRefKb[i] / 4) << kN[i];
    EXPECT_LE(q[i], kRefKb[i] * 4) << kN[i];
    EXPECT_GE(r.mean(kUtil, from), 0.95) << kN[i];
    EXPECT_GE(r.jain(from), 0.95) << kN[i];
  }
  EXPECT_LT(q[0], q[1]);
  EXPECT_LT(q[1], q[2]);
}

TEST(DcqcnIncastTest, SixteenToOneKeepsTheLinkBusyWithTheQueueNearKmax) {
  // Reference model (docs/dcqcn-pfc.md §2.3) 16:1: utilisation 0.973, Jain 0.996, mean queue 61 KB,
  // p99 210 KB (about Kmax).
  IncastSpec s;
  s.senders = 16;
  s.run = Duration::millis(60);
  s.csv_name = "incast_16to1_40g.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  const double from = 20'000;
  print("16:1", r, from);
  EXPECT_GE(r.mean(kUtil, from), 0.95);
  EXPECT_GE(r.jain(from), 0.95);
  EXPECT_GE(r.mean(kQueue, from) / 1024, 61.0 / 4);
  EXPECT_LE(r.mean(kQueue, from) / 1024, 61.0 * 4);
  EXPECT_LE(r.quantile(kQueue, 0.99, from), 1.5 * 200 * 1024);
  EXPECT_EQ(r.sw().stats().buffer_drops + r.sw().stats().headroom_drops, 0u);
}

TEST(DcqcnIncastTest, FlowJoinCutsDeepAndRecoversSlowly) {
  IncastSpec s;
  s.start = {Duration{}, Duration::millis(5)};
  s.run = Duration::millis(45);
  s.csv_name = "flow_join_40g.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  // Before the join flow 0 runs alone near line rate.
  EXPECT_GE(r.mean(kUtil, 3'000, 5'000), 0.97);
  // Deep cut: within ~0.5 ms of the join the aggregate falls far below the link.
  double low = 1;
  for (const auto& row : r.rows())
    if (row[kT] >= 5'000 && row[kT] < 6'000) low = std::min(low, row[kUtil]);
  // Recovery: the first time after the join that 1 ms of utilisation averages >= 97 %.
  double recovered_us = -1;
  for (double t = 5'500; t + 1'000 <= 45'000; t += 100)
    if (r.mean(kUtil, t, t + 1'000) >= 0.97) {
      recovered_us = t + 1'000;
      break;
    }
  std::printf(
      "flow join: lowest utilisation %.3f in the first ms, >= 97 %% again %.1f ms after "
      "the join (reference model: ~14 ms)\n",
      low, (recovered_us - 5'000) / 1e3);
  // Expect (docs/dcqcn-pfc.md §2.3, S1): both flows cut to ~11 Gb/s each (aggregate ~0.55 of the
  // link), then AI-only recovery back above 97 % ~14 ms after the join; within ±50 % of that
  // (measured 2026-12-03: lowest 0.28, recovered after 16.8 ms).
  EXPECT_LT(low, 0.6);
  ASSERT_GT(recovered_us, 0) << "never recovered";
  EXPECT_GE(recovered_us - 5'000, 7'000);  // not accidentally fast
  EXPECT_LE(recovered_us - 5'000, 21'000);
}

TEST(DcqcnIncastTest, WithoutDcqcnIncastTriggersPfcPauses) {
  IncastSpec s;
  s.algorithm = CcAlgorithm::kOff;
  s.run = Duration::millis(20);
  s.csv_name = "incast_2to1_40g_no_dcqcn.csv";
  IncastRun r(s);
  ASSERT_TRUE(r.run()) << r.error();
  print("2:1 without DCQCN", r, 5'000);
  // Expect: the queue reaches XOFF, the switch pauses the senders, and nothing is dropped
  // (lossless priority 3 with headroom); the link stays busy.
  EXPECT_GT(r.sw().stats().xoff_sent, 0u);
  EXPECT_GT(r.sender(0).pfc_received() + r.sender(1).pfc_received(), 0u);
  EXPECT_GE(r.quantile(kQueue, 0.99, 5'000), 300 * 1024);
  EXPECT_EQ(r.sw().stats().buffer_drops + r.sw().stats().headroom_drops, 0u);
  EXPECT_GE(r.mean(kUtil, 5'000), 0.98);
  EXPECT_EQ(r.receiver().counters().get(Counter::np_cnp_sent), 0u);
}

/// PFC victim scenario on two leaves and a spine (40 Gb/s, 1 us): H1, H2 (leaf 1) and H5
/// (leaf 2) send to H3 (leaf 2): a 3:1 incast on leaf 2's port to H3. H0 (leaf 1) sends to H4
/// (leaf 2), a flow that never crosses the congested port. Returns the victim's mean Gb/s over
/// 10..30 ms and the XOFF frames sent by all switches.
struct VictimResult {
  double victim_gbps = 0;
  double incast_gbps = 0;
  uint64_t xoff = 0;
  uint64_t drops = 0;
  std::string error;
};

VictimResult run_victim(bool with_dcqcn, const std::string& csv_name) {
  constexpr uint64_t kRate = 40'000'000'000ull;
  constexpr int kHosts = 6;
  Simulator sim;
  Fabric fab(sim);
  SwitchConfig sc;
  sc.ecn = EcnConfig{.enabled = true,
                     .kmin_bytes = 5 * 1024,
                     .kmax_bytes = 200 * 1024,
                     .pmax = 0.01,
                     .at_dequeue = true};
  sc.pfc = PfcConfig{.enabled = true,
                     .lossless_mask = 1u << 3,
                     .xoff_bytes = 400 * 1024,
                     .xon_bytes = 300 * 1024,
                     .headroom_bytes = 256 * 1024};
  LinkParams lp{.rate_bps = kRate, .propagation = Duration::nanos(1000), .max_frames = 64};
  uint32_t spine = fab.add_switch(sc);
  uint32_t leaf[2] = {fab.add_switch(sc), fab.add_switch(sc)};
  fab.connect_switches(leaf[0], spine, lp);
  fab.connect_switches(leaf[1], spine, lp);
  std::vector<std::unique_ptr<cc::Factory>> cc;
  std::vector<std::unique_ptr<EngineHost>> h;
  for (int i = 0; i < kHosts; ++i) {
    cc.push_back(std::make_unique<cc::Factory>(dcqcn::paper_preset()));
    transport::EngineConfig cfg;
    cfg.mac = host_mac(i);
    cfg.gids = {host_gid(i)};
    cfg.link_speed_bps = kRate;
    cfg.key_seed = 900 + static_cast<uint64_t>(i);
    cfg.cc = with_dcqcn ? cc.back().get() : nullptr;
    cfg.max_unacked_psns = 4096;
    h.push_back(std::make_unique<EngineHost>(sim, cfg, "h" + std::to_string(i)));
    for (int j = 0; j < kHosts; ++j)
      if (j != i) h.back()->neighbors().add(host_gid(j), host_mac(j));
    fab.add_host(h.back().get(), host_mac(i), leaf[i < 3 ? 0 : 1], lp);
  }
  fab.build_routes();
  VictimResult res;
  const int pairs[4][2] = {{0, 4}, {1, 3}, {2, 3}, {5, 3}};  // victim first
  std::vector<std::unique_ptr<RcStream>> flows;
  for (auto& p : pairs) {
    Endpoint a = make_endpoint(*h[static_cast<size_t>(p[0])], p[0], transport::QpType::kRc);
    Endpoint b = make_endpoint(*h[static_cast<size_t>(p[1])], p[1], transport::QpType::kRc);
    ConnParams c;
    c.path_mtu = 3;
    if (!connect(a, b, c)) res.error = "connect";
    StreamConfig st;
    st.op = StreamOp::kWrite;
    st.total_bytes = 1ull << 40;
    st.sizes = {65536};
    st.window = 16;
    st.verify = false;
    flows.push_back(std::make_unique<RcStream>(st, *h[static_cast<size_t>(p[0])], a.pd, a.qpn,
                                               a.scq, *h[static_cast<size_t>(p[1])], b.pd, b.qpn,
                                               b.rcq));
  }
  // Time series for bench/plot: the congested port (leaf 2 -> H3), CNPs of every host, XOFF
  // of every switch, each flow's goodput (flow 0 = the victim), every 100 us.
  const char* dir = std::getenv("UROCE_SIM_CSV_DIR");
  constexpr Duration kSample = Duration::micros(100);
  Sampler smp(sim, kSample, Timestamp{} + Duration::millis(30),
              dir ? std::string(dir) + "/" + csv_name : std::string());
  Link& hot = fab.downlink(3);
  uint64_t last_wire = 0;
  smp.add("util", [&] {
    uint64_t wire = hot.stats().sent_bytes + hot.stats().sent * (kFcsBytes + kPreambleIfgBytes);
    double u = static_cast<double>(wire - last_wire) * 8 / (kRate * kSample.secs());
    last_wire = wire;
    return u;
  });
  smp.add("queue_bytes", [&] { return static_cast<double>(hot.queued_bytes()); });
  smp.add("cnps_sent", [&] {
    uint64_t n = 0;
    for (auto& host : h) n += host->counters().get(Counter::np_cnp_sent);
    return static_cast<double>(n);
  });
  smp.add("xoff_sent", [&] {
    uint64_t n = 0;
    for (uint32_t s = 0; s < fab.switch_count(); ++s) n += fab.sw(s).stats().xoff_sent;
    return static_cast<double>(n);
  });
  std::vector<uint64_t> last_bytes(flows.size());
  for (size_t k = 0; k < flows.size(); ++k)
    smp.add("flow" + std::to_string(k) + "_gbps", [&, k] {
      uint64_t b = flows[k]->bytes_completed();
      double g = static_cast<double>(b - last_bytes[k]) * 8 / kSample.secs() / 1e9;
      last_bytes[k] = b;
      return g;
    });
  smp.start();
  for (auto& f : flows) f->start();
  std::vector<uint64_t> at10(flows.size());
  sim.run_until(Timestamp{} + Duration::millis(10));
  for (size_t k = 0; k < flows.size(); ++k) at10[k] = flows[k]->bytes_completed();
  if (!sim.run_until(Timestamp{} + Duration::millis(30))) res.error = "stalled";
  for (auto& f : flows)
    if (!f->error().empty()) res.error = f->error();
  auto gbps = [&](size_t k) {
    return static_cast<double>(flows[k]->bytes_completed() - at10[k]) * 8 / 20e-3 / 1e9;
  };
  res.victim_gbps = gbps(0);
  res.incast_gbps = gbps(1) + gbps(2) + gbps(3);
  for (uint32_t s = 0; s < fab.switch_count(); ++s) {
    res.xoff += fab.sw(s).stats().xoff_sent;
    res.drops += fab.sw(s).stats().buffer_drops + fab.sw(s).stats().headroom_drops;
  }
  return res;
}

TEST(DcqcnIncastTest, PfcVictimFlowRecoversWithDcqcn) {
  VictimResult off = run_victim(false, "pfc_victim_40g_no_dcqcn.csv");
  VictimResult on = run_victim(true, "pfc_victim_40g.csv");
  ASSERT_EQ(off.error, "");
  ASSERT_EQ(on.error, "");
  std::printf(
      "victim: without DCQCN %.2f Gb/s (incast %.2f, XOFF %llu), with DCQCN %.2f Gb/s "
      "(incast %.2f, XOFF %llu)\n",
      off.victim_gbps, off.incast_gbps, static_cast<unsigned long long>(off.xoff), on.victim_gbps,
      on.incast_gbps, static_cast<unsigned long long>(on.xoff));
  // Expect: without DCQCN the incast spreads pauses up to leaf 1, and the victim, which shares
  // only the paused uplinks, loses throughput; with DCQCN pauses fall >= 10x and the victim
  // gets back much of the uplink capacity the incast flows leave. Measured (2026-12-02):
  // 8.76 Gb/s without DCQCN, 11.17 Gb/s with it. (13.74 before the NP sent its coalesced
  // CNPs: CE marks inside min_time_between_cnps were dropped then, so every flow, the victim
  // on the shared uplinks too, was cut less often than docs/dcqcn-pfc.md §1.3 asks.)
  EXPECT_GT(off.xoff, 0u);
  EXPECT_LE(on.xoff * 10, off.xoff);
  EXPECT_GE(on.victim_gbps, 1.2 * off.victim_gbps);
  EXPECT_GE(on.victim_gbps, 10.0);
  EXPECT_EQ(off.drops + on.drops, 0u);
}

}  // namespace
}  // namespace uroce::sim::test
