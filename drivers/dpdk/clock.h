/**
 * @file clock.h
 * @brief The clock the DPDK driver times its own work with (CLOCK_MONOTONIC), for callers that
 * were given no reading.
 */
#pragma once

#include <ctime>

#include "common/time.h"

namespace uroce::dpdk {

inline Timestamp monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
}

}  // namespace uroce::dpdk
