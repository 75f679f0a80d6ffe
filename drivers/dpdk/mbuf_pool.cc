/**
 * @file mbuf_pool.cc
 * @brief page_per_mbuf_pool() (mbuf_pool.h).
 */
#include "dpdk/mbuf_pool.h"

#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <unistd.h>

#include <cerrno>

namespace uroce::dpdk {

rte_mempool* page_per_mbuf_pool(const char* name, unsigned n, unsigned cache, int socket) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Object = mempool header + rte_mbuf + data room, exactly one page (no spreading pad).
  const size_t header = RTE_CACHE_LINE_ROUNDUP(sizeof(rte_mempool_objhdr));
  const auto data_room = static_cast<uint16_t>(page - header - sizeof(rte_mbuf));
  rte_mempool* mp =
      rte_mempool_create_empty(name, n, sizeof(rte_mbuf) + data_room, cache,
                               sizeof(rte_pktmbuf_pool_private), socket, RTE_MEMPOOL_F_NO_SPREAD);
  if (!mp) return nullptr;
  rte_pktmbuf_pool_private priv{};
  priv.mbuf_data_room_size = data_room;
  bool ok = rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), nullptr) == 0 &&
            mp->header_size + mp->elt_size + mp->trailer_size == page;
  if (ok) {
    rte_pktmbuf_pool_init(mp, &priv);
    ok = rte_mempool_populate_anon(mp) == static_cast<int>(n) && mp->nb_mem_chunks == 1;
  }
  if (!ok) {
    rte_mempool_free(mp);
    rte_errno = ENOMEM;
    return nullptr;
  }
  rte_mempool_obj_iter(mp, rte_pktmbuf_init, nullptr);
  return mp;
}

}  // namespace uroce::dpdk
