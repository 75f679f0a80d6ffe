/**
 * @file wr_api_test.cc
 * @brief The new post-send API (ibv_wr_post(3)) on QPs created with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: ibv_qp_to_qp_ex, ibv_wr_start/complete/abort, the opcode
 * builders and setters, moving data byte for byte.
 */
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
