/**
 * @file memif_guard.h
 * @brief Survives a race in DPDK 22.11's net_memif: when the peer process dies, EAL's
 * interrupt thread runs memif_disconnect(), which clears the "connected" flag and then unmaps
 * the shared regions, while the datapath thread may be inside rte_eth_rx_burst/tx_burst on
 * those regions (it checked the flag just before). That burst then faults (seen: SIGSEGV in
 * librte_net_memif, 1 run in 8 of tests/dpdk/memif_reconnect.sh on a loaded machine).
 *
 * The guard remembers the address ranges of this process' memif regions (from
 * /proc/self/maps, "memif_region_*") and installs a SIGSEGV handler that, for a fault inside
 * one of them, maps anonymous zero pages over the vanished range and returns, so the burst
 * finishes on zeros (ring empty: no frame; a torn frame fails the ICRC) and the next burst
 * sees the flag cleared. Any other fault goes to the previous handler. The zero pages stay
 * mapped (the address space of one region per incident).
 *
 * Not covered: memif_free_regions() also frees the region table; a copy burst that reads a
 * region pointer after that faults outside any region (most likely the one crash still seen,
 * PMDS.md), which no mapping can absorb.
 */
#pragma once

#include <cstdint>

namespace uroce::dpdk {

/// Installs the SIGSEGV handler (once per process) and records the current memif regions.
/// Call whenever a memif port's link comes up (new regions).
void memif_guard_refresh();

/// How many faults the guard has absorbed.
uint64_t memif_guard_faults();

}  // namespace uroce::dpdk
