/**
 * @file sched_slice.h
 * @brief Asks Linux for a short CPU time slice for the calling thread, so that it preempts the
 * threads it shares a CPU with soon after it wakes (docs/design.md, "Threads and progress").
 *
 * Since Linux 6.12 (EEVDF) a SCHED_OTHER thread may request its slice through sched_setattr's
 * sched_runtime (the kernel clamps it to [100 µs, 100 ms]); a waking thread whose slice is
 * shorter than the running one's may preempt it at once (the PREEMPT_SHORT scheduler feature),
 * where with the default slice it waits until the running thread has used up its own.
 * Older kernels ignore the request. The thread's nice value is kept.
 */
#pragma once

#include <string>

#include "common/time.h"

namespace uroce {

/// Requests `slice` for the calling thread. Returns the slice the kernel reports afterwards
/// (sched_getattr), or a zero Duration with `why` set when the kernel refused or does not
/// report one (older than 6.12).
Duration request_slice(Duration slice, std::string* why);

}  // namespace uroce
