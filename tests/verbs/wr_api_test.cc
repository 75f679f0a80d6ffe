/**
 * @file wr_api_test.cc
 * @brief The new post-send API (ibv_wr_post(3)) on QPs created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_to_qp_ex, ibv_wr_start/complete/abort, the opcode
 * builders and setters, moving data byte for byte; ATOMIC WRITE and rdma-core 45's FLUSH.
 */
#include <cerrno>
#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class WrApiTest : public QpPairTest {
 protected:
  void SetUp() override {
    open(IBV_QPT_RC, /*with_ex=*/true);
    qx_ = ibv_qp_to_qp_ex(a_);
    ASSERT_NE(qx_, nullptr);
    ASSERT_EQ(ibv_qp_to_qp_ex(b_) != nullptr, true);
  }
  ibv_qp_ex* qx_ = nullptr;
};

TEST_F(WrApiTest, BatchOfWriteSendAndAtomic) {
  Buffer src(pd_, 4096, kAllAccess);
  Buffer dst(pd_, 4096, kAllAccess);
  Buffer rbuf(pd_, 64, kAllAccess);
  Buffer counter(pd_, 8, kAllAccess);
  Buffer old(pd_, 8, kAllAccess);
  fill_pattern(src.bytes, 1234);
  uint64_t c0 = 40;
  std::memcpy(counter.bytes.data(), &c0, 8);
  ibv_sge rs{rbuf.addr(), 64, rbuf.mr->lkey};
  ibv_recv_wr rwr = recv_wr(50, &rs);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);

  char msg[] = "inline hello";
  ibv_wr_start(qx_);
  qx_->wr_id = 1;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qx_, dst.mr->rkey, dst.addr());
  ibv_wr_set_sge(qx_, src.mr->lkey, src.addr(), 4096);
  qx_->wr_id = 2;
  qx_->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ibv_wr_send(qx_);
  ibv_wr_set_inline_data(qx_, msg, sizeof msg);
  std::memset(msg, 'x', sizeof msg);  // the buffer may be reused right after the setter
  qx_->wr_id = 3;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_fetch_add(qx_, counter.mr->rkey, counter.addr(), 2);
  ibv_wr_set_sge(qx_, old.mr->lkey, old.addr(), 8);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);

  auto wcs = poll_n(cq_a_, 3);
  ASSERT_EQ(wcs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[i].status);
    EXPECT_EQ(wcs[i].wr_id, i + 1);
  }
  EXPECT_EQ(dst.bytes, src.bytes);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].byte_len, sizeof msg);
  EXPECT_STREQ(reinterpret_cast<const char*>(rbuf.bytes.data()), "inline hello");
  uint64_t got, now_v;
  std::memcpy(&got, old.bytes.data(), 8);
  std::memcpy(&now_v, counter.bytes.data(), 8);
  EXPECT_EQ(got, 40u);
  EXPECT_EQ(now_v, 42u);
}

TEST_F(WrApiTest, SgeListReadAndAbort) {
  Buffer remote(pd_, 300, kAllAccess);
  Buffer local(pd_, 300, kAllAccess, 0);
  fill_pattern(remote.bytes, 77);
  // An aborted batch posts nothing.
  ibv_wr_start(qx_);
  qx_->wr_id = 9;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qx_, remote.mr->rkey, remote.addr());
  ibv_wr_set_sge(qx_, local.mr->lkey, local.addr(), 300);
  ibv_wr_abort(qx_);
  EXPECT_TRUE(poll_n(cq_a_, 1, 50).empty());
  // READ into two SGEs.
  ibv_sge list[2] = {{local.addr(), 100, local.mr->lkey},
                     {local.addr() + 100, 200, local.mr->lkey}};
  ibv_wr_start(qx_);
  qx_->wr_id = 10;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_read(qx_, remote.mr->rkey, remote.addr());
  ibv_wr_set_sge_list(qx_, 2, list);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);
  auto wcs = poll_n(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(wcs[0].wr_id, 10u);
  EXPECT_EQ(local.bytes, remote.bytes);
}

TEST_F(WrApiTest, BuilderErrorsSurfaceAtComplete) {
  // A setter without an opcode builder first, and an op the QP was not created with and
  // given no window (bind_mw): EINVAL.
  ibv_wr_start(qx_);
  ibv_wr_set_sge(qx_, 0, 0, 0);
  EXPECT_EQ(ibv_wr_complete(qx_), EINVAL);
  ibv_wr_start(qx_);
  ibv_wr_bind_mw(qx_, nullptr, 0, nullptr);
  EXPECT_EQ(ibv_wr_complete(qx_), EINVAL);
}

TEST_F(WrApiTest, AtomicWriteAndFlushMoveAndCompleteWithTheirOpcodes) {
  // B's QP also takes FLUSH to global visibility (RTS -> RTS).
  ibv_qp_attr qa{};
  qa.qp_access_flags = kAllAccess | kAccessFlushGlobal;
  ASSERT_EQ(ibv_modify_qp(b_, &qa, IBV_QP_ACCESS_FLAGS), 0);
  Buffer aw_dst(pd_, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0x11);
  Buffer src(pd_, 1024, kAllAccess);
  Buffer dst(pd_, 1024, kAllAccess | kAccessFlushGlobal, 0);
  ASSERT_NE(aw_dst.mr, nullptr);
  ASSERT_NE(dst.mr, nullptr) << "reg_mr with IBV_ACCESS_FLUSH_GLOBAL: errno " << errno;
  fill_pattern(src.bytes, 99);
  const uint8_t eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto* q45 = reinterpret_cast<QpEx45*>(qx_);
  ASSERT_NE(q45->wr_flush, nullptr);

  ibv_wr_start(qx_);
  qx_->wr_id = 1;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(qx_, aw_dst.mr->rkey, aw_dst.addr() + 8, eight);
  qx_->wr_id = 2;
  qx_->wr_flags = 0;
  ibv_wr_rdma_write(qx_, dst.mr->rkey, dst.addr());
  ibv_wr_set_sge(qx_, src.mr->lkey, src.addr(), 1024);
  qx_->wr_id = 3;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  q45->wr_flush(qx_, dst.mr->rkey, dst.addr(), 1024, kFlushGlobal, kFlushRange);
  qx_->wr_id = 4;
  q45->wr_flush(qx_, dst.mr->rkey, 0, 0, kFlushGlobal, kFlushMr);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);

  auto wcs = poll_n(cq_a_, 3);
  ASSERT_EQ(wcs.size(), 3u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(wcs[0].opcode, IBV_WC_ATOMIC_WRITE);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(wcs[i].wr_id, i + 2);
    EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[i].status);
    EXPECT_EQ(static_cast<int>(wcs[i].opcode), kWcFlush);
  }
  EXPECT_EQ(0, std::memcmp(aw_dst.bytes.data() + 8, eight, 8));
  EXPECT_EQ(aw_dst.bytes[7], 0x11);
  EXPECT_EQ(aw_dst.bytes[16], 0x11);
  // The WRITE before the FLUSH is in place when the FLUSH completes.
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(WrApiTest, FlushToARegionWithoutFlushRightsFailsWithRemoteAccessError) {
  ibv_qp_attr qa{};
  qa.qp_access_flags = kAllAccess | kAccessFlushGlobal;
  ASSERT_EQ(ibv_modify_qp(b_, &qa, IBV_QP_ACCESS_FLAGS), 0);
  Buffer dst(pd_, 256, kAllAccess);
  ibv_wr_start(qx_);
  qx_->wr_id = 7;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  reinterpret_cast<QpEx45*>(qx_)->wr_flush(qx_, dst.mr->rkey, dst.addr(), 256, kFlushGlobal,
                                           kFlushRange);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);
  auto wcs = poll_n(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(wcs[0].status);
}

TEST_F(WrApiTest, MisalignedAtomicWriteFailsAndWritesNothing) {
  Buffer dst(pd_, 64, kAllAccess, 0x22);
  const uint64_t v = ~0ull;
  ibv_wr_start(qx_);
  qx_->wr_id = 5;
  qx_->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_atomic_write(qx_, dst.mr->rkey, dst.addr() + 4, &v);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);
  auto wcs = poll_n(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_INV_REQ_ERR) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(dst.bytes, std::vector<uint8_t>(64, 0x22));
}

TEST_F(WrApiTest, AtomicWriteAndFlushAreNotPostedThroughIbvPostSend) {
  // ibv_send_wr has no field for the 8 bytes or the placement type: ibv_wr_* only.
  Buffer dst(pd_, 64, kAllAccess);
  ibv_sge sge{dst.addr(), 8, dst.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_ATOMIC_WRITE, &sge, dst.addr(), dst.mr->rkey);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST_F(WrApiTest, DeviceAdvertisesAtomicWriteAndGlobalFlushButNotPersistence) {
  ibv_device_attr_ex attr{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &attr), 0);
  EXPECT_TRUE(attr.device_cap_flags_ex & (1ull << 40));   // IB_UVERBS_DEVICE_ATOMIC_WRITE
  EXPECT_TRUE(attr.device_cap_flags_ex & (1ull << 38));   // IB_UVERBS_DEVICE_FLUSH_GLOBAL
  EXPECT_FALSE(attr.device_cap_flags_ex & (1ull << 39));  // IB_UVERBS_DEVICE_FLUSH_PERSISTENT
  // The low 32 bits are device_cap_flags.
  EXPECT_EQ(attr.device_cap_flags_ex & 0xffffffffull, attr.orig_attr.device_cap_flags);
  std::vector<uint8_t> mem(64);
  errno = 0;
  EXPECT_EQ(
      ibv_reg_mr(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE | kAccessFlushPersistent),
      nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST(WrApiPlain, QpWithoutSendOpsFlagsHasNoQpEx) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 8, nullptr, nullptr, 0);
  ASSERT_NE(pd, nullptr);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_qp_to_qp_ex(qp), nullptr);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
