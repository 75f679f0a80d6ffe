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
 *   delay-sr     no PFC, no ECN, delay-based, selective repeat
 *   lossy        no PFC, ECN, DCQCN + delay-based, selective repeat (uroce's `lossy` profile)
 * Workloads (20 ms each, measured from 5 ms): one flow at 0.1/1/5 % random loss on every link;
 * 8:1 and 16:1 incasts with a short flow (4 KB messages, one at a time) into the same receiver;
 * a victim flow from one incast sender to an idle receiver beside an 8:1 incast.
 * Columns: workload, config, goodput_gbps (long flows into the receiver), short_p50_us,
 * short_p99_us, victim_gbps, pauses (XOFF frames), drops (switch), retrans (packets resent),
 * cnps. Deterministic (simulated time); the wall clock is not read. Usage: bench_tradeoff.
 */
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/incast.h"

namespace {

using namespace uroce;
using namespace uroce::sim;

struct Config {
  const char* name;
  bool pfc, ecn;
  CcAlgorithm algorithm;
  transport::LossRecovery recovery;
};

struct Workload {
  const char* name;
  int senders;
  double loss;
  bool short_flow, victim;
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
  s.loss = w.loss;
  s.short_bytes = w.short_flow ? 4096 : 0;
  s.victim = w.victim;
  s.run = Duration::millis(20);
  return s;
}

}  // namespace

int main() {
  using A = CcAlgorithm;
  using R = transport::LossRecovery;
  const Config configs[] = {{"lossless", true, true, A::kDcqcn, R::kGoBackN},
                            {"ecn-gbn", false, true, A::kDcqcn, R::kGoBackN},
                            {"ecn-sr", false, true, A::kDcqcn, R::kSelective},
                            {"delay-sr", false, false, A::kDelay, R::kSelective},
                            {"lossy", false, true, A::kDcqcnDelay, R::kSelective}};
  const Workload workloads[] = {
      {"loss 0.1%", 1, 0.001, false, false},       {"loss 1%", 1, 0.01, false, false},
      {"loss 5%", 1, 0.05, false, false},          {"incast 8:1 + short", 8, 0, true, false},
      {"incast 16:1 + short", 16, 0, true, false}, {"victim beside 8:1", 8, 0, false, true}};
  constexpr double kFrom = 5'000;  // us
  std::printf(
      "workload,config,goodput_gbps,short_p50_us,short_p99_us,victim_gbps,pauses,drops,retrans,"
      "cnps\n");
  int failed = 0;
  for (const Workload& w : workloads)
    for (const Config& c : configs) {
      IncastRun r(spec(c, w));
      if (!r.run()) {
        std::fprintf(stderr, "%s / %s: %s\n", w.name, c.name, r.error().c_str());
        ++failed;
        continue;
      }
      double goodput = 0;
      for (int k = 0; k < w.senders; ++k) goodput += r.mean(kFlow0 + static_cast<size_t>(k), kFrom);
      double p50 = 0, p99 = 0, victim = 0;
      size_t next = static_cast<size_t>(w.senders);
      if (w.short_flow) {
        const auto& fct = r.flow(next).completion_times();
        p50 = percentile_us(fct, 0.5);
        p99 = percentile_us(fct, 0.99);
        ++next;
      }
      if (w.victim) victim = r.mean(kFlow0 + next, kFrom);
      std::printf("%s,%s,%.2f,%.1f,%.1f,%.2f,%llu,%llu,%llu,%llu\n", w.name, c.name, goodput, p50,
                  p99, victim, static_cast<unsigned long long>(r.sw().stats().xoff_sent),
                  static_cast<unsigned long long>(r.sw().stats().buffer_drops +
                                                  r.sw().stats().headroom_drops),
                  static_cast<unsigned long long>(r.total(Counter::roce_adp_retrans)),
                  static_cast<unsigned long long>(r.total(Counter::np_cnp_sent)));
      std::fflush(stdout);
    }
  return failed ? 1 : 0;
}
