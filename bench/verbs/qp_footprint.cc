/**
 * @file qp_footprint.cc
 * @brief What connected QPs cost a process when nothing moves: resident memory per QP, and the
 * CPU an idle process burns (issue #4's "1024 connected QPs cost <= 64 KiB each beyond their
 * queue buffers" and "an idle process uses < 5 % of a core").
 *
 * On the first device (uroce0, the built-in loopback when no config names one): one PD, one
 * CQ, then --qps RC QPs with one send and one receive WR each (so their queue buffers are a
 * few hundred bytes), connected in pairs to each other (QP 2i <-> 2i+1, GID index 0) and moved
 * to RTS. Resident memory (/proc/self/statm) is read after a first warm-up pair and after all
 * QPs: the difference over the QP count is the cost of one QP, queues included. Then the main
 * thread sleeps --idle-seconds and the process's CPU time over that span (getrusage: the
 * progress thread's backoff) is the idle cost, in % of one core. The same over two windows
 * of that span tells the progress thread's two long idle sleeps apart (lib/device
 * progress_policy.h): 0.1-0.9 s after the last call (kDeepSleep, 250 us) and from 1.2 s on
 * (kDeeperSleep, 2 ms; only when --idle-seconds is at least 2).
 * Prints `QPFOOT qps=<n> bytes_per_qp=<b> idle_cpu_pct=<p> idle_seconds=<s>
 * deep_cpu_pct=<p> deeper_cpu_pct=<p>` (-1: window not measured).
 * Usage: qp_footprint [--qps N] [--idle-seconds S]
 */
#include <infiniband/verbs.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "rc_loop.h"

namespace {

long resident_bytes() {
  long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double wall_seconds() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

/// Sleeps until the monotonic clock reads `until` (seconds).
void sleep_until(double until) {
  for (double left = until - wall_seconds(); left > 0; left = until - wall_seconds()) {
    timespec ts{static_cast<time_t>(left),
                static_cast<long>((left - static_cast<double>(static_cast<time_t>(left))) * 1e9)};
    nanosleep(&ts, nullptr);
  }
}

/// The process's CPU over [from, to] seconds after `start`, in % of one core (sleeps to both).
double cpu_pct_between(double start, double from, double to) {
  sleep_until(start + from);
  const double c0 = cpu_seconds(), w0 = wall_seconds();
  sleep_until(start + to);
  return 100.0 * (cpu_seconds() - c0) / (wall_seconds() - w0);
}

}  // namespace

int main(int argc, char** argv) {
  int nqps = 1024;
  double idle_seconds = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--qps")
      nqps = std::atoi(argv[i + 1]) & ~1;  // pairs
    else if (k == "--idle-seconds")
      idle_seconds = std::atof(argv[i + 1]);
  }
  int ndev = 0;
  ibv_device** list = ibv_get_device_list(&ndev);
  if (!list || ndev == 0) {
    std::fprintf(stderr, "qp_footprint: no RDMA device\n");
    return 1;
  }
  ibv_context* ctx = ibv_open_device(list[0]);
  ibv_pd* pd = ctx ? ibv_alloc_pd(ctx) : nullptr;
  ibv_cq* cq = pd ? ibv_create_cq(ctx, 2 * nqps + 16, nullptr, nullptr, 0) : nullptr;
  ibv_gid gid{};
  ibv_port_attr pa{};
  if (!cq || ibv_query_gid(ctx, 1, 0, &gid) || ibv_query_port(ctx, 1, &pa)) {
    std::fprintf(stderr, "qp_footprint: cannot open %s\n", ibv_get_device_name(list[0]));
    return 1;
  }
  std::vector<ibv_qp*> qps;
  auto add_pair = [&] {
    ibv_qp* a = bench::make_rc_qp(pd, cq, 1);
    ibv_qp* b = bench::make_rc_qp(pd, cq, 1);
    if (!a || !b || !bench::connect_rc(a, b->qp_num, gid, pa.active_mtu) ||
        !bench::connect_rc(b, a->qp_num, gid, pa.active_mtu)) {
      std::perror("qp_footprint: connect");
      return false;
    }
    qps.push_back(a);
    qps.push_back(b);
    return true;
  };
  if (!add_pair()) return 1;  // warm-up: first-use allocations are not per QP
  const long before = resident_bytes();
  for (int i = 0; i < nqps; i += 2)
    if (!add_pair()) return 1;
  const long after = resident_bytes();
  const double bytes_per_qp = static_cast<double>(after - before) / nqps;

  const double c0 = cpu_seconds(), w0 = wall_seconds();
  double deep = -1, deeper = -1;
  if (idle_seconds >= 1) deep = cpu_pct_between(w0, 0.1, 0.9);
  if (idle_seconds >= 2) deeper = cpu_pct_between(w0, 1.2, idle_seconds);
  sleep_until(w0 + idle_seconds);
  const double idle_pct = 100.0 * (cpu_seconds() - c0) / (wall_seconds() - w0);
  std::printf(
      "QPFOOT qps=%d bytes_per_qp=%.0f idle_cpu_pct=%.2f idle_seconds=%.1f deep_cpu_pct=%.2f "
      "deeper_cpu_pct=%.2f\n",
      nqps, bytes_per_qp, idle_pct, idle_seconds, deep, deeper);
  for (ibv_qp* q : qps) ibv_destroy_qp(q);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  ibv_free_device_list(list);
  return 0;
}
