/**
 * @file core_to_core.cc
 * @brief How far apart two CPUs are right now: the one-way time of a cache-line hand-off.
 *
 * Two threads, pinned to --cpus A,B (default 0,1), pass a counter back and forth through one
 * cache line --round-trips times and print `C2C cpus=A,B one_way_ns=<ns>` (half a round trip).
 *
 * Why bench/compare runs it before and after every measurement: on this kind of VM (2 vCPUs on
 * an AMD EPYC host) the host moves the vCPUs between physical cores every few seconds. When both
 * sit on one L3 (core complex) a hand-off takes ~30-40 ns; across L3s ~170 ns, and every
 * two-process data path slows with it (a memif link moves 4 KiB frames ~7x slower). A figure is
 * only comparable with another taken in the same placement.
 * Usage: core_to_core [--cpus A,B] [--round-trips N]
 */
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "pin.h"

namespace {

struct alignas(64) Line {
  std::atomic<uint64_t> value{0};
};

}  // namespace

int main(int argc, char** argv) {
  int cpu_a = 0;
  int cpu_b = 1;
  uint64_t round_trips = 200000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--cpus") {
      if (std::sscanf(argv[i + 1], "%d,%d", &cpu_a, &cpu_b) != 2) {
        std::fprintf(stderr, "core_to_core: --cpus wants A,B\n");
        return 2;
      }
    } else if (k == "--round-trips") {
      round_trips = std::strtoull(argv[i + 1], nullptr, 10);
    } else {
      std::fprintf(stderr, "core_to_core: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (round_trips == 0) round_trips = 1;
  static Line line;
  bool pinned_b = true;
  std::thread echo([&] {
    pinned_b = uroce::bench::pin_to_cpu(cpu_b);
    for (uint64_t i = 0; i < round_trips; ++i) {
      while (line.value.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.value.store(2 * i + 2, std::memory_order_release);
    }
  });
  if (!uroce::bench::pin_to_cpu(cpu_a)) {
    std::fprintf(stderr, "core_to_core: cannot pin to CPU %d\n", cpu_a);
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < round_trips; ++i) {
    line.value.store(2 * i + 1, std::memory_order_release);
    while (line.value.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start);
  echo.join();
  if (!pinned_b) {
    std::fprintf(stderr, "core_to_core: cannot pin to CPU %d\n", cpu_b);
    return 1;
  }
  std::printf("C2C cpus=%d,%d one_way_ns=%.1f\n", cpu_a, cpu_b,
              ns.count() / static_cast<double>(2 * round_trips));
  return 0;
}
