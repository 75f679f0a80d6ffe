/**
 * @file memif_burst.h
 * @brief rte_eth_rx_burst/rte_eth_tx_burst for a port that may be net_memif: on a memif port
 * the burst runs behind memif_fenced() (memif_guard.h), so that DPDK 22.11's disconnect race
 * (the region table freed under a running burst) ends the burst, not the process. Other PMDs
 * call the burst directly.
 */
#pragma once

#include <rte_ethdev.h>

#include "dpdk/memif_guard.h"

namespace uroce::dpdk {

/// Frames received; 0 when a fault ended the burst (mbufs it had allocated leak).
inline uint16_t fenced_rx_burst(bool memif, uint16_t port, uint16_t queue, rte_mbuf** bufs,
                                uint16_t n) {
  if (!memif) return rte_eth_rx_burst(port, queue, bufs, n);
  uint16_t got = 0;
  if (!memif_fenced([&] { got = rte_eth_rx_burst(port, queue, bufs, n); })) return 0;
  return got;
}

/// Frames the PMD took. When a fault ended the burst all n count as taken (and lost): the PMD
/// may have freed some of them already, so freeing them again would corrupt the pool; the
/// others leak. The peer is gone at that point anyway.
inline uint16_t fenced_tx_burst(bool memif, uint16_t port, uint16_t queue, rte_mbuf** bufs,
                                uint16_t n) {
  if (!memif) return rte_eth_tx_burst(port, queue, bufs, n);
  uint16_t sent = 0;
  if (!memif_fenced([&] { sent = rte_eth_tx_burst(port, queue, bufs, n); })) return n;
  return sent;
}

}  // namespace uroce::dpdk
