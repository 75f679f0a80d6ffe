/**
 * @file ud_srq_test.cc
 * @brief UD datagrams with their 40-byte GRH (IPv4 RoCEv2: IPv4 header in bytes 20..39),
 * address handles from a work completion (ibv_create_ah_from_wc), and shared receive queues
 * with the SRQ limit event (ibv_modify_srq(3)), through the real verbs API on loopback.
 */
#include <poll.h>

#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

constexpr uint32_t kQkey = 0x11111111;
constexpr size_t kGrh = 40;

class UdTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_UD); }
  ibv_ah* ah_to_self() {
    ibv_ah_attr a{};
    a.is_global = 1;
    ibv_query_gid(ctx_, 1, 0, &a.grh.dgid);
    a.grh.sgid_index = 0;
    a.grh.hop_limit = 64;
    a.port_num = 1;
    return ibv_create_ah(pd_, &a);
  }
};

TEST_F(UdTest, SendArrivesWithGrhAndSourceQp) {
  const size_t len = 512;
  Buffer src(pd_, len, kAllAccess);
  Buffer dst(pd_, kGrh + len, kAllAccess, 0xaa);
  fill_pattern(src.bytes, 21);
  ibv_sge rs{dst.addr(), static_cast<uint32_t>(kGrh + len), dst.mr->lkey};
  ibv_recv_wr rwr = recv_wr(3, &rs);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_ah* ah = ah_to_self();
  ASSERT_NE(ah, nullptr);
  ibv_sge sge{src.addr(), static_cast<uint32_t>(len), src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = b_->qp_num;
  wr.wr.ud.remote_qkey = kQkey;
  ibv_wc wc = post_and_wait(wr);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].byte_len, kGrh + len);  // ibv_poll_cq(3): UD byte_len includes the GRH
  EXPECT_EQ(r[0].src_qp, a_->qp_num);
  EXPECT_TRUE(r[0].wc_flags & IBV_WC_GRH);
  // sl is the RoCE packet type as mlx5 reports it (UCX's ud_verbs reads it): UDP | IPv4.
  EXPECT_EQ(r[0].sl, 0x8 | 0x2);
  EXPECT_EQ(std::memcmp(dst.bytes.data() + kGrh, src.bytes.data(), len), 0);
  // The IPv4 header sits in bytes 20..39: version 4, source and destination 198.18.0.1.
  const uint8_t* ip = dst.bytes.data() + 20;
  EXPECT_EQ(ip[0] >> 4, 4);
  const uint8_t addr[4] = {198, 18, 0, 1};
  EXPECT_EQ(std::memcmp(ip + 12, addr, 4), 0);
  EXPECT_EQ(std::memcmp(ip + 16, addr, 4), 0);

  // An AH built from the completion addresses the sender back.
  ibv_ah_attr back;
  ASSERT_EQ(
      ibv_init_ah_from_wc(ctx_, 1, &r[0], reinterpret_cast<ibv_grh*>(dst.bytes.data()), &back), 0);
  EXPECT_EQ(back.is_global, 1);
  EXPECT_EQ(back.grh.sgid_index, 0);
  ibv_gid g0;
  ibv_query_gid(ctx_, 1, 0, &g0);
  EXPECT_EQ(std::memcmp(back.grh.dgid.raw, g0.raw, 16), 0);
  ibv_ah* reply =
      ibv_create_ah_from_wc(pd_, &r[0], reinterpret_cast<ibv_grh*>(dst.bytes.data()), 1);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(ibv_destroy_ah(reply), 0);
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

TEST_F(UdTest, DatagramLargerThanMtuIsRefused) {
  Buffer src(pd_, 4096, kAllAccess);
  ibv_ah* ah = ah_to_self();
  ASSERT_NE(ah, nullptr);
  ibv_sge sge{src.addr(), 4096, src.mr->lkey};  // path MTU is 1024
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.ud.ah = ah;
  wr.wr.ud.remote_qpn = b_->qp_num;
  wr.wr.ud.remote_qkey = kQkey;
  ibv_send_wr* bad = nullptr;
  int r = ibv_post_send(a_, &wr, &bad);
  if (r == 0) {
    auto wcs = poll_n(cq_a_, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_NE(wcs[0].status, IBV_WC_SUCCESS);
  } else {
    EXPECT_EQ(bad, &wr);
  }
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
}

class SrqTest : public QpPairTest {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 2;
    srq_ = ibv_create_srq(pd_, &sa);
    ASSERT_NE(srq_, nullptr);
    EXPECT_GE(sa.attr.max_wr, 16u);
    cq_a_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
    cq_b_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
    a_ = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
    b_ = make_qp(IBV_QPT_RC, cq_b_, srq_, false);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(connect_qp(ctx_, a_, b_->qp_num, 1, 2), 0);
    ASSERT_EQ(connect_qp(ctx_, b_, a_->qp_num, 2, 1), 0);
    // Drain PORT_ACTIVE.
    ibv_async_event ev;
    ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
    ibv_ack_async_event(&ev);
  }
  void extra_teardown() override {
    if (srq_) {
      EXPECT_EQ(ibv_destroy_srq(srq_), 0);
    }
  }
  ibv_srq* srq_ = nullptr;
};

TEST_F(SrqTest, SendsConsumeSrqWqesAndLimitEventFires) {
  const size_t len = 256, n = 8;
  Buffer src(pd_, len * n, kAllAccess);
  Buffer dst(pd_, len * n, kAllAccess);
  fill_pattern(src.bytes, 5);
  for (size_t i = 0; i < n; ++i) {
    ibv_sge s{dst.addr() + i * len, static_cast<uint32_t>(len), dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(100 + i, &s);
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq_, &rwr, &bad), 0);
  }
  // Arm the limit: the event fires when fewer than 4 WQEs remain.
  ibv_srq_attr la{};
  la.srq_limit = 4;
  ASSERT_EQ(ibv_modify_srq(srq_, &la, IBV_SRQ_LIMIT), 0);
  ibv_srq_attr q{};
  ASSERT_EQ(ibv_query_srq(srq_, &q), 0);
  EXPECT_EQ(q.srq_limit, 4u);
  // Posting to a QP that uses an SRQ is refused.
  ibv_recv_wr rw{};
  ibv_recv_wr* rbad = nullptr;
  EXPECT_NE(ibv_post_recv(b_, &rw, &rbad), 0);
  EXPECT_EQ(rbad, &rw);

  for (size_t i = 0; i < 5; ++i) {
    ibv_sge sge{src.addr() + i * len, static_cast<uint32_t>(len), src.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  }
  auto r = poll_n(cq_b_, 5);
  ASSERT_EQ(r.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(r[i].wr_id, 100 + i);  // SRQ WQEs are used in posting order
  }
  EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), 5 * len), 0);
  // Expect: 3 WQEs left (< 4): IBV_EVENT_SRQ_LIMIT_REACHED on the async fd.
  pollfd p{ctx_->async_fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 2000), 1);
  ibv_async_event ev;
  ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(ev.element.srq, srq_);
  ibv_ack_async_event(&ev);
  // Destroying the SRQ while a QP uses it is refused.
  EXPECT_EQ(ibv_destroy_srq(srq_), EBUSY);
}

TEST_F(SrqTest, QpKeepsItsSrqWhenMoreSrqsAreCreated) {
  // A second UCX worker (Open MPI's osc ucx beside pml ucx) creates its SRQ after the first
  // worker's QPs are attached to theirs: the engine's SRQ table grows under them.
  std::vector<ibv_srq*> more;
  for (int i = 0; i < 40; ++i) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 4;
    sa.attr.max_sge = 1;
    more.push_back(ibv_create_srq(pd_, &sa));
    ASSERT_NE(more.back(), nullptr);
  }
  const size_t len = 512;
  Buffer src(pd_, len, kAllAccess);
  Buffer dst(pd_, len, kAllAccess);
  fill_pattern(src.bytes, 9);
  ibv_sge s{dst.addr(), static_cast<uint32_t>(len), dst.mr->lkey};
  ibv_recv_wr rwr = recv_wr(77, &s);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(srq_, &rwr, &rbad), 0);
  ibv_sge sge{src.addr(), static_cast<uint32_t>(len), src.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_SEND, &sge, 0, 0);
  // Expect: the SEND lands in the WQE posted to b's own SRQ (not an RNR NAK forever).
  ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].wr_id, 77u);
  EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), len), 0);
  for (ibv_srq* x : more) EXPECT_EQ(ibv_destroy_srq(x), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
