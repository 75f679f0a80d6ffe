/**
 * @file limits_test.cc
 * @brief Resource exhaustion on the built-in device (issue #8): 10 000 RC QPs exist at once
 * and each reaches INIT, creation past ibv_query_device's max_qp fails with a NULL and an
 * errno and leaves the device working; a 4 GiB MR (untouched anonymous memory) registers,
 * RDMA WRITE/READ land at its last bytes and a WRITE one byte past its end is REM_ACCESS_ERR;
 * a CQ or QP asked for beyond max_cqe / max_qp_wr is refused with EINVAL, as ibv_create_cq(3)
 * and ibv_create_qp(3) say; registration past max_mr fails with an errno until one is freed.
 */
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class LimitsTest : public QpPairTest {
 protected:
  void SetUp() override { open(IBV_QPT_RC); }
  ibv_qp* plain_qp() {
    ibv_qp_init_attr ia;
    std::memset(&ia, 0, sizeof ia);
    ia.qp_type = IBV_QPT_RC;
    ia.send_cq = ia.recv_cq = cq_a_;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    return ibv_create_qp(pd_, &ia);
  }
};

TEST_F(LimitsTest, TenThousandQpsThenCreationPastMaxQpFailsCleanly) {
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  ASSERT_GE(da.max_qp, 10'002);
  std::vector<ibv_qp*> qps;
  for (int i = 0; i < 10'000; ++i) {
    ibv_qp* q = plain_qp();
    ASSERT_NE(q, nullptr) << "QP " << i << ": " << std::strerror(errno);
    qps.push_back(q);
  }
  ibv_qp_attr a;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  for (ibv_qp* q : qps)
    ASSERT_EQ(
        ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
  // Up to max_qp (the pair of the fixture counts): then NULL with an errno, nothing else.
  int made = 10'002;
  while (made < da.max_qp) {
    ibv_qp* q = plain_qp();
    ASSERT_NE(q, nullptr) << "QP " << made << " of max_qp " << da.max_qp;
    qps.push_back(q);
    ++made;
  }
  errno = 0;
  EXPECT_EQ(plain_qp(), nullptr);
  EXPECT_NE(errno, 0);
  for (ibv_qp* q : qps) ASSERT_EQ(ibv_destroy_qp(q), 0);
  // The fixture's pair still works.
  Buffer src(pd_, 4096, kAllAccess, 0x3c), dst(pd_, 4096, kAllAccess, 0);
  ibv_sge sge{src.addr(), 4096, src.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, dst.addr(), dst.mr->rkey);
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  EXPECT_EQ(dst.bytes[4095], 0x3c);
}

TEST_F(LimitsTest, FourGibMrRegistersAndOnlyItsBytesAreReachable) {
  constexpr size_t kLen = size_t{4} << 30;
  void* p = mmap(nullptr, kLen + 4096, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* base = static_cast<uint8_t*>(p);
  ibv_mr* big = ibv_reg_mr(pd_, base, kLen, kAllAccess);
  ASSERT_NE(big, nullptr) << std::strerror(errno);
  EXPECT_EQ(big->length, kLen);
  base[kLen] = 0x77;  // the byte past the MR: must stay
  Buffer src(pd_, 64, kAllAccess, 0x5e), back(pd_, 64, kAllAccess, 0);
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge,  // its last 64 bytes
                           reinterpret_cast<uintptr_t>(base + kLen - 64), big->rkey);
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  EXPECT_EQ(base[kLen - 64], 0x5e);
  EXPECT_EQ(base[kLen - 1], 0x5e);
  ibv_sge rsge{back.addr(), 64, back.mr->lkey};
  wr.sg_list = &rsge;
  wr.opcode = IBV_WR_RDMA_READ;
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  EXPECT_EQ(back.bytes[63], 0x5e);
  // One byte past the end: the responder refuses it and touches nothing.
  wr.sg_list = &sge;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(base + kLen - 63);
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(base[kLen], 0x77);
  EXPECT_EQ(ibv_dereg_mr(big), 0);
  munmap(p, kLen + 4096);
}

TEST_F(LimitsTest, CqAndQpBeyondTheDeviceLimitsAreEinval) {
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx_, da.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ibv_qp_init_attr ia;
  std::memset(&ia, 0, sizeof ia);
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = ia.recv_cq = cq_a_;
  ia.cap.max_send_wr = static_cast<uint32_t>(da.max_qp_wr) + 1;
  ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ia.cap.max_send_wr = 1;
  ia.cap.max_send_sge = static_cast<uint32_t>(da.max_sge) + 1;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &ia), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(LimitsTest, MrsPastMaxMrFailWithAnErrnoAndTheOthersStayUsable) {
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  std::vector<uint8_t> mem(4096, 0);
  std::vector<ibv_mr*> mrs;
  for (int i = 0; i < da.max_mr; ++i) {
    ibv_mr* m = ibv_reg_mr(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
    ASSERT_NE(m, nullptr) << "MR " << i << " of max_mr " << da.max_mr;
    mrs.push_back(m);
  }
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_NE(errno, 0);
  EXPECT_EQ(ibv_dereg_mr(mrs.back()), 0);  // one slot free again: registration works
  mrs.back() = ibv_reg_mr(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
  EXPECT_NE(mrs.back(), nullptr);
  for (ibv_mr* m : mrs)
    if (m) {
      ASSERT_EQ(ibv_dereg_mr(m), 0);
    }
}

}  // namespace
}  // namespace uroce::verbs_test
