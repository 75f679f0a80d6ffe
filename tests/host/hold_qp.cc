/**
 * @file hold_qp.cc
 * @brief Run by hostd_e2e.py's case `many`, hundreds at once: opens the device, creates a PD, a
 * CQ and an RC QP, prints "up <qpn>", and holds them until its standard input closes (or the
 * test kills it); then exits without closing anything (the exit ends its daemon session).
 * With --once (bench/hostd_phase_a.py) it prints instead the time from ibv_get_device_list to
 * the QP and its memory then ("open_qp_us=... rss_kb=... hwm_kb=...") and exits.
 *
 * Usage: hold_qp DEVICE [--once]
 */
#include <infiniband/verbs.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

/// A "Vm...:" figure of /proc/self/status, kB.
long status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::strlen(key));
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 3 && std::strcmp(argv[2], "--once") == 0)) return 2;
  timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* c = nullptr;
  for (int i = 0; i < n && !c; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) c = ibv_open_device(list[i]);
  if (!c) return 3;
  ibv_pd* pd = ibv_alloc_pd(c);
  ibv_cq* cq = pd ? ibv_create_cq(c, 4, nullptr, nullptr, 0) : nullptr;
  if (!cq) return 4;
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  if (!qp) return 5;
  if (argc == 3) {
    timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    std::printf("open_qp_us=%ld rss_kb=%ld hwm_kb=%ld\n",
                (t1.tv_sec - t0.tv_sec) * 1'000'000 + (t1.tv_nsec - t0.tv_nsec) / 1000,
                status_kb("VmRSS:"), status_kb("VmHWM:"));
    return 0;
  }
  std::printf("up %#x\n", qp->qp_num);
  std::fflush(stdout);
  char b[64];
  while (read(0, b, sizeof b) > 0) {
  }
  return 0;
}
