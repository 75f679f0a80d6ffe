/**
 * @file unsupported.cc
 * @brief Public verbs this device does not implement, and sysfs helpers. Each fails like
 * rdma-core's dummy ops (EOPNOTSUPP returned, or NULL / -1 with errno) and never crashes.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "verbs/objects.h"
#include "verbs/symver.h"

UROCE_EXPORT int uroce_attach_mcast_1_1(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
UROCE_DEFAULT_VERSION(uroce_attach_mcast_1_1, ibv_attach_mcast, "IBVERBS_1.1");
UROCE_EXPORT int uroce_detach_mcast_1_1(ibv_qp*, const ibv_gid*, uint16_t) { return EOPNOTSUPP; }
UROCE_DEFAULT_VERSION(uroce_detach_mcast_1_1, ibv_detach_mcast, "IBVERBS_1.1");

/// A context lives in the process that opened it (its engine and port are in that process's
/// memory), so there is nothing another fd could share: importing fails with EOPNOTSUPP (what
/// rdma-core's suite takes as "not supported") and leaves the caller's fd open.
UROCE_EXPORT ibv_context* ibv_import_device(int) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT ibv_pd* ibv_import_pd(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_pd(ibv_pd*) {}
UROCE_EXPORT ibv_mr* ibv_import_mr(ibv_pd*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_mr(ibv_mr*) {}
UROCE_EXPORT ibv_dm* ibv_import_dm(ibv_context*, uint32_t) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void ibv_unimport_dm(ibv_dm*) {}

UROCE_EXPORT ibv_mr* ibv_reg_dmabuf_mr(ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
  errno = EOPNOTSUPP;
  return nullptr;
}

// Kernel ABI struct conversions (ib_user_verbs.h): no kernel here; nothing to convert.
UROCE_EXPORT void ibv_copy_ah_attr_from_kern(ibv_ah_attr* dst, void*) {
  std::memset(dst, 0, sizeof *dst);
}
UROCE_EXPORT void ibv_copy_qp_attr_from_kern(ibv_qp_attr* dst, void*) {
  std::memset(dst, 0, sizeof *dst);
}
UROCE_EXPORT void ibv_copy_path_rec_from_kern(void*, void*) {}
UROCE_EXPORT void ibv_copy_path_rec_to_kern(void*, void*) {}

// ---- sysfs helpers ------------------------------------------------------------------------

UROCE_EXPORT const char* ibv_get_sysfs_path(void) { return "/sys"; }

/// Reads dir/file into buf (NUL-terminated, trailing newline removed); length or -1.
UROCE_EXPORT int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  char path[4096];
  std::snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t len = read(fd, buf, size);
  close(fd);
  if (len <= 0) return -1;
  if (static_cast<size_t>(len) == size) --len;
  if (len > 0 && buf[len - 1] == '\n') --len;
  buf[len] = '\0';
  return static_cast<int>(len);
}
