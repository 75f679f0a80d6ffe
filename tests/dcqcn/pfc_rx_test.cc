/**
 * @file pfc_rx_test.cc
 * @brief Honouring PFC on TX and the pause-storm watchdog: the exact timings of docs/dcqcn-pfc.md
 * §6 item 5 and the semantics of §4.2 / §4.3, on injected time.
 */
#include "dcqcn/pfc_rx.h"

#include <gtest/gtest.h>

#include <vector>

#include "dcqcn/tx_scheduler.h"

namespace uroce::dcqcn {
namespace {

constexpr uint64_t k100G = 100'000'000'000ull;
Timestamp us(double v) { return Timestamp{static_cast<int64_t>(v * 1000)}; }

wire::PauseFrame xoff(uint8_t prio, uint16_t quanta = 0xFFFF) {
  wire::PauseFrame f;
  f.class_enable = static_cast<uint8_t>(1u << prio);
  f.quanta[prio] = quanta;
  return f;
}
wire::PauseFrame xon(uint8_t prio) { return xoff(prio, 0); }

/// A 100G port that always has frames on the priorities in `backlogged` (4096-byte frames:
/// 327.68 ns each), scheduled by a TxScheduler that honours `rx`. Records every frame start.
struct PortSim {
  PfcRx* rx;
  TxScheduler sched;
  uint8_t backlogged;
  Timestamp free_at{0};  ///< the link finishes the current frame
  std::vector<std::pair<Timestamp, uint8_t>> starts;

  /// Runs the link until `end`; frames in progress at `end` complete later.
  void run_until(Timestamp end) {
    std::array<uint32_t, kNumPriorities> heads{};
    for (int p = 0; p < kNumPriorities; ++p) heads[p] = (backlogged >> p & 1) ? 4096 : 0;
    while (free_at < end) {
      auto p = sched.pick(heads, rx, free_at);
      if (!p) {  // everything paused: wait for the next pause expiry
        free_at = std::min(end, rx->next_deadline());
        continue;
      }
      starts.push_back({free_at, *p});
      free_at = free_at + Duration::nanos(328);  // 4096 B at 100 Gb/s, rounded up
    }
  }
  /// First start of `prio` at or after `t`.
  Timestamp first_start(uint8_t prio, Timestamp t) const {
    for (auto& [at, p] : starts)
      if (p == prio && at >= t) return at;
    return Timestamp::never();
  }
  size_t count(uint8_t prio, Timestamp from, Timestamp to) const {
    size_t n = 0;
    for (auto& [at, p] : starts) n += (p == prio && at >= from && at < to);
    return n;
  }
};

// §6 item 5: XOFF on priority 3 with 0xFFFF at 100 Gb/s silences priority-3 TX for
// 335.5392 µs ± one frame time (the frame in progress completes); priorities 0 and 6 (CNP)
// keep sending throughout.
TEST(PfcRx, MaxQuantaSilencesPrio3For335us) {
  PfcCounters c;
  PfcRx rx(k100G, {}, &c);
  PortSim sim{&rx, TxScheduler{}, 1u << 3};
  const Timestamp t0 = us(10.1);  // mid-frame
  sim.run_until(t0);
  rx.on_pause_frame(xoff(3), t0);
  sim.run_until(us(1000));
  const Timestamp resume = sim.first_start(3, t0);
  const double gap_us = (resume - t0).us();
  EXPECT_GE(gap_us, 335.5392);
  EXPECT_LE(gap_us, 335.5392 + 0.328);  // one 4096-byte frame time
  EXPECT_EQ(sim.count(3, t0 + Duration::nanos(328), resume), 0u);
  EXPECT_EQ(c.rx_prio_pause[3], 1u);
  EXPECT_EQ(c.rx_prio_pause_transition[3], 1u);  // expiry ends the pause
  EXPECT_EQ(c.rx_prio_pause_duration[3], 335u);

  // Same with priorities 0 and 6 backlogged too: they are not paused.
  PfcCounters c2;
  PfcRx rx2(k100G, {}, &c2);
  PortSim sim2{&rx2, TxScheduler{}, (1u << 3) | (1u << 0) | (1u << 6)};
  sim2.run_until(t0);
  rx2.on_pause_frame(xoff(3), t0);
  sim2.run_until(us(1000));
  const Timestamp pause_end = t0 + Duration::nanos(335540);
  EXPECT_EQ(sim2.count(3, t0 + Duration::nanos(328), pause_end), 0u);
  // Strict CNP class takes the whole link while backlogged; prio 0 is WRR. Make 6 idle to see 0.
  EXPECT_GT(sim2.count(6, t0, pause_end), 1000u);
  EXPECT_TRUE(rx2.can_start_frame(0, t0 + Duration::micros(1)));
  EXPECT_TRUE(rx2.can_start_frame(6, t0 + Duration::micros(1)));
  PfcCounters c3;
  PfcRx rx3(k100G, {}, &c3);
  PortSim sim3{&rx3, TxScheduler{}, (1u << 3) | (1u << 0)};
  sim3.run_until(t0);
  rx3.on_pause_frame(xoff(3), t0);
  sim3.run_until(us(1000));
  // While 3 is paused, prio 0 gets the whole link: ≈ 335.5 / 0.328 frames.
  EXPECT_GE(sim3.count(0, t0, pause_end), 1020u);
  EXPECT_EQ(sim3.count(3, t0 + Duration::nanos(328), pause_end), 0u);
}

// §6 item 5: XON at +50 µs resumes at once; rx_prio3_pause_transition = 1, duration ≈ 50 µs.
TEST(PfcRx, XonResumesImmediately) {
  PfcCounters c;
  PfcRx rx(k100G, {}, &c);
  rx.on_pause_frame(xoff(3), us(0));
  EXPECT_FALSE(rx.can_start_frame(3, us(49.999)));
  rx.on_pause_frame(xon(3), us(50));
  EXPECT_TRUE(rx.can_start_frame(3, us(50)));
  EXPECT_EQ(c.rx_prio_pause_transition[3], 1u);
  EXPECT_EQ(c.rx_prio_pause_duration[3], 50u);
  EXPECT_EQ(c.rx_prio_pause[3], 2u);  // XOFF and XON both name priority 3
  EXPECT_EQ(rx.next_deadline(), Timestamp::never());
  rx.on_timer(us(1000));  // the old 335 µs expiry must not count a second transition
  EXPECT_EQ(c.rx_prio_pause_transition[3], 1u);
  EXPECT_EQ(c.rx_prio_pause_duration[3], 50u);
}

// §4.2: a new frame replaces the timer, never accumulates; a shorter one shortens the pause.
TEST(PfcRx, NewFrameReplacesTimer) {
  PfcCounters c;
  PfcRx rx(k100G, {}, &c);
  rx.on_pause_frame(xoff(3), us(0));
  rx.on_pause_frame(xoff(3, 1000), us(10));  // 1000 quanta = 5.12 µs
  EXPECT_EQ(rx.paused_until(3), us(10) + Duration::nanos(5120));
  EXPECT_FALSE(rx.can_start_frame(3, us(15.119)));
  EXPECT_TRUE(rx.can_start_frame(3, us(15.12)));
  EXPECT_EQ(c.rx_prio_pause_transition[3], 1u);
}

// §4.2: 802.3x PAUSE pauses every priority, including the CNP class.
TEST(PfcRx, GlobalPausePausesAll) {
  PfcCounters c;
  PfcRx rx(k100G, {}, &c);
  wire::PauseFrame g;
  g.global = true;
  g.class_enable = 0xFF;
  g.quanta.fill(100);  // 512 ns
  rx.on_pause_frame(g, us(0));
  for (uint8_t p = 0; p < 8; ++p) EXPECT_FALSE(rx.can_start_frame(p, us(0.5))) << int(p);
  for (uint8_t p = 0; p < 8; ++p) EXPECT_TRUE(rx.can_start_frame(p, us(0.512))) << int(p);
  EXPECT_EQ(c.rx_global_pause, 1u);
  EXPECT_EQ(c.rx_prio_pause[0], 0u);
}

// 802.1Qbb: pause on a priority without PFC enabled locally is counted, not honoured.
TEST(PfcRx, PriorityWithoutPfcIsNotPaused) {
  PfcCounters c;
  PfcRx rx(k100G, {}, &c);
  rx.set_honoured_mask(1u << 3);
  wire::PauseFrame f = xoff(3);
  f.class_enable |= 1u << 0;
  f.quanta[0] = 0xFFFF;
  rx.on_pause_frame(f, us(0));
  EXPECT_FALSE(rx.can_start_frame(3, us(1)));
  EXPECT_TRUE(rx.can_start_frame(0, us(1)));
  EXPECT_EQ(c.rx_prio_pause[0], 1u);
  EXPECT_EQ(c.rx_prio_pause_duration[0], 0u);
}

/// Refreshes XOFF on priority 3 every 150 µs from 0 up to `end`, checking at every step that
/// priority 3 stays paused. Runs the watchdog at its deadlines in between.
void refresh_until(PfcRx& rx, Timestamp end) {
  for (Timestamp t{0}; t <= end; t = t + Duration::micros(150)) {
    while (rx.next_deadline() < t) rx.on_timer(rx.next_deadline());
    rx.on_pause_frame(xoff(3), t);
    ASSERT_GT(rx.paused_until(3), t + Duration::micros(150));  // paused to the next refresh
  }
}

// §6 item 5: refresh every 150 µs for 10 ms keeps priority 3 paused; the T_detect = 200 ms
// watchdog does not fire at 10 ms, and fires at 200 ms of continuous pause, not before.
TEST(PfcRx, RefreshKeepsPausedAndWatchdogFiresAtDetect) {
  PfcCounters c;
  PfcWatchdogConfig wd;  // detect 200 ms, warning 85 % = 170 ms
  PfcRx rx(k100G, wd, &c);
  refresh_until(rx, Timestamp{Duration::millis(10).ns});
  rx.on_timer(Timestamp{Duration::millis(10).ns});
  EXPECT_EQ(c.tx_pause_storm_warning_events, 0u);
  EXPECT_EQ(c.tx_pause_storm_error_events, 0u);
  EXPECT_TRUE(rx.take_events().empty());
  EXPECT_GE(c.rx_prio_pause_duration[3], 10000u);
  EXPECT_EQ(c.rx_prio_pause_transition[3], 0u);

  // Keep refreshing until just before 200 ms: the warning (170 ms) has fired, the error not.
  PfcCounters c2;
  PfcRx rx2(k100G, wd, &c2);
  refresh_until(rx2, Timestamp{Duration::millis(199).ns + 950'000});  // last refresh 199.95 ms
  rx2.on_timer(Timestamp{Duration::millis(200).ns - 1});
  EXPECT_EQ(c2.tx_pause_storm_warning_events, 1u);
  EXPECT_EQ(c2.tx_pause_storm_error_events, 0u);
  auto ev = rx2.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, PfcEventKind::kStormWarning);
  EXPECT_EQ(ev[0].at, Timestamp{Duration::millis(170).ns});
  EXPECT_EQ(rx2.next_deadline(), Timestamp{Duration::millis(200).ns});
  rx2.on_timer(Timestamp{Duration::millis(200).ns});
  EXPECT_EQ(c2.tx_pause_storm_error_events, 1u);
  ev = rx2.take_events();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, PfcEventKind::kStormError);
  EXPECT_EQ(ev[0].prio, 3);
  EXPECT_EQ(ev[0].at, Timestamp{Duration::millis(200).ns});
  EXPECT_FALSE(rx2.can_start_frame(3, Timestamp{Duration::millis(200).ns}));  // still honoured
}

// A refresh arriving exactly when the previous pause expires keeps one continuous pause.
TEST(PfcRx, RefreshAtExpiryIsContinuous) {
  PfcCounters c;
  PfcWatchdogConfig wd;
  wd.detect = Duration::micros(20);
  PfcRx rx(k100G, wd, &c);
  for (int i = 0; i < 6; ++i)
    rx.on_pause_frame(xoff(3, 1000), Timestamp{i * 5120});  // 5.12 µs each
  EXPECT_EQ(c.rx_prio_pause_transition[3], 0u);
  EXPECT_EQ(c.tx_pause_storm_error_events, 1u);  // continuous since 0: fires at 20 µs
  rx.on_timer(us(100));
  EXPECT_EQ(c.rx_prio_pause_transition[3], 1u);
  EXPECT_EQ(c.rx_prio_pause_duration[3], 30u);  // 6 × 5.12 µs = 30.72
}

// A pause that lapses (no refresh before expiry) restarts the continuous-pause clock.
TEST(PfcRx, GapInRefreshResetsWatchdog) {
  PfcCounters c;
  PfcWatchdogConfig wd;
  wd.detect = Duration::millis(1);
  PfcRx rx(k100G, wd, &c);
  for (int i = 0; i < 3; ++i) rx.on_pause_frame(xoff(3), us(i * 300));  // paused to 935.5 µs
  rx.on_pause_frame(xoff(3), us(1000));  // gap: a new continuous pause from 1000 µs
  rx.on_timer(us(1900));
  EXPECT_EQ(c.tx_pause_storm_error_events, 0u);
  EXPECT_EQ(c.rx_prio_pause_transition[3], 2u);  // the lapse at 935.5 µs and the end at 1335.5
}

// A storm refreshed every 300 µs on the link (each XOFF lasts 335.5 µs at 100 Gb/s), read by a
// poller that looks only every 2 ms (descheduled on a loaded host) while TX checks the pause
// in between: each pause lapses by the clock before the poller reads its refresh. Told when
// it last looked (seen_until), the watchdog sees one continuous pause and fires at detect
// after the first read; told nothing (read = arrived), it sees lapses and never fires.
TEST(PfcRx, PollerGapsDoNotBreakAStorm) {
  for (bool told : {true, false}) {
    PfcCounters c;
    PfcWatchdogConfig wd;
    wd.detect = Duration::millis(20);  // warning at 17 ms
    PfcRx rx(k100G, wd, &c);
    Timestamp last_poll{0};
    int64_t next_xoff = 0;
    for (int64_t poll = 2000; poll <= 40000; poll += 2000) {
      for (int64_t t = last_poll.ns / 1000 + 100; t < poll; t += 100)
        rx.can_start_frame(3, us(static_cast<double>(t)));  // TX looks between polls
      for (; next_xoff <= poll; next_xoff += 300)
        rx.on_pause_frame(xoff(3), us(static_cast<double>(poll)),
                          told ? last_poll : Timestamp::never());
      last_poll = us(static_cast<double>(poll));
    }
    rx.on_timer(us(40000));
    SCOPED_TRACE(told ? "seen_until given" : "read time only");
    EXPECT_EQ(c.tx_pause_storm_warning_events, told ? 1u : 0u);
    EXPECT_EQ(c.tx_pause_storm_error_events, told ? 1u : 0u);
    if (told) {
      auto ev = rx.take_events();
      ASSERT_EQ(ev.size(), 2u);
      EXPECT_EQ(ev[1].kind, PfcEventKind::kStormError);
      EXPECT_EQ(ev[1].at, us(2000 + 20000));  // detect after the first read
    }
  }
}

// A lapse the poller did see (it looked after the pause had ended and found nothing) is a
// gap on the link: the refresh after it starts a new continuous pause, as before.
TEST(PfcRx, SeenLapseResetsWatchdog) {
  PfcCounters c;
  PfcWatchdogConfig wd;
  wd.detect = Duration::millis(1);
  PfcRx rx(k100G, wd, &c);
  rx.on_pause_frame(xoff(3), us(0), us(0));      // paused to 335.5 µs
  rx.on_pause_frame(xoff(3), us(900), us(400));  // looked at 400 µs, after the lapse
  rx.on_timer(us(1800));
  EXPECT_EQ(c.tx_pause_storm_error_events, 0u);
  EXPECT_EQ(c.rx_prio_pause_transition[3], 2u);
}

// §4.3 item 1: with ignore_pause the error stops honouring pause on that priority until no
// XOFF has arrived for T_restore; other priorities are untouched.
TEST(PfcRx, WatchdogIgnoresPauseUntilRestore) {
  PfcCounters c;
  PfcWatchdogConfig wd;
  wd.detect = Duration::millis(1);
  wd.restore = Duration::millis(2);
  wd.ignore_pause = true;
  PfcRx rx(k100G, wd, &c);
  Timestamp t{0};
  for (; t <= us(2000); t = t + Duration::micros(100)) rx.on_pause_frame(xoff(3), t);
  // Error at 1 ms; from then on priority 3 may send although XOFFs keep coming.
  EXPECT_TRUE(rx.ignoring(3));
  EXPECT_TRUE(rx.can_start_frame(3, us(2000)));
  EXPECT_EQ(c.tx_pause_storm_error_events, 1u);
  // Last XOFF at 2000 µs: its pause lapses at 2335.54 µs; honour again at 4000 µs.
  EXPECT_EQ(rx.next_deadline(), us(2000) + Duration::nanos(335540));
  rx.on_timer(us(2500));
  EXPECT_EQ(rx.next_deadline(), us(4000));
  rx.on_timer(us(3999));
  EXPECT_TRUE(rx.ignoring(3));
  rx.on_timer(us(4000));
  EXPECT_FALSE(rx.ignoring(3));
  auto ev = rx.take_events();
  ASSERT_EQ(ev.size(), 3u);  // warning, error, restored
  EXPECT_EQ(ev[2].kind, PfcEventKind::kStormRestored);
  EXPECT_EQ(ev[2].at, us(4000));
  rx.on_pause_frame(xoff(3), us(4001));
  EXPECT_FALSE(rx.can_start_frame(3, us(4002)));
}

}  // namespace
}  // namespace uroce::dcqcn
