/**
 * @file bench_sim.cc
 * @brief Simulator benchmark: RC WRITE goodput over a simulated 100 Gb/s link with a 2 us
 * round trip (1 us propagation each way), lossless and at 1 % random loss in both
 * directions, the lossy goodput as a fraction of the lossless one (go-back-N baseline for
 * later work), and the simulator's own speed in simulated frames per wall-clock second.
 *
 * Usage: bench_sim --fabric16 [SIM_MS]   (16-host 2-tier topology, see run_fabric16)
 *        bench_sim [--bytes N] [--msg BYTES] [--window WRS] [--mtu IBV_MTU] [--loss P]
 *                  [--timeout T] [--seed S] [--txq FRAMES] [--recovery go-back-n|selective]
 *                  [--rto-low-us US] [--op write|read] [--ooo-placement 0|1]
 * Goodput = payload bytes / (last completion - first post) in simulated time. The wall clock
 * is read here only, to time the simulator itself. Units: bytes, Gb/s, ns.
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "cc/factory.h"
#include "dcqcn/params.h"
#include "sim/engine_host.h"
#include "sim/fabric.h"
#include "sim/rc_stream.h"
#include "sim/simulator.h"
#include "transport/engine.h"

namespace {

using namespace uroce;
using namespace uroce::sim;
using transport::QpType;

struct Options {
  uint64_t bytes = 256ull << 20;
  uint32_t msg = 65536;
  uint32_t window = 64;
  uint8_t mtu = 5;  // 4096
  double loss = 0.01;
  uint8_t timeout = 8;
  uint64_t seed = 1;
  uint32_t txq = 256;  // host TX queue, frames
  transport::LossRecovery recovery = transport::LossRecovery::kGoBackN;
  int64_t rto_low_us = 0;  ///< selective repeat's short timeout; 0: the engine's default
  StreamOp op = StreamOp::kWrite;
  bool ooo_placement = false;  ///< selective repeat places last packets out of order too
};

struct RunResult {
  double goodput_gbps = 0;
  uint64_t frames = 0;
  double wall_s = 0;
  double cpu_s = 0;  ///< process CPU time (std::clock), steadier than wall on a shared box
  uint64_t retrans = 0;
  uint64_t naks = 0;
  uint64_t timeouts = 0;
  uint64_t rto_low = 0;   ///< selective repeat: short timeouts
  uint64_t sacks = 0;     ///< selective repeat: ACKs with SACK ranges (responder)
  uint64_t deferred = 0;  ///< selective repeat: last packets placed only when retired
  std::string error;
};

MacAddr mac(int i) { return MacAddr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)}}; }
Gid gid(int i) { return Gid::from_ipv4(0xc6120001u + static_cast<uint32_t>(i)); }

RunResult run(const Options& o, double loss) {
  RunResult r;
  Simulator sim;
  LinkParams lp{
      .rate_bps = 100'000'000'000ull, .propagation = Duration::nanos(1000), .max_frames = o.txq};
  std::unique_ptr<EngineHost> h[2];
  std::unique_ptr<Link> tx[2];
  for (int i = 0; i < 2; ++i) {
    transport::EngineConfig cfg;
    cfg.mac = mac(i);
    cfg.gids = {gid(i)};
    cfg.link_speed_bps = lp.rate_bps;
    cfg.key_seed = 99 + static_cast<uint64_t>(i);
    cfg.loss_recovery = o.recovery;
    cfg.ooo_placement = o.ooo_placement;
    if (o.rto_low_us > 0) cfg.sr_rto_low = Duration::micros(o.rto_low_us);
    h[i] = std::make_unique<EngineHost>(sim, cfg, i ? "B" : "A");
    h[i]->neighbors().add(gid(1 - i), mac(1 - i));
  }
  for (int i = 0; i < 2; ++i) {
    tx[i] = std::make_unique<Link>(sim, lp, h[1 - i].get(), 0);
    h[i]->attach(tx[i].get());
    tx[i]->set_impairments(
        Impairments{.seed = o.seed * 2 + static_cast<uint64_t>(i), .loss = loss});
  }
  uint32_t pd[2], cq[2], qpn[2];
  for (int i = 0; i < 2; ++i) {
    auto& e = h[i]->engine();
    pd[i] = e.alloc_pd().value();
    cq[i] = e.create_cq(1024).value();
    transport::QpInitAttr a;
    a.type = QpType::kRc;
    a.pd = pd[i];
    a.send_cq = a.recv_cq = cq[i];
    a.max_send_wr = a.max_recv_wr = 256;
    a.max_send_sge = a.max_recv_sge = 2;
    qpn[i] = e.create_qp(a).value();
  }
  for (int i = 0; i < 2; ++i) {
    using namespace transport;
    auto& e = h[i]->engine();
    QpAttr a;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
    Status s = e.modify_qp(qpn[i], a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags);
    a = QpAttr{};
    a.qp_state = QpState::kRtr;
    a.av.dgid = gid(1 - i);
    a.path_mtu = o.mtu;
    a.dest_qp_num = qpn[1 - i];
    a.rq_psn = 0;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 1;
    if (s)
      s = e.modify_qp(qpn[i], a,
                      kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                          kAttrMaxDestRdAtomic | kAttrMinRnrTimer);
    a = QpAttr{};
    a.qp_state = QpState::kRts;
    a.sq_psn = 0;
    a.timeout = o.timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    if (s)
      s = e.modify_qp(qpn[i], a,
                      kAttrState | kAttrSqPsn | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry |
                          kAttrMaxQpRdAtomic);
    if (!s) {
      r.error = "modify_qp failed";
      return r;
    }
  }
  StreamConfig sc;
  sc.op = o.op;
  sc.total_bytes = o.bytes;
  sc.window = o.window;
  sc.sizes = {o.msg};
  sc.verify = false;
  RcStream st(sc, *h[0], pd[0], qpn[0], cq[0], *h[1], pd[1], qpn[1], cq[1]);
  auto w0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  st.start();
  bool ok = sim.run_while([&] { return !st.done(); }, Timestamp{} + Duration::seconds(600));
  auto w1 = std::chrono::steady_clock::now();
  std::clock_t c1 = std::clock();
  if (!ok || !st.error().empty()) {
    r.error = st.error().empty() ? "did not finish" : st.error();
    return r;
  }
  double secs = (st.last_completion_time() - st.first_post_time()).secs();
  r.goodput_gbps = static_cast<double>(st.bytes_completed()) * 8 / secs / 1e9;
  r.frames = tx[0]->stats().sent + tx[1]->stats().sent;
  r.wall_s = std::chrono::duration<double>(w1 - w0).count();
  r.cpu_s = static_cast<double>(c1 - c0) / CLOCKS_PER_SEC;
  r.retrans = h[0]->counters().get(Counter::roce_adp_retrans);
  r.naks = h[0]->counters().get(Counter::packet_seq_err);
  r.timeouts = h[0]->counters().get(Counter::local_ack_timeout_err);
  r.rto_low = h[0]->counters().get(Counter::sr_rto_low);
  r.sacks = h[1]->counters().get(Counter::sr_sacks_sent);
  r.deferred = h[1]->counters().get(Counter::sr_ooo_deferred);
  return r;
}

/// 16 hosts in a 2-tier topology (4 leaves of 4 hosts, one spine), every link 100 Gb/s and
/// 1 us, RED/ECN on every switch port (HPCC production thresholds 400 KB / 1.6 MB / 0.2),
/// DCQCN (nvidia mode, HPCC preset) on every host, host i streams RC WRITEs to host
/// (i + 4) % 16 so every flow crosses the spine (4:1 oversubscribed leaf uplinks).
int run_fabric16(double sim_ms) {
  constexpr int kHosts = 16, kPerLeaf = 4;
  constexpr uint64_t kRate = 100'000'000'000ull;
  Simulator sim;
  Fabric fab(sim);
  SwitchConfig sc;
  sc.ecn =
      EcnConfig{.enabled = true, .kmin_bytes = 400 * 1024, .kmax_bytes = 1600 * 1024, .pmax = 0.2};
  sc.buffer_bytes = 32ull << 20;
  LinkParams lp{.rate_bps = kRate, .propagation = Duration::nanos(1000), .max_frames = 64};
  uint32_t spine = fab.add_switch(sc);
  std::vector<uint32_t> leaf;
  for (int l = 0; l < kHosts / kPerLeaf; ++l) {
    leaf.push_back(fab.add_switch(sc));
    fab.connect_switches(leaf.back(), spine, lp);
  }
  std::vector<std::unique_ptr<cc::Factory>> cc;
  std::vector<std::unique_ptr<EngineHost>> h;
  for (int i = 0; i < kHosts; ++i) {
    cc.push_back(
        std::make_unique<cc::Factory>(dcqcn::hpcc_dcqcn_preset(static_cast<double>(kRate))));
    transport::EngineConfig cfg;
    cfg.mac = mac(i);
    cfg.gids = {gid(i)};
    cfg.link_speed_bps = kRate;
    cfg.key_seed = 7 + static_cast<uint64_t>(i);
    cfg.cc = cc.back().get();
    cfg.max_unacked_psns = 1024;
    h.push_back(std::make_unique<EngineHost>(sim, cfg, "h" + std::to_string(i)));
    for (int j = 0; j < kHosts; ++j)
      if (j != i) h.back()->neighbors().add(gid(j), mac(j));
    fab.add_host(h.back().get(), mac(i), leaf[static_cast<size_t>(i / kPerLeaf)], lp);
  }
  fab.build_routes();
  std::vector<std::unique_ptr<RcStream>> flows;
  for (int i = 0; i < kHosts; ++i) {
    int j = (i + kPerLeaf) % kHosts;
    uint32_t qpn[2], pd[2], cq[2];
    EngineHost* end[2] = {h[static_cast<size_t>(i)].get(), h[static_cast<size_t>(j)].get()};
    for (int e = 0; e < 2; ++e) {
      auto& eng = end[e]->engine();
      pd[e] = eng.alloc_pd().value();
      cq[e] = eng.create_cq(1024).value();
      transport::QpInitAttr a;
      a.type = QpType::kRc;
      a.pd = pd[e];
      a.send_cq = a.recv_cq = cq[e];
      a.max_send_wr = a.max_recv_wr = 64;
      a.max_send_sge = a.max_recv_sge = 2;
      qpn[e] = eng.create_qp(a).value();
    }
    for (int e = 0; e < 2; ++e) {
      using namespace transport;
      auto& eng = end[e]->engine();
      int peer = e ? i : j;
      QpAttr a;
      a.qp_state = QpState::kInit;
      a.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite;
      Status st =
          eng.modify_qp(qpn[e], a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags);
      a = QpAttr{};
      a.qp_state = QpState::kRtr;
      a.av.dgid = gid(peer);
      a.path_mtu = 5;
      a.dest_qp_num = qpn[1 - e];
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 1;
      if (st)
        st = eng.modify_qp(qpn[e], a,
                           kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                               kAttrMaxDestRdAtomic | kAttrMinRnrTimer);
      a = QpAttr{};
      a.qp_state = QpState::kRts;
      a.timeout = 14;
      a.max_rd_atomic = 1;
      if (st)
        st = eng.modify_qp(qpn[e], a,
                           kAttrState | kAttrSqPsn | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry |
                               kAttrMaxQpRdAtomic);
      if (!st) {
        std::printf("fabric16: modify_qp failed\n");
        return 1;
      }
    }
    StreamConfig st;
    st.op = StreamOp::kWrite;
    st.total_bytes = 1ull << 40;
    st.sizes = {65536};
    st.window = 16;
    st.verify = false;
    flows.push_back(std::make_unique<RcStream>(st, *end[0], pd[0], qpn[0], cq[0], *end[1], pd[1],
                                               qpn[1], cq[1]));
  }
  auto w0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  for (auto& f : flows) f->start();
  bool ok = sim.run_until(Timestamp{static_cast<int64_t>(sim_ms * 1e6)});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  uint64_t frames = 0, bytes = 0, cnps = 0;
  for (int i = 0; i < kHosts; ++i) frames += fab.uplink(static_cast<uint32_t>(i)).stats().sent;
  for (uint32_t s = 0; s < fab.switch_count(); ++s) frames += fab.sw(s).stats().forwarded;
  for (auto& f : flows) {
    bytes += f->bytes_completed();
    if (!f->error().empty()) ok = false;
  }
  for (auto& x : h) cnps += x->counters().get(Counter::np_cnp_sent);
  std::printf(
      "fabric16: 16 hosts, 4 leaves + 1 spine, 100 Gb/s, DCQCN (HPCC preset), %.1f ms "
      "simulated in %.2f s wall / %.2f s cpu; %llu frame hops, %.3f M hops/cpu-s; "
      "aggregate goodput %.1f Gb/s (4 x 100 Gb/s of spine downlinks), CNPs %llu%s\n",
      sim_ms, wall, cpu, static_cast<unsigned long long>(frames),
      static_cast<double>(frames) / cpu / 1e6,
      static_cast<double>(bytes) * 8 / (sim_ms / 1e3) / 1e9, static_cast<unsigned long long>(cnps),
      ok ? "" : " (ERROR)");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "--fabric16")
    return run_fabric16(argc >= 3 ? std::strtod(argv[2], nullptr) : 10.0);
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--bytes")
      o.bytes = std::strtoull(v, nullptr, 0);
    else if (k == "--msg")
      o.msg = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--window")
      o.window = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--mtu")
      o.mtu = static_cast<uint8_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--loss")
      o.loss = std::strtod(v, nullptr);
    else if (k == "--timeout")
      o.timeout = static_cast<uint8_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--seed")
      o.seed = std::strtoull(v, nullptr, 0);
    else if (k == "--txq")
      o.txq = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--recovery" && (std::string(v) == "go-back-n" || std::string(v) == "selective"))
      o.recovery = std::string(v) == "selective" ? transport::LossRecovery::kSelective
                                                 : transport::LossRecovery::kGoBackN;
    else if (k == "--rto-low-us")
      o.rto_low_us = std::strtoll(v, nullptr, 0);
    else if (k == "--ooo-placement")
      o.ooo_placement = std::strtoul(v, nullptr, 0) != 0;
    else if (k == "--op" && (std::string(v) == "write" || std::string(v) == "read"))
      o.op = std::string(v) == "read" ? StreamOp::kRead : StreamOp::kWrite;
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::printf(
      "RC %s, 100 Gb/s, 1 us propagation each way (2 us RTT), MTU %u, %u B messages, "
      "window %u, %llu bytes, local ACK timeout 4.096us*2^%u, host TX queue %u frames, "
      "recovery %s%s\n",
      o.op == StreamOp::kRead ? "READ" : "WRITE", 128u << o.mtu, o.msg, o.window,
      static_cast<unsigned long long>(o.bytes), o.timeout, o.txq,
      o.recovery == transport::LossRecovery::kSelective ? "selective" : "go-back-n",
      o.ooo_placement ? " (out-of-order placement)" : "");
  RunResult base = run(o, 0.0);
  RunResult lossy = run(o, o.loss);
  for (auto* r : {&base, &lossy}) {
    if (!r->error.empty()) {
      std::printf("error: %s\n", r->error.c_str());
      return 1;
    }
  }
  auto line = [](const char* name, const RunResult& r) {
    std::printf(
        "%-10s goodput %7.2f Gb/s  frames %9llu  retrans %8llu  nak_seq %6llu  "
        "timeouts %5llu  wall %6.2f s  cpu %6.2f s  %5.3f M frames/wall-s  "
        "%5.3f M frames/cpu-s  rto_low %llu  sacks %llu  deferred %llu\n",
        name, r.goodput_gbps, static_cast<unsigned long long>(r.frames),
        static_cast<unsigned long long>(r.retrans), static_cast<unsigned long long>(r.naks),
        static_cast<unsigned long long>(r.timeouts), r.wall_s, r.cpu_s,
        static_cast<double>(r.frames) / r.wall_s / 1e6,
        static_cast<double>(r.frames) / r.cpu_s / 1e6, static_cast<unsigned long long>(r.rto_low),
        static_cast<unsigned long long>(r.sacks), static_cast<unsigned long long>(r.deferred));
  };
  line("lossless", base);
  char name[32];
  std::snprintf(name, sizeof name, "loss %.1f%%", o.loss * 100);
  line(name, lossy);
  std::printf("goodput at %.1f%% loss = %.3f of lossless\n", o.loss * 100,
              lossy.goodput_gbps / base.goodput_gbps);
  return 0;
}
