/**
 * @file pfc_ingress.h
 * @brief Per-ingress-port, per-priority buffered bytes and the PFC decisions they drive
 * (docs/dcqcn-pfc.md §4): the bytes a port's frames occupy in any egress queue of the switch
 * are charged to (ingress port, priority); crossing xoff_bytes sends XOFF to that port's peer,
 * falling to xon_bytes sends XON, refreshes come from next_deadline()/on_timer(). The
 * hysteresis and refresh are dcqcn::PfcTx's; this class does the accounting. Units: bytes, ns.
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/time.h"
#include "dcqcn/pfc_tx.h"
#include "transport/wire/pfc.h"
#include "uroce-switch/egress_queues.h"

namespace uroce::uswitch {

class PfcIngress {
 public:
  /// cfg.xoff_bytes 0 = PFC off (never pauses).
  PfcIngress(uint64_t link_bps, const dcqcn::PfcTxConfig& cfg);

  std::optional<wire::PauseFrame> add(uint8_t prio, uint32_t len, Timestamp now);
  std::optional<wire::PauseFrame> remove(uint8_t prio, uint32_t len, Timestamp now);
  /// New PFC priorities and thresholds (PfcTx::reconfigure), then every enabled priority
  /// judged on its present backlog. @return the frames to send (XON for released priorities,
  /// XOFF where the backlog is above the new xoff), in order.
  std::vector<wire::PauseFrame> reconfigure(const dcqcn::PfcTxConfig& cfg, Timestamp now);
  Timestamp next_deadline() const { return tx_.next_deadline(); }
  std::optional<wire::PauseFrame> on_timer(Timestamp now) { return tx_.on_timer(now); }

  uint64_t bytes(uint8_t prio) const { return bytes_[prio]; }
  bool asserted(uint8_t prio) const { return tx_.asserted(prio); }
  const dcqcn::PfcCounters& counters() const { return counters_; }

 private:
  dcqcn::PfcCounters counters_{};
  dcqcn::PfcTx tx_;
  std::array<uint64_t, kPrios> bytes_{};
};

}  // namespace uroce::uswitch
