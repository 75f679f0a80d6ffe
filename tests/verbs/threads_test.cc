/**
 * @file threads_test.cc
 * @brief Verbs objects are thread-safe as rdma-core documents them: several application
 * threads post and poll on their own QPs and CQs of one device at the same time (one engine,
 * one engine lock, plus the background progress thread), and every byte arrives.
 */
#include <atomic>
#include <cstring>
#include <thread>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

TEST(Threads, ConcurrentWritersOnOneDevice) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  constexpr int kThreads = 4, kIters = 100;
  constexpr size_t kLen = 3000;
  std::atomic<int> failures{0};
  auto worker = [&](int t) {
    ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* a = ibv_create_qp(pd, &ia);
    ibv_qp* b = ibv_create_qp(pd, &ia);
    if (!cq || !a || !b || connect_qp(ctx, a, b->qp_num, 10, 20) ||
        connect_qp(ctx, b, a->qp_num, 20, 10)) {
      failures++;
      return;
    }
    {
      Buffer src(pd, kLen, kAllAccess);
      Buffer dst(pd, kLen, kAllAccess);
      for (int i = 0; i < kIters; ++i) {
        fill_pattern(src.bytes, static_cast<uint32_t>(t * 1000 + i));
        ibv_sge sge{src.addr(), static_cast<uint32_t>(kLen), src.mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = static_cast<uint64_t>(i);
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = dst.addr();
        wr.wr.rdma.rkey = dst.mr->rkey;
        ibv_send_wr* bad = nullptr;
        if (ibv_post_send(a, &wr, &bad)) {
          failures++;
          break;
        }
        auto wcs = poll_n(cq, 1);
        if (wcs.size() != 1 || wcs[0].status != IBV_WC_SUCCESS || dst.bytes != src.bytes) {
          failures++;
          break;
        }
      }
    }
    ibv_destroy_qp(a);
    ibv_destroy_qp(b);
    ibv_destroy_cq(cq);
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) ts.emplace_back(worker, t);
  for (auto& th : ts) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
