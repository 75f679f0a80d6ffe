/**
 * @file link.h
 * @brief A unidirectional link: egress queues at the sending end (8 priorities plus a MAC
 * control queue), a transmitter that serialises one frame at a time at the link rate, the
 * propagation delay, and seeded impairments (loss, reordering, duplication, corruption).
 *
 * Units: rates in bit/s, times in ns (serialisation is accumulated in ps so back-to-back
 * frames do not drift), sizes in bytes.
 *
 * Timing: a frame of L bytes (as the TxSink wrote it, without FCS) occupies the wire for
 * (L + 4 FCS + 20 preamble/SFD/IFG) * 8 bits / rate. Transmission starts when the wire is free;
 * the frame arrives (store and forward, last bit) at end-of-serialisation + propagation delay,
 * rounded up to the next ns. Scheduling among queues: MAC control first, then strict priority
 * 7 (highest) down to 0, skipping priorities paused by PFC (IEEE 802.1Qbb).
 */
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>

#include "common/time.h"
#include "sim/frame.h"
#include "sim/rng.h"
#include "sim/simulator.h"

namespace uroce::sim {

inline constexpr size_t kFcsBytes = 4;           ///< Ethernet FCS (not written by the TxSink)
inline constexpr size_t kPreambleIfgBytes = 20;  ///< 7 preamble + 1 SFD + 12 inter-frame gap
inline constexpr int kPriorities = 8;

/// Wire-time of a frame of `len` bytes (without FCS) at `bps`, in picoseconds.
constexpr int64_t serialization_ps(size_t len, uint64_t bps) {
  return static_cast<int64_t>(
      (static_cast<uint64_t>(len + kFcsBytes + kPreambleIfgBytes) * 8u * 1'000'000'000'000ull) /
      bps);
}

struct LinkParams {
  uint64_t rate_bps = 100'000'000'000ull;  ///< line rate
  Duration propagation = Duration::nanos(500);
  uint32_t max_frames = 0;  ///< egress queue limit in frames (waiting + on the wire); 0: none
  uint64_t max_bytes = 0;   ///< egress queue limit in bytes; 0: none
};

/// Impairments applied to every frame when it leaves the wire. Each has its own PRNG derived
/// from `seed`, drawing once per frame whatever the rates, so the patterns are reproducible
/// and independent of each other.
struct Impairments {
  uint64_t seed = 1;
  double loss = 0;     ///< probability a frame is lost
  double reorder = 0;  ///< probability a frame is held back by reorder_delay
  Duration reorder_delay = Duration::micros(5);
  double duplicate = 0;  ///< probability a second copy is delivered right after
  double corrupt = 0;    ///< probability one byte after the BTH is flipped (bad ICRC)
  /// Deterministic drop hook for tests: true drops the frame (counted in dropped_filter).
  std::function<bool(const Frame&)> drop_if;
};

struct LinkStats {
  uint64_t enqueued = 0;
  uint64_t tail_drops = 0;      ///< refused by the queue limit
  uint64_t sent = 0;            ///< frames that finished serialisation
  uint64_t sent_bytes = 0;      ///< their bytes (without FCS)
  uint64_t delivered = 0;       ///< frames handed to the receiver (duplicates included)
  uint64_t lost = 0;            ///< dropped by the loss impairment
  uint64_t dropped_down = 0;    ///< dropped because the link was down
  uint64_t dropped_filter = 0;  ///< dropped by drop_if
  uint64_t reordered = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t max_queue_bytes = 0;  ///< high-water mark of queued bytes (all priorities)
  uint64_t max_frame_bytes = 0;  ///< longest frame sent (without FCS)
  /// Data frames (not MAC control) that finished serialisation, per priority.
  std::array<uint64_t, kPriorities> sent_by_priority{};
};

/// Hooks for the owner of the sending end (a host or a switch port).
class LinkObserver {
 public:
  virtual ~LinkObserver() = default;
  /// `frame` leaves its queue and starts serialisation at `now`.
  virtual void on_dequeue(Frame& frame, Timestamp now) { (void)frame, (void)now; }
  /// A frame left the wire after a refused enqueue, a full queue or notify_when_space().
  virtual void on_space(Timestamp now) { (void)now; }
};

class Link;

/// The end of a host: receives frames and transmits on one attached Link.
class HostPort : public FrameReceiver {
 public:
  /// `tx` is the link this host transmits on (not owned).
  virtual void attach(Link* tx) = 0;
};

class Link final : public EventHandler {
 public:
  /// Frames are delivered to rx->receive(rx_port, ...). observer may be null.
  Link(Simulator& sim, const LinkParams& p, FrameReceiver* rx, uint32_t rx_port,
       LinkObserver* observer = nullptr);

  const LinkParams& params() const { return p_; }
  void set_impairments(const Impairments& imp);
  const Impairments& impairments() const { return imp_; }
  void set_observer(LinkObserver* o) { observer_ = o; }
  /// Observes every frame handed to the receiver (after impairments), e.g. a PcapWriter.
  void set_tap(std::function<void(const Frame&, Timestamp)> tap) { tap_ = std::move(tap); }
  /// A down link drops every frame that finishes serialisation.
  void set_down(bool down) { down_ = down; }

  /// True when a frame of `len` bytes fits within the queue limits now.
  bool can_accept(size_t len) const;
  /// The observer's on_space() fires when the next frame leaves the wire.
  void notify_when_space() { want_space_ = true; }
  /// Queues the frame under frame.priority (or the control queue when is_control). Returns
  /// false (frame recycled, tail_drops counted) when the limits refuse it.
  bool enqueue(Frame&& frame, Timestamp now);

  /// PFC: pauses `priority` for `d` from now (a new pause replaces the old; d = 0 resumes).
  void pause(int priority, Duration d, Timestamp now);
  bool paused(int priority, Timestamp now) const { return paused_until_[priority] > now; }

  size_t queued_frames() const { return queued_frames_; }
  uint64_t queued_bytes() const { return queued_bytes_; }
  uint64_t queued_bytes(int priority) const { return prio_bytes_[priority]; }
  bool busy() const { return busy_; }
  const LinkStats& stats() const { return stats_; }

  void on_event(uint32_t tag, Frame&& frame, Timestamp now) override;

 private:
  enum Tag : uint32_t { kTxDone = 1, kArrive = 2, kKick = 3 };
  /// Starts the next eligible frame if the wire is idle. from_finish: called as the wire
  /// frees, so a frame queued earlier starts exactly when the previous one ended (in ps).
  void kick(Timestamp now, bool from_finish = false);
  void finish(Frame&& frame, Timestamp now);
  void corrupt(Frame& frame);

  Simulator& sim_;
  LinkParams p_;
  FrameReceiver* rx_;
  uint32_t rx_port_;
  LinkObserver* observer_;
  Impairments imp_;
  std::function<void(const Frame&, Timestamp)> tap_;
  Rng loss_rng_, reorder_rng_, dup_rng_, corrupt_rng_;
  bool down_ = false;

  std::array<std::deque<Frame>, kPriorities> queues_;
  std::deque<Frame> control_;
  std::array<uint64_t, kPriorities> prio_bytes_{};
  std::array<Timestamp, kPriorities> paused_until_{};
  size_t queued_frames_ = 0;   ///< waiting + on the wire
  uint64_t queued_bytes_ = 0;  ///< waiting + on the wire
  bool busy_ = false;
  bool want_space_ = false;
  size_t wire_len_ = 0;
  int64_t wire_free_ps_ = 0;  ///< when the wire finishes its current frame, ps
  int64_t finish_ps_ = 0;     ///< end of serialisation of the frame on the wire, ps
  LinkStats stats_;
};

}  // namespace uroce::sim
