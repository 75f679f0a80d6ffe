/**
 * @file mr_test.cc
 * @brief Memory region features through the exported C API on uroce0: ibv_reg_mr_iova(3)
 * with iova != addr and IBV_ACCESS_ZERO_BASED (remote and local addresses are iovas),
 * ibv_rereg_mr(3) changing translation, PD and access (the remote side sees the change, bad
 * input leaves the MR as it was), on-demand paging (IBV_ACCESS_ON_DEMAND, implicit ODP, the
 * ODP caps of ibv_query_device_ex(3), ibv_advise_mr(3)): an access to memory that is not
 * there is an error completion and the process lives on.
 */
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

constexpr size_t kLen = 8192;
constexpr uint64_t kIova = 0x7000000000ull;  ///< far from any heap address

/// Pages mapped with mmap (prot), unmapped at the end.
struct Pages {
  size_t len;
  uint8_t* p;
  Pages(size_t n, int prot)
      : len(n * static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        p(static_cast<uint8_t*>(mmap(nullptr, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {}
  ~Pages() {
    if (p != MAP_FAILED) munmap(p, len);
  }
  Pages(const Pages&) = delete;
  Pages& operator=(const Pages&) = delete;
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(p); }
};

class MrTest : public QpPairTest {
 protected:
  void SetUp() override {
    open(IBV_QPT_RC);
    src_ = std::make_unique<Buffer>(pd_, kLen, kAllAccess);
    ASSERT_NE(src_->mr, nullptr);
    fill_pattern(src_->bytes, 5);
    dst_.assign(kLen, 0x11);
  }
  void extra_teardown() override {
    if (mr_) {
      EXPECT_EQ(ibv_dereg_mr(mr_), 0);
    }
    src_.reset();
  }
  /// A's signaled WRITE of len bytes of src_ (from src_off) to (remote, rkey): the status.
  ibv_wc_status write(uint64_t remote, uint32_t rkey, uint32_t len, size_t src_off = 0) {
    ibv_sge sge{src_->addr() + src_off, len, src_->mr->lkey};
    ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, remote, rkey);
    return post_and_wait(wr).status;
  }
  /// A's READ of len bytes from (remote, rkey) into src_ at 0.
  ibv_wc_status read(uint64_t remote, uint32_t rkey, uint32_t len) {
    ibv_sge sge{src_->addr(), len, src_->mr->lkey};
    ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_READ, &sge, remote, rkey);
    return post_and_wait(wr).status;
  }
  /// A's FETCH_AND_ADD of add at (remote, rkey); the original value lands in src_ at 0.
  ibv_wc_status fetch_add(uint64_t remote, uint32_t rkey, uint64_t add) {
    ibv_sge sge{src_->addr(), 8, src_->mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.remote_addr = remote;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = add;
    return post_and_wait(wr).status;
  }
  uint64_t dst_addr() const { return reinterpret_cast<uintptr_t>(dst_.data()); }

  std::unique_ptr<Buffer> src_;
  std::vector<uint8_t> dst_;  ///< B's memory, registered by each test as mr_
  ibv_mr* mr_ = nullptr;
};

// ---- iova and ZERO_BASED -------------------------------------------------------------------

TEST_F(MrTest, IovaMrTakesWriteReadAndAtomicAtIovaAddresses) {
  mr_ = ibv_reg_mr_iova2(pd_, dst_.data(), kLen, kIova, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  EXPECT_EQ(mr_->addr, dst_.data());
  EXPECT_EQ(mr_->length, kLen);
  ASSERT_EQ(write(kIova + 100, mr_->rkey, 1000), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data() + 100, src_->bytes.data(), 1000));
  EXPECT_EQ(dst_[99], 0x11);
  EXPECT_EQ(dst_[1100], 0x11);
  // READ from iova + 4000 brings dst_[4000..4500).
  fill_pattern(dst_, 6);
  ASSERT_EQ(read(kIova + 4000, mr_->rkey, 500), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(src_->bytes.data(), dst_.data() + 4000, 500));
  // FETCH_AND_ADD on the word at iova + 64.
  uint64_t v = 40;
  std::memcpy(dst_.data() + 64, &v, 8);
  ASSERT_EQ(fetch_add(kIova + 64, mr_->rkey, 2), IBV_WC_SUCCESS);
  std::memcpy(&v, dst_.data() + 64, 8);
  EXPECT_EQ(v, 42u);
  uint64_t orig;
  std::memcpy(&orig, src_->bytes.data(), 8);
  EXPECT_EQ(orig, 40u);
}

TEST_F(MrTest, LocalSgeOfAnIovaMrNamesIovas) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  // A's source registered again at an iova: its SGE names iova + 256 for src_[256].
  ibv_mr* s = ibv_reg_mr_iova(pd_, src_->bytes.data(), kLen, 0x10000, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(s, nullptr);
  ibv_sge sge{0x10000 + 256, 512, s->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, dst_addr(), mr_->rkey);
  EXPECT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data() + 256, 512));
  EXPECT_EQ(ibv_dereg_mr(s), 0);
}

TEST_F(MrTest, ZeroBasedMrTakesOffsets) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess | IBV_ACCESS_ZERO_BASED);
  ASSERT_NE(mr_, nullptr);
  ASSERT_EQ(write(0, mr_->rkey, 8), IBV_WC_SUCCESS);
  ASSERT_EQ(write(kLen - 16, mr_->rkey, 16, 100), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data(), 8));
  EXPECT_EQ(0, std::memcmp(dst_.data() + kLen - 16, src_->bytes.data() + 100, 16));
  // ZERO_BASED contradicting an explicit iova is refused.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova2(pd_, dst_.data(), kLen, kIova, kAllAccess | IBV_ACCESS_ZERO_BASED),
            nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(MrTest, AccessBeyondAnIovaMrIsRemAccessErrAndWritesNothing) {
  mr_ = ibv_reg_mr_iova2(pd_, dst_.data(), kLen, kIova, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  const std::vector<uint8_t> before = dst_;
  // Crossing the end by 4 bytes; the buffer's own address (not an iova of this MR).
  EXPECT_EQ(write(kIova + kLen - 4, mr_->rkey, 8), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(before, dst_);
}

TEST_F(MrTest, BufferAddressIsNotAnAddressOfAnIovaMr) {
  mr_ = ibv_reg_mr_iova2(pd_, dst_.data(), kLen, kIova, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  const std::vector<uint8_t> before = dst_;
  EXPECT_EQ(write(dst_addr(), mr_->rkey, 8), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(before, dst_);
}

TEST_F(MrTest, IovaRangeThatWrapsIsEinval) {
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova2(pd_, dst_.data(), kLen, UINT64_MAX - 100, kAllAccess), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(MrTest, ZeroBasedWindowOnAnIovaMr) {
  mr_ = ibv_reg_mr_iova2(pd_, dst_.data(), kLen, kIova, kAllAccess | IBV_ACCESS_MW_BIND);
  ASSERT_NE(mr_, nullptr);
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ibv_mw_bind bind{};
  bind.wr_id = 1;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = mr_;
  bind.bind_info.addr = kIova + 4096;  // the window starts at dst_[4096]
  bind.bind_info.length = 1024;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED;
  ASSERT_EQ(ibv_bind_mw(b_, mw, &bind), 0);
  auto c = poll_n(cq_b_, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, IBV_WC_SUCCESS);
  ASSERT_EQ(write(16, mw->rkey, 32), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data() + 4096 + 16, src_->bytes.data(), 32));
  const std::vector<uint8_t> before = dst_;
  EXPECT_EQ(write(1020, mw->rkey, 8), IBV_WC_REM_ACCESS_ERR);  // past the window
  EXPECT_EQ(before, dst_);
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
}

// ---- ibv_rereg_mr --------------------------------------------------------------------------

TEST_F(MrTest, ReregTranslationMovesRemoteAccessToTheNewBufferKeysKept) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  const uint32_t lkey = mr_->lkey, rkey = mr_->rkey;
  std::vector<uint8_t> other(2 * kLen, 0x22);
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, other.data(), 2 * kLen, 0),
            0);
  EXPECT_EQ(mr_->addr, other.data());
  EXPECT_EQ(mr_->length, 2 * kLen);
  EXPECT_EQ(mr_->lkey, lkey);
  EXPECT_EQ(mr_->rkey, rkey);
  const std::vector<uint8_t> old_before = dst_;
  const uint64_t base = reinterpret_cast<uintptr_t>(other.data());
  ASSERT_EQ(write(base + kLen + 8, rkey, 64), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(other.data() + kLen + 8, src_->bytes.data(), 64));
  // The old buffer is no longer reachable.
  EXPECT_EQ(write(dst_addr(), rkey, 8), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(old_before, dst_);
}

TEST_F(MrTest, ReregAccessRemovesAndRestoresRemoteWrite) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
            0);
  // Reading is still allowed, writing not.
  ASSERT_EQ(read(dst_addr(), mr_->rkey, 64), IBV_WC_SUCCESS);
  const std::vector<uint8_t> before = dst_;
  EXPECT_EQ(write(dst_addr(), mr_->rkey, 64), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(before, dst_);
}

TEST_F(MrTest, ReregAccessGrantsRemoteWrite) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr_, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, kAllAccess), 0);
  ASSERT_EQ(write(dst_addr() + 32, mr_->rkey, 64), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data() + 32, src_->bytes.data(), 64));
}

TEST_F(MrTest, ReregPdCutsOffTheOldPdsQpAndBackRestoresIt) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  ibv_pd* pd2 = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd2, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0), 0);
  EXPECT_EQ(mr_->pd, pd2);
  EXPECT_EQ(ibv_dealloc_pd(pd2), EBUSY);  // the MR is pd2's now
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_PD, pd_, nullptr, 0, 0), 0);
  EXPECT_EQ(mr_->pd, pd_);
  ASSERT_EQ(write(dst_addr(), mr_->rkey, 64), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data(), 64));
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0), 0);
  const std::vector<uint8_t> before = dst_;
  EXPECT_EQ(write(dst_addr(), mr_->rkey, 64, 64), IBV_WC_REM_ACCESS_ERR);  // B's QP is pd_'s
  EXPECT_EQ(before, dst_);
  EXPECT_EQ(ibv_dereg_mr(mr_), 0);
  mr_ = nullptr;
  EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
}

TEST_F(MrTest, ReregAllThreeAtOnce) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr_, nullptr);
  ibv_pd* pd2 = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd2, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0), 0);
  std::vector<uint8_t> other(kLen, 0x33);
  ASSERT_EQ(ibv_rereg_mr(mr_,
                         IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                             IBV_REREG_MR_CHANGE_ACCESS,
                         pd_, other.data(), kLen, kAllAccess),
            0);
  const uint64_t base = reinterpret_cast<uintptr_t>(other.data());
  ASSERT_EQ(write(base + 8, mr_->rkey, 16), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(other.data() + 8, src_->bytes.data(), 16));
  EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
}

TEST_F(MrTest, ReregBadInputIsErrInputAndLeavesTheMrAsItWas) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess);
  ASSERT_NE(mr_, nullptr);
  ibv_context* other_ctx = open_builtin();
  ASSERT_NE(other_ctx, nullptr);
  ibv_pd* other_pd = ibv_alloc_pd(other_ctx);
  ASSERT_NE(other_pd, nullptr);
  struct Case {
    const char* what;
    int flags;
    ibv_pd* pd;
    void* addr;
    size_t len;
    int access;
  };
  const Case cases[] = {
      {"no flags", 0, nullptr, nullptr, 0, 0},
      {"unknown flag", IBV_REREG_MR_CHANGE_ACCESS | 0x100, nullptr, nullptr, 0, kAllAccess},
      {"translation without addr", IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, nullptr, kLen, 0},
      {"translation without length", IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, dst_.data(), 0, 0},
      {"addr without translation", IBV_REREG_MR_CHANGE_ACCESS, nullptr, dst_.data(), kLen,
       kAllAccess},
      {"no pd", IBV_REREG_MR_CHANGE_PD, nullptr, nullptr, 0, 0},
      {"another context's pd", IBV_REREG_MR_CHANGE_PD, other_pd, nullptr, 0, 0},
      {"remote write without local write", IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
       IBV_ACCESS_REMOTE_WRITE},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    errno = 0;
    EXPECT_EQ(ibv_rereg_mr(mr_, k.flags, k.pd, k.addr, k.len, k.access), IBV_REREG_MR_ERR_INPUT);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(mr_->addr, dst_.data());
    EXPECT_EQ(mr_->length, kLen);
    EXPECT_EQ(mr_->pd, pd_);
  }
  // Still registered as before: remote write works.
  ASSERT_EQ(write(dst_addr(), mr_->rkey, 64), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data(), 64));
  EXPECT_EQ(ibv_dealloc_pd(other_pd), 0);
  EXPECT_EQ(ibv_close_device(other_ctx), 0);
}

TEST_F(MrTest, ReregOfAnMrWithABoundWindowIsEbusyAndTheWindowKeepsWorking) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess | IBV_ACCESS_MW_BIND);
  ASSERT_NE(mr_, nullptr);
  ibv_mw* mw = ibv_alloc_mw(pd_, IBV_MW_TYPE_1);
  ASSERT_NE(mw, nullptr);
  ibv_mw_bind bind{};
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info.mr = mr_;
  bind.bind_info.addr = dst_addr();
  bind.bind_info.length = 1024;
  bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
  ASSERT_EQ(ibv_bind_mw(b_, mw, &bind), 0);
  auto c = poll_n(cq_b_, 1);
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(c[0].status, IBV_WC_SUCCESS);
  errno = 0;
  EXPECT_EQ(ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
            IBV_REREG_MR_ERR_INPUT);
  EXPECT_EQ(errno, EBUSY);
  ASSERT_EQ(write(dst_addr() + 8, mw->rkey, 16), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data() + 8, src_->bytes.data(), 16));
  // Unbound, the MR may change again.
  bind.bind_info.length = 0;
  bind.bind_info.mw_access_flags = 0;
  ASSERT_EQ(ibv_bind_mw(b_, mw, &bind), 0);
  c = poll_n(cq_b_, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(
      ibv_rereg_mr(mr_, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
      0);
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
}

TEST_F(MrTest, QpAccessFlagsIgnoreMrOnlyBits) {
  // rdma-core's suite gives its QPs its MRs' flags, ON_DEMAND included (test_odp).
  ibv_qp* q = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
  ASSERT_NE(q, nullptr);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAllAccess | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_MW_BIND |
                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB;
  ASSERT_EQ(
      ibv_modify_qp(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
      0);
  ibv_qp_attr got{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(q, &got, IBV_QP_ACCESS_FLAGS, &init), 0);
  EXPECT_EQ(got.qp_access_flags, static_cast<unsigned>(kAllAccess));
  EXPECT_EQ(ibv_destroy_qp(q), 0);
}

// ---- On-demand paging ----------------------------------------------------------------------

TEST_F(MrTest, DeviceAdvertisesOdpCaps) {
  ibv_device_attr_ex a;
  std::memset(&a, 0, sizeof a);
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &a), 0);
  EXPECT_EQ(a.odp_caps.general_caps, uint64_t{IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT});
  const uint32_t all = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                       IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
  EXPECT_EQ(a.odp_caps.per_transport_caps.rc_odp_caps, all);
  EXPECT_EQ(a.odp_caps.per_transport_caps.uc_odp_caps,
            all & ~uint32_t{IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC});
  EXPECT_EQ(a.odp_caps.per_transport_caps.ud_odp_caps,
            uint32_t{IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_SRQ_RECV});
  EXPECT_EQ(a.xrc_odp_caps, all);  // XRC takes RC's copies
}

TEST_F(MrTest, OdpMrTakesWriteReadAndAtomic) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, kAllAccess | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB);
  ASSERT_NE(mr_, nullptr);
  ASSERT_EQ(write(dst_addr() + 10, mr_->rkey, 3000), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data() + 10, src_->bytes.data(), 3000));
  fill_pattern(dst_, 8);
  ASSERT_EQ(read(dst_addr() + 100, mr_->rkey, 2000), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(src_->bytes.data(), dst_.data() + 100, 2000));
  uint64_t v = 7;
  std::memcpy(dst_.data() + 8, &v, 8);
  ASSERT_EQ(fetch_add(dst_addr() + 8, mr_->rkey, 3), IBV_WC_SUCCESS);
  std::memcpy(&v, dst_.data() + 8, 8);
  EXPECT_EQ(v, 10u);
}

TEST_F(MrTest, ImplicitOdpReachesAnyMappedMemory) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, kAllAccess | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages pages(2, PROT_READ | PROT_WRITE);
  ASSERT_NE(pages.p, MAP_FAILED);
  ASSERT_EQ(write(pages.addr() + 4090, mr_->rkey, 100), IBV_WC_SUCCESS);  // across the pages
  EXPECT_EQ(0, std::memcmp(pages.p + 4090, src_->bytes.data(), 100));
  ASSERT_EQ(write(dst_addr(), mr_->rkey, 32), IBV_WC_SUCCESS);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data(), 32));
}

TEST_F(MrTest, ImplicitOdpWriteToInaccessibleMemoryIsRemAccessErrProcessLives) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, kAllAccess | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages none(1, PROT_NONE);
  ASSERT_NE(none.p, MAP_FAILED);
  EXPECT_EQ(write(none.addr(), mr_->rkey, 64), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MrTest, ImplicitOdpReadOfInaccessibleMemoryIsRemAccessErr) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, kAllAccess | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages none(1, PROT_NONE);
  ASSERT_NE(none.p, MAP_FAILED);
  EXPECT_EQ(read(none.addr(), mr_->rkey, 64), IBV_WC_REM_ACCESS_ERR);
}

TEST_F(MrTest, ImplicitOdpAtomicOnReadOnlyMemoryIsRemAccessErrAndChangesNothing) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, kAllAccess | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages ro(1, PROT_READ | PROT_WRITE);
  ASSERT_NE(ro.p, MAP_FAILED);
  ro.p[0] = 5;
  ASSERT_EQ(mprotect(ro.p, ro.len, PROT_READ), 0);
  EXPECT_EQ(fetch_add(ro.addr(), mr_->rkey, 1), IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ro.p[0], 5);
}

TEST_F(MrTest, OdpReceiveIntoInaccessibleMemoryIsLocProtErr) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages none(1, PROT_NONE);
  ASSERT_NE(none.p, MAP_FAILED);
  ibv_sge rsge{none.addr(), 256, mr_->lkey};
  ibv_recv_wr rwr = recv_wr(4, &rsge);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_sge sge{src_->addr(), 64, src_->mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_SEND, &sge, 0, 0);
  post_and_wait(wr);  // the sender's status depends on the NAK; B's receive is the point
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].wr_id, 4u);
  EXPECT_EQ(r[0].status, IBV_WC_LOC_PROT_ERR);
}

TEST_F(MrTest, OdpSendAndReceiveOnImplicitMrs) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  ibv_sge rsge{dst_addr(), 256, mr_->lkey};
  ibv_recv_wr rwr = recv_wr(4, &rsge);
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_recv(b_, &rwr, &rbad), 0);
  ibv_sge sge{src_->addr(), 200, mr_->lkey};  // A's source through the implicit MR too
  ibv_send_wr wr = rdma_wr(IBV_WR_SEND, &sge, 0, 0);
  ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  auto r = poll_n(cq_b_, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(r[0].byte_len, 200u);
  EXPECT_EQ(0, std::memcmp(dst_.data(), src_->bytes.data(), 200));
}

// ---- ibv_advise_mr -------------------------------------------------------------------------

TEST_F(MrTest, AdviseMrPrefetchesAndReportsTheManPagesErrors) {
  mr_ = ibv_reg_mr(pd_, dst_.data(), kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  ibv_mr* ro = ibv_reg_mr(pd_, dst_.data(), kLen, IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(ro, nullptr);
  ibv_sge ok{dst_addr(), static_cast<uint32_t>(kLen), mr_->lkey};
  for (auto advice : {IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
                      IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT})
    EXPECT_EQ(ibv_advise_mr(pd_, advice, IBV_ADVISE_MR_FLAG_FLUSH, &ok, 1), 0) << advice;
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ok, 1), 0);
  EXPECT_EQ(ibv_advise_mr(pd_, static_cast<ibv_advise_mr_advice>(99), 0, &ok, 1), EOPNOTSUPP);
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 2, &ok, 1), EINVAL);
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ok, 0), EINVAL);
  ibv_sge bad_key{dst_addr(), 64, mr_->lkey ^ 0x5a5a};
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &bad_key, 1), ENOENT);
  ibv_sge beyond{dst_addr() + kLen - 8, 16, mr_->lkey};
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &beyond, 1), EFAULT);
  ibv_sge ro_sge{dst_addr(), 64, ro->lkey};
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ro_sge, 1), 0);
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &ro_sge, 1), EPERM);
  ibv_pd* pd2 = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd2, nullptr);
  EXPECT_EQ(ibv_advise_mr(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &ok, 1), ENOENT);
  EXPECT_EQ(ibv_dealloc_pd(pd2), 0);
  EXPECT_EQ(ibv_dereg_mr(ro), 0);
}

TEST_F(MrTest, AdviseMrOnInaccessibleMemoryOfAnImplicitMrIsEfault) {
  mr_ = ibv_reg_mr(pd_, nullptr, SIZE_MAX, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  ASSERT_NE(mr_, nullptr);
  Pages none(1, PROT_NONE);
  ASSERT_NE(none.p, MAP_FAILED);
  ibv_sge sge{none.addr(), 64, mr_->lkey};
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1), EFAULT);
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &sge, 1), 0);
  Pages rw(1, PROT_READ | PROT_WRITE);
  ASSERT_NE(rw.p, MAP_FAILED);
  sge.addr = rw.addr();
  EXPECT_EQ(ibv_advise_mr(pd_, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &sge, 1), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
