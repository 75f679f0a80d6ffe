/**
 * @file leniency_test.cc
 * @brief ibv_create_qp and ibv_modify_qp take what the Linux kernel takes (docs/limits.md,
 * "What the kernel lets through"): retry counts above 7 and RNR timers above 31 (rxe keeps
 * them, mlx5 truncates them), a destination QPN with bits above 24, an XRC QP given the other
 * side's attributes (uverbs modify_qp_mask drops them), unknown mask bits as EOPNOTSUPP; the
 * send queue's SGEs and inline bytes reported as what one WQE holds (rxe_qp_init_req), so an
 * inline SEND of a QP that asked for no inline data goes through.
 */
#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class LeniencyTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }

  /// A fresh RC QP on cq_a_, moved to INIT.
  ibv_qp* init_qp() {
    ibv_qp* q = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
    EXPECT_NE(q, nullptr);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    EXPECT_EQ(
        ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
    return q;
  }

  /// RTR attributes towards b_, with every attribute of the RC mask.
  ibv_qp_attr rtr_attr() {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = b_->qp_num;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    EXPECT_EQ(ibv_query_gid(ctx_, 1, 0, &a.ah_attr.grh.dgid), 0);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    return a;
  }

  static constexpr int kRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  static constexpr int kRts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                              IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;

  ibv_qp_attr query(ibv_qp* q) {
    ibv_qp_attr a{};
    ibv_qp_init_attr ia{};
    EXPECT_EQ(ibv_query_qp(q, &a, 0, &ia), 0);
    return a;
  }
};

TEST_F(LeniencyTest, RetryCountsAboveSevenAreSevenAndRnrTimersTheirLowFiveBits) {
  ibv_qp* q = init_qp();
  ibv_qp_attr a = rtr_attr();
  a.min_rnr_timer = 40;  // 0b101000: the 5-bit field holds 8
  // Expect: accepted (rxe stores it, mlx5 truncates it), the low 5 bits used.
  ASSERT_EQ(ibv_modify_qp(q, &a, kRtr), 0) << "min_rnr_timer 40";
  EXPECT_EQ(query(q).min_rnr_timer, 8);
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 10;  // fio's count, through librdmacm before it clamped it
  a.rnr_retry = 10;
  a.max_rd_atomic = 1;
  ASSERT_EQ(ibv_modify_qp(q, &a, kRts), 0) << "retry counts 10";
  const ibv_qp_attr got = query(q);
  EXPECT_EQ(got.retry_cnt, 7);
  EXPECT_EQ(got.rnr_retry, 7);
  EXPECT_EQ(got.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(LeniencyTest, DestQpnKeepsItsLow24Bits) {
  ibv_qp* q = init_qp();
  ibv_qp_attr a = rtr_attr();
  a.dest_qp_num = 0xab000000u | b_->qp_num;
  ASSERT_EQ(ibv_modify_qp(q, &a, kRtr), 0);
  EXPECT_EQ(query(q).dest_qp_num, b_->qp_num);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(LeniencyTest, UnknownMaskBitsAreNotSupported) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  // Bit 25 is IBV_QP_RATE_LIMIT (the extended command only), 30 is nothing.
  EXPECT_EQ(ibv_modify_qp(a_, &a, IBV_QP_STATE | (1 << 25)), EOPNOTSUPP);
  EXPECT_EQ(ibv_modify_qp(a_, &a, 1 << 30), EOPNOTSUPP);
  EXPECT_EQ(query(a_).qp_state, IBV_QPS_RTS);  // unchanged
}

TEST_F(LeniencyTest, AnXrcSendQpIgnoresTheResponderAttributes) {
  ibv_qp_init_attr_ex sa{};
  sa.qp_type = IBV_QPT_XRC_SEND;
  sa.send_cq = cq_a_;
  sa.cap.max_send_wr = 8;
  sa.cap.max_send_sge = 1;
  sa.comp_mask = IBV_QP_INIT_ATTR_PD;
  sa.pd = pd_;
  ibv_qp* q = ibv_create_qp_ex(ctx_, &sa);
  ASSERT_NE(q, nullptr) << errno;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  ASSERT_EQ(
      ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
      0);
  // An RC program's RTR mask: MAX_DEST_RD_ATOMIC and MIN_RNR_TIMER mean nothing to a QP
  // without a receive side, and the kernel drops them before its checks.
  a = rtr_attr();
  EXPECT_EQ(ibv_modify_qp(q, &a, kRtr), 0) << errno;
  EXPECT_EQ(query(q).qp_state, IBV_QPS_RTR);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(LeniencyTest, SendQueueCapsAreWhatOneWqeHolds) {
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = ia.recv_cq = cq_a_;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = 2;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 0;
  ibv_qp* q = ibv_create_qp(pd_, &ia);
  ASSERT_NE(q, nullptr);
  // Expect: 2 SGEs of 16 bytes: 32 bytes inline (rxe_qp_init_req).
  EXPECT_EQ(ia.cap.max_send_sge, 2u);
  EXPECT_EQ(ia.cap.max_inline_data, 32u);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
  ia.cap.max_send_sge = 1;
  ia.cap.max_inline_data = 100;
  q = ibv_create_qp(pd_, &ia);
  ASSERT_NE(q, nullptr);
  // Expect: a WQE of 100 bytes holds 6 SGEs.
  EXPECT_EQ(ia.cap.max_send_sge, 6u);
  EXPECT_EQ(ia.cap.max_inline_data, 100u);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(LeniencyTest, AnInlineSendWithinOneSgesWorthNeedsNoInlineCap) {
  ibv_qp_init_attr_ex ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = ia.recv_cq = cq_a_;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 0;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD;
  ia.pd = pd_;
  ibv_qp* q = ibv_create_qp_ex(ctx_, &ia);
  ASSERT_NE(q, nullptr);
  ibv_qp* peer = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
  ASSERT_NE(peer, nullptr);
  ASSERT_EQ(connect_qp(ctx_, q, peer->qp_num, 1, 2), 0);
  ASSERT_EQ(connect_qp(ctx_, peer, q->qp_num, 2, 1), 0);
  Buffer dst(pd_, 16, kAllAccess);
  ibv_sge rs{dst.addr(), 16, dst.mr->lkey};
  ibv_recv_wr r = recv_wr(5, &rs);
  ibv_recv_wr* bad_r = nullptr;
  ASSERT_EQ(ibv_post_recv(peer, &r, &bad_r), 0);
  char msg[16] = "sixteen bytes..";
  ibv_sge ss{reinterpret_cast<uintptr_t>(msg), sizeof msg, 0};  // inline: no lkey needed
  ibv_send_wr s{};
  s.wr_id = 6;
  s.sg_list = &ss;
  s.num_sge = 1;
  s.opcode = IBV_WR_SEND;
  s.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(q, &s, &bad), 0);
  auto got = poll_n(cq_b_, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(dst.bytes.data(), msg, sizeof msg), 0);
  EXPECT_EQ(poll_n(cq_a_, 1).size(), 1u);
  EXPECT_EQ(ibv_destroy_qp(peer), 0);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
