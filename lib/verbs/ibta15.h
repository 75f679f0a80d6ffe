/**
 * @file ibta15.h
 * @brief The verbs names of IBA 1.5's RDMA FLUSH and ATOMIC WRITE (Annex A19) that rdma-core 44's
 * headers (Debian 12) lack, with the values rdma-core 45 and Linux's
 * include/uapi/rdma/ib_user_verbs.h give them. rdma-core 44 has IBV_WR_ATOMIC_WRITE,
 * IBV_WC_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE and ibv_wr_atomic_write; the rest is here.
 *
 * A program built with rdma-core 45+ headers calls ibv_wr_flush() through the ibv_qp_ex member
 * that follows wr_atomic_write (IbvQpEx45): lib/verbs keeps that pointer right after its
 * ibv_qp_ex (objects.h Qp::wr_flush).
 */
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

namespace uroce::verbs {

inline constexpr unsigned kIbvAccessFlushGlobal = 1u << 8;      ///< IBV_ACCESS_FLUSH_GLOBAL
inline constexpr unsigned kIbvAccessFlushPersistent = 1u << 9;  ///< IBV_ACCESS_FLUSH_PERSISTENT
inline constexpr int kIbvWrFlush = 14;                          ///< IBV_WR_FLUSH
inline constexpr int kIbvWcFlush = 8;                           ///< IBV_WC_FLUSH
inline constexpr uint64_t kIbvQpExWithFlush = 1ull << 11;       ///< IBV_QP_EX_WITH_FLUSH
/// device_cap_flags_ex bits (IB_UVERBS_DEVICE_FLUSH_GLOBAL, _FLUSH_PERSISTENT, _ATOMIC_WRITE).
inline constexpr uint64_t kIbUverbsDeviceFlushGlobal = 1ull << 38;
inline constexpr uint64_t kIbUverbsDeviceFlushPersistent = 1ull << 39;
inline constexpr uint64_t kIbUverbsDeviceAtomicWrite = 1ull << 40;
/// ibv_placement_type and ibv_selectivity_level.
inline constexpr uint8_t kIbvFlushGlobal = 1;
inline constexpr uint8_t kIbvFlushPersistent = 2;
inline constexpr uint8_t kIbvFlushRange = 0;
inline constexpr uint8_t kIbvFlushMr = 1;

/// ibv_qp_ex::wr_flush of rdma-core 45+.
using WrFlushFn = void (*)(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, size_t len,
                           uint8_t type, uint8_t level);

/// rdma-core 45's struct ibv_qp_ex: 44's with wr_flush appended.
struct IbvQpEx45 {
  ibv_qp_ex base;
  WrFlushFn wr_flush;
};
static_assert(offsetof(IbvQpEx45, wr_flush) == sizeof(ibv_qp_ex),
              "wr_flush follows rdma-core 44's ibv_qp_ex without padding");

}  // namespace uroce::verbs
