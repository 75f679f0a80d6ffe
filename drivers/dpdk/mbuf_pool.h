/**
 * @file mbuf_pool.h
 * @brief The mbuf pool net_af_xdp needs (shared by the driver and bench/raw/raw_link).
 */
#pragma once

#include <rte_mempool.h>

namespace uroce::dpdk {

/// net_af_xdp's pool: one mbuf per 4 KiB page, page-aligned, in one anonymous mapping.
/// The PMD makes the pool's memory the AF_XDP umem (zero copy between umem and mbuf) and
/// assumes each object lies in one page; the kernel (6.18 here) rejects TX descriptors whose
/// frame crosses a page boundary of non-hugepage memory (tx_invalid_descs). With ordinary
/// 2.4 KB mbufs packed back to back about a third of the frames crossed one and were
/// silently never sent: frames the passive side sent, ACKs and read responses, got lost
/// (drivers/dpdk/PMDS.md). Objects of exactly one page, from a page-aligned start, never do.
/// Returns nullptr (rte_errno set) when DPDK cannot lay the pool out that way.
rte_mempool* page_per_mbuf_pool(const char* name, unsigned n, unsigned cache, int socket);

}  // namespace uroce::dpdk
