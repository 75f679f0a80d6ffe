/**
 * @file delay.h
 * @brief Delay-based congestion control for fabrics whose switches mark no ECN: the sender's
 * own round-trip samples against a target delay, additive increase and multiplicative decrease
 * of a send rate. The idea is TIMELY's (Mittal et al., SIGCOMM 2015: RTT measured by the sender
 * as the signal) and Swift's (Kumar et al., SIGCOMM 2020: a target delay, AIMD, a cut in
 * proportion to how far the delay is above the target, at most one cut per round trip).
 *
 * Per round-trip sample `rtt` (the transport times one request packet per round trip, or
 * takes one from every acknowledgement with peer timestamps):
 *   target = base + target_queue            base: configured, or the smallest sample seen
 *   rtt <  target:  rate += ai * min(1, (now - previous sample) / rtt)   (ai per round trip)
 *   rtt >= target:  rate *= max(1 - beta * (rtt - target) / rtt, 1 - max_mdf)
 *                   at most once per round trip (the last cut is at least `rtt` old)
 *   a packet lost:  rate *= 1 - max_mdf, at most once per round trip, unless a recent sample
 *                   (within kStaleRtts target delays) was below the target (a buffer too shallow
 *                   for the target overflows before the delay shows it, and timed packets are
 *                   lost with the rest; a loss with a short queue is not congestion and changes
 *                   nothing, so random loss does not starve the QP)
 *   rate stays within [min_rate, line rate]; at line rate the QP is unlimited.
 * The base round trip is best configured (base_rtt: the path's round trip through empty
 * queues, as Swift takes it from the topology). Learnt as the smallest sample it is right only
 * if some sample crossed empty queues: QPs that start into a standing queue (a synchronised
 * incast) learn a base that includes it, and then tolerate that queue.
 * Sans-IO: every call carries `now`. Units: bit/s (double), ns.
 */
#pragma once

#include <cstdint>
#include <string>

#include "common/time.h"

namespace uroce::cc {

/// A round-trip sample older than this many target delays says nothing about the queue now.
inline constexpr int64_t kStaleRtts = 4;

/// Knobs of the delay-based control ([device.delay] in the configuration).
struct DelayParams {
  Duration target_queue = Duration::micros(10);  ///< queueing delay allowed above the base
  Duration base_rtt{};                           ///< 0: the smallest sample seen
  double ai_bps = 0;        ///< additive increase per round trip; 0: line rate / 200
  double beta = 0.5;        ///< decrease gain
  double max_mdf = 0.5;     ///< largest cut of one decision (Swift's max_mdf)
  double min_rate_bps = 0;  ///< floor; 0: line rate / 1000
};

/// Checks ranges; on error sets *err to "<key>: <problem>".
bool validate(const DelayParams& p, std::string* err);

/// Counters of one QP's delay-based control.
struct DelayStats {
  uint64_t samples = 0;    ///< round-trip samples taken
  uint64_t increases = 0;  ///< additive increases
  uint64_t cuts = 0;       ///< multiplicative decreases on delay
  uint64_t loss_cuts = 0;  ///< multiplicative decreases on loss
};

/// The delay-based control of one QP.
class DelayControl {
 public:
  DelayControl(const DelayParams& p, double line_bps);

  /// One round-trip sample taken at now.
  void on_rtt(Duration rtt, Timestamp now);
  /// A loss event at now.
  void on_loss(Timestamp now);
  /// The rate the QP may send at, bit/s (line rate when unlimited).
  double rate_bps() const { return rate_; }
  double line_bps() const { return line_; }
  Duration last_rtt() const { return last_rtt_; }
  /// The base round trip in use (configured, or the smallest sample; 0 before any sample).
  Duration base_rtt() const { return base_; }
  /// base_rtt() + target_queue; 0 before any sample (without a configured base).
  Duration target_delay() const;
  /// Back to line rate, no samples; counters are kept.
  void reset();
  const DelayStats& stats() const { return stats_; }

 private:
  DelayParams p_;
  double line_;
  double ai_;
  double min_rate_;
  double rate_;
  Duration base_{};
  Duration last_rtt_{};
  Timestamp last_sample_at_{};
  Timestamp last_cut_ = Timestamp::never();
  DelayStats stats_;

  /// One cut per round trip: the last one is at least `rtt` old.
  bool may_cut(Duration rtt, Timestamp now) const {
    return last_cut_.is_never() || now - last_cut_ >= rtt;
  }
};

}  // namespace uroce::cc
