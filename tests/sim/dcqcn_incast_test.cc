/**
 * @file dcqcn_incast_test.cc
 * @brief DCQCN scenario on the simulator (issue #5): 2:1 incast at 40 Gb/s through a switch
 * with RED/ECN marking and the SIGCOMM'15 paper parameters (dcqcn.md §1.1, §2), real engines
 * with lib/dcqcn plugged into their congestion-control seam. Expected (issue #5): aggregate
 * >= 0.99 x the link's goodput, Jain's fairness index >= 0.99, the bottleneck queue mostly
 * <= 100 KB, and no PFC pause when Kmax is below the XOFF threshold.
 *
 * UROCE_SIM_CSV_DIR=<dir> writes incast_2to1_40g.csv (t_us, per-flow Gb/s, queue bytes, CNPs,
 * pauses). Units: bytes, bit/s, ns.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dcqcn/params.h"
#include "sim/dcqcn_cc.h"
#include "sim/fabric.h"
#include "sim/rc_stream.h"
#include "sim/sampler.h"
#include "tests/sim/engine_fabric.h"

namespace uroce::sim::test {
namespace {

using transport::QpType;

TEST(DcqcnIncastTest, TwoToOneAt40GConvergesFairWithShortQueue) {
  constexpr uint64_t kRate = 40'000'000'000ull;
  constexpr int kHosts = 3;  // 0, 1 send to 2
  Simulator sim;
  Fabric fab(sim);
  SwitchConfig sc;
  // CP as the reference model (dcqcn.md §2.3): Kmin 5 KB, Kmax 200 KB, Pmax 1 %, dequeue.
  sc.ecn = EcnConfig{.enabled = true, .kmin_bytes = 5 * 1024, .kmax_bytes = 200 * 1024,
                     .pmax = 0.01, .at_dequeue = true};
  sc.pfc = PfcConfig{.enabled = true, .lossless_mask = 1u << 3, .xoff_bytes = 400 * 1024,
                     .xon_bytes = 300 * 1024, .headroom_bytes = 256 * 1024};
  uint32_t sw = fab.add_switch(sc);
  LinkParams lp{.rate_bps = kRate, .propagation = Duration::nanos(1000), .max_frames = 64};

  std::vector<std::unique_ptr<DcqcnFactory>> cc;
  std::vector<std::unique_ptr<EngineHost>> h;
  for (int i = 0; i < kHosts; ++i) {
    cc.push_back(std::make_unique<DcqcnFactory>(dcqcn::paper_preset()));
    transport::EngineConfig cfg;
    cfg.mac = host_mac(i);
    cfg.gids = {host_gid(i)};
    cfg.link_speed_bps = kRate;
    cfg.key_seed = 500 + static_cast<uint64_t>(i);
    cfg.cc = cc.back().get();
    h.push_back(std::make_unique<EngineHost>(sim, cfg, "h" + std::to_string(i)));
    for (int j = 0; j < kHosts; ++j)
      if (j != i) h.back()->neighbors().add(host_gid(j), host_mac(j));
    fab.add_host(h.back().get(), host_mac(i), sw, lp);
  }
  fab.build_routes();

  std::vector<std::unique_ptr<RcStream>> flows;
  std::vector<uint32_t> sender_qpn;
  for (int s = 0; s < 2; ++s) {
    Endpoint a = make_endpoint(*h[s], s, QpType::kRc);
    Endpoint b = make_endpoint(*h[2], 2, QpType::kRc);
    ConnParams c;
    c.path_mtu = 3;  // 1 KB packets, as the reference model
    ASSERT_TRUE(connect(a, b, c));
    StreamConfig st;
    st.op = StreamOp::kWrite;
    st.total_bytes = 1ull << 40;
    st.sizes = {65536};
    st.window = 16;
    st.verify = false;
    flows.push_back(std::make_unique<RcStream>(st, *h[s], a.pd, a.qpn, a.scq, *h[2], b.pd, b.qpn,
                                               b.rcq));
    sender_qpn.push_back(a.qpn);
  }

  const Duration kRun = Duration::millis(120);
  const char* dir = std::getenv("UROCE_SIM_CSV_DIR");
  Sampler smp(sim, Duration::micros(100), Timestamp{} + kRun,
              dir ? std::string(dir) + "/incast_2to1_40g.csv" : std::string());
  std::vector<uint64_t> last(2, 0);
  for (int s = 0; s < 2; ++s)
    smp.add("flow" + std::to_string(s) + "_gbps", [&, s] {
      uint64_t b = flows[s]->bytes_completed();
      double g = static_cast<double>(b - last[s]) * 8 / 100e-6 / 1e9;
      last[s] = b;
      return g;
    });
  Link& bottleneck = fab.downlink(2);
  smp.add("queue_bytes", [&] { return static_cast<double>(bottleneck.queued_bytes()); });
  smp.add("cnps_sent", [&] { return static_cast<double>(h[2]->counters().get(Counter::np_cnp_sent)); });
  smp.add("xoff_sent", [&] { return static_cast<double>(fab.sw(sw).stats().xoff_sent); });
  for (int s = 0; s < 2; ++s)
    smp.add("rate" + std::to_string(s) + "_gbps", [&, s] {
      const dcqcn::QpCongestion* q = cc[s]->qp(sender_qpn[s]);
      return q ? q->rate_bps() / 1e9 : 0.0;
    });
  smp.start();
  for (auto& f : flows) f->start();
  ASSERT_TRUE(sim.run_until(Timestamp{} + kRun));
  for (auto& f : flows) ASSERT_EQ(f->error(), "");

  // Measure over the second half (60..120 ms): with the paper's R_AI = 40 Mb/s per 55 us and
  // B = 10 MB the flows need ~25 ms to climb back from the first cuts (dcqcn.md §2).
  const auto& rows = smp.rows();
  double sum[2] = {0, 0};
  size_t n = 0, short_q = 0;
  std::vector<double> q;
  for (const auto& r : rows) {
    if (r[0] < 60'000) continue;
    ++n;
    q.push_back(r[3]);
    sum[0] += r[1];
    sum[1] += r[2];
    short_q += r[3] <= 100 * 1024;
  }
  ASSERT_GT(n, 100u);
  double x0 = sum[0] / static_cast<double>(n), x1 = sum[1] / static_cast<double>(n);
  double agg = x0 + x1;
  double jain = (agg * agg) / (2 * (x0 * x0 + x1 * x1));
  // Goodput of the link with 1 KiB frames: 1024 / (1024 + 58 headers + 24 FCS/preamble/IFG).
  double link_goodput = 40.0 * 1024 / (1024 + 58 + 24);
  std::sort(q.begin(), q.end());
  double mean_q = 0;
  for (double v : q) mean_q += v / static_cast<double>(q.size());
  std::printf("flows %.2f + %.2f = %.2f Gb/s (link goodput %.2f), Jain %.4f, queue mean %.1f KB "
              "p99 %.1f KB, <= 100 KB in %zu/%zu samples, CNPs %llu, XOFF %llu\n",
              x0, x1, agg, link_goodput, jain, mean_q / 1024, q[q.size() * 99 / 100] / 1024,
              short_q, n,
              static_cast<unsigned long long>(h[2]->counters().get(Counter::np_cnp_sent)),
              static_cast<unsigned long long>(fab.sw(sw).stats().xoff_sent));
  EXPECT_GT(h[2]->counters().get(Counter::np_cnp_sent), 0u);
  EXPECT_GT(h[0]->counters().get(Counter::rp_cnp_handled), 0u);
  EXPECT_GE(agg, 0.99 * link_goodput);
  EXPECT_GE(jain, 0.99);
  EXPECT_GE(short_q, n * 9 / 10);
  EXPECT_EQ(fab.sw(sw).stats().xoff_sent, 0u);
  EXPECT_EQ(fab.sw(sw).stats().buffer_drops + fab.sw(sw).stats().headroom_drops, 0u);
}

}  // namespace
}  // namespace uroce::sim::test
