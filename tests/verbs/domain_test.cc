/**
 * @file domain_test.cc
 * @brief Thread domains and parent domains through the exported C API (ibv_alloc_td(3),
 * ibv_alloc_parent_domain(3)): bad input, EBUSY while in use, a parent domain standing in for
 * its PD (MRs, QPs, SRQs, CQs with IBV_CQ_INIT_ATTR_MASK_PD, RC traffic), and the custom
 * allocator holding the QP, CQ and SRQ objects (every allocation freed once, with its pointer
 * and resource type; NULL fails the create with ENOMEM; IBV_ALLOCATOR_USE_DEFAULT).
 */
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

// domain.h's resource types.
constexpr uint64_t kResQp = 1, kResCq = 2, kResSrq = 3;

/// What the custom allocator was asked for, and what came back.
struct AllocLog {
  enum class Mode { kMemalign, kNull, kDefault } mode = Mode::kMemalign;
  ibv_pd* expect_pd = nullptr;
  bool wrong_pd = false;
  std::map<void*, uint64_t> live;  ///< pointer -> resource type
  std::vector<uint64_t> allocs, frees;
  bool bad_free = false;  ///< a free of a pointer not allocated, or with another type
};

void* log_alloc(ibv_pd* pd, void* pd_context, size_t size, size_t alignment, uint64_t type) {
  auto* log = static_cast<AllocLog*>(pd_context);
  if (pd != log->expect_pd) log->wrong_pd = true;
  log->allocs.push_back(type);
  if (log->mode == AllocLog::Mode::kNull) return nullptr;
  if (log->mode == AllocLog::Mode::kDefault) return IBV_ALLOCATOR_USE_DEFAULT;
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size) != 0) return nullptr;
  std::memset(p, 0, size);  // the callback hands out zeroed memory (the man page)
  log->live[p] = type;
  return p;
}

void log_free(ibv_pd* pd, void* pd_context, void* ptr, uint64_t type) {
  auto* log = static_cast<AllocLog*>(pd_context);
  if (pd != log->expect_pd) log->wrong_pd = true;
  log->frees.push_back(type);
  auto it = log->live.find(ptr);
  if (it == log->live.end() || it->second != type) {
    log->bad_free = true;
    return;
  }
  log->live.erase(it);
  std::free(ptr);
}

class DomainTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
  }
  void TearDown() override {
    if (pd_) {
      EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }
  ibv_pd* parent(ibv_td* td = nullptr, AllocLog* log = nullptr) {
    ibv_parent_domain_init_attr a{};
    a.pd = pd_;
    a.td = td;
    if (log) {
      a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
      a.alloc = log_alloc;
      a.free = log_free;
      a.pd_context = log;
    }
    ibv_pd* p = ibv_alloc_parent_domain(ctx_, &a);
    if (log) log->expect_pd = p;
    return p;
  }
  ibv_qp* rc_qp(ibv_pd* pd, ibv_cq* cq, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr_ex ia{};
    ia.qp_type = IBV_QPT_RC;
    ia.send_cq = ia.recv_cq = cq;
    ia.srq = srq;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ia.pd = pd;
    ia.comp_mask = IBV_QP_INIT_ATTR_PD;
    return ibv_create_qp_ex(ctx_, &ia);
  }
  ibv_cq_ex* cq_on(ibv_pd* parent_domain) {
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 64;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    ca.parent_domain = parent_domain;
    return ibv_create_cq_ex(ctx_, &ca);
  }
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
};

TEST_F(DomainTest, ThreadDomainBadInputAndBusy) {
  ibv_td_init_attr ta{};
  ta.comp_mask = 1;
  errno = 0;
  EXPECT_EQ(ibv_alloc_td(ctx_, &ta), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ta.comp_mask = 0;
  ibv_td* td = ibv_alloc_td(ctx_, &ta);
  ASSERT_NE(td, nullptr);
  EXPECT_EQ(td->context, ctx_);
  ibv_pd* p = parent(td);
  ASSERT_NE(p, nullptr);
  // In use by a parent domain: EBUSY, and still usable after.
  EXPECT_EQ(ibv_dealloc_td(td), EBUSY);
  EXPECT_EQ(ibv_dealloc_pd(p), 0);
  EXPECT_EQ(ibv_dealloc_td(td), 0);
}

TEST_F(DomainTest, ParentDomainBadInput) {
  ibv_context* other = open_builtin();  // a second context on the same device
  ASSERT_NE(other, nullptr);
  ibv_td_init_attr ta{};
  ibv_td* other_td = ibv_alloc_td(other, &ta);
  ASSERT_NE(other_td, nullptr);
  ibv_pd* other_pd = ibv_alloc_pd(other);
  ASSERT_NE(other_pd, nullptr);
  auto refused = [&](ibv_parent_domain_init_attr a) {
    errno = 0;
    ibv_pd* p = ibv_alloc_parent_domain(ctx_, &a);
    const bool ok = p == nullptr && errno == EINVAL;
    if (p) ibv_dealloc_pd(p);
    return ok;
  };
  ibv_parent_domain_init_attr a{};
  EXPECT_TRUE(refused(a)) << "no PD";
  a.pd = other_pd;
  EXPECT_TRUE(refused(a)) << "PD of another context";
  a.pd = pd_;
  a.td = other_td;
  EXPECT_TRUE(refused(a)) << "TD of another context";
  a.td = nullptr;
  a.comp_mask = 1u << 5;
  EXPECT_TRUE(refused(a)) << "unknown comp_mask bit";
  a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
  a.alloc = log_alloc;
  EXPECT_TRUE(refused(a)) << "ALLOCATORS without free";
  errno = 0;
  EXPECT_EQ(ibv_alloc_parent_domain(ctx_, nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // None of that left anything behind: the TD and both PDs go.
  EXPECT_EQ(ibv_dealloc_td(other_td), 0);
  EXPECT_EQ(ibv_dealloc_pd(other_pd), 0);
  EXPECT_EQ(ibv_close_device(other), 0);
  // A CQ on a plain PD, or on a parent domain of another context: EINVAL.
  errno = 0;
  EXPECT_EQ(cq_on(pd_), nullptr);
  EXPECT_EQ(errno, EINVAL);
  errno = 0;
  EXPECT_EQ(cq_on(nullptr), nullptr);
  EXPECT_EQ(errno, EINVAL);
}

TEST_F(DomainTest, ParentDomainIsBusyWhileUsedAndHoldsItsPd) {
  ibv_pd* p = parent();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->context, ctx_);
  EXPECT_EQ(p->handle, pd_->handle);      // interchangeable with its PD
  EXPECT_EQ(ibv_dealloc_pd(pd_), EBUSY);  // the parent domain holds it
  std::vector<uint8_t> mem(4096);
  ibv_mr* mr = ibv_reg_mr(p, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->pd, p);
  EXPECT_EQ(ibv_dealloc_pd(p), EBUSY);  // an MR
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  ibv_cq_ex* cq = cq_on(p);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(p), EBUSY);  // a CQ
  ibv_qp* qp = rc_qp(p, ibv_cq_ex_to_cq(cq));
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->pd, p);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), EBUSY);  // (the QP uses it)
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_dealloc_pd(p), EBUSY);  // the CQ still
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
  ibv_mw* mw = ibv_alloc_mw(p, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(p), EBUSY);  // an MW
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
  EXPECT_EQ(ibv_dealloc_pd(p), 0);
}

TEST_F(DomainTest, RereggingAnMrMovesItsHoldBetweenDomains) {
  ibv_pd* p = parent();
  ASSERT_NE(p, nullptr);
  std::vector<uint8_t> mem(4096);
  ibv_mr* mr = ibv_reg_mr(pd_, mem.data(), mem.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, p, nullptr, 0, 0), 0);
  EXPECT_EQ(ibv_dealloc_pd(p), EBUSY);
  ASSERT_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd_, nullptr, 0, 0), 0);
  EXPECT_EQ(ibv_dealloc_pd(p), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
}

TEST_F(DomainTest, CustomAllocatorHoldsQpCqAndSrqAndRcTrafficFlows) {
  AllocLog log;
  ibv_td_init_attr ta{};
  ibv_td* td = ibv_alloc_td(ctx_, &ta);
  ASSERT_NE(td, nullptr);
  ibv_pd* p = parent(td, &log);
  ASSERT_NE(p, nullptr);
  ibv_cq_ex* cq = cq_on(p);
  ASSERT_NE(cq, nullptr);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(p, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp* a = rc_qp(p, ibv_cq_ex_to_cq(cq));
  ibv_qp* b = rc_qp(p, ibv_cq_ex_to_cq(cq), srq);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(log.allocs, (std::vector<uint64_t>{kResCq, kResSrq, kResQp, kResQp}));
  EXPECT_EQ(log.live.size(), 4u);
  // The handles are in the allocator's memory.
  EXPECT_TRUE(log.live.count(cq));
  EXPECT_TRUE(log.live.count(srq));
  EXPECT_TRUE(log.live.count(a));
  EXPECT_TRUE(log.live.count(b));
  ASSERT_EQ(connect_qp(ctx_, a, b->qp_num, 1, 2), 0);
  ASSERT_EQ(connect_qp(ctx_, b, a->qp_num, 2, 1), 0);
  {
    Buffer src(p, 256, kAllAccess);
    Buffer dst(p, 256, kAllAccess);
    ASSERT_NE(src.mr, nullptr);
    ASSERT_NE(dst.mr, nullptr);
    fill_pattern(src.bytes, 3);
    ibv_sge rs{dst.addr(), 256, dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(9, &rs);
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
    ibv_sge s{src.addr(), 256, src.mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 8;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    auto wcs = poll_n(ibv_cq_ex_to_cq(cq), 2);
    ASSERT_EQ(wcs.size(), 2u);
    for (const ibv_wc& wc : wcs) EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(dst.bytes, src.bytes);
  }
  EXPECT_TRUE(log.frees.empty());
  EXPECT_EQ(ibv_destroy_qp(a), 0);
  EXPECT_EQ(ibv_destroy_qp(b), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
  EXPECT_EQ(log.frees, (std::vector<uint64_t>{kResQp, kResQp, kResSrq, kResCq}));
  EXPECT_TRUE(log.live.empty());
  EXPECT_FALSE(log.bad_free);
  EXPECT_FALSE(log.wrong_pd);
  EXPECT_EQ(ibv_dealloc_pd(p), 0);
  EXPECT_EQ(ibv_dealloc_td(td), 0);
}

TEST_F(DomainTest, AllocatorNullFailsTheCreateAndDefaultUsesOurs) {
  AllocLog log;
  log.mode = AllocLog::Mode::kNull;
  ibv_pd* p = parent(nullptr, &log);
  ASSERT_NE(p, nullptr);
  errno = 0;
  EXPECT_EQ(cq_on(p), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  ibv_cq* cq = ibv_create_cq(ctx_, 8, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  errno = 0;
  EXPECT_EQ(rc_qp(p, cq), nullptr);
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(log.allocs.size(), 2u);
  EXPECT_TRUE(log.frees.empty());
  EXPECT_EQ(ibv_dealloc_pd(p), 0);  // the failed creates hold nothing
  // IBV_ALLOCATOR_USE_DEFAULT: created with uroce's allocator, never given to free.
  AllocLog dflt;
  dflt.mode = AllocLog::Mode::kDefault;
  p = parent(nullptr, &dflt);
  ASSERT_NE(p, nullptr);
  ibv_qp* qp = rc_qp(p, cq);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(dflt.allocs, (std::vector<uint64_t>{kResQp}));
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_TRUE(dflt.frees.empty());
  EXPECT_EQ(ibv_dealloc_pd(p), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST(DomainClose, ClosingTheDeviceFreesWhatTheAllocatorHolds) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ibv_td_init_attr ta{};
  ibv_td* td = ibv_alloc_td(ctx, &ta);
  ASSERT_NE(td, nullptr);
  AllocLog log;
  ibv_parent_domain_init_attr a{};
  a.pd = pd;
  a.td = td;
  a.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  a.alloc = log_alloc;
  a.free = log_free;
  a.pd_context = &log;
  ibv_pd* p = ibv_alloc_parent_domain(ctx, &a);
  ASSERT_NE(p, nullptr);
  log.expect_pd = p;
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 8;
  ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
  ca.parent_domain = p;
  ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &ca);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_UD;
  ia.send_cq = ia.recv_cq = ibv_cq_ex_to_cq(cq);
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ASSERT_NE(ibv_create_qp(p, &ia), nullptr);  // ibv_create_qp on a parent domain too
  EXPECT_EQ(log.live.size(), 2u);
  // Everything left open (QP, CQ, parent domain, TD, PD) goes with the context.
  EXPECT_EQ(ibv_close_device(ctx), 0);
  EXPECT_TRUE(log.live.empty());
  EXPECT_EQ(log.frees.size(), 2u);
  EXPECT_FALSE(log.bad_free);
  EXPECT_FALSE(log.wrong_pd);
}

}  // namespace
}  // namespace uroce::verbs_test
