/**
 * @file verbs_bench.cc
 * @brief The verbs layer's cost per message (Google Benchmark): ibv_post_send, the engine and
 * ibv_poll_cq of the drop-in library, with two RC QPs on the built-in loopback device (uroce0
 * when no config names one), so no link and no second process add noise.
 *
 *  - BM_VerbsWrite64Window: what ib_write_bw -s 64 does: up to 128 RDMA WRITEs of 64 bytes
 *    outstanding, every 64th signaled, completions polled 16 at a time;
 *  - BM_VerbsWrite2PingPong: one signaled 2-byte WRITE, polled until it completes (the
 *    requester and responder round trip of ib_write_lat, both ends in this thread);
 *  - BM_VerbsSend64: ibv_post_recv + a signaled 64-byte SEND + both completions.
 * Each iteration is one message; items_per_second is messages per second.
 */
#include <benchmark/benchmark.h>
#include <infiniband/verbs.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "rc_loop.h"

namespace {

constexpr uint32_t kDepth = 128;
constexpr uint32_t kSignalEvery = 64;
constexpr size_t kBufBytes = 1 << 20;

/// One device, PD, CQ, MR and a connected RC pair, opened once for every benchmark.
struct Loop {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  ibv_qp* a = nullptr;  ///< requester
  ibv_qp* b = nullptr;  ///< responder
  std::vector<char> buf = std::vector<char>(kBufBytes);

  static Loop& get() {
    static Loop* l = open();
    return *l;
  }

  static Loop* open() {
    auto* l = new Loop;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) return fail("no RDMA device");
    l->ctx = ibv_open_device(list[0]);
    ibv_gid gid{};
    ibv_port_attr pa{};
    if (!l->ctx || ibv_query_gid(l->ctx, 1, 0, &gid) || ibv_query_port(l->ctx, 1, &pa))
      return fail("cannot open the device");
    l->pd = ibv_alloc_pd(l->ctx);
    l->cq = l->pd ? ibv_create_cq(l->ctx, 4 * kDepth, nullptr, nullptr, 0) : nullptr;
    l->mr = l->cq ? ibv_reg_mr(l->pd, l->buf.data(), kBufBytes,
                               IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
                  : nullptr;
    l->a = l->mr ? bench::make_rc_qp(l->pd, l->cq, kDepth) : nullptr;
    l->b = l->a ? bench::make_rc_qp(l->pd, l->cq, kDepth) : nullptr;
    if (!l->b || !bench::connect_rc(l->a, l->b->qp_num, gid, pa.active_mtu) ||
        !bench::connect_rc(l->b, l->a->qp_num, gid, pa.active_mtu))
      return fail("cannot connect the QPs");
    return l;
  }

  static Loop* fail(const char* what) {
    std::fprintf(stderr, "verbs_bench: %s\n", what);
    std::exit(1);
  }

  /// A WRITE of `len` bytes from the first half of buf into the second half.
  bool post_write(uint32_t len, bool signaled) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf.data()), len, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf.data() + kBufBytes / 2);
    wr.wr.rdma.rkey = mr->rkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a, &wr, &bad) == 0;
  }

  /// Polls until `want` completions arrived, all successful.
  bool wait(int want) {
    ibv_wc wc[16];
    while (want > 0) {
      int n = ibv_poll_cq(cq, 16, wc);
      if (n < 0) return false;
      for (int i = 0; i < n; ++i)
        if (wc[i].status != IBV_WC_SUCCESS) return false;
      want -= n;
    }
    return true;
  }
};

void BM_VerbsWrite64Window(benchmark::State& state) {
  Loop& l = Loop::get();
  uint64_t posted = 0, completed = 0;  // in units of messages
  ibv_wc wc[16];
  for (auto _ : state) {
    while (posted - completed >= kDepth) {
      int n = ibv_poll_cq(l.cq, 16, wc);
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) state.SkipWithError("completion error");
        completed += kSignalEvery;
      }
    }
    ++posted;
    if (!l.post_write(64, posted % kSignalEvery == 0)) state.SkipWithError("post failed");
  }
  // Drain what is outstanding (whole signaled groups), so the next benchmark starts empty.
  uint64_t groups = posted / kSignalEvery - completed / kSignalEvery;
  if (!l.wait(static_cast<int>(groups))) state.SkipWithError("completion error");
  uint64_t rest = posted % kSignalEvery;
  if (rest && !(l.post_write(0, true) && l.wait(1))) state.SkipWithError("drain failed");
  state.SetItemsProcessed(static_cast<int64_t>(posted));
}
BENCHMARK(BM_VerbsWrite64Window);

void BM_VerbsWrite2PingPong(benchmark::State& state) {
  Loop& l = Loop::get();
  for (auto _ : state)
    if (!l.post_write(2, true) || !l.wait(1)) state.SkipWithError("write failed");
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerbsWrite2PingPong);

void BM_VerbsSend64(benchmark::State& state) {
  Loop& l = Loop::get();
  ibv_sge rsge{reinterpret_cast<uintptr_t>(l.buf.data() + kBufBytes / 2), 64, l.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_sge ssge{reinterpret_cast<uintptr_t>(l.buf.data()), 64, l.mr->lkey};
  ibv_send_wr swr{};
  swr.sg_list = &ssge;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  for (auto _ : state) {
    ibv_recv_wr* rbad = nullptr;
    ibv_send_wr* sbad = nullptr;
    if (ibv_post_recv(l.b, &rwr, &rbad) || ibv_post_send(l.a, &swr, &sbad) || !l.wait(2))
      state.SkipWithError("send failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VerbsSend64);

}  // namespace

BENCHMARK_MAIN();
