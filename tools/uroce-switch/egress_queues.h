/**
 * @file egress_queues.h
 * @brief The 8 per-priority egress FIFOs of one switch port, byte-accounted. Service is strict
 * priority (7 first) over the priorities not paused by PFC; the caller applies the shaper and
 * RED marking around push()/pop(). Frames are opaque handles (an rte_mbuf* in the switch, an
 * integer in the tests). Units: bytes.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>

namespace uroce::uswitch {

inline constexpr int kPrios = 8;

struct QueuedFrame {
  void* pkt = nullptr;   ///< opaque frame handle
  uint32_t len = 0;      ///< frame bytes
  uint16_t ingress = 0;  ///< port it came in on (PFC ingress accounting)
  uint16_t egress = 0;   ///< port it leaves on (a queue may serve several, --share)
  uint8_t prio = 0;      ///< traffic class 0..7
  bool ect = false;      ///< IP ECN field is ECT(0)/ECT(1) (may be marked CE)
};

class EgressQueues {
 public:
  explicit EgressQueues(uint64_t limit_bytes) : limit_(limit_bytes) {}

  /// False (frame not taken) when the port's buffer would exceed its limit.
  bool push(const QueuedFrame& f);
  /// Highest priority with frames whose bit is clear in `paused_mask`; -1 if none.
  int next_prio(uint8_t paused_mask) const;
  const QueuedFrame& front(int prio) const { return q_[prio].front(); }
  QueuedFrame& front(int prio) { return q_[prio].front(); }  ///< e.g. to clear ect once marked
  QueuedFrame pop(int prio);

  uint64_t bytes(int prio) const { return bytes_[prio]; }
  uint64_t total_bytes() const { return total_; }
  uint64_t high_water() const { return high_water_; }
  size_t frames() const;
  bool empty() const { return total_ == 0 && frames() == 0; }

 private:
  uint64_t limit_;
  std::array<std::deque<QueuedFrame>, kPrios> q_;
  std::array<uint64_t, kPrios> bytes_{};
  uint64_t total_ = 0;
  uint64_t high_water_ = 0;
};

}  // namespace uroce::uswitch
