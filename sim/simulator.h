/**
 * @file simulator.h
 * @brief The discrete-event loop of the fabric simulator. Units: time in ns (Timestamp).
 *
 * Simulated time only: nothing here reads the wall clock. The loop jumps time to the earliest
 * of (a) the pending events (frame arrivals, end of serialisation, scheduled callbacks) and
 * (b) every node's next_wake() (a host's engine next_deadline()). Events are ordered by time,
 * then by insertion sequence; at equal times events run before nodes are polled, and nodes are
 * polled in the order they were added. The run is therefore a pure function of the inputs and
 * the seeds.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "common/time.h"
#include "sim/frame.h"

namespace uroce::sim {

/// Something that receives scheduled frame events (links, switches).
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  /// A frame event scheduled with Simulator::schedule(); `tag` is the caller's.
  virtual void on_event(uint32_t tag, Frame&& frame, Timestamp now) = 0;
};

/// Something that receives frames at the far end of a link (a host or a switch port).
class FrameReceiver {
 public:
  virtual ~FrameReceiver() = default;
  /// The last bit of `frame` arrived at `now`. `port` is the receiver's port number.
  virtual void receive(uint32_t port, Frame&& frame, Timestamp now) = 0;
};

/// A polled participant, such as a host running an engine.
class Node {
 public:
  virtual ~Node() = default;
  /// When the node next wants poll(); Timestamp::never() when idle. A time at or before now
  /// means "poll me now".
  virtual Timestamp next_wake() const = 0;
  virtual void poll(Timestamp now) = 0;
};

class Simulator {
 public:
  Simulator() = default;
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  Timestamp now() const { return now_; }
  FramePool& pool() { return pool_; }
  uint64_t next_frame_id() { return ++frame_ids_; }

  /// Registers a node; the simulator does not own it.
  void add_node(Node* n) { nodes_.push_back(n); }

  /// Schedules handler->on_event(tag, frame, t). t earlier than now() runs at now().
  void schedule(Timestamp t, EventHandler* handler, uint32_t tag, Frame&& frame);
  /// Schedules fn() at time t.
  void call_at(Timestamp t, std::function<void()> fn);

  /// Runs one step: the earliest event, or the polls due now. Returns false when nothing is
  /// pending at all.
  bool step();
  /// Runs every event and poll up to and including `end`, then sets now() to end.
  /// Returns false when the loop stalled (see stalled()).
  bool run_until(Timestamp end);
  /// Runs while `busy()` is true and time stays at or before `limit`. Returns true when busy()
  /// became false, false on the time limit, idleness with busy() still true, or a stall.
  bool run_while(const std::function<bool()>& busy, Timestamp limit);

  /// True after the loop spun kStallSteps steps without time advancing (a node that keeps
  /// asking to be polled at the same time without making progress).
  bool stalled() const { return stalled_; }
  uint64_t events_run() const { return events_run_; }
  uint64_t polls_run() const { return polls_run_; }

  static constexpr uint64_t kStallSteps = 5'000'000;

 private:
  struct Key {
    int64_t t;
    uint64_t seq;
    uint32_t slot;
    bool operator>(const Key& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  struct Body {
    EventHandler* handler = nullptr;
    uint32_t tag = 0;
    Frame frame;
    std::function<void()> fn;
  };
  uint32_t alloc_slot();
  Timestamp earliest_wake() const;

  Timestamp now_{0};
  uint64_t seq_ = 0;
  uint64_t frame_ids_ = 0;
  std::priority_queue<Key, std::vector<Key>, std::greater<Key>> heap_;
  std::vector<Body> bodies_;
  std::vector<uint32_t> free_slots_;
  std::vector<Node*> nodes_;
  FramePool pool_;
  uint64_t same_time_steps_ = 0;
  bool stalled_ = false;
  uint64_t events_run_ = 0;
  uint64_t polls_run_ = 0;
};

}  // namespace uroce::sim
