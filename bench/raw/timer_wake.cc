/**
 * @file timer_wake.cc
 * @brief How long a thread that sleeps for 1 us really sleeps: the floor under any latency that
 * waits for a sleeping poller.
 *
 * A thread pinned to --cpu (default 0) calls nanosleep(--sleep-ns, default 1000) --samples
 * times with timer slack --slack-ns (default 1; Linux's default is 50000, uroce's progress
 * thread sets 5000) and prints
 * `WAKE cpu=C sleep_ns=S slack_ns=L spinner=0|1 median_ns=<ns> p99_ns=<ns>`. With --spinner 1
 * another thread spins on the same CPU meanwhile, as an application that polls memory does.
 *
 * Why bench/compare prints it: `ib_write_lat` spins on the last byte of its buffer without
 * calling into the library, so the arriving WRITE is placed by uroce's progress thread. On a
 * machine without a spare core that thread shares its CPU with the spinner and sleeps between
 * looks; the time a 1 us sleep takes is then the least a one-way latency can be (a raw DPDK
 * ping-pong has no second thread and no sleep).
 * Usage: timer_wake [--cpu C] [--sleep-ns S] [--slack-ns L] [--samples N] [--spinner 0|1]
 */
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "pin.h"

namespace {

int64_t mono_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  int cpu = 0;
  long sleep_ns = 1000;
  unsigned long slack_ns = 1;
  size_t samples = 20000;
  bool spinner = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const char* v = argv[i + 1];
    if (k == "--cpu") {
      cpu = std::atoi(v);
    } else if (k == "--sleep-ns") {
      sleep_ns = std::atol(v);
    } else if (k == "--slack-ns") {
      slack_ns = std::strtoul(v, nullptr, 10);
    } else if (k == "--samples") {
      samples = std::strtoull(v, nullptr, 10);
    } else if (k == "--spinner") {
      spinner = std::atoi(v) != 0;
    } else {
      std::fprintf(stderr, "timer_wake: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (samples == 0 || sleep_ns <= 0 || sleep_ns >= 1'000'000'000 || slack_ns == 0) {
    std::fprintf(stderr, "timer_wake: --samples > 0, 0 < --sleep-ns < 1e9, --slack-ns > 0\n");
    return 2;
  }
  if (!uroce::bench::pin_to_cpu(cpu)) {
    std::fprintf(stderr, "timer_wake: cannot pin to CPU %d\n", cpu);
    return 1;
  }
  std::atomic<bool> stop{false};
  std::thread spin;
  if (spinner) {
    spin = std::thread([&] {
      uroce::bench::pin_to_cpu(cpu);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  prctl(PR_SET_TIMERSLACK, slack_ns, 0, 0, 0);
  std::vector<int64_t> took(samples);
  const timespec req{0, sleep_ns};
  for (int64_t& d : took) {
    const int64_t start = mono_ns();
    nanosleep(&req, nullptr);
    d = mono_ns() - start;
  }
  stop.store(true);
  if (spin.joinable()) spin.join();
  std::sort(took.begin(), took.end());
  std::printf("WAKE cpu=%d sleep_ns=%ld slack_ns=%lu spinner=%d median_ns=%lld p99_ns=%lld\n", cpu,
              sleep_ns, slack_ns, spinner ? 1 : 0, static_cast<long long>(took[took.size() / 2]),
              static_cast<long long>(took[took.size() * 99 / 100]));
  return 0;
}
