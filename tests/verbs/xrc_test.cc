/**
 * @file xrc_test.cc
 * @brief XRC through the exported verbs on the loopback device: ibv_open_xrcd (fd -1, and a
 * file shared by inode with O_CREAT/O_EXCL), ibv_close_xrcd (EBUSY while in use), XRC SRQs
 * (ibv_create_srq_ex, ibv_get_srq_num), XRC_SEND and XRC_RECV QPs, SENDs with
 * wr.qp_type.xrc.remote_srqn and with ibv_wr_set_xrc_srqn, RDMA through XRC, and a SEND to an
 * SRQ of another domain failing with IBV_WC_REM_INV_REQ_ERR and nothing received.
 */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

/// Moves an XRC QP to RTS towards dest_qpn with the masks the kernel asks of each half.
int connect_xrc(ibv_context* ctx, ibv_qp* qp, uint32_t dest_qpn, uint32_t my_psn,
                uint32_t dest_psn) {
  ibv_qp_attr a;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAllAccess;
  if (int r = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return r;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest_qpn;
  a.rq_psn = dest_psn;
  a.ah_attr.is_global = 1;
  ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (qp->qp_type == IBV_QPT_XRC_RECV) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (int r = ibv_modify_qp(qp, &a, mask)) return r;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
  if (qp->qp_type == IBV_QPT_XRC_SEND)
    mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  return ibv_modify_qp(qp, &a, mask);
}

ibv_xrcd* open_xrcd(ibv_context* ctx, int fd, int oflags) {
  ibv_xrcd_init_attr xa;
  std::memset(&xa, 0, sizeof xa);
  xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  xa.fd = fd;
  xa.oflags = oflags;
  return ibv_open_xrcd(ctx, &xa);
}

ibv_srq* xrc_srq(ibv_context* ctx, ibv_pd* pd, ibv_xrcd* xrcd, ibv_cq* cq, uint32_t max_wr) {
  ibv_srq_init_attr_ex sa;
  std::memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = max_wr;
  sa.attr.max_sge = 1;
  sa.comp_mask =
      IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  sa.srq_type = IBV_SRQT_XRC;
  sa.pd = pd;
  sa.xrcd = xrcd;
  sa.cq = cq;
  return ibv_create_srq_ex(ctx, &sa);
}

/// A domain (fd -1), an XRC SRQ completing on rcq_, an XRC_RECV QP in it, and an XRC_SEND QP
/// (created through ibv_create_qp_ex with send ops, so both post paths work) completing on
/// scq_, connected to each other on the loopback device.
class XrcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    scq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    rcq_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    ASSERT_TRUE(pd_ && scq_ && rcq_);
    xrcd_ = open_xrcd(ctx_, -1, O_CREAT);
    ASSERT_NE(xrcd_, nullptr) << errno;
    srq_ = xrc_srq(ctx_, pd_, xrcd_, rcq_, 32);
    ASSERT_NE(srq_, nullptr) << errno;
    ASSERT_EQ(ibv_get_srq_num(srq_, &srqn_), 0);

    ibv_qp_init_attr_ex ra;
    std::memset(&ra, 0, sizeof ra);
    ra.qp_type = IBV_QPT_XRC_RECV;
    ra.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    ra.xrcd = xrcd_;
    recv_ = ibv_create_qp_ex(ctx_, &ra);
    ASSERT_NE(recv_, nullptr) << errno;
    ibv_qp_init_attr_ex sa;
    std::memset(&sa, 0, sizeof sa);
    sa.qp_type = IBV_QPT_XRC_SEND;
    sa.send_cq = scq_;
    sa.cap.max_send_wr = 32;
    sa.cap.max_send_sge = 1;
    sa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    sa.pd = pd_;
    sa.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ;
    send_ = ibv_create_qp_ex(ctx_, &sa);
    ASSERT_NE(send_, nullptr) << errno;
    EXPECT_EQ(sa.cap.max_recv_wr, 0u);
    ASSERT_EQ(connect_xrc(ctx_, recv_, send_->qp_num, 10, 20), 0);
    ASSERT_EQ(connect_xrc(ctx_, send_, recv_->qp_num, 20, 10), 0);
  }
  void TearDown() override {
    if (send_) {
      EXPECT_EQ(ibv_destroy_qp(send_), 0);
    }
    if (recv_) {
      EXPECT_EQ(ibv_destroy_qp(recv_), 0);
    }
    if (srq_) {
      EXPECT_EQ(ibv_destroy_srq(srq_), 0);
    }
    if (xrcd_) {
      EXPECT_EQ(ibv_close_xrcd(xrcd_), 0);
    }
    if (scq_) {
      EXPECT_EQ(ibv_destroy_cq(scq_), 0);
    }
    if (rcq_) {
      EXPECT_EQ(ibv_destroy_cq(rcq_), 0);
    }
    if (pd_) {
      EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }
  void post_srq_recv(ibv_srq* srq, Buffer& b, uint64_t id, size_t off, uint32_t len) {
    ibv_sge sge{b.addr() + off, len, b.mr->lkey};
    ibv_recv_wr wr = recv_wr(id, &sge), *bad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  }
  /// Posts one signaled XRC SEND of len bytes from b to remote SRQ srqn.
  void post_xrc_send(Buffer& b, uint32_t len, uint32_t srqn, uint64_t id) {
    ibv_sge sge{b.addr(), len, b.mr->lkey};
    ibv_send_wr wr = rdma_wr(IBV_WR_SEND, &sge, 0, 0), *bad = nullptr;
    wr.wr_id = id;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.qp_type.xrc.remote_srqn = srqn;
    ASSERT_EQ(ibv_post_send(send_, &wr, &bad), 0);
  }

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* scq_ = nullptr;
  ibv_cq* rcq_ = nullptr;
  ibv_xrcd* xrcd_ = nullptr;
  ibv_srq* srq_ = nullptr;
  uint32_t srqn_ = 0;
  ibv_qp* recv_ = nullptr;
  ibv_qp* send_ = nullptr;
};

TEST_F(XrcTest, SendArrivesInTheXrcSrqAndCompletesOnItsCq) {
  Buffer src(pd_, 3000, kAllAccess), dst(pd_, 8192, kAllAccess);
  for (size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = static_cast<uint8_t>(i * 7 + 1);
  post_srq_recv(srq_, dst, 5, 0, 4096);
  post_xrc_send(src, 3000, srqn_, 1);
  auto s = poll_n(scq_, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(s[0].wr_id, 1u);
  auto r = poll_n(rcq_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].wr_id, 5u);
  EXPECT_EQ(r[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(r[0].byte_len, 3000u);
  EXPECT_EQ(r[0].qp_num, recv_->qp_num);  // what ibv_xsrq_pingpong looks its QP up by
  EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), 3000), 0);
}

TEST_F(XrcTest, WrApiSetsTheRemoteSrqn) {
  Buffer src(pd_, 64, kAllAccess, 0x42), dst(pd_, 64, kAllAccess);
  post_srq_recv(srq_, dst, 9, 0, 64);
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(send_);
  ASSERT_NE(qx, nullptr);
  ibv_wr_start(qx);
  qx->wr_id = 3;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(qx);
  ibv_wr_set_xrc_srqn(qx, srqn_);
  ibv_wr_set_sge(qx, src.mr->lkey, src.addr(), 64);
  ASSERT_EQ(ibv_wr_complete(qx), 0);
  auto s = poll_n(scq_, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, IBV_WC_SUCCESS);
  auto r = poll_n(rcq_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].wr_id, 9u);
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(XrcTest, WriteAndReadGoThroughTheSrqsPd) {
  Buffer local(pd_, 256, kAllAccess, 0x5a), remote(pd_, 256, kAllAccess, 0x11);
  ibv_sge sge{local.addr(), 128, local.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, remote.addr(), remote.mr->rkey), *bad;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.qp_type.xrc.remote_srqn = srqn_;
  ASSERT_EQ(ibv_post_send(send_, &wr, &bad), 0);
  auto s = poll_n(scq_, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(remote.bytes[127], 0x5a);
  EXPECT_EQ(remote.bytes[128], 0x11);
  sge = {local.addr() + 128, 128, local.mr->lkey};
  wr = rdma_wr(IBV_WR_RDMA_READ, &sge, remote.addr() + 128, remote.mr->rkey);
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.qp_type.xrc.remote_srqn = srqn_;
  ASSERT_EQ(ibv_post_send(send_, &wr, &bad), 0);
  s = poll_n(scq_, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(local.bytes[128], 0x11);
  EXPECT_EQ(local.bytes[255], 0x11);
  EXPECT_TRUE(poll_n(rcq_, 1, 50).empty());  // RDMA takes no receive
}

TEST_F(XrcTest, SendToAnSrqOfAnotherDomainFailsWithRemInvReqErr) {
  ibv_xrcd* other = open_xrcd(ctx_, -1, O_CREAT);
  ASSERT_NE(other, nullptr);
  ibv_srq* osrq = xrc_srq(ctx_, pd_, other, rcq_, 4);
  ASSERT_NE(osrq, nullptr);
  uint32_t on = 0;
  ASSERT_EQ(ibv_get_srq_num(osrq, &on), 0);
  EXPECT_NE(on, srqn_);
  Buffer src(pd_, 64, kAllAccess, 0x33), dst(pd_, 128, kAllAccess, 0);
  post_srq_recv(osrq, dst, 1, 0, 64);
  post_srq_recv(srq_, dst, 2, 64, 64);
  post_xrc_send(src, 64, on, 4);
  auto s = poll_n(scq_, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, IBV_WC_REM_INV_REQ_ERR);
  EXPECT_EQ(dst.bytes, std::vector<uint8_t>(128, 0));
  EXPECT_TRUE(poll_n(rcq_, 1, 50).empty());  // neither SRQ gave up a WQE
  EXPECT_EQ(ibv_destroy_srq(osrq), 0);
  EXPECT_EQ(ibv_close_xrcd(other), 0);
}

TEST_F(XrcTest, CloseXrcdIsBusyWhileInUseAndSrqNumOnlyForXrcSrqs) {
  EXPECT_EQ(ibv_close_xrcd(xrcd_), EBUSY);
  ibv_srq_init_attr ba;
  std::memset(&ba, 0, sizeof ba);
  ba.attr.max_wr = 4;
  ba.attr.max_sge = 1;
  ibv_srq* basic = ibv_create_srq(pd_, &ba);
  ASSERT_NE(basic, nullptr);
  uint32_t n = 0;
  EXPECT_EQ(ibv_get_srq_num(basic, &n), EINVAL);
  EXPECT_EQ(ibv_destroy_srq(basic), 0);
  // No receive queue on either XRC QP, no send queue on XRC_RECV.
  Buffer b(pd_, 64, kAllAccess);
  ibv_sge sge{b.addr(), 64, b.mr->lkey};
  ibv_recv_wr rw = recv_wr(1, &sge), *rbad = nullptr;
  EXPECT_EQ(ibv_post_recv(send_, &rw, &rbad), EINVAL);
  ibv_send_wr sw = rdma_wr(IBV_WR_SEND, &sge, 0, 0), *sbad = nullptr;
  EXPECT_EQ(ibv_post_send(recv_, &sw, &sbad), EINVAL);
  // An XRC SRQ needs its domain and CQ.
  ibv_srq_init_attr_ex sa;
  std::memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
  sa.srq_type = IBV_SRQT_XRC;
  sa.pd = pd_;
  EXPECT_EQ(ibv_create_srq_ex(ctx_, &sa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // An XRC_RECV QP needs its domain.
  ibv_qp_init_attr_ex ra;
  std::memset(&ra, 0, sizeof ra);
  ra.qp_type = IBV_QPT_XRC_RECV;
  ra.comp_mask = IBV_QP_INIT_ATTR_PD;
  ra.pd = pd_;
  EXPECT_EQ(ibv_create_qp_ex(ctx_, &ra), nullptr);
  // The device says XRC.
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  EXPECT_TRUE(da.device_cap_flags & IBV_DEVICE_XRC);
}

TEST(XrcDomain, AFileSharesItsDomainByInode) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  char path[] = "/tmp/uroce-xrcd-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  int fd2 = open(path, O_RDONLY);  // another descriptor of the same file
  ASSERT_GE(fd2, 0);
  // No domain on the file yet: without O_CREAT, EINVAL (as the kernel answers).
  EXPECT_EQ(open_xrcd(ctx, fd, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_xrcd* a = open_xrcd(ctx, fd, O_CREAT);
  ASSERT_NE(a, nullptr);
  // O_CREAT | O_EXCL on the same file: EINVAL; O_CREAT alone or nothing: the same domain.
  EXPECT_EQ(open_xrcd(ctx, fd2, O_CREAT | O_EXCL), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_xrcd* b = open_xrcd(ctx, fd2, 0);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  // An SRQ made through b serves an XRC_RECV QP made through a: one domain.
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_srq* srq = xrc_srq(ctx, pd, b, cq, 4);
  ASSERT_NE(srq, nullptr);
  ibv_qp_init_attr_ex ra;
  std::memset(&ra, 0, sizeof ra);
  ra.qp_type = IBV_QPT_XRC_RECV;
  ra.comp_mask = IBV_QP_INIT_ATTR_XRCD;
  ra.xrcd = a;
  ibv_qp* rq = ibv_create_qp_ex(ctx, &ra);
  ASSERT_NE(rq, nullptr);
  ibv_qp_init_attr sa;
  std::memset(&sa, 0, sizeof sa);
  sa.qp_type = IBV_QPT_XRC_SEND;
  sa.send_cq = cq;  // through ibv_create_qp: no receive CQ
  sa.cap.max_send_wr = 4;
  sa.cap.max_send_sge = 1;
  ibv_qp* sq = ibv_create_qp(pd, &sa);
  ASSERT_NE(sq, nullptr) << errno;
  ASSERT_EQ(connect_xrc(ctx, rq, sq->qp_num, 1, 2), 0);
  ASSERT_EQ(connect_xrc(ctx, sq, rq->qp_num, 2, 1), 0);
  uint32_t n = 0;
  ASSERT_EQ(ibv_get_srq_num(srq, &n), 0);
  {
    Buffer src(pd, 32, kAllAccess, 0x21), dst(pd, 32, kAllAccess);
    ibv_sge rs{dst.addr(), 32, dst.mr->lkey};
    ibv_recv_wr rw = recv_wr(1, &rs), *rbad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &rw, &rbad), 0);
    ibv_sge ss{src.addr(), 32, src.mr->lkey};
    ibv_send_wr sw = rdma_wr(IBV_WR_SEND, &ss, 0, 0), *sbad = nullptr;
    sw.send_flags = IBV_SEND_SIGNALED;
    sw.qp_type.xrc.remote_srqn = n;
    ASSERT_EQ(ibv_post_send(sq, &sw, &sbad), 0);
    auto wc = poll_n(cq, 2);
    ASSERT_EQ(wc.size(), 2u);
    EXPECT_EQ(wc[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc[1].status, IBV_WC_SUCCESS);
    EXPECT_EQ(dst.bytes, src.bytes);
  }
  // Closing one handle leaves the domain to the other; the last one is EBUSY while in use.
  EXPECT_EQ(ibv_close_xrcd(a), 0);
  EXPECT_EQ(ibv_close_xrcd(b), EBUSY);
  EXPECT_EQ(ibv_destroy_qp(sq), 0);
  EXPECT_EQ(ibv_destroy_qp(rq), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_close_xrcd(b), 0);
  // Gone with its last handle: the file has no domain again.
  EXPECT_EQ(open_xrcd(ctx, fd, 0), nullptr);
  ibv_xrcd* c = open_xrcd(ctx, fd, O_CREAT | O_EXCL);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(ibv_close_xrcd(c), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  close(fd2);
  close(fd);
  unlink(path);
}

}  // namespace
}  // namespace uroce::verbs_test
