/**
 * @file sched_slice.cc
 * @brief sched_setattr/sched_getattr for a SCHED_OTHER thread's slice (sched_slice.h). glibc
 * 2.36 has no wrapper for either; the structure is the kernel's (include/uapi/linux/sched/types.h,
 * SCHED_ATTR_SIZE_VER0).
 */
#include "common/sched_slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace uroce {

namespace {

struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;
  uint64_t sched_deadline;
  uint64_t sched_period;
};

}  // namespace

Duration request_slice(Duration slice, std::string* why) {
  SchedAttr now{};
  if (syscall(SYS_sched_getattr, 0, &now, sizeof now, 0) != 0) {
    *why = std::string("sched_getattr: ") + std::strerror(errno);
    return {};
  }
  if (now.sched_policy != SCHED_OTHER) {  // a real-time or batch thread keeps its policy
    *why = "the thread's policy is not SCHED_OTHER";
    return {};
  }
  SchedAttr want = now;
  want.size = sizeof want;
  want.sched_flags = 0;
  want.sched_runtime = static_cast<uint64_t>(slice.ns);  // sched_nice stays the thread's own
  if (syscall(SYS_sched_setattr, 0, &want, 0) != 0) {
    *why = std::string("sched_setattr: ") + std::strerror(errno);
    return {};
  }
  SchedAttr got{};
  if (syscall(SYS_sched_getattr, 0, &got, sizeof got, 0) != 0 || got.sched_runtime == 0) {
    *why = "the kernel keeps no slice per thread (Linux before 6.12)";
    return {};
  }
  return Duration::nanos(static_cast<int64_t>(got.sched_runtime));
}

}  // namespace uroce
