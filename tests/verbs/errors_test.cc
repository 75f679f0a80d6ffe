/**
 * @file errors_test.cc
 * @brief Error behaviour as the man pages state it: *bad_wr and errno from ibv_post_send(3),
 * EINVAL for bad ibv_modify_qp(3) masks and attributes, EBUSY when destroying a PD/CQ/SRQ/
 * channel with resources attached (ibv_close_device releases leftovers as rdma-core does), EINVAL
 * from ibv_reg_mr(3) for REMOTE_WRITE without LOCAL_WRITE, and IBV_WC_REM_ACCESS_ERR for remote
 * access outside an MR or without its rights, with the target memory untouched; a QP moved to
 * RESET leaves none of its completions in its CQs.
 */
#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class ErrorsTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }
};

TEST_F(ErrorsTest, PostSendStopsAtTheBadWr) {
  Buffer src(pd_, 64, kAllAccess);
  Buffer dst(pd_, 64, kAllAccess);
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr w[3] = {};
  for (int i = 0; i < 3; ++i) {
    w[i].wr_id = static_cast<uint64_t>(i);
    w[i].sg_list = &sge;
    w[i].num_sge = 1;
    w[i].opcode = IBV_WR_RDMA_WRITE;
    w[i].send_flags = IBV_SEND_SIGNALED;
    w[i].wr.rdma.remote_addr = dst.addr();
    w[i].wr.rdma.rkey = dst.mr->rkey;
    w[i].next = i < 2 ? &w[i + 1] : nullptr;
  }
  w[1].opcode = static_cast<ibv_wr_opcode>(200);  // no such opcode
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &w[0], &bad), EINVAL);
  EXPECT_EQ(bad, &w[1]);
  // Expect: the WR before the bad one was posted and completes; nothing after it.
  auto wcs = poll_n(cq_a_, 2, 300);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].wr_id, 0u);
  // Too many SGEs.
  ibv_sge many[40];
  for (auto& s : many) s = sge;
  ibv_send_wr big{};
  big.sg_list = many;
  big.num_sge = 40;
  big.opcode = IBV_WR_SEND;
  bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &big, &bad), EINVAL);
  EXPECT_EQ(bad, &big);
}

TEST_F(ErrorsTest, ModifyQpRejectsBadMasksAndAttributes) {
  ibv_qp* q = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
  ASSERT_NE(q, nullptr);
  ibv_qp_attr a{};
  // RESET -> INIT without the required PKEY_INDEX | PORT | ACCESS_FLAGS.
  a.qp_state = IBV_QPS_INIT;
  EXPECT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL);
  // RESET -> RTS is not a legal transition.
  a.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(q, &a, IBV_QP_STATE), EINVAL);
  // INIT, then RTR with an AV that has no GRH (RoCE needs one).
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(
      ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
      0);
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = b_->qp_num;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 0;
  a.ah_attr.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(q, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            EINVAL);
  // A GID index beyond the table.
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.sgid_index = 9;
  EXPECT_EQ(ibv_modify_qp(q, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
            EINVAL);
  // Unknown mask bits: EOPNOTSUPP, as rdma-core's ibv_cmd_modify_qp and the kernel answer.
  EXPECT_EQ(ibv_modify_qp(q, &a, 1 << 30), EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(ErrorsTest, RdAtomicDepthUpTo128AsRxe) {
  // perftest copies the peer's outstanding-reads value (rxe: 128) into its own QP.
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  EXPECT_EQ(da.max_qp_rd_atom, 128);
  EXPECT_EQ(da.max_qp_init_rd_atom, 128);
  EXPECT_GE(da.max_res_rd_atom, 128);
  ibv_qp* q = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
  ASSERT_NE(q, nullptr);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
  ASSERT_EQ(
      ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
      0);
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = b_->qp_num;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &a.ah_attr.grh.dgid), 0);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  a.max_dest_rd_atomic = 129;
  EXPECT_EQ(ibv_modify_qp(q, &a, rtr), EINVAL);
  a.max_dest_rd_atomic = 128;
  ASSERT_EQ(ibv_modify_qp(q, &a, rtr), 0);
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  const int rts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  a.max_rd_atomic = 129;
  EXPECT_EQ(ibv_modify_qp(q, &a, rts), EINVAL);
  a.max_rd_atomic = 128;
  EXPECT_EQ(ibv_modify_qp(q, &a, rts), 0);
  ibv_qp_init_attr qi;
  ASSERT_EQ(ibv_query_qp(q, &a, IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC, &qi), 0);
  EXPECT_EQ(a.max_rd_atomic, 128);
  EXPECT_EQ(a.max_dest_rd_atomic, 128);
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

TEST_F(ErrorsTest, DestroyWithResourcesAttachedIsBusy) {
  // CQ used by a QP.
  EXPECT_EQ(ibv_destroy_cq(cq_a_), EBUSY);
  // PD with an MR, then with an AH.
  {
    Buffer b(pd_, 64, kAllAccess);
    ASSERT_NE(b.mr, nullptr);
    ibv_pd* pd2 = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd2, nullptr);
    ibv_mr* mr = ibv_reg_mr(pd2, b.bytes.data(), 64, IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(mr, nullptr);
    EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);
    EXPECT_EQ(ibv_dereg_mr(mr), 0);
    ibv_ah_attr aa{};
    aa.is_global = 1;
    ibv_query_gid(ctx_, 1, 0, &aa.grh.dgid);
    aa.port_num = 1;
    ibv_ah* ah = ibv_create_ah(pd2, &aa);
    ASSERT_NE(ah, nullptr);
    EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
    EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
  }
}

TEST_F(ErrorsTest, ResetDropsTheQpsCompletionsAndKeepsOthers) {
  ibv_qp* other = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(connect_qp(ctx_, other, a_->qp_num, 300, 400), 0);
  Buffer buf(pd_, 64, kAllAccess);
  ibv_sge sge{buf.addr(), 64, buf.mr->lkey};
  ibv_recv_wr* bad = nullptr;
  for (ibv_qp* q : {b_, b_, other}) {
    ibv_recv_wr r = recv_wr(q == other ? 9 : 1, &sge);
    ASSERT_EQ(ibv_post_recv(q, &r, &bad), 0);
  }
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(b_, &a, IBV_QP_STATE), 0);
  ASSERT_EQ(ibv_modify_qp(other, &a, IBV_QP_STATE), 0);
  // Three flush completions wait in cq_b_; RESET of b_ takes its two away.
  a.qp_state = IBV_QPS_RESET;
  ASSERT_EQ(ibv_modify_qp(b_, &a, IBV_QP_STATE), 0);
  auto wcs = poll_n(cq_b_, 3, 300);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].qp_num, other->qp_num);
  EXPECT_EQ(wcs[0].wr_id, 9u);
  EXPECT_EQ(wcs[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(ibv_destroy_qp(other), 0);
}

TEST_F(ErrorsTest, RegMrFlagRules) {
  std::vector<uint8_t> mem(64);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, mem.data(), 64, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, mem.data(), 64, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Relaxed ordering is optional: accepted.
  ibv_mr* mr = ibv_reg_mr_iova2(pd_, mem.data(), 64, reinterpret_cast<uintptr_t>(mem.data()),
                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_create_cq(ctx_, 0, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(ErrorsTest, WriteWithoutRemoteWriteRightIsRemAccessErrAndTouchesNothing) {
  Buffer src(pd_, 256, kAllAccess);
  fill_pattern(src.bytes, 4);
  Buffer ro(pd_, 256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 0x5a);
  ASSERT_NE(ro.mr, nullptr);
  ibv_sge sge{src.addr(), 256, src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = ro.addr();
  wr.wr.rdma.rkey = ro.mr->rkey;
  ibv_wc wc = post_and_wait(wr);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
  for (uint8_t b : ro.bytes) ASSERT_EQ(b, 0x5a);
}

TEST_F(ErrorsTest, WriteBeyondTheMrIsRemAccessErrAndTouchesNothing) {
  Buffer src(pd_, 256, kAllAccess);
  fill_pattern(src.bytes, 6);
  std::vector<uint8_t> mem(512, 0x33);
  ibv_mr* mr = ibv_reg_mr(pd_, mem.data(), 256, kAllAccess);  // only the first half
  ASSERT_NE(mr, nullptr);
  ibv_sge sge{src.addr(), 256, src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(mem.data()) + 128;  // crosses the end
  wr.wr.rdma.rkey = mr->rkey;
  ibv_wc wc = post_and_wait(wr);
  EXPECT_EQ(wc.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wc.status);
  for (uint8_t b : mem) ASSERT_EQ(b, 0x33);
  // Expect: the QP went to the error state; later WRs are flushed.
  ibv_send_wr wr2 = wr;
  wr2.wr_id = 2;
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(a_, &wr2, &bad) == 0) {
    auto w = poll_n(cq_a_, 1);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].status, IBV_WC_WR_FLUSH_ERR);
  }
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
