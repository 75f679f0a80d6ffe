/**
 * @file pfc_tx.h
 * @brief When this host, as a receiver, sends PFC XOFF/XON (docs/dcqcn-pfc.md §4.1, §4.3 item 2).
 * Units: bytes (backlog, thresholds), ns, quanta of 512 bit times; counters in µs.
 *
 * Per PFC-enabled priority: when the RX backlog reaches xoff_bytes, send XOFF (pause_quanta)
 * and refresh it every `refresh` while the backlog stays above xon_bytes; when the backlog
 * falls to xon_bytes, send XON (quanta 0) at once. With max_xoff set, a priority that has
 * been held in XOFF that long without draining gets an XON and is not paused again until its
 * backlog falls to xon_bytes (never emit XOFF forever for a stuck RX ring).
 * Counters: tx_prio{p}_pause (frames naming p), tx_prio{p}_pause_duration (µs in XOFF).
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "common/time.h"
#include "dcqcn/pfc_counters.h"
#include "transport/wire/pfc.h"

namespace uroce::dcqcn {

/// XOFF/XON generation settings.
struct PfcTxConfig {
  uint8_t enabled_mask = 1u << 3;  ///< priorities with PFC on (default: 3, docs/dcqcn-pfc.md §3.4)
  uint64_t xoff_bytes = 0;         ///< backlog that sends XOFF; 0 = never send XOFF
  uint64_t xon_bytes = 0;          ///< backlog at or below which XON is sent (< xoff_bytes)
  uint16_t pause_quanta = 0xFFFF;  ///< quanta in each XOFF
  Duration refresh{};              ///< XOFF refresh period; 0 = half the pause time
  Duration max_xoff{};             ///< give up after this long in XOFF; 0 = never
};

/// XOFF/XON decisions for one port.
class PfcTx {
 public:
  /// @param link_bps port speed (for the default refresh period)
  /// @param counters where tx_prio* counters go (not owned)
  PfcTx(uint64_t link_bps, const PfcTxConfig& cfg, PfcCounters* counters);

  /// Priority `prio`'s RX backlog is `bytes` at `now`.
  /// @return a frame to send now (one priority bit set), or nullopt.
  std::optional<wire::PauseFrame> on_backlog(uint8_t prio, uint64_t bytes, Timestamp now);
  /// The earliest refresh or give-up time, or never.
  Timestamp next_deadline() const;
  /// Refreshes / gives up every priority due at `now`. @return one frame covering them, or nullopt.
  std::optional<wire::PauseFrame> on_timer(Timestamp now);
  /// New priorities, thresholds and max_xoff from `now` on (a switch reconfigured at run time;
  /// the pause quanta and refresh period stay as built): a
  /// priority held in XOFF that is no longer enabled (or with xoff_bytes now 0) is released at
  /// once; every other priority follows the new thresholds at its next backlog change.
  /// @return the XON frame for the released priorities, or nullopt.
  std::optional<wire::PauseFrame> reconfigure(const PfcTxConfig& cfg, Timestamp now);
  const PfcTxConfig& config() const { return cfg_; }
  /// True while we hold `prio` in XOFF.
  bool asserted(uint8_t prio) const { return s_[prio].xoff; }

 private:
  struct Prio {
    bool xoff = false;        ///< XOFF asserted
    bool gave_up = false;     ///< max_xoff hit; waits for the backlog to drain
    Timestamp since;          ///< XOFF asserted since
    Timestamp accounted;      ///< duration counted up to here
    int64_t duration_ns = 0;  ///< total time in XOFF
    Timestamp next_refresh = Timestamp::never();
  };
  void account(int p, Timestamp upto);
  void assert_xoff(int p, Timestamp now, wire::PauseFrame* f);
  void release(int p, Timestamp now, wire::PauseFrame* f);

  PfcTxConfig cfg_;
  Duration refresh_;
  PfcCounters* c_;
  std::array<Prio, kNumPriorities> s_{};
};

}  // namespace uroce::dcqcn
