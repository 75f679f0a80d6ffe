/**
 * @file mw_test.cc
 * @brief Memory windows through the exported C API on uroce0 (ibv_alloc_mw(3), ibv_bind_mw(3),
 * ibv_post_send(3) IBV_WR_BIND_MW / IBV_WR_LOCAL_INV / IBV_WR_SEND_WITH_INV, ibv_wr_bind_mw):
 * B binds a window on its buffer, A writes through the window's rkey; the window's bounds, its
 * invalidation and the bind errors.
 */
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

constexpr size_t kLen = 65536;
constexpr size_t kWinOff = 4096, kWinLen = 8192;
constexpr int kMrAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND;

class MwTest : public QpPairTest {
 protected:
  void SetUp() override {
    open(IBV_QPT_RC);
    src_ = std::make_unique<Buffer>(pd_, kLen, IBV_ACCESS_LOCAL_WRITE, 0xab);
    dst_ = std::make_unique<Buffer>(pd_, kLen, kMrAccess, 0x11);
    ASSERT_NE(src_->mr, nullptr);
    ASSERT_NE(dst_->mr, nullptr);
  }
  void extra_teardown() override {
    if (mw_) {
      EXPECT_EQ(ibv_dealloc_mw(mw_), 0);
    }
    src_.reset();
    dst_.reset();
  }
  ibv_mw_bind_info window(size_t off, size_t len, unsigned access = IBV_ACCESS_REMOTE_WRITE) {
    ibv_mw_bind_info b{};
    b.mr = dst_->mr;
    b.addr = dst_->addr() + off;
    b.length = len;
    b.mw_access_flags = access;
    return b;
  }
  /// One completion on B's send CQ.
  ibv_wc b_completion() {
    auto wcs = poll_n(cq_b_, 1);
    EXPECT_EQ(wcs.size(), 1u);
    ibv_wc none{};
    none.status = IBV_WC_GENERAL_ERR;
    return wcs.empty() ? none : wcs[0];
  }
  /// Posts a type 2 bind of mw_ on B; returns the new rkey.
  uint32_t post_bind(const ibv_mw_bind_info& b) {
    ibv_send_wr wr{};
    wr.wr_id = 7;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.bind_mw.mw = mw_;
    wr.bind_mw.rkey = ibv_inc_rkey(mw_->rkey);
    wr.bind_mw.bind_info = b;
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(b_, &wr, &bad), 0);
    return wr.bind_mw.rkey;
  }
  /// A writes len bytes to B's buffer at off through rkey; the completion status.
  ibv_wc_status write(size_t off, uint32_t len, uint32_t rkey) {
    ibv_sge sge{src_->addr(), len, src_->mr->lkey};
    ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, dst_->addr() + off, rkey);
    return post_and_wait(wr).status;
  }
  std::unique_ptr<Buffer> src_, dst_;
  ibv_mw* mw_ = nullptr;
};

TEST_F(MwTest, DeviceAdvertisesWindowsOfBothTypes) {
  ibv_device_attr a;
  ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
  EXPECT_GT(a.max_mw, 0);
  EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
  EXPECT_TRUE(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
}

TEST_F(MwTest, Type1BindWriteThroughTheWindowThenUnbind) {
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw_, nullptr);
  EXPECT_EQ(mw_->type, IBV_MW_TYPE_1);
  const uint32_t before = mw_->rkey;
  ibv_mw_bind bind{};
  bind.wr_id = 3;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = window(kWinOff, kWinLen);
  ASSERT_EQ(ibv_bind_mw(b_, mw_, &bind), 0);
  EXPECT_EQ(mw_->rkey, ibv_inc_rkey(before));  // the new key, returned at once
  ibv_wc c = b_completion();
  EXPECT_EQ(c.status, IBV_WC_SUCCESS);
  EXPECT_EQ(c.opcode, IBV_WC_BIND_MW);
  EXPECT_EQ(c.wr_id, 3u);
  EXPECT_EQ(write(kWinOff + 16, 1000, mw_->rkey), IBV_WC_SUCCESS);
  EXPECT_EQ(dst_->bytes[kWinOff + 16], 0xab);
  EXPECT_EQ(dst_->bytes[kWinOff + 1015], 0xab);
  EXPECT_EQ(dst_->bytes[kWinOff + 1016], 0x11);
  // A zero-length bind unbinds: the key reaches nothing.
  bind.bind_info = window(0, 0, 0);
  ASSERT_EQ(ibv_bind_mw(b_, mw_, &bind), 0);
  EXPECT_EQ(b_completion().status, IBV_WC_SUCCESS);
  std::vector<uint8_t> snap = dst_->bytes;
  EXPECT_EQ(write(kWinOff, 64, mw_->rkey), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(snap, dst_->bytes);
}

TEST_F(MwTest, Type2WriteOutsideTheWindowIsRemAccessErrAndTouchesNothing) {
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw_, nullptr);
  uint32_t rkey = post_bind(window(kWinOff, kWinLen));
  ibv_wc c = b_completion();
  EXPECT_EQ(c.status, IBV_WC_SUCCESS);
  EXPECT_EQ(c.opcode, IBV_WC_BIND_MW);
  EXPECT_EQ(write(kWinOff, 100, rkey), IBV_WC_SUCCESS);
  std::vector<uint8_t> snap = dst_->bytes;
  EXPECT_EQ(write(kWinOff + kWinLen - 10, 20, rkey), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(snap, dst_->bytes);
}

TEST_F(MwTest, Type2LocalInvalidateEndsAccess) {
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw_, nullptr);
  uint32_t rkey = post_bind(window(kWinOff, kWinLen));
  EXPECT_EQ(b_completion().status, IBV_WC_SUCCESS);
  EXPECT_EQ(write(kWinOff, 100, rkey), IBV_WC_SUCCESS);
  ibv_send_wr inv{};
  inv.wr_id = 8;
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(b_, &inv, &bad), 0);
  ibv_wc c = b_completion();
  EXPECT_EQ(c.status, IBV_WC_SUCCESS);
  EXPECT_EQ(c.opcode, IBV_WC_LOCAL_INV);
  EXPECT_EQ(write(kWinOff, 100, rkey), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MwTest, SendWithInvalidateReportsAndInvalidatesTheWindow) {
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw_, nullptr);
  uint32_t rkey = post_bind(window(kWinOff, kWinLen));
  EXPECT_EQ(b_completion().status, IBV_WC_SUCCESS);
  ibv_sge rsge{dst_->addr(), 64, dst_->mr->lkey};
  ibv_recv_wr rwr = recv_wr(9, &rsge);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_sge sge{src_->addr(), 16, src_->mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_SEND_WITH_INV, &sge, 0, 0);
  wr.invalidate_rkey = rkey;
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  ibv_wc c = b_completion();
  EXPECT_EQ(c.status, IBV_WC_SUCCESS);
  EXPECT_EQ(c.opcode, IBV_WC_RECV);
  EXPECT_TRUE(c.wc_flags & IBV_WC_WITH_INV);
  EXPECT_EQ(c.invalidated_rkey, rkey);
  EXPECT_EQ(write(kWinOff, 100, rkey), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MwTest, BindBeyondTheRegionIsMwBindErr) {
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(mw_, nullptr);
  post_bind(window(kLen - 100, 200));
  ibv_wc c = b_completion();
  EXPECT_EQ(c.status, IBV_WC_MW_BIND_ERR);
  EXPECT_EQ(c.wr_id, 7u);
}

TEST_F(MwTest, WrongTypeForTheCallIsEinval) {
  ibv_mw* t1 = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  mw_ = ibv_alloc_mw(pd_, IBV_MW_TYPE_2);
  ASSERT_NE(t1, nullptr);
  ASSERT_NE(mw_, nullptr);
  EXPECT_NE(t1->rkey, mw_->rkey);
  // ibv_bind_mw(3) binds type 1 windows; IBV_WR_BIND_MW type 2 ones.
  ibv_mw_bind bind{};
  bind.bind_info = window(0, 64);
  EXPECT_EQ(ibv_bind_mw(b_, mw_, &bind), EINVAL);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_BIND_MW;
  wr.bind_mw.mw = t1;
  wr.bind_mw.rkey = ibv_inc_rkey(t1->rkey);
  wr.bind_mw.bind_info = window(0, 64);
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(b_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(ibv_dealloc_mw(t1), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
