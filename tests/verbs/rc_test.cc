/**
 * @file rc_test.cc
 * @brief RC data movement between two QPs of the built-in loopback device through the real
 * exported verbs API (ibv_post_send/ibv_post_recv/ibv_poll_cq), checked byte for byte:
 * WRITE (single and multi-packet), WRITE_WITH_IMM, READ, SEND with immediate, scatter/gather,
 * and the 64-bit atomics (IBA §9.4.5 semantics: the original value is returned).
 */
#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class RcTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }
};

TEST_F(RcTest, WriteMovesBytesExactly) {
  for (size_t len : {size_t{1}, size_t{1000}, size_t{1024}, size_t{65536 + 7}}) {
    Buffer src(pd_, len, kAllAccess);
    Buffer dst(pd_, len + 16, kAllAccess, 0xee);
    ASSERT_NE(src.mr, nullptr);
    ASSERT_NE(dst.mr, nullptr);
    fill_pattern(src.bytes, static_cast<uint32_t>(len));
    ibv_sge sge{src.addr(), static_cast<uint32_t>(len), src.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = len;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = dst.addr() + 8;
    wr.wr.rdma.rkey = dst.mr->rkey;
    ibv_wc wc = post_and_wait(wr);
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status) << " len " << len;
    EXPECT_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
    EXPECT_EQ(wc.wr_id, len);
    // Expect: exactly [8, 8+len) written, the guard bytes around it untouched.
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 8, src.bytes.data(), len), 0) << len;
    for (size_t i = 0; i < 8; ++i) EXPECT_EQ(dst.bytes[i], 0xee);
    for (size_t i = 8 + len; i < len + 16; ++i) EXPECT_EQ(dst.bytes[i], 0xee);
  }
}

TEST_F(RcTest, ReadFetchesRemoteBytes) {
  const size_t len = 10000;
  Buffer remote(pd_, len, kAllAccess);
  Buffer local(pd_, len, kAllAccess);
  fill_pattern(remote.bytes, 7);
  ibv_sge sge{local.addr(), static_cast<uint32_t>(len), local.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.wr.rdma.remote_addr = remote.addr();
  wr.wr.rdma.rkey = remote.mr->rkey;
  ibv_wc wc = post_and_wait(wr);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(wc.byte_len, len);
  EXPECT_EQ(local.bytes, remote.bytes);
}

TEST_F(RcTest, SendWithImmScattersIntoRecvSges) {
  const size_t len = 3000;
  Buffer src(pd_, len, kAllAccess);
  Buffer dst(pd_, len, kAllAccess);
  fill_pattern(src.bytes, 3);
  // Receive into two SGEs: 1000 + 2000 bytes.
  ibv_sge rs[2] = {{dst.addr(), 1000, dst.mr->lkey}, {dst.addr() + 1000, 2000, dst.mr->lkey}};
  ibv_recv_wr rwr{};
  rwr.wr_id = 77;
  rwr.sg_list = rs;
  rwr.num_sge = 2;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  // Send from three SGEs.
  ibv_sge ss[3] = {{src.addr(), 1, src.mr->lkey},
                   {src.addr() + 1, 1499, src.mr->lkey},
                   {src.addr() + 1500, 1500, src.mr->lkey}};
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.sg_list = ss;
  wr.num_sge = 3;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htobe32(0xcafe0001);
  ibv_wc wc = post_and_wait(wr);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_SEND);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(r[0].wr_id, 77u);
  EXPECT_EQ(r[0].byte_len, len);
  EXPECT_EQ(r[0].qp_num, b_->qp_num);
  EXPECT_TRUE(r[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(be32toh(r[0].imm_data), 0xcafe0001u);
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(RcTest, WriteWithImmConsumesARecv) {
  const size_t len = 2048;
  Buffer src(pd_, len, kAllAccess);
  Buffer dst(pd_, len, kAllAccess);
  fill_pattern(src.bytes, 11);
  ibv_recv_wr rwr{};
  rwr.wr_id = 9;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_sge sge{src.addr(), static_cast<uint32_t>(len), src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = htobe32(42);
  wr.wr.rdma.remote_addr = dst.addr();
  wr.wr.rdma.rkey = dst.mr->rkey;
  ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(r[0].wr_id, 9u);
  EXPECT_EQ(be32toh(r[0].imm_data), 42u);
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(RcTest, AtomicsReturnOriginalAndUpdateTarget) {
  Buffer target(pd_, 8, kAllAccess);
  Buffer result(pd_, 8, kAllAccess);
  uint64_t v = 1000;
  std::memcpy(target.bytes.data(), &v, 8);
  ibv_sge sge{result.addr(), 8, result.mr->lkey};
  // FETCH_ADD 5: returns 1000, target 1005.
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.wr.atomic.remote_addr = target.addr();
  wr.wr.atomic.rkey = target.mr->rkey;
  wr.wr.atomic.compare_add = 5;
  ibv_wc wc = post_and_wait(wr);
  ASSERT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  EXPECT_EQ(wc.opcode, IBV_WC_FETCH_ADD);
  uint64_t got, now_v;
  std::memcpy(&got, result.bytes.data(), 8);
  std::memcpy(&now_v, target.bytes.data(), 8);
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(now_v, 1005u);
  // CMP_SWP 1005 -> 77: succeeds, returns 1005.
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.compare_add = 1005;
  wr.wr.atomic.swap = 77;
  ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  std::memcpy(&got, result.bytes.data(), 8);
  std::memcpy(&now_v, target.bytes.data(), 8);
  EXPECT_EQ(got, 1005u);
  EXPECT_EQ(now_v, 77u);
  // CMP_SWP with a wrong compare value: returns 77, target unchanged.
  wr.wr.atomic.compare_add = 1;
  wr.wr.atomic.swap = 5;
  ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  std::memcpy(&got, result.bytes.data(), 8);
  std::memcpy(&now_v, target.bytes.data(), 8);
  EXPECT_EQ(got, 77u);
  EXPECT_EQ(now_v, 77u);
}

TEST_F(RcTest, ManyWritesInFlightAllComplete) {
  const size_t len = 4096, n = 32;
  Buffer src(pd_, len * n, kAllAccess);
  Buffer dst(pd_, len * n, kAllAccess);
  fill_pattern(src.bytes, 99);
  std::vector<ibv_sge> sges(n);
  std::vector<ibv_send_wr> wrs(n);
  for (size_t i = 0; i < n; ++i) {
    sges[i] = {src.addr() + i * len, static_cast<uint32_t>(len), src.mr->lkey};
    wrs[i] = {};
    wrs[i].wr_id = i;
    wrs[i].sg_list = &sges[i];
    wrs[i].num_sge = 1;
    wrs[i].opcode = IBV_WR_RDMA_WRITE;
    wrs[i].send_flags = IBV_SEND_SIGNALED;
    wrs[i].wr.rdma.remote_addr = dst.addr() + i * len;
    wrs[i].wr.rdma.rkey = dst.mr->rkey;
    wrs[i].next = i + 1 < n ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wrs[0], &bad), 0);
  auto wcs = poll_n(cq_a_, n);
  ASSERT_EQ(wcs.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(wcs[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[i].wr_id, i);  // completions in posting order
  }
  EXPECT_EQ(dst.bytes, src.bytes);
}

TEST_F(RcTest, QueryQpReportsConnectedState) {
  ibv_qp_attr a;
  ibv_qp_init_attr ia;
  ASSERT_EQ(ibv_query_qp(a_, &a, IBV_QP_STATE | IBV_QP_DEST_QPN | IBV_QP_AV, &ia), 0);
  EXPECT_EQ(a.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(a.dest_qp_num, b_->qp_num);
  EXPECT_EQ(a.sq_psn, 100u);
  EXPECT_EQ(a.ah_attr.is_global, 1);
  EXPECT_EQ(ia.qp_type, IBV_QPT_RC);
  EXPECT_EQ(ia.send_cq, cq_a_);
  EXPECT_EQ(a_->state, IBV_QPS_RTS);
}

}  // namespace
}  // namespace uroce::verbs_test
