/**
 * @file unsupported.cc
 * @brief What uroce's librdmacm does not implement, failing cleanly with errno:
 *  - multicast (rdma_join_multicast*, rdma_leave_multicast): ENOSYS, uroce has no multicast
 *    groups;
 *  - ECE (rdma_set_local_ece, rdma_get_remote_ece): EOPNOTSUPP, as librdmacm on a device
 *    without enhanced connection establishment.
 * (rsockets: rsocket.h; what of them is missing fails there.)
 */
#include <cerrno>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"

using uroce::rdmacm::fail;

UROCE_CM_EXPORT int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) { return fail(ENOSYS); }
UROCE_CM_EXPORT int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) {
  return fail(ENOSYS);
}
UROCE_CM_EXPORT int rdma_leave_multicast(rdma_cm_id*, sockaddr*) { return fail(ENOSYS); }
UROCE_CM_EXPORT int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
UROCE_CM_EXPORT int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) { return fail(EOPNOTSUPP); }
