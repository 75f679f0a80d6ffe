/**
 * @file unsupported.cc
 * @brief What uroce's librdmacm does not implement, failing cleanly with errno:
 *  - multicast (rdma_join_multicast*, rdma_leave_multicast): ENOSYS, uroce has no multicast
 *    groups.
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
