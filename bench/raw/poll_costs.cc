/**
 * @file poll_costs.cc
 * @brief What the progress thread's idle steps cost on this machine (lib/device
 * progress_policy.h): one pause instruction (a spin round), one sched_yield(2) (a yield round),
 * and one look at the process's CPU use (lib/device runtime.cc AppCpu: getrusage(2) of the
 * process and of the thread), with --threads sleeping threads in the process (RUSAGE_SELF
 * sums every thread).
 *
 * Runs on the CPU it is started on (pin it with taskset). Prints
 * `POLLCOST threads=T pause_ns=<ns> yield_ns=<ns> rusage_pair_ns=<ns>` (means over --rounds).
 * Usage: poll_costs [--threads T] [--rounds N]
 */
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

int64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

/// Mean ns of one call of fn over n calls.
template <typename F>
int64_t mean_ns(long n, F&& fn) {
  const int64_t start = mono_ns();
  for (long i = 0; i < n; ++i) fn();
  return (mono_ns() - start) / n;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 0;
  long rounds = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (k == "--rounds") {
      rounds = std::atol(argv[i + 1]);
    } else {
      std::fprintf(stderr, "poll_costs: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (threads < 0 || rounds <= 0) {
    std::fprintf(stderr, "poll_costs: --threads >= 0, --rounds > 0\n");
    return 2;
  }
  // Threads that sleep: they count for RUSAGE_SELF without taking the CPU.
  std::atomic<bool> stop{false};
  std::vector<std::thread> others;
  for (int i = 0; i < threads; ++i)
    others.emplace_back([&] {
      const timespec nap{0, 1'000'000};
      while (!stop.load(std::memory_order_relaxed)) nanosleep(&nap, nullptr);
    });
  const int64_t pause = mean_ns(rounds * 10, [] {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  });
  const int64_t yield = mean_ns(rounds, [] { sched_yield(); });
  rusage u{};
  const int64_t pair = mean_ns(rounds, [&] {
    getrusage(RUSAGE_SELF, &u);
    getrusage(RUSAGE_THREAD, &u);
  });
  stop.store(true);
  for (std::thread& t : others) t.join();
  std::printf("POLLCOST threads=%d pause_ns=%lld yield_ns=%lld rusage_pair_ns=%lld\n", threads,
              static_cast<long long>(pause), static_cast<long long>(yield),
              static_cast<long long>(pair));
  return 0;
}
