/**
 * @file bench_sim.cc
 * @brief Simulator benchmark: RC WRITE goodput over a simulated 100 Gb/s link with a 2 us
 * round trip (1 us propagation each way), lossless and at 1 % random loss in both
 * directions, the lossy goodput as a fraction of the lossless one (go-back-N baseline for
 * later work), and the simulator's own speed in simulated frames per wall-clock second.
 *
 * Usage: bench_sim [--bytes N] [--msg BYTES] [--window WRS] [--mtu IBV_MTU] [--loss P]
 *                  [--timeout T] [--seed S] [--txq FRAMES]
 * Goodput = payload bytes / (last completion - first post) in simulated time. The wall clock
 * is read here only, to time the simulator itself. Units: bytes, Gb/s, ns.
 */
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/engine_host.h"
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
};

struct RunResult {
  double goodput_gbps = 0;
  uint64_t frames = 0;
  double wall_s = 0;
  double cpu_s = 0;  ///< process CPU time (std::clock), steadier than wall on a shared box
  uint64_t retrans = 0;
  uint64_t naks = 0;
  uint64_t timeouts = 0;
  std::string error;
};

MacAddr mac(int i) { return MacAddr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)}}; }
Gid gid(int i) { return Gid::from_ipv4(0xc6120001u + static_cast<uint32_t>(i)); }

RunResult run(const Options& o, double loss) {
  RunResult r;
  Simulator sim;
  LinkParams lp{.rate_bps = 100'000'000'000ull, .propagation = Duration::nanos(1000),
                .max_frames = o.txq};
  std::unique_ptr<EngineHost> h[2];
  std::unique_ptr<Link> tx[2];
  for (int i = 0; i < 2; ++i) {
    transport::EngineConfig cfg;
    cfg.mac = mac(i);
    cfg.gids = {gid(i)};
    cfg.link_speed_bps = lp.rate_bps;
    cfg.key_seed = 99 + static_cast<uint64_t>(i);
    h[i] = std::make_unique<EngineHost>(sim, cfg, i ? "B" : "A");
    h[i]->neighbors().add(gid(1 - i), mac(1 - i));
  }
  for (int i = 0; i < 2; ++i) {
    tx[i] = std::make_unique<Link>(sim, lp, h[1 - i].get(), 0);
    h[i]->attach(tx[i].get());
    tx[i]->set_impairments(Impairments{.seed = o.seed * 2 + static_cast<uint64_t>(i), .loss = loss});
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
    if (s) s = e.modify_qp(qpn[i], a, kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn |
                                          kAttrRqPsn | kAttrMaxDestRdAtomic | kAttrMinRnrTimer);
    a = QpAttr{};
    a.qp_state = QpState::kRts;
    a.sq_psn = 0;
    a.timeout = o.timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    if (s) s = e.modify_qp(qpn[i], a, kAttrState | kAttrSqPsn | kAttrTimeout | kAttrRetryCnt |
                                          kAttrRnrRetry | kAttrMaxQpRdAtomic);
    if (!s) {
      r.error = "modify_qp failed";
      return r;
    }
  }
  StreamConfig sc;
  sc.op = StreamOp::kWrite;
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
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--bytes") o.bytes = std::strtoull(v, nullptr, 0);
    else if (k == "--msg") o.msg = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--window") o.window = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--mtu") o.mtu = static_cast<uint8_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--loss") o.loss = std::strtod(v, nullptr);
    else if (k == "--timeout") o.timeout = static_cast<uint8_t>(std::strtoul(v, nullptr, 0));
    else if (k == "--seed") o.seed = std::strtoull(v, nullptr, 0);
    else if (k == "--txq") o.txq = static_cast<uint32_t>(std::strtoul(v, nullptr, 0));
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("RC WRITE, 100 Gb/s, 1 us propagation each way (2 us RTT), MTU %u, %u B messages, "
              "window %u, %llu bytes, local ACK timeout 4.096us*2^%u, host TX queue %u frames\n",
              128u << o.mtu, o.msg, o.window, static_cast<unsigned long long>(o.bytes), o.timeout,
              o.txq);
  RunResult base = run(o, 0.0);
  RunResult lossy = run(o, o.loss);
  for (auto* r : {&base, &lossy}) {
    if (!r->error.empty()) {
      std::printf("error: %s\n", r->error.c_str());
      return 1;
    }
  }
  auto line = [](const char* name, const RunResult& r) {
    std::printf("%-10s goodput %7.2f Gb/s  frames %9llu  retrans %8llu  nak_seq %6llu  "
                "timeouts %5llu  wall %6.2f s  cpu %6.2f s  %5.3f M frames/wall-s  "
                "%5.3f M frames/cpu-s\n",
                name, r.goodput_gbps, static_cast<unsigned long long>(r.frames),
                static_cast<unsigned long long>(r.retrans), static_cast<unsigned long long>(r.naks),
                static_cast<unsigned long long>(r.timeouts), r.wall_s, r.cpu_s,
                static_cast<double>(r.frames) / r.wall_s / 1e6,
                static_cast<double>(r.frames) / r.cpu_s / 1e6);
  };
  line("lossless", base);
  char name[32];
  std::snprintf(name, sizeof name, "loss %.1f%%", o.loss * 100);
  line(name, lossy);
  std::printf("goodput at %.1f%% loss = %.3f of lossless\n", o.loss * 100,
              lossy.goodput_gbps / base.goodput_gbps);
  return 0;
}
