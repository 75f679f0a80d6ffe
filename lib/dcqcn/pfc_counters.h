/**
 * @file pfc_counters.h
 * @brief PFC counters of one port, per priority, named as mlx5 ethtool names them
 * (docs/dcqcn-pfc.md §5.2): rx_prio{p}_pause, rx_prio{p}_pause_duration,
 * rx_prio{p}_pause_transition, tx_prio{p}_pause, tx_prio{p}_pause_duration,
 * tx_pause_storm_{warning,error}_events.
 *
 * Units: frames, events, µs (durations). Plain uint64_t, trivially copyable, so the block can be
 * placed in shared memory; one writer (the port's owner).
 */
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

namespace uroce::dcqcn {

inline constexpr int kNumPriorities = 8;  ///< 802.1p priorities / traffic classes

/// PFC counters of one port.
struct PfcCounters {
  std::array<uint64_t, kNumPriorities>
      rx_prio_pause{};  ///< PFC frames received naming p (XOFF and XON)
  std::array<uint64_t, kNumPriorities>
      rx_prio_pause_duration{};  ///< µs priority p was paused by the peer
  std::array<uint64_t, kNumPriorities>
      rx_prio_pause_transition{};  ///< XOFF → XON transitions (XON or expiry)
  std::array<uint64_t, kNumPriorities>
      tx_prio_pause{};  ///< PFC frames sent naming p (XOFF, refresh, XON)
  std::array<uint64_t, kNumPriorities> tx_prio_pause_duration{};  ///< µs we held priority p in XOFF
  uint64_t rx_global_pause = 0;                                   ///< 802.3x PAUSE frames received
  uint64_t tx_pause_storm_warning_events = 0;  ///< a priority paused longer than the warning time
  uint64_t tx_pause_storm_error_events = 0;    ///< a priority paused longer than T_detect
};
static_assert(std::is_trivially_copyable_v<PfcCounters>);

}  // namespace uroce::dcqcn
