/**
 * @file events_test.cc
 * @brief Completion channels (ibv_get_cq_event(3): the fd works with poll(), one event per
 * arm, solicited-only arming, a signal ends a blocking wait with EINTR), ibv_create_cq_ex
 * polling (start/next/end_poll, read_*), and EBUSY on destroying a channel with CQs attached.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class ChannelTest : public ChannelPairTest {
 protected:
  void post_recv_b2(Buffer& dst, uint64_t id) {
    ibv_sge s{dst.addr(), static_cast<uint32_t>(dst.bytes.size()), dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(id, &s);
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(b2_, &rwr, &bad), 0);
  }
  void send_a2(Buffer& src, unsigned flags) {
    ibv_sge s{src.addr(), static_cast<uint32_t>(src.bytes.size()), src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | flags;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a2_, &wr, &bad), 0);
    auto wcs = poll_n(cq_a_, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  }
};

TEST_F(ChannelTest, ArmedCqSignalsTheFdOnce) {
  Buffer src(pd_, 64, kAllAccess);
  Buffer dst(pd_, 64, kAllAccess);
  fill_pattern(src.bytes, 1);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  post_recv_b2(dst, 1);
  post_recv_b2(dst, 2);
  send_a2(src, 0);
  // Expect: the channel fd becomes readable (the passive side is progressed in the background).
  pollfd p{ch_->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch_, &cq, &cq_ctx), 0);
  EXPECT_EQ(cq, ecq_);
  EXPECT_EQ(cq_ctx, this);
  ibv_ack_cq_events(cq, 1);
  auto wcs = poll_n(ecq_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(dst.bytes, src.bytes);
  // Expect: not re-armed, so a second completion raises no event.
  send_a2(src, 0);
  ASSERT_EQ(poll_n(ecq_, 1).size(), 1u);
  EXPECT_EQ(poll(&p, 1, 50), 0);
  // A non-blocking fd with nothing pending: get_cq_event fails with EAGAIN.
  fcntl(ch_->fd, F_SETFL, fcntl(ch_->fd, F_GETFL) | O_NONBLOCK);
  errno = 0;
  EXPECT_EQ(ibv_get_cq_event(ch_, &cq, &cq_ctx), -1);
  EXPECT_EQ(errno, EAGAIN);
  // Destroying the channel while a CQ uses it: EBUSY.
  EXPECT_EQ(ibv_destroy_comp_channel(ch_), EBUSY);
}

TEST_F(ChannelTest, SolicitedOnlyIgnoresUnsolicitedSends) {
  Buffer src(pd_, 32, kAllAccess);
  Buffer dst(pd_, 32, kAllAccess);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 1), 0);
  post_recv_b2(dst, 1);
  post_recv_b2(dst, 2);
  send_a2(src, 0);
  ASSERT_EQ(poll_n(ecq_, 1).size(), 1u);
  pollfd p{ch_->fd, POLLIN, 0};
  // Expect: an unsolicited SEND does not signal a solicited-only arm.
  EXPECT_EQ(poll(&p, 1, 50), 0);
  send_a2(src, IBV_SEND_SOLICITED);
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch_, &cq, &cq_ctx), 0);
  EXPECT_EQ(cq, ecq_);
  ibv_ack_cq_events(cq, 1);
  ASSERT_EQ(poll_n(ecq_, 1).size(), 1u);
}

void on_test_signal(int) {}

TEST_F(ChannelTest, ASignalEndsABlockingGetCqEventWithEintr) {
  // ibv_get_cq_event(3) blocks in read(2); a signal whose handler has no SA_RESTART ends it
  // with -1/EINTR, as in rdma-core. qperf's timed tests leave their wait that way at the end.
  struct sigaction sa {};
  struct sigaction old {};
  sa.sa_handler = on_test_signal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  std::atomic<bool> done{false};
  int ret = 0;
  int err = 0;
  std::thread waiter([&] {
    ibv_cq* cq = nullptr;
    void* cq_ctx = nullptr;
    ret = ibv_get_cq_event(ch_, &cq, &cq_ctx);
    err = errno;
    if (ret == 0) ibv_ack_cq_events(cq, 1);
    done = true;
  });
  // Signal until the wait ends (a signal before read() starts is just handled); after 5 s
  // of a wait that ignores them, end it with a real event so the test fails, not hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    pthread_kill(waiter.native_handle(), SIGUSR1);
    std::this_thread::yield();
  }
  Buffer src(pd_, 32, kAllAccess);
  Buffer dst(pd_, 32, kAllAccess);
  if (!done) {
    post_recv_b2(dst, 1);
    send_a2(src, 0);
  }
  waiter.join();
  ASSERT_EQ(sigaction(SIGUSR1, &old, nullptr), 0);
  EXPECT_EQ(ret, -1);
  EXPECT_EQ(err, EINTR);
}

class CqExTest : public QpPairTest {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 64;
    ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                  IBV_WC_EX_WITH_SRC_QP;
    cqx_ = ibv_create_cq_ex(ctx_, &ca);
    ASSERT_NE(cqx_, nullptr);
    cq_a_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    cq_b_ = ibv_cq_ex_to_cq(cqx_);
    a_ = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
    b_ = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(connect_qp(ctx_, a_, b_->qp_num, 1, 2), 0);
    ASSERT_EQ(connect_qp(ctx_, b_, a_->qp_num, 2, 1), 0);
  }
  ibv_cq_ex* cqx_ = nullptr;
};

TEST_F(CqExTest, StartNextEndPollReadFields) {
  Buffer src(pd_, 100, kAllAccess);
  Buffer dst(pd_, 300, kAllAccess);
  fill_pattern(src.bytes, 8);
  // Expect: empty CQ -> ENOENT (and no end_poll needed).
  ibv_poll_cq_attr pa{};
  EXPECT_EQ(ibv_start_poll(cqx_, &pa), ENOENT);
  for (uint64_t i = 0; i < 3; ++i) {
    ibv_sge s{dst.addr() + i * 100, 100, dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(10 + i, &s);
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(b_, &rwr, &bad), 0);
  }
  for (uint32_t i = 0; i < 3; ++i) {
    ibv_sge sge{src.addr(), 100, src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htobe32(i);
    ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  }
  // Poll until the first arrives (bounded), then walk the rest with next_poll.
  int r = ENOENT;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((r = ibv_start_poll(cqx_, &pa)) == ENOENT && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_EQ(r, 0);
  std::vector<uint64_t> ids;
  do {
    EXPECT_EQ(cqx_->status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_wc_read_opcode(cqx_), IBV_WC_RECV);
    EXPECT_EQ(ibv_wc_read_byte_len(cqx_), 100u);
    EXPECT_EQ(ibv_wc_read_qp_num(cqx_), b_->qp_num);
    EXPECT_TRUE(ibv_wc_read_wc_flags(cqx_) & IBV_WC_WITH_IMM);
    EXPECT_EQ(be32toh(ibv_wc_read_imm_data(cqx_)), ids.size());
    ids.push_back(cqx_->wr_id);
  } while (ibv_next_poll(cqx_) == 0);
  ibv_end_poll(cqx_);
  EXPECT_EQ(ids, (std::vector<uint64_t>{10, 11, 12}));
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(std::memcmp(dst.bytes.data() + i * 100, src.bytes.data(), 100), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
