/**
 * @file device_fatal.cc
 * @brief Run by hostd_e2e.py's case `daemonkill`: what a process sees when its uroce-hostd is
 * killed and does not come back (docs/host-mode.md, "The daemon restarting"). It connects two
 * RC QPs of its own to each other through the daemon (same host), checks a SEND between them,
 * leaves receives posted on both, prints "ready" and waits in ibv_get_async_event. Then it
 * asserts, each with a line saying what failed:
 *  - the event is IBV_EVENT_DEVICE_FATAL (printed with its CLOCK_MONOTONIC time, fatal_at=);
 *  - every posted receive completes with IBV_WC_WR_FLUSH_ERR, and so does a SEND posted after;
 *  - calls that create or modify fail with EIO (ibv_alloc_pd, ibv_create_cq, ibv_reg_mr,
 *    ibv_modify_qp), and so do ibv_query_port, ibv_query_device and ibv_query_qp, as the
 *    kernel's after a device's removal (every uverbs command);
 *  - everything is destroyed and the device closed without error.
 * Prints "ok: ..." and exits 0 when all hold, 1 otherwise; SIGALRM ends it after 120 s (a
 * hang).
 *
 * Usage: device_fatal DEVICE GID_INDEX
 */
#include <infiniband/verbs.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rc_connect.h"

namespace {

constexpr int kRecvs = 8;  ///< receives left posted on each QP

double mono() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

int fail(const char* what) {
  std::printf("FAIL: %s\n", what);
  return 1;
}

bool post_recv(ibv_qp* qp, ibv_mr* mr, char* buf, uint64_t id) {
  ibv_sge s{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey};
  ibv_recv_wr w{};
  w.wr_id = id;
  w.sg_list = &s;
  w.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &w, &bad) == 0;
}

bool post_send(ibv_qp* qp, ibv_mr* mr, char* buf, uint64_t id) {
  ibv_sge s{reinterpret_cast<uintptr_t>(buf), 64, mr->lkey};
  ibv_send_wr w{};
  w.wr_id = id;
  w.sg_list = &s;
  w.num_sge = 1;
  w.opcode = IBV_WR_SEND;
  w.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &w, &bad) == 0;
}

/// Polls cq until n completions arrived or `seconds` passed; how many arrived (into wc).
int poll_n(ibv_cq* cq, ibv_wc* wc, int n, double seconds) {
  const double end = mono() + seconds;
  int got = 0;
  while (got < n && mono() < end) {
    const int k = ibv_poll_cq(cq, n - got, wc + got);
    if (k < 0) return got;
    got += k;
    if (!k) usleep(1000);
  }
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  alarm(120);
  const int gid_index = std::atoi(argv[2]);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = nullptr;
  for (int i = 0; i < n && !ctx; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), argv[1]) == 0) ctx = ibv_open_device(list[i]);
  if (!ctx) return fail("ibv_open_device");
  ibv_free_device_list(list);
  ibv_gid gid;
  if (ibv_query_gid(ctx, 1, gid_index, &gid)) return fail("ibv_query_gid");
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = pd ? ibv_create_cq(ctx, 64, nullptr, nullptr, 0) : nullptr;
  static char buf[4096];
  ibv_mr* mr = cq ? ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE) : nullptr;
  if (!mr) return fail("PD, CQ or MR");
  ibv_qp* qp[2];
  for (auto& q : qp) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    q = ibv_create_qp(pd, &ia);
    if (!q) return fail("ibv_create_qp");
  }
  if (!hostd_test::connect_rc(qp[0], qp[1]->qp_num, gid, gid_index) ||
      !hostd_test::connect_rc(qp[1], qp[0]->qp_num, gid, gid_index))
    return fail("connecting the QPs");
  // One SEND through the daemon: the pair works.
  ibv_wc wc[2 * kRecvs + 2];
  if (!post_recv(qp[1], mr, buf + 1024, 1) || !post_send(qp[0], mr, buf, 2))
    return fail("posting the first SEND");
  if (poll_n(cq, wc, 2, 10) != 2 || wc[0].status != IBV_WC_SUCCESS ||
      wc[1].status != IBV_WC_SUCCESS)
    return fail("the first SEND did not complete");
  for (int k = 0; k < kRecvs; ++k)
    for (int q = 0; q < 2; ++q)
      if (!post_recv(qp[q], mr, buf + 2048, 100 + static_cast<uint64_t>(k)))
        return fail("posting receives");
  std::printf("ready qpns %#x %#x\n", qp[0]->qp_num, qp[1]->qp_num);
  std::fflush(stdout);

  ibv_async_event ev;
  for (;;) {
    if (ibv_get_async_event(ctx, &ev)) return fail("ibv_get_async_event");
    const ibv_event_type t = ev.event_type;
    ibv_ack_async_event(&ev);
    std::printf("event %s at %.6f\n", ibv_event_type_str(t), mono());
    if (t == IBV_EVENT_DEVICE_FATAL) break;
  }
  std::printf("fatal_at=%.6f\n", mono());
  std::fflush(stdout);

  const int want = 2 * kRecvs;
  const int got = poll_n(cq, wc, want, 5);
  int flushed = 0;
  for (int i = 0; i < got; ++i)
    if (wc[i].status == IBV_WC_WR_FLUSH_ERR && wc[i].opcode == IBV_WC_RECV) ++flushed;
  if (got != want || flushed != want) {
    std::printf("FAIL: %d completions, %d of them receives flushed, want %d\n", got, flushed, want);
    return 1;
  }
  if (!post_send(qp[0], mr, buf, 3)) return fail("posting a SEND after DEVICE_FATAL");
  if (poll_n(cq, wc, 1, 5) != 1 || wc[0].status != IBV_WC_WR_FLUSH_ERR || wc[0].wr_id != 3)
    return fail("a SEND posted after DEVICE_FATAL did not complete with WR_FLUSH_ERR");
  for (ibv_qp* q : qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    if (ibv_query_qp(q, &a, IBV_QP_STATE, &ia) != EIO)
      return fail("ibv_query_qp did not fail with EIO");
  }
  errno = 0;
  if (ibv_alloc_pd(ctx) || errno != EIO) return fail("ibv_alloc_pd did not fail with EIO");
  errno = 0;
  if (ibv_create_cq(ctx, 4, nullptr, nullptr, 0) || errno != EIO)
    return fail("ibv_create_cq did not fail with EIO");
  errno = 0;
  if (ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE) || errno != EIO)
    return fail("ibv_reg_mr did not fail with EIO");
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RESET;
  if (ibv_modify_qp(qp[0], &a, IBV_QP_STATE) != EIO)
    return fail("ibv_modify_qp did not fail with EIO");
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, 1, &pa) != EIO) return fail("ibv_query_port did not fail with EIO");
  ibv_device_attr da{};
  if (ibv_query_device(ctx, &da) != EIO) return fail("ibv_query_device did not fail with EIO");
  for (ibv_qp* q : qp)
    if (ibv_destroy_qp(q)) return fail("ibv_destroy_qp");
  if (ibv_dereg_mr(mr) || ibv_destroy_cq(cq) || ibv_dealloc_pd(pd) || ibv_close_device(ctx))
    return fail("destroying the rest");
  std::printf(
      "ok: IBV_EVENT_DEVICE_FATAL, %d receives and a SEND flushed, EIO for new objects and "
      "queries\n",
      want);
  return 0;
}
