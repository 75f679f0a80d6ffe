/**
 * @file ece_test.cc
 * @brief ECE (ibv_query_ece(3), ibv_set_ece(3)) on the built-in loopback device: an RC QP
 * offers selective repeat and peer timestamps under uroce's vendor id; the two QPs exchange
 * their ECE before RTR, agree (on both, or on timestamps alone), and move data with every byte
 * checked; other vendors' options, unknown bits and a QP
 * past INIT are refused with EINVAL; a UD QP offers nothing. uroce_qp_set_ooo_placement
 * (uroce/uroce_ext.h), the per-QP opt-in beside selective repeat: taken before RTR, refused
 * after and on a UD QP.
 */
#include <uroce/uroce_ext.h>

#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

constexpr uint32_t kVendor = 0xFFFFFF;
constexpr uint32_t kSelective = 1;
constexpr uint32_t kTimestamps = 2;

class EceTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }
  void before_connect() override {
    ibv_ece ea{}, eb{};
    ASSERT_EQ(ibv_query_ece(a_, &ea), 0);
    ASSERT_EQ(ibv_query_ece(b_, &eb), 0);
    EXPECT_EQ(ea.vendor_id, kVendor);
    EXPECT_EQ(ea.options, kSelective | kTimestamps);
    EXPECT_EQ(ea.comp_mask, 0u);
    // Each side takes what both offer (the CM's REQ/REP exchange, done by hand here), less
    // what the test leaves out.
    ibv_ece agreed{kVendor, ea.options & eb.options & wanted_, 0};
    ASSERT_EQ(ibv_set_ece(a_, &agreed), 0);
    ASSERT_EQ(ibv_set_ece(b_, &agreed), 0);
  }
  /// Writes 256 KiB + 3 bytes and checks every one.
  void write_and_check() {
    const size_t len = 256 * 1024 + 3;
    Buffer src(pd_, len, kAllAccess);
    Buffer dst(pd_, len, kAllAccess, 0xee);
    fill_pattern(src.bytes, static_cast<uint32_t>(len));
    ibv_sge sge{src.addr(), static_cast<uint32_t>(len), src.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 7;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = dst.addr();
    wr.wr.rdma.rkey = dst.mr->rkey;
    ibv_wc wc = post_and_wait(wr);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(std::memcmp(dst.bytes.data(), src.bytes.data(), len), 0);
  }
  uint32_t wanted_ = kSelective | kTimestamps;
};

TEST_F(EceTest, AgreedSelectiveRepeatAndTimestampsMoveEveryByte) {
  ibv_ece e{};
  ASSERT_EQ(ibv_query_ece(a_, &e), 0);
  EXPECT_EQ(e.options, kSelective | kTimestamps);  // connected, both in force
  write_and_check();
}

class EceTimestampsOnlyTest : public EceTest {
 protected:
  EceTimestampsOnlyTest() { wanted_ = kTimestamps; }
};

TEST_F(EceTimestampsOnlyTest, GoBackNWithTimestampsMovesEveryByte) {
  ibv_ece e{};
  ASSERT_EQ(ibv_query_ece(a_, &e), 0);
  EXPECT_EQ(e.options, kTimestamps);
  write_and_check();
}

TEST_F(EceTest, BadOptionsAndLateCallsAreRefused) {
  ibv_ece other{0x02c9, kSelective, 0};  // another vendor's options
  EXPECT_EQ(ibv_set_ece(a_, &other), EINVAL);
  ibv_ece unknown{kVendor, kSelective | 0x80, 0};
  EXPECT_EQ(ibv_set_ece(a_, &unknown), EINVAL);
  ibv_ece mask{kVendor, kSelective, 1};
  EXPECT_EQ(ibv_set_ece(a_, &mask), EINVAL);
  ibv_ece late{kVendor, 0, 0};  // the QP is in RTS: too late to change its recovery
  EXPECT_EQ(ibv_set_ece(a_, &late), EINVAL);
  ibv_ece e{};
  ASSERT_EQ(ibv_query_ece(a_, &e), 0);
  EXPECT_EQ(e.options, kSelective | kTimestamps);  // unchanged
}

class OooPlacementTest : public EceTest {
 protected:
  void before_connect() override {
    EXPECT_EQ(uroce_qp_set_ooo_placement(b_, 1), 0);
    EXPECT_EQ(uroce_qp_set_ooo_placement(a_, 0), 0);
    EceTest::before_connect();
  }
};

TEST_F(OooPlacementTest, TakenBeforeRtrRefusedAfterAndDataMoves) {
  write_and_check();
  EXPECT_EQ(uroce_qp_set_ooo_placement(b_, 0), EINVAL);  // in RTS
  EXPECT_EQ(uroce_qp_set_ooo_placement(nullptr, 1), EINVAL);
}

class EceUdTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_UD); }
};

TEST_F(EceUdTest, AUdQpOffersNothing) {
  ibv_ece e{};
  ASSERT_EQ(ibv_query_ece(a_, &e), 0);
  EXPECT_EQ(e.vendor_id, kVendor);
  EXPECT_EQ(e.options, 0u);
  ibv_ece none{kVendor, 0, 0};
  EXPECT_EQ(ibv_set_ece(a_, &none), 0);
  ibv_ece sel{kVendor, kSelective, 0};
  EXPECT_EQ(ibv_set_ece(a_, &sel), EINVAL);
  ibv_ece ts{kVendor, kTimestamps, 0};
  EXPECT_EQ(ibv_set_ece(a_, &ts), EINVAL);
  EXPECT_EQ(uroce_qp_set_ooo_placement(a_, 1), EINVAL);
}

}  // namespace
}  // namespace uroce::verbs_test
