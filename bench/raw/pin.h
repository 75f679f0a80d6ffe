/**
 * @file pin.h
 * @brief pin_to_cpu(): the calling thread onto one CPU, for bench/raw's two-thread probes.
 */
#pragma once

#include <pthread.h>
#include <sched.h>

namespace uroce::bench {

/// Pins the calling thread to `cpu`; false when the kernel refuses (no such CPU, cpuset).
inline bool pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace uroce::bench
