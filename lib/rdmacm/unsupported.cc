/**
 * @file unsupported.cc
 * @brief What uroce's librdmacm does not implement, failing cleanly with errno:
 *  - multicast (rdma_join_multicast*, rdma_leave_multicast): ENOSYS, uroce has no multicast
 *    groups;
 *  - ECE (rdma_set_local_ece, rdma_get_remote_ece): EOPNOTSUPP, as librdmacm on a device
 *    without enhanced connection establishment;
 *  - rsockets (rsocket, rbind, ... riomap): ENOSYS for a new rsocket and EBADF for anything
 *    else, since no descriptor is ever an rsocket. rpoll and rselect pass through to poll(2)
 *    and select(2) (what rdma-core does for descriptors that are not rsockets): librdmacm's
 *    own examples wait on their event channel with rpoll.
 */
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

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

UROCE_CM_EXPORT int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  return poll(fds, nfds, timeout);
}
UROCE_CM_EXPORT int rselect(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* t) {
  return select(nfds, r, w, e, t);
}

UROCE_CM_EXPORT int rsocket(int, int, int) { return fail(ENOSYS); }
UROCE_CM_EXPORT int rbind(int, const sockaddr*, socklen_t) { return fail(EBADF); }
UROCE_CM_EXPORT int rlisten(int, int) { return fail(EBADF); }
UROCE_CM_EXPORT int raccept(int, sockaddr*, socklen_t*) { return fail(EBADF); }
UROCE_CM_EXPORT int rconnect(int, const sockaddr*, socklen_t) { return fail(EBADF); }
UROCE_CM_EXPORT int rshutdown(int, int) { return fail(EBADF); }
UROCE_CM_EXPORT int rclose(int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rrecv(int, void*, size_t, int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rrecvfrom(int, void*, size_t, int, sockaddr*, socklen_t*) {
  return fail(EBADF);
}
UROCE_CM_EXPORT ssize_t rrecvmsg(int, msghdr*, int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rsend(int, const void*, size_t, int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rsendto(int, const void*, size_t, int, const sockaddr*, socklen_t) {
  return fail(EBADF);
}
UROCE_CM_EXPORT ssize_t rsendmsg(int, const msghdr*, int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rread(int, void*, size_t) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rreadv(int, const iovec*, int) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rwrite(int, const void*, size_t) { return fail(EBADF); }
UROCE_CM_EXPORT ssize_t rwritev(int, const iovec*, int) { return fail(EBADF); }
UROCE_CM_EXPORT int rgetpeername(int, sockaddr*, socklen_t*) { return fail(EBADF); }
UROCE_CM_EXPORT int rgetsockname(int, sockaddr*, socklen_t*) { return fail(EBADF); }
UROCE_CM_EXPORT int rsetsockopt(int, int, int, const void*, socklen_t) { return fail(EBADF); }
UROCE_CM_EXPORT int rgetsockopt(int, int, int, void*, socklen_t*) { return fail(EBADF); }
UROCE_CM_EXPORT int rfcntl(int, int, ...) { return fail(EBADF); }
UROCE_CM_EXPORT off_t riomap(int, void*, size_t, int, int, off_t) { return fail(EBADF); }
UROCE_CM_EXPORT int riounmap(int, void*, size_t) { return fail(EBADF); }
UROCE_CM_EXPORT size_t riowrite(int, const void*, size_t, off_t, int) {
  errno = EBADF;
  return 0;
}
