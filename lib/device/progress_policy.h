/**
 * @file progress_policy.h
 * @brief When a device's progress thread steps the engine, spins, yields or sleeps, and for how
 * long: a sans-IO policy driven by injected time and by what the application and the last
 * engine step did (docs/design.md, "Threads and progress").
 *
 * The thread that owns it (lib/device/runtime.cc) reads the clock, asks the policy, and does what
 * the decision says. Phases, chosen from the application's calls (the time of its last post or
 * poll):
 *  - driving:   it called less than kAppDriving ago (a post/poll loop): its calls make progress,
 *               so the thread only looks again later (kFollowUpSleep, doubling every 4 looks
 *               up to kDrivingMaxSleep); the same when an application call holds the engine;
 *  - follow-up: it stopped calling less than kFollowUp ago (it spins on memory for the peer's
 *               WRITE, as ib_write_lat does, or computes), or its threads keep the one CPU the
 *               process is pinned to busy: the thread steps, then sleeps kFollowUpSleep
 *               (spinning would take the core from the application, which the scheduler then
 *               lets run for a whole slice);
 *  - alone:     the thread drives the engine itself: steps again at once while there is work;
 *               when idle backs off: spins (kSpinRounds), yields (kYieldRounds), then sleeps
 *               doubling from 1 us to kMaxSleep; kDeepSleep after kDeepIdle without work,
 *               kDeeperSleep after kDeeperIdle.
 * A sleep never goes past the engine's next deadline. Every kStatsRatePeriod a step waits for
 * the engine lock so the statistics are refreshed even while the application drives.
 *
 * Application-driven progress (a verbs call stepping the engine itself) takes its bounds from
 * here too: kRxBurst, kDriveRounds, kPostRxGap.
 *
 * Units: Timestamp/Duration (ns). Never reads a clock, sleeps or locks.
 */
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "common/time.h"

namespace uroce::device {

// Measurements are in bench/RESULTS.md under the heading named; "one at a time" below is its
// section "the progress thread's constants one at a time". Those in ProgressTuning can be set
// per device ([device.progress]); `bench/progress KEY VALUES` measures them one at a time. On
// a shared 2-vCPU machine no value tried beat its default by more than the spread between
// runs, so each constant is set by what it costs: a pause ~20-25 ns, a yield 1.4-4 us
// (bench/raw/poll_costs), a sleep and wake-up at least ~30 us of latency and ~15 us of CPU
// (bench/raw/timer_wake, bench/verbs/qp_footprint), all in that section.

/// Idle rounds spun (a pause instruction and an empty step each) before yielding: a frame
/// arriving right after a burst is picked up without a scheduler call. 200 rounds are a few
/// microseconds, a small fraction of the ~30 us a sleep costs before the thread runs again.
/// One at a time: 0, 200 and 2000 within the spread.
inline constexpr int kSpinRounds = 200;
/// Idle rounds yielded to the scheduler before sleeping: lets a runnable application thread
/// have the CPU while the thread stays awake. 16 yields take 20-70 us (1.4-4 us each, more
/// when other threads run), about one wake-up's cost, so the thread waits about as long awake
/// as a sleep would cost it before it starts to sleep (spin-then-block). One at a time: 0, 16
/// and 256 within the spread.
inline constexpr int kYieldRounds = 16;
/// Longest sleep of the idle back-off (doubling from 1 us) while work was seen within
/// kDeepIdle: a frame arriving during a sleep waits up to this much plus the ~30 us wake-up, so
/// 64 us keeps that at most about three wake-ups' time, with at most ~15 000 wake-ups a second.
/// One at a time: 8 and 64 within the spread.
inline constexpr Duration kMaxSleep = Duration::micros(64);
/// No work for this long: sleep kDeepSleep. An idle thread costs CPU per wake-up (~15 us each,
/// "one at a time", idle phases): 250 us sleeps cost 5-7 % of a core, the 64 us ones 4 times
/// that. 10 ms without work is many round trips of any transfer in progress, so the deeper
/// sleep rarely delays a frame that is part of one.
inline constexpr Duration kDeepIdle = Duration::millis(10);
inline constexpr Duration kDeepSleep = Duration::micros(250);
/// No work for this long: sleep kDeeperSleep. 2 ms sleeps cost 1.1-1.4 % of a core ("one at a
/// time", idle phases), which keeps an idle process under the 5 % target ("idle process, 1024
/// QPs" rows); the price is up to 2 ms more for the first frame after a second of silence.
inline constexpr Duration kDeeperIdle = Duration::seconds(1);
inline constexpr Duration kDeeperSleep = Duration::millis(2);
/// A port with a doorbell (Port::wake_fd(): a client of uroce-hostd) after this long without
/// work: the thread blocks on the doorbell until a frame arrives, the link changes, the
/// application calls, or the engine's next deadline (at most kBlockMax), instead of the timed
/// sleeps, so an idle process costs a wake-up per kBlockMax and no more. Before it, the timed
/// back-off as for any port: blocking costs the daemon a doorbell system call per frame to a
/// sleeping process, which busy traffic must not pay.
inline constexpr Duration kBlockIdle = kDeepIdle;
/// Longest block on a doorbell. Nothing of an idle process changes meanwhile (its counters and
/// QP rates are refreshed as it blocks); only a `uroce capture` started on it attaches at the
/// next wake-up. A wake-up costs ~450 us of CPU on this project's 2-vCPU VMs (ppoll, the
/// statistics step; bench/RESULTS.md, "uroce-hostd phase A"): at 60 s, 256 idle processes cost
/// 0.2 % of a core, at 2 s they cost 5 %.
inline constexpr Duration kBlockMax = Duration::seconds(60);
/// The application called within this: it is polling, and its calls make progress. Measured
/// with the phases as a whole (2026-12-04 19:49 UTC, session 8: "the progress thread follows
/// the application's calls"), not as a value of its own.
inline constexpr Duration kAppDriving = Duration::micros(20);
/// The application stopped calling within this: the peer's reply is probably due, and nobody
/// else receives it. Measured with the phases as a whole (as kAppDriving).
inline constexpr Duration kFollowUp = Duration::micros(500);
/// Between polls in the follow-up phase, and the first look-again while the application drives.
/// Longer sleeps add their length to a latency test's round trip; shorter ones make the thread
/// lose its wakeup preemption of the spinning application, which then keeps the core for a
/// whole time slice: 4 us gave ib_write_lat 1.4-1.8 ms typical (2026-12-02 19:20 UTC), 1 us
/// 1.4-1.9 ms (2026-12-03 17:34 UTC).
inline constexpr Duration kFollowUpSleep = Duration::micros(8);
/// Longest look-again interval while the application keeps calling: a throughput loop is then
/// looked at about 1000 times a second, each look a wakeup that takes CPU from the loop it
/// watches. Measured with the phases as a whole (the ib_write_bw client's progress thread
/// 17 % -> 4 % of its core, 2026-12-04 19:49 UTC), not as a value of its own.
inline constexpr Duration kDrivingMaxSleep = Duration::millis(1);
/// Looks in a row counted while the application drives: a bound on the counter, not a tuned
/// value. driving_sleep() doubles follow_up_sleep every 4 looks, so 32 looks allow 2^8 times
/// it: the default 8 us reaches kDrivingMaxSleep (1 ms) at look 28; a configured
/// follow_up_sleep below 4 us tops out at 256 times itself instead.
inline constexpr int kDrivingLooksMax = 32;
/// Statistics refresh period (QP rates, port counters, pause-storm watchdog). A freshness
/// choice, not a performance one: `uroce show --watch` redraws once a second, so each frame
/// shows rates at most a tenth of its interval old, and the watchdog (port_health.h) judges a
/// pause storm over windows of this length. Its cost is one wait for the engine lock per
/// period while an application drives.
inline constexpr Duration kStatsRatePeriod = Duration::millis(100);

/// Frames per RX burst of one step: bounds how long one step holds the engine lock (64 frames
/// of up to 4 KiB) against the number of steps a full ring needs. One at a time: 16, 64 and
/// 256 within the spread.
inline constexpr size_t kRxBurst = 64;
/// Progress steps per verbs call, at most; another step runs only when the last left work
/// (step_again). Measured with the rest of that change (2026-12-04 19:49 UTC: 64 B ib_write_bw
/// over memif 0.63 -> 1.18 Mmsg/s), not as a value of its own.
inline constexpr int kDriveRounds = 4;
/// A post looks at the RX queue only when nobody has for this long. Posting loops call in every
/// microsecond or so; what they post goes out at once, while ACKs and the peer's requests still
/// come in through the next poll_cq, a post after a pause, or the progress thread. Measured
/// with kDriveRounds (2026-12-04 19:49 UTC).
inline constexpr Duration kPostRxGap = Duration::micros(2);

/// The progress thread's CPU time slice (common/sched_slice.h; Linux >= 6.12, older kernels ignore
/// it): the kernel's shortest, so that the thread, waking from a follow-up sleep, preempts the
/// application spinning on the same CPU, or any other busy thread there, at once instead of
/// after that thread's slice (the default: 1.4 ms on these 2-vCPU machines, sched_getattr).
/// It matters only under CPU contention: riostream's default set over memif beside one busy
/// loop ran ~200 us per 64 B transfer with it, ~10 ms without (bench/RESULTS.md, "a short
/// slice for the progress thread"). 0 keeps the scheduler's default.
inline constexpr Duration kSlice = Duration::micros(100);

/// The values above that a configuration may change ([device.progress], so that bench/progress
/// can measure them one by one); the defaults are the constants.
struct ProgressTuning {
  int spin_rounds = kSpinRounds;
  int yield_rounds = kYieldRounds;
  Duration max_sleep = kMaxSleep;
  Duration app_driving = kAppDriving;
  Duration follow_up = kFollowUp;
  Duration follow_up_sleep = kFollowUpSleep;
  Duration driving_max_sleep = kDrivingMaxSleep;
  size_t rx_burst = kRxBurst;
  int drive_rounds = kDriveRounds;
  Duration post_rx_gap = kPostRxGap;
  Duration slice = kSlice;
};

/// The tuning with the configuration's [device.progress] values (names and ranges checked by
/// lib/config) in place of the defaults.
ProgressTuning progress_tuning(const std::map<std::string, double>& overrides);

/// Whether a post at t also polls RX, the RX queue last polled at last_rx.
constexpr bool post_polls_rx(Timestamp t, Timestamp last_rx, const ProgressTuning& k = {}) {
  return t - last_rx >= k.post_rx_gap;
}

/// Whether a verbs call runs another step after one that received rx frames and sent tx: only
/// when it left work behind (a full RX burst, or the port refused a frame the engine still has
/// ready). tx_work_left() (the engine's has_tx_work) is asked only when that decides.
template <typename F>
bool step_again(size_t rx, size_t tx, F&& tx_work_left, const ProgressTuning& k = {}) {
  return rx >= k.rx_burst || (tx != 0 && tx_work_left());
}

/// The sleep after the n-th look in a row that found the application driving.
Duration driving_sleep(int n, const ProgressTuning& k = {});
/// The sleep after `quiet` without work: max_sleep, then kDeepSleep, then kDeeperSleep.
Duration idle_sleep(Duration quiet, const ProgressTuning& k = {});
/// d, but not past `deadline` (seen at t).
Duration until(Duration d, Timestamp deadline, Timestamp t);

/// The progress thread's policy and its phase state. One per thread; not thread-safe.
class ProgressPolicy {
 public:
  /// What the thread does next.
  enum class Action {
    kStep,     ///< take the engine lock (wait for it when stats_due, else try) and step
    kAgain,    ///< look again at once (the step found work)
    kSpin,     ///< a pause instruction, then look again
    kYield,    ///< yield the CPU to the scheduler, then look again
    kSleep,    ///< sleep `sleep`, then look again
    kBackOff,  ///< read the clock, sleep back_off_sleep(that time, deadline), look again
  };
  struct Decision {
    Action action = Action::kStep;
    Duration sleep{};        ///< kSleep: how long
    bool stats_due = false;  ///< kStep: wait for the lock, refresh the statistics after the step
  };

  /// A thread started at `start` (no work seen yet, statistics just refreshed).
  explicit ProgressPolicy(Timestamp start, const ProgressTuning& k = {})
      : k_(k), last_work_(start), last_rates_(start) {}

  /// At the top of the loop, at t, the application's last call at last_app_call: kSleep (the
  /// application drives) or kStep.
  Decision look(Timestamp t, Timestamp last_app_call);
  /// After look() said kStep without stats_due and the engine lock was taken by an application
  /// call: look again later (kSleep).
  Decision engine_busy();
  /// After look(): whether the application called within follow_up, so the step follows it
  /// whatever its CPU use (the caller then need not measure that).
  bool app_called_recently() const { return since_app_ < k_.follow_up; }
  /// Whether after_step needs the engine's next deadline: only a sleep does, so a thread driving
  /// a busy engine alone skips reading it.
  static constexpr bool needs_deadline(size_t work, bool follow_up) {
    return work == 0 || follow_up;
  }
  /// After the step at t (the time look() had) that moved `work` frames. follow_up: the step
  /// follows the application (app_called_recently(), or its threads keep the one CPU the
  /// process is pinned to busy). deadline: the engine's next deadline when needs_deadline(),
  /// else anything. Returns kAgain, kSpin, kYield, kSleep or kBackOff.
  Decision after_step(Timestamp t, size_t work, bool follow_up, Timestamp deadline);
  /// The sleep of a kBackOff decision, the clock read again at t.
  Duration back_off_sleep(Timestamp t, Timestamp deadline) const;
  /// Instead of back_off_sleep(), for a port that can wake its poller (Port::wake_fd()): block
  /// on it, the thread having found no work for kBlockIdle at t.
  bool block(Timestamp t) const { return t - last_work_ >= kBlockIdle; }

  int idle_rounds() const { return idle_; }
  Timestamp last_work() const { return last_work_; }

 private:
  Decision look_again_later();

  ProgressTuning k_;
  int idle_ = 0;     ///< idle rounds in a row while alone
  int driving_ = 0;  ///< looks in a row that found the application driving
  Timestamp last_work_;
  Timestamp last_rates_;  ///< last statistics refresh
  Duration since_app_{};  ///< of the last look()
  bool stats_due_ = false;
};

}  // namespace uroce::device
