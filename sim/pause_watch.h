/**
 * @file pause_watch.h
 * @brief Detects a PFC deadlock: a set of egress queues (a cycle of switch links) that are all
 * paused, all hold frames of the lossless priority and all send none of them, check after check.
 *
 * Every `period` until `until` the watch looks at each queue: paused for `priority` (IEEE
 * 802.1Qbb), frames of `priority` waiting, and no frame of `priority` finished serialisation
 * since the previous check (LinkStats::sent_by_priority, so a pause lifted and renewed between
 * two checks still counts as progress). While every queue meets all three, the set is frozen;
 * the stretch starts at the first check that found it so. A switch's PFC watchdog applies the
 * same test to one queue (docs/tradeoff.md); here it is the whole cycle, so a stretch that
 * lasts is a deadlock, not a slow drain. Units: ns.
 */
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "common/time.h"
#include "sim/link.h"
#include "sim/simulator.h"

namespace uroce::sim {

class PauseCycleWatch {
 public:
  PauseCycleWatch(Simulator& sim, std::vector<Link*> queues, int priority, Duration period,
                  Timestamp until)
      : sim_(sim), queues_(std::move(queues)), priority_(priority), period_(period), until_(until) {
    last_sent_.assign(queues_.size(), 0);
  }
  PauseCycleWatch(const PauseCycleWatch&) = delete;
  PauseCycleWatch& operator=(const PauseCycleWatch&) = delete;

  /// Schedules the first check at now().
  void start() {
    for (size_t i = 0; i < queues_.size(); ++i)
      last_sent_[i] = queues_[i]->stats().sent_by_priority[static_cast<size_t>(priority_)];
    sim_.call_at(sim_.now(), [this] { check(); });
  }

  /// Start of the current frozen stretch; Timestamp::never() when the last check found progress.
  Timestamp frozen_since() const { return since_; }
  /// How long the current stretch has lasted at the last check (0 when not frozen).
  Duration frozen_for() const { return since_.is_never() ? Duration{} : last_ - since_; }
  /// A deadlock: frozen at the last check for at least `x`.
  bool deadlocked(Duration x) const { return !since_.is_never() && frozen_for() >= x; }
  /// Frozen stretches seen (a deadlock that formed once and held: 1).
  uint64_t stretches() const { return stretches_; }
  uint64_t checks() const { return checks_; }

 private:
  void check() {
    const Timestamp now = sim_.now();
    const size_t p = static_cast<size_t>(priority_);
    bool frozen = !queues_.empty();
    for (size_t i = 0; i < queues_.size(); ++i) {
      const Link& l = *queues_[i];
      const uint64_t sent = l.stats().sent_by_priority[p];
      if (!l.paused(priority_, now) || l.queued_bytes(priority_) == 0 || sent != last_sent_[i])
        frozen = false;
      last_sent_[i] = sent;
    }
    if (!frozen) {
      since_ = Timestamp::never();
    } else if (since_.is_never()) {
      since_ = now;
      ++stretches_;
    }
    last_ = now;
    ++checks_;
    if (now + period_ <= until_) sim_.call_at(now + period_, [this] { check(); });
  }

  Simulator& sim_;
  std::vector<Link*> queues_;
  int priority_;
  Duration period_;
  Timestamp until_;
  std::vector<uint64_t> last_sent_;
  Timestamp since_ = Timestamp::never();
  Timestamp last_{0};
  uint64_t stretches_ = 0;
  uint64_t checks_ = 0;
};

}  // namespace uroce::sim
