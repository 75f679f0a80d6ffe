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
 * The other half of the race: memif_free_regions() also frees the region table, and a burst
 * that reads a region pointer after that faults outside any region (a NULL region; also a
 * ring that now reads as zeros makes a copy burst walk stale descriptors into it). No mapping
 * can absorb that, so bursts run inside memif_fenced() (memif_burst.h): the handler ends the
 * burst with a siglongjmp back to the fence instead of ending the process.
 */
#pragma once

#include <cstdint>
#include <type_traits>

namespace uroce::dpdk {

/// Installs the SIGSEGV handler (once per process) and records the current memif regions.
/// Call whenever a memif port's link comes up (new regions).
void memif_guard_refresh();

/// How many faults the guard has absorbed by mapping zero pages.
uint64_t memif_guard_faults();

/// How many fenced calls a fault outside every known region ended.
uint64_t memif_guard_fenced();

/// Calls fn(arg) behind a fence: a SIGSEGV on this thread inside it that no region mapping
/// absorbs ends the call there (siglongjmp) and returns false, instead of going to the
/// previous handler. For PMD burst calls only (no locks held, no allocation in progress: what
/// the call had taken stays taken, e.g. a few mbufs leak per incident). Needs the handler,
/// i.e. one memif_guard_refresh() before; without it a fault is not caught.
bool memif_fenced_call(void (*fn)(void*), void* arg);

/// memif_fenced_call() for a callable: `memif_fenced([&] { n = rte_eth_rx_burst(...); })`.
template <class F>
bool memif_fenced(F&& fn) {
  return memif_fenced_call([](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); }, &fn);
}

}  // namespace uroce::dpdk
