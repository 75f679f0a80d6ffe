/**
 * @file export.h
 * @brief Marks a librdmacm entry point as exported; the generated version script
 * (gen_version_script.cmake) puts it in rdma-core's node for it (RDMACM_1.0 ... 1.3).
 */
#pragma once

#define UROCE_CM_EXPORT extern "C" __attribute__((visibility("default")))

namespace uroce::rdmacm {
/// errno = e, returns -1 (librdmacm's error convention).
inline int fail(int e) {
  errno = e;
  return -1;
}
}  // namespace uroce::rdmacm
