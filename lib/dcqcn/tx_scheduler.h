/**
 * @file tx_scheduler.h
 * @brief Which of a port's 8 software TX queues starts the next frame: strict priority for the
 * CNP class, deficit-weighted round robin (byte-fair WRR) for the rest, skipping priorities
 * PFC has paused (docs/dcqcn-pfc.md §3.4: CNP prio 6 strict, RoCE prio 3 and the others WRR; §4.2).
 * Units: bytes, ns.
 *
 * The scheduler owns no queues: the caller passes the head frame size of each queue (0 = empty)
 * and sends the frame of the priority returned. Strict priorities are served highest number
 * first and always before WRR ones. A WRR priority with weight w gets w × quantum_bytes of
 * credit per round; an empty or paused queue loses its credit (classic DRR).
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "common/time.h"
#include "dcqcn/pfc_counters.h"

namespace uroce::dcqcn {

class PfcRx;

/// Scheduler settings.
struct TxSchedulerConfig {
  uint8_t strict_mask = 1u << 6;  ///< strict-priority classes (default: the CNP class, prio 6)
  std::array<uint32_t, kNumPriorities> weights{1, 1, 1, 1,
                                               1, 1, 1, 1};  ///< WRR weights; 0 = treated as 1
  uint32_t quantum_bytes =
      9216;  ///< credit per weight unit per round (>= the largest frame is best)
};

/// Strict + DRR scheduler over 8 priorities.
class TxScheduler {
 public:
  explicit TxScheduler(const TxSchedulerConfig& cfg = {}) : cfg_(cfg) {}

  /// Picks the priority whose head frame starts now and charges it.
  /// @param head_bytes size of each queue's head frame, 0 = empty
  /// @param pfc pause state (nullptr = nothing is paused)
  /// @return the priority, or nullopt if every non-empty queue is paused
  std::optional<uint8_t> pick(const std::array<uint32_t, kNumPriorities>& head_bytes, PfcRx* pfc,
                              Timestamp now);

 private:
  TxSchedulerConfig cfg_;
  std::array<uint64_t, kNumPriorities> deficit_{};
  uint8_t cur_ = 0;        ///< WRR position
  bool credited_ = false;  ///< cur_ got its quantum this round
};

}  // namespace uroce::dcqcn
