/**
 * @file async_test.cc
 * @brief Affiliated asynchronous events through ibv_get_async_event(3) on the pollable
 * async_fd: responder access error (IBV_EVENT_QP_ACCESS_ERR on the target QP), CQ overrun
 * (IBV_EVENT_CQ_ERR), Last WQE Reached for a QP on an SRQ entering the error state, and one
 * IBV_EVENT_QP_FATAL when a requester exhausts retry_cnt against a vanished peer; and what
 * ibv_destroy_qp does with a QP's events: drops the unread ones, waits for the
 * acknowledgement of those handed out.
 */
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "tests/support/thread_state.h"
#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

using test_support::thread_state;

/// Waits (bounded) for the next async event other than PORT_ACTIVE.
bool next_event(ibv_context* ctx, ibv_async_event* ev, int timeout_ms = 2000) {
  for (;;) {
    pollfd p{ctx->async_fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) return false;
    if (ibv_get_async_event(ctx, ev) != 0) return false;
    ibv_ack_async_event(ev);
    if (ev->event_type != IBV_EVENT_PORT_ACTIVE) return true;
  }
}

class AsyncTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }

  /// A QP on a new SRQ (*srq), connected to a_, then moved to ERR: Last WQE Reached is raised.
  ibv_qp* srq_qp_moved_to_error(ibv_srq** srq) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    *srq = ibv_create_srq(pd_, &sa);
    ibv_qp* q = *srq ? make_qp(IBV_QPT_RC, cq_b_, *srq, false) : nullptr;
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    if (!q || connect_qp(ctx_, q, a_->qp_num, 1, 2) != 0 ||
        ibv_modify_qp(q, &a, IBV_QP_STATE) != 0) {
      ADD_FAILURE() << "no SRQ-attached QP in the error state";
      return nullptr;
    }
    return q;
  }
};

TEST_F(AsyncTest, RemoteAccessViolationRaisesQpAccessErrOnTheTarget) {
  Buffer src(pd_, 64, kAllAccess);
  Buffer ro(pd_, 64, IBV_ACCESS_LOCAL_WRITE, 0x11);  // no remote rights
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, ro.addr(), ro.mr->rkey);
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_REM_ACCESS_ERR);
  ibv_async_event ev;
  bool saw_access_err = false;
  while (!saw_access_err && next_event(ctx_, &ev)) {
    if (ev.event_type == IBV_EVENT_QP_ACCESS_ERR) {
      saw_access_err = true;
      EXPECT_EQ(ev.element.qp, b_);
    }
  }
  EXPECT_TRUE(saw_access_err);
  for (uint8_t b : ro.bytes) ASSERT_EQ(b, 0x11);
}

TEST_F(AsyncTest, CqOverrunRaisesCqErr) {
  ibv_cq* tiny = ibv_create_cq(ctx_, 2, nullptr, nullptr, 0);
  ASSERT_NE(tiny, nullptr);
  ibv_qp* q = make_qp(IBV_QPT_RC, tiny, nullptr, false);
  ibv_qp* peer = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(peer, nullptr);
  ASSERT_EQ(connect_qp(ctx_, q, peer->qp_num, 1, 2), 0);
  ASSERT_EQ(connect_qp(ctx_, peer, q->qp_num, 2, 1), 0);
  Buffer src(pd_, 8, kAllAccess);
  Buffer dst(pd_, 8, kAllAccess);
  ibv_sge sge{src.addr(), 8, src.mr->lkey};
  for (int i = 0; i < 4; ++i) {
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = dst.addr();
    wr.wr.rdma.rkey = dst.mr->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(q, &wr, &bad), 0);
  }
  // Expect: four completions into a CQ of two: IBV_EVENT_CQ_ERR for it.
  ibv_async_event ev;
  bool saw = false;
  while (!saw && next_event(ctx_, &ev)) {
    if (ev.event_type == IBV_EVENT_CQ_ERR) {
      saw = true;
      EXPECT_EQ(ev.element.cq, tiny);
    }
  }
  EXPECT_TRUE(saw);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
  EXPECT_EQ(ibv_destroy_qp(peer), 0);
  EXPECT_EQ(ibv_destroy_cq(tiny), 0);
}

TEST_F(AsyncTest, QpOnSrqEnteringErrorRaisesLastWqeReached) {
  ibv_srq* srq = nullptr;
  ibv_qp* q = srq_qp_moved_to_error(&srq);
  ASSERT_NE(q, nullptr);
  ibv_async_event ev;
  bool saw = false;
  while (!saw && next_event(ctx_, &ev)) {
    if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) {
      saw = true;
      EXPECT_EQ(ev.element.qp, q);
    }
  }
  EXPECT_TRUE(saw);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// ibv_destroy_qp(3) after an event about the QP was raised but not read: the event is
// dropped with the QP (the kernel's uverbs does the same), so ibv_get_async_event never hands
// out a pointer to the freed QP (UCX reads ev.element.qp->qp_num from every QP event).
TEST_F(AsyncTest, AnUnreadEventOfADestroyedQpIsNotDelivered) {
  ibv_srq* srq = nullptr;
  ibv_qp* q = srq_qp_moved_to_error(&srq);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
  ibv_async_event ev;
  while (next_event(ctx_, &ev, 200))
    EXPECT_NE(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED) << "an event of the destroyed QP";
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

// ibv_destroy_qp(3) after an event about the QP was handed out: it returns only once the
// program has acknowledged it (ibv_ack_async_event(3)), as with rdma-core.
TEST_F(AsyncTest, DestroyWaitsForTheAcknowledgementOfAHandedOutEvent) {
  ibv_srq* srq = nullptr;
  ibv_qp* q = srq_qp_moved_to_error(&srq);
  ASSERT_NE(q, nullptr);
  ibv_async_event ev{};
  for (;;) {  // the QP's event, handed out and not acknowledged yet
    pollfd p{ctx_->async_fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 2000), 1);
    ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
    if (ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED) break;
    ibv_ack_async_event(&ev);
  }
  ASSERT_EQ(ev.element.qp, q);
  std::atomic<pid_t> tid{0};
  std::atomic<bool> destroyed{false};
  std::thread destroyer([&] {
    tid = gettid();
    EXPECT_EQ(ibv_destroy_qp(q), 0);
    destroyed = true;
  });
  // Polling with a deadline: the destroyer sleeps on the QP's condition, or it returned.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!destroyed && (tid == 0 || thread_state(tid) != 'S') &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_FALSE(destroyed) << "ibv_destroy_qp returned before the event was acknowledged";
  ibv_ack_async_event(&ev);
  destroyer.join();
  EXPECT_TRUE(destroyed);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
}

}  // namespace
}  // namespace uroce::verbs_test

namespace uroce::verbs_test {
namespace {

TEST_F(AsyncTest, VanishedPeerEndsInRetryExceededThenFlush) {
  // A fresh requester that gives up fast: ACK timeout 4.096 us * 2^8 ~ 1 ms, two retries.
  ibv_qp* q = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
  ibv_qp* gone = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
  ASSERT_NE(q, nullptr);
  ASSERT_NE(gone, nullptr);
  ASSERT_EQ(connect_qp(ctx_, q, gone->qp_num, 1, 2, kAllAccess, 8, 2), 0);
  // The peer QP disappears (as when its process dies): nothing answers q any more.
  ASSERT_EQ(ibv_destroy_qp(gone), 0);
  Buffer src(pd_, 64, kAllAccess);
  Buffer dst(pd_, 64, kAllAccess);
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr w[2] = {};
  for (int i = 0; i < 2; ++i) {
    w[i].wr_id = static_cast<uint64_t>(i);
    w[i].sg_list = &sge;
    w[i].num_sge = 1;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].wr.rdma.remote_addr = dst.addr();
    w[i].wr.rdma.rkey = dst.mr->rkey;
  }
  w[0].next = &w[1];
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(q, &w[0], &bad), 0);
  // Expect: the first WR fails with RETRY_EXC_ERR, the second is flushed; the QP is in ERR.
  auto wcs = poll_n(cq_a_, 2, 10000);
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 0u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(wcs[1].wr_id, 1u);
  EXPECT_EQ(wcs[1].status, IBV_WC_WR_FLUSH_ERR) << ibv_wc_status_str(wcs[1].status);
  ibv_qp_attr qa;
  ibv_qp_init_attr qi;
  ASSERT_EQ(ibv_query_qp(q, &qa, IBV_QP_STATE, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_ERR);
  // ibv_get_async_event(3): the QP transitioned to ERR through an error: QP_FATAL, once.
  ibv_async_event ev;
  ASSERT_TRUE(next_event(ctx_, &ev));
  EXPECT_EQ(ev.event_type, IBV_EVENT_QP_FATAL);
  EXPECT_EQ(ev.element.qp, q);
  pollfd p{ctx_->async_fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 100), 0) << "a second async event";
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(AsyncTest, ResizeCqKeepsWorking) {
  EXPECT_EQ(ibv_resize_cq(cq_a_, 1024), 0);
  EXPECT_GE(cq_a_->cqe, 1024);
  EXPECT_EQ(ibv_resize_cq(cq_a_, 0), EINVAL);
  Buffer src(pd_, 16, kAllAccess);
  Buffer dst(pd_, 16, kAllAccess);
  fill_pattern(src.bytes, 9);
  ibv_sge sge{src.addr(), 16, src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = dst.addr();
  wr.wr.rdma.rkey = dst.mr->rkey;
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst.bytes, src.bytes);
}

}  // namespace
}  // namespace uroce::verbs_test
