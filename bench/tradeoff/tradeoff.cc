/**
 * @file tradeoff.cc
 * @brief Lossless or simplified RoCE, measured: the same workloads on the simulated fabric under
 * five switch and host configurations, one CSV row per pair (bench/tradeoff/run turns it into
 * docs/tradeoff.md and its plot).
 *
 * Fabric: one switch, 40 Gb/s links with 1 us propagation, 1 KB packets, a 1 MB shared buffer;
 * RED/ECN (when on) Kmin 5 KB, Kmax 200 KB, Pmax 1 %, marked at dequeue; PFC (when on) on the
 * RoCE priority, XOFF 64 KB / XON 48 KB per ingress port, 32 KB headroom. Hosts run the real
 * engine (sim/incast.h), DCQCN with the SIGCOMM'15 parameters.
 * Configurations:
 *   lossless     PFC + ECN + DCQCN, go-back-N            (classic RoCE)
 *   ecn-gbn      no PFC, ECN + DCQCN, go-back-N          (NIC "lossy RoCE")
 *   ecn-sr       no PFC, ECN + DCQCN, selective repeat
 *   delay-sr     no PFC, no ECN, delay-based from peer timestamps, selective repeat
 *   lossy        no PFC, ECN, DCQCN + delay-based (peer timestamps), selective repeat (`lossy`)
 * Workloads (20 ms each, measured from 5 ms): one flow at 0.1/1/5 % random loss on every link;
 * 8:1 and 16:1 incasts with a short flow (4 KB messages, one at a time) into the same receiver;
 * a victim flow from one incast sender to an idle receiver beside an 8:1 incast; open-loop
 * short messages (4-64 KB WRITEs, Poisson arrivals at 20 % of the link, over 8 QPs) beside a
 * 4:1 incast into the same receiver (completion times of those arriving from 5 to 18 ms); a
 * ring of 3 switches (sim/ring.h, the same switch settings on each) whose hosts each stream to
 * the host two switches on, routed clockwise the long way round: a cyclic buffer dependency.
 * Columns: workload, config, goodput_gbps (long flows into the receiver; every flow in the
 * ring), short_p50_us, short_p99_us, victim_gbps, pauses (XOFF frames), drops (switches),
 * retrans (packets resent), cnps, deadlock_us (when the ring's clockwise queues froze for good:
 * all paused, non-empty and sending nothing from then to the end of the run, at least 1 ms;
 * -1: never), failed_qps (ring streams that ended in an error).
 * Deterministic (simulated time); the wall clock is not read. Usage: bench_tradeoff.
 */
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/incast.h"
#include "sim/ring.h"

namespace {

using namespace uroce;
using namespace uroce::sim;

struct Config {
  const char* name;
  bool pfc, ecn;
  CcAlgorithm algorithm;
  transport::LossRecovery recovery;
  bool timestamps = false;  ///< peer timestamps (the delay-based control's round trips)
};

enum class Kind { kIncast, kOpenLoop, kRing };

struct Workload {
  const char* name;
  int senders;
  double loss;
  bool short_flow, victim;
  Kind kind = Kind::kIncast;
};

constexpr double kFrom = 5'000;  // us

struct Row {
  double goodput = 0, p50 = 0, p99 = 0, victim = 0;
  uint64_t pauses = 0, drops = 0, retrans = 0, cnps = 0;
  double deadlock_us = -1;
  size_t failed = 0;
};

double percentile_us(std::vector<Duration> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))].us();
}

IncastSpec spec(const Config& c, const Workload& w) {
  IncastSpec s;
  s.senders = w.senders;
  s.buffer_bytes = 1 << 20;
  s.ecn.enabled = c.ecn;
  s.pfc = PfcConfig{.enabled = c.pfc,
                    .lossless_mask = 1u << 3,
                    .xoff_bytes = 64 * 1024,
                    .xon_bytes = 48 * 1024,
                    .headroom_bytes = 32 * 1024};
  s.algorithm = c.algorithm;
  s.delay.base_rtt = Duration::micros(5);  // the path through empty queues (delay_incast_test)
  s.recovery = c.recovery;
  s.peer_timestamps = c.timestamps;
  s.loss = w.loss;
  s.short_bytes = w.short_flow ? 4096 : 0;
  s.victim = w.victim;
  s.run = Duration::millis(20);
  if (w.kind == Kind::kOpenLoop)
    s.open_loop = OpenLoopConfig{.load = 0.2, .seed = 11, .stop = Duration::millis(18)};
  return s;
}

bool run_incast(const Config& c, const Workload& w, Row* out) {
  IncastRun r(spec(c, w));
  if (!r.run()) {
    std::fprintf(stderr, "%s / %s: %s\n", w.name, c.name, r.error().c_str());
    return false;
  }
  for (int k = 0; k < w.senders; ++k)
    out->goodput += r.mean(kFlow0 + static_cast<size_t>(k), kFrom);
  size_t next = static_cast<size_t>(w.senders);
  if (w.short_flow) {
    const auto& fct = r.flow(next).completion_times();
    out->p50 = percentile_us(fct, 0.5);
    out->p99 = percentile_us(fct, 0.99);
    ++next;
  }
  if (const OpenLoopWrites* o = r.open_loop()) {
    const Timestamp from = Timestamp{} + Duration::micros(static_cast<int64_t>(kFrom));
    if (size_t left = o->unfinished(from); left > 0) {
      std::fprintf(stderr, "%s / %s: %zu open-loop messages unfinished\n", w.name, c.name, left);
      return false;
    }
    const auto fct = o->completion_times(from);
    out->p50 = percentile_us(fct, 0.5);
    out->p99 = percentile_us(fct, 0.99);
  }
  if (w.victim) out->victim = r.mean(kFlow0 + next, kFrom);
  out->pauses = r.sw().stats().xoff_sent;
  out->drops = r.sw().stats().buffer_drops + r.sw().stats().headroom_drops;
  out->retrans = r.total(Counter::roce_adp_retrans);
  out->cnps = r.total(Counter::np_cnp_sent);
  return true;
}

/// The ring: the switch and host settings of spec(), 3 switches, long way round. With PFC a
/// deadlock is the expected outcome; without, no stream may fail and nothing may freeze.
bool run_ring(const Config& c, const Workload& w, Row* out) {
  const IncastSpec is = spec(c, w);
  RingSpec s;
  s.ecn = is.ecn;
  s.pfc = is.pfc;
  s.algorithm = is.algorithm;
  s.delay.target_queue = is.delay.target_queue;  // the base round trip is the ring's own
  s.recovery = is.recovery;
  s.peer_timestamps = is.peer_timestamps;
  s.buffer_bytes = is.buffer_bytes;
  s.run = is.run;
  RingRun r(s);
  if (!r.run()) {
    std::fprintf(stderr, "%s / %s: %s\n", w.name, c.name, r.error().c_str());
    return false;
  }
  out->goodput = r.goodput_gbps(kFrom);
  out->pauses = r.sum(&SwitchStats::xoff_sent);
  out->drops = r.drops();
  out->retrans = r.total(Counter::roce_adp_retrans);
  out->cnps = r.total(Counter::np_cnp_sent);
  out->failed = r.failed_flows();
  // Frozen from some check to the end of the run (the last check is at the end), 1 ms at least.
  if (r.watch().deadlocked(Duration::millis(1)))
    out->deadlock_us = static_cast<double>(r.watch().frozen_since().ns) / 1e3;
  if (!c.pfc && (out->failed > 0 || out->deadlock_us >= 0)) {
    std::fprintf(stderr, "%s / %s: %zu streams failed or froze without PFC\n", w.name, c.name,
                 out->failed);
    return false;
  }
  return true;
}

}  // namespace

int main() {
  using A = CcAlgorithm;
  using R = transport::LossRecovery;
  const Config configs[] = {{"lossless", true, true, A::kDcqcn, R::kGoBackN},
                            {"ecn-gbn", false, true, A::kDcqcn, R::kGoBackN},
                            {"ecn-sr", false, true, A::kDcqcn, R::kSelective},
                            {"delay-sr", false, false, A::kDelay, R::kSelective, true},
                            {"lossy", false, true, A::kDcqcnDelay, R::kSelective, true}};
  const Workload workloads[] = {{"loss 0.1%", 1, 0.001, false, false},
                                {"loss 1%", 1, 0.01, false, false},
                                {"loss 5%", 1, 0.05, false, false},
                                {"incast 8:1 + short", 8, 0, true, false},
                                {"incast 16:1 + short", 16, 0, true, false},
                                {"victim beside 8:1", 8, 0, false, true},
                                {"open-loop short + 4:1", 4, 0, false, false, Kind::kOpenLoop},
                                {"ring deadlock", 3, 0, false, false, Kind::kRing}};
  std::printf(
      "workload,config,goodput_gbps,short_p50_us,short_p99_us,victim_gbps,pauses,drops,retrans,"
      "cnps,deadlock_us,failed_qps\n");
  int failed = 0;
  for (const Workload& w : workloads)
    for (const Config& c : configs) {
      Row r;
      if (!(w.kind == Kind::kRing ? run_ring(c, w, &r) : run_incast(c, w, &r))) {
        ++failed;
        continue;
      }
      std::printf("%s,%s,%.2f,%.1f,%.1f,%.2f,%llu,%llu,%llu,%llu,%.1f,%zu\n", w.name, c.name,
                  r.goodput, r.p50, r.p99, r.victim, static_cast<unsigned long long>(r.pauses),
                  static_cast<unsigned long long>(r.drops),
                  static_cast<unsigned long long>(r.retrans),
                  static_cast<unsigned long long>(r.cnps), r.deadlock_us, r.failed);
      std::fflush(stdout);
    }
  return failed ? 1 : 0;
}
