/**
 * @file pfc_rx.h
 * @brief How a port honours received PFC (802.1Qbb) and PAUSE (802.3x) frames, with the
 * pause-storm watchdog (docs/dcqcn-pfc.md §4.2, §4.3). Units: ns (Timestamp/Duration), bit/s;
 * counters in µs as PfcCounters says.
 *
 * - A PFC frame pauses exactly the priorities in its class-enable vector for
 *   quanta × 512 bit times at the port speed; a new frame replaces the timer (never
 *   accumulates); quanta 0 (XON) resumes at once. An 802.3x PAUSE pauses all eight.
 * - can_start_frame(p, now): a paused priority may not START a frame (one in progress
 *   completes; that is the caller's business). Other priorities are unaffected.
 * - Watchdog: a priority paused continuously for warning_percent % of `detect` raises a
 *   warning event, for `detect` an error event (tx_pause_storm_*_events). With ignore_pause,
 *   the error also stops honouring pause on that priority until no XOFF has arrived on it for
 *   `restore` (then a kStormRestored event).
 * - Continuity is judged on what the link could have carried, not on when a poller happened to
 *   read it: an XOFF read at `now` arrived somewhere after `seen_until` (the caller's previous
 *   look at the link that found nothing left to read). A pause that lapsed by the clock after
 *   `seen_until` may have been refreshed in time, so the refresh continues it for the watchdog
 *   (a poller descheduled for longer than one pause's quanta would otherwise never see a
 *   storm). TX honours the clock as always: it may send once the pause has lapsed.
 */
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/time.h"
#include "dcqcn/pfc_counters.h"
#include "transport/wire/pfc.h"

namespace uroce::dcqcn {

/// Pause-storm watchdog settings (defaults: Juniper-like detection 200 ms; NVIDIA's warning
/// watermark 85 % of critical; SONiC test-plan restoration 2 s).
struct PfcWatchdogConfig {
  bool enabled = true;                        ///< watch at all
  Duration detect = Duration::millis(200);    ///< T_detect: continuous pause → error event
  uint32_t warning_percent = 85;              ///< warning event at this % of detect (1..100)
  Duration restore = Duration::millis(2000);  ///< T_restore: no XOFF this long → honour again
  bool ignore_pause = false;                  ///< after an error, stop honouring pause
};

/// Watchdog notifications (for an async event and a log line).
enum class PfcEventKind : uint8_t {
  kStormWarning,   ///< paused for warning_percent % of detect
  kStormError,     ///< paused for detect
  kStormRestored,  ///< ignore_pause ended: pause is honoured again
};

/// One watchdog notification.
struct PfcEvent {
  PfcEventKind kind;  ///< what
  uint8_t prio;       ///< which priority
  Timestamp at;       ///< when the condition was reached (not when it was noticed)
};

/// The receive-pause state of one port's eight priorities.
class PfcRx {
 public:
  /// @param link_bps port speed (sets the quantum: 512 bit times)
  /// @param wd watchdog settings
  /// @param counters where rx_prio* / storm counters go (not owned; must outlive this)
  PfcRx(uint64_t link_bps, const PfcWatchdogConfig& wd, PfcCounters* counters);

  /// A PFC or PAUSE frame read at `now`, which arrived after `seen_until` (<= now; the
  /// default: at `now` exactly).
  void on_pause_frame(const wire::PauseFrame& f, Timestamp now,
                      Timestamp seen_until = Timestamp::never());
  /// May priority `prio` start a frame at `now`? (Runs due timers first.)
  bool can_start_frame(uint8_t prio, Timestamp now);
  /// When the peer's pause on `prio` ends (<= now: not paused), whatever the watchdog says.
  Timestamp paused_until(uint8_t prio) const { return prio_[prio].until; }
  /// The earliest pause expiry or watchdog deadline, or Timestamp::never().
  Timestamp next_deadline() const;
  /// Brings the state and counters to `now` (expiries, durations, watchdog).
  void on_timer(Timestamp now);
  /// Moves the pending watchdog notifications out.
  std::vector<PfcEvent> take_events();
  /// True while the watchdog has stopped honouring pause on `prio`.
  bool ignoring(uint8_t prio) const { return prio_[prio].ignoring; }
  void set_link_bps(uint64_t bps) { link_bps_ = bps; }
  /// Priorities whose PFC pause is honoured (PFC enabled locally, 802.1Qbb); frames naming
  /// others are counted but ignored. Default all eight. 802.3x PAUSE is always honoured.
  void set_honoured_mask(uint8_t mask) { honoured_ = mask; }

 private:
  struct Prio {
    Timestamp until;                        ///< pause end (replace on every XOFF)
    bool paused = false;                    ///< in a pause (as of the last on_timer)
    Timestamp since;                        ///< start of the current continuous pause
    Timestamp accounted;                    ///< duration counted up to here
    int64_t duration_ns = 0;                ///< total paused time, ns (counter holds it in µs)
    bool warned = false, errored = false;   ///< watchdog fired for the current pause
    bool ignoring = false;                  ///< watchdog stopped honouring pause
    Timestamp last_xoff;                    ///< last XOFF on this priority (restore timer)
    Timestamp lapsed = Timestamp::never();  ///< when the last pause ended by the clock
  };
  Timestamp warn_at(const Prio& s) const;
  Timestamp error_at(const Prio& s) const { return s.since + wd_.detect; }
  void account(int p, Timestamp upto);
  void end_pause(int p, Timestamp at);

  uint64_t link_bps_;
  uint8_t honoured_ = 0xFF;  ///< priorities with PFC enabled
  PfcWatchdogConfig wd_;
  PfcCounters* c_;
  std::array<Prio, kNumPriorities> prio_{};
  std::vector<PfcEvent> events_;
};

}  // namespace uroce::dcqcn
