/**
 * @file tx_scheduler.cc
 * @brief Strict priority + deficit round robin over 8 PFC priorities. Units: bytes, ns.
 */
#include "dcqcn/tx_scheduler.h"

#include "dcqcn/pfc_rx.h"

namespace uroce::dcqcn {

std::optional<uint8_t> TxScheduler::pick(const std::array<uint32_t, kNumPriorities>& head_bytes,
                                         PfcRx* pfc, Timestamp now) {
  std::array<bool, kNumPriorities> ok{};
  bool any_wrr = false;
  for (int p = 0; p < kNumPriorities; ++p) {
    ok[p] = head_bytes[p] != 0 &&
            (pfc == nullptr || pfc->can_start_frame(static_cast<uint8_t>(p), now));
  }
  // Strict classes first, highest priority number first.
  for (int p = kNumPriorities - 1; p >= 0; --p)
    if ((cfg_.strict_mask & (1u << p)) && ok[p]) return static_cast<uint8_t>(p);
  for (int p = 0; p < kNumPriorities; ++p) {
    if (cfg_.strict_mask & (1u << p)) continue;
    if (ok[p])
      any_wrr = true;
    else
      deficit_[p] = 0;  // empty or paused: no credit carried (DRR)
  }
  if (!any_wrr) return std::nullopt;
  // Deficit round robin; terminates because an eligible queue gains credit every round.
  while (true) {
    const int p = cur_;
    const bool wrr = !(cfg_.strict_mask & (1u << p));
    if (wrr && ok[p]) {
      if (!credited_) {
        const uint32_t w = cfg_.weights[p] ? cfg_.weights[p] : 1;
        deficit_[p] += static_cast<uint64_t>(w) * cfg_.quantum_bytes;
        credited_ = true;
      }
      if (deficit_[p] >= head_bytes[p]) {
        deficit_[p] -= head_bytes[p];
        return static_cast<uint8_t>(p);
      }
    }
    cur_ = static_cast<uint8_t>((cur_ + 1) % kNumPriorities);
    credited_ = false;
  }
}

}  // namespace uroce::dcqcn
