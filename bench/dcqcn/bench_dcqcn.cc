/**
 * @file bench_dcqcn.cc
 * @brief Cost per call of the DCQCN reaction point (on_cnp, on_timer, on_packet_sent), the
 * pacer, the NP, and the PFC RX/scheduler hot calls. Units: ns per call (Google Benchmark).
 * Time is injected (a counter), as in the library's contract.
 */
#include <benchmark/benchmark.h>

#include "dcqcn/notification_point.h"
#include "dcqcn/pacer.h"
#include "dcqcn/pfc_rx.h"
#include "dcqcn/reaction_point.h"
#include "dcqcn/tx_scheduler.h"

namespace uroce::dcqcn {
namespace {

// on_cnp on an active nvidia RP, one CNP per 4 µs monitor period, plus the decrease check it
// schedules (the on_timer that applies it).
void BM_NvidiaRpCnpAndCut(benchmark::State& st) {
  NvidiaRp rp(nvidia_firmware_preset(), 100e9);
  int64_t t = 0;
  for (auto _ : st) {
    rp.on_cnp(Timestamp{t});
    rp.on_timer(rp.next_deadline());
    t += 4000;
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_NvidiaRpCnpAndCut);

// on_cnp alone, coalesced inside one monitor period (the common case under incast).
void BM_NvidiaRpCnpCoalesced(benchmark::State& st) {
  NvidiaRp rp(nvidia_firmware_preset(), 100e9);
  rp.on_cnp(Timestamp{0});
  int64_t t = 1;
  for (auto _ : st) {
    rp.on_cnp(Timestamp{t % 3000 + 1});  // stays before the 4 µs check
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_NvidiaRpCnpCoalesced);

// One rate-increase timer event (nvidia, byte counter off).
void BM_NvidiaRpTimerIncrease(benchmark::State& st) {
  DcqcnParams p = hpcc_dcqcn_preset(100e9);
  p.release_at_line_rate = false;
  NvidiaRp rp(p, 100e9);
  rp.on_cnp(Timestamp{0});
  rp.on_timer(Timestamp{4000});
  for (auto _ : st) {
    rp.on_timer(rp.next_deadline());
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_NvidiaRpTimerIncrease);

void BM_PaperRpCnp(benchmark::State& st) {
  PaperRp rp(paper_preset(), 40e9);
  int64_t t = 0;
  for (auto _ : st) {
    rp.on_cnp(Timestamp{t});
    t += 50000;
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_PaperRpCnp);

void BM_PaperRpTimerIncrease(benchmark::State& st) {
  DcqcnParams p = paper_preset();
  p.release_at_line_rate = false;
  PaperRp rp(p, 40e9);
  rp.on_cnp(Timestamp{0});
  for (auto _ : st) {
    rp.on_timer(rp.next_deadline());
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_PaperRpTimerIncrease);

// The per-packet call on the data path: on_packet_sent (byte counter) of an active paper RP.
void BM_PaperRpPacketSent(benchmark::State& st) {
  DcqcnParams p = paper_preset();
  p.release_at_line_rate = false;  // keep the byte counter live
  PaperRp rp(p, 40e9);
  rp.on_cnp(Timestamp{0});
  int64_t t = 0;
  for (auto _ : st) {
    rp.on_packet_sent(1024, Timestamp{t});
    t += 1;  // stays far from the 55 µs timer for ~55k iterations, then timers run as due
    benchmark::DoNotOptimize(rp.rate_bps());
  }
}
BENCHMARK(BM_PaperRpPacketSent);

// Pacer: earliest_send_time + on_sent per frame.
void BM_PacerPerFrame(benchmark::State& st) {
  Pacer pc;
  pc.set_rate(50.7767e9);
  Timestamp t{0};
  for (auto _ : st) {
    t = pc.earliest_send_time(4096, t);
    pc.on_sent(4096, t);
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_PacerPerFrame);

void BM_NpOnCeMarked(benchmark::State& st) {
  NotificationPoint np(Duration::micros(4));
  int64_t t = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(np.on_ce_marked(Timestamp{t}));
    t += 100;
  }
}
BENCHMARK(BM_NpOnCeMarked);

void BM_PfcCanStartFrame(benchmark::State& st) {
  PfcCounters c;
  PfcRx rx(100'000'000'000ull, {}, &c);
  wire::PauseFrame f;
  f.class_enable = 1u << 3;
  f.quanta[3] = 0xFFFF;
  rx.on_pause_frame(f, Timestamp{0});
  int64_t t = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(rx.can_start_frame(3, Timestamp{t}));
    t = (t + 7) % 300000;
  }
}
BENCHMARK(BM_PfcCanStartFrame);

void BM_TxSchedulerPick(benchmark::State& st) {
  TxScheduler s;
  std::array<uint32_t, kNumPriorities> h{};
  h[0] = 1500;
  h[3] = 4096;
  for (auto _ : st) benchmark::DoNotOptimize(s.pick(h, nullptr, Timestamp{}));
}
BENCHMARK(BM_TxSchedulerPick);

}  // namespace
}  // namespace uroce::dcqcn

BENCHMARK_MAIN();
