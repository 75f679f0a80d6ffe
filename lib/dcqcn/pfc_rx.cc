/**
 * @file pfc_rx.cc
 * @brief Honouring received PFC/PAUSE frames and the pause-storm watchdog (docs/dcqcn-pfc.md §4.2,
 * §4.3). Units: ns; counters in µs.
 */
#include "dcqcn/pfc_rx.h"

#include <algorithm>

namespace uroce::dcqcn {

PfcRx::PfcRx(uint64_t link_bps, const PfcWatchdogConfig& wd, PfcCounters* counters)
    : link_bps_(link_bps), wd_(wd), c_(counters) {}

Timestamp PfcRx::warn_at(const Prio& s) const {
  return s.since + Duration::nanos(wd_.detect.ns / 100 * wd_.warning_percent +
                                   wd_.detect.ns % 100 * wd_.warning_percent / 100);
}

void PfcRx::account(int p, Timestamp upto) {
  Prio& s = prio_[p];
  if (upto > s.accounted) {
    s.duration_ns += (upto - s.accounted).ns;
    s.accounted = upto;
    c_->rx_prio_pause_duration[p] = static_cast<uint64_t>(s.duration_ns / 1000);
  }
}

void PfcRx::end_pause(int p, Timestamp at) {
  Prio& s = prio_[p];
  account(p, at);
  s.paused = false;
  s.lapsed = at;
  ++c_->rx_prio_pause_transition[p];
}

void PfcRx::on_timer(Timestamp now) {
  for (int p = 0; p < kNumPriorities; ++p) {
    Prio& s = prio_[p];
    if (s.paused) {
      const Timestamp end = earliest(s.until, now);  // paused through [since, end)
      if (wd_.enabled && !s.ignoring) {
        if (!s.warned && warn_at(s) <= end && warn_at(s) < s.until) {
          s.warned = true;
          ++c_->tx_pause_storm_warning_events;
          events_.push_back({PfcEventKind::kStormWarning, static_cast<uint8_t>(p), warn_at(s)});
        }
        if (!s.errored && error_at(s) <= end && error_at(s) < s.until) {
          s.errored = true;
          ++c_->tx_pause_storm_error_events;
          events_.push_back({PfcEventKind::kStormError, static_cast<uint8_t>(p), error_at(s)});
          if (wd_.ignore_pause) s.ignoring = true;
        }
      }
      if (s.until <= now)
        end_pause(p, s.until);
      else
        account(p, now);
    }
    if (s.ignoring && s.last_xoff + wd_.restore <= now) {
      s.ignoring = false;
      const Timestamp at = s.last_xoff + wd_.restore;
      events_.push_back({PfcEventKind::kStormRestored, static_cast<uint8_t>(p), at});
      if (s.paused) {  // still paused by the peer: a new continuous pause starts for the watchdog
        s.since = at;
        s.warned = s.errored = false;
      }
    }
  }
}

void PfcRx::on_pause_frame(const wire::PauseFrame& f, Timestamp now, Timestamp seen_until) {
  seen_until = earliest(seen_until, now);
  // Bring state to just before `now`: a pause expiring exactly at `now` and refreshed by this
  // frame stays one continuous pause (no transition, the watchdog keeps counting).
  on_timer(now - Duration::nanos(1));
  if (f.global) ++c_->rx_global_pause;
  for (int p = 0; p < kNumPriorities; ++p) {
    if (!(f.class_enable & (1u << p))) continue;
    Prio& s = prio_[p];
    if (!f.global) {
      ++c_->rx_prio_pause[p];
      if (!(honoured_ & (1u << p))) continue;  // PFC off on this priority: not honoured
    }
    const uint16_t q = f.quanta[p];
    if (q == 0) {  // XON: resume now
      s.until = earliest(s.until, now);
      if (s.paused) end_pause(p, now);
      continue;
    }
    s.last_xoff = now;
    s.until = now + Duration::nanos(wire::pause_quanta_ns(q, link_bps_));  // replace, never add
    if (!s.paused) {
      s.paused = true;
      s.accounted = now;
      // A lapse nobody saw (after seen_until) may not have happened on the link: the pause
      // that lapsed goes on for the watchdog (its since, warned, errored).
      const bool unseen = !s.lapsed.is_never() && s.lapsed > seen_until;
      if (!unseen) {
        s.since = now;
        s.warned = s.errored = false;
      }
    }
  }
  on_timer(now);
}

bool PfcRx::can_start_frame(uint8_t prio, Timestamp now) {
  on_timer(now);
  const Prio& s = prio_[prio];
  return s.ignoring || !(s.paused && now < s.until);
}

Timestamp PfcRx::next_deadline() const {
  Timestamp t = Timestamp::never();
  for (const Prio& s : prio_) {
    if (s.paused) {
      t = earliest(t, s.until);
      if (wd_.enabled && !s.ignoring) {
        if (!s.warned) t = earliest(t, warn_at(s));
        if (!s.errored) t = earliest(t, error_at(s));
      }
    }
    if (s.ignoring) t = earliest(t, s.last_xoff + wd_.restore);
  }
  return t;
}

std::vector<PfcEvent> PfcRx::take_events() {
  std::vector<PfcEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace uroce::dcqcn
