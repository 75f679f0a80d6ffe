/**
 * @file memory_window_test.cc
 * @brief Memory windows between two engines (IBA Vol 1 §10.6.7; ibv_alloc_mw(3),
 * ibv_bind_mw(3), ibv_post_send(3)): B binds a window on its region, A reaches B's memory
 * through the window's R_Key. Type 2 bound by IBV_WR_BIND_MW and invalidated by LOCAL_INV or
 * an incoming SEND_WITH_INV; type 1 bound and unbound by a bind; the bind errors
 * (MW_BIND_ERR), remote access outside the window, beyond its rights or through a stale
 * R_Key (REM_ACCESS_ERR at A, nothing written at B).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/rc_pair.h"

namespace uroce::transport::testing {
namespace {

constexpr uint32_t kWin = 8192;     ///< window length
constexpr uint64_t kWinOff = 4096;  ///< window start in B's region

/// Ibv_inc_rkey(3): the next key of a window (the low 8 bits advance).
uint32_t inc_rkey(uint32_t rkey) { return (rkey & 0xffffff00u) | ((rkey + 1) & 0xffu); }

/// The RC pair with B's region open to windows (or with b_access); B binds, A accesses.
struct Mw : Rc {
  explicit Mw(uint32_t b_access = kAll | kAccessMwBind) : Rc(base(), kAll, b_access) {}

  /// Posts a bind of window mw_rkey (new key inc_rkey) on B's QP; returns the new rkey.
  uint32_t bind(uint32_t mw_rkey, uint64_t off, uint64_t len, uint32_t access) {
    SendWr w;
    w.wr_id = 77;
    w.opcode = WrOpcode::kBindMw;
    w.send_flags = kSendSignaled;
    w.mw_rkey = mw_rkey;
    w.rkey = inc_rkey(mw_rkey);
    w.bind_lkey = kb.lkey;
    w.bind_addr = addr(bm) + off;
    w.bind_len = len;
    w.bind_access = access;
    EXPECT_TRUE(B().post_send(qb, w, h.now()));
    return w.rkey;
  }
  Status local_inv(uint32_t rkey) {
    SendWr w;
    w.wr_id = 78;
    w.opcode = WrOpcode::kLocalInv;
    w.send_flags = kSendSignaled;
    w.invalidate_rkey = rkey;
    return B().post_send(qb, w, h.now());
  }
  std::vector<Cqe> wait(Engine& e, uint32_t cq, size_t n) { return wait_cqes(e, cq, n); }
  /// B binds a type 2 window over [kWinOff, kWinOff + kWin) and its completion arrives.
  uint32_t bound_type2(uint32_t access) {
    uint32_t mw = B().alloc_mw(h.b().pd, MwType::kType2).value();
    uint32_t rkey = bind(mw, kWinOff, kWin, access);
    std::vector<Cqe> c = wait(B(), h.b().scq, 1);
    EXPECT_EQ(c.size(), 1u);
    if (!c.empty()) {
      EXPECT_EQ(c[0].status, WcStatus::kSuccess);
      EXPECT_EQ(c[0].opcode, WcOpcode::kBindMw);
    }
    return rkey;
  }
  /// A's single WR of len bytes to B's bm + off through rkey completes with want; B's region
  /// is unchanged on failure.
  void expect_a(WrOpcode op, uint32_t len, uint64_t off, uint32_t rkey, WcStatus want) {
    std::vector<uint8_t> before = bm;
    ASSERT_TRUE(post(op, 1, len, addr(bm) + off, rkey));
    std::vector<Cqe> c = wait(A(), h.a().scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, want);
    if (want != WcStatus::kSuccess) {
      EXPECT_EQ(before, bm);
    }
  }
  /// B posts a receive, A a 32-byte SEND_WITH_INV naming rkey.
  void send_with_inv(uint32_t rkey) {
    post_recv_b(5, 64);
    ASSERT_TRUE(post(WrOpcode::kSendWithInv, 1, 32, 0, 0, 0, kSendSignaled, rkey));
  }
};

TEST(MemoryWindow, Type2WriteAndReadThroughTheWindow) {
  Mw t;
  uint32_t rkey = t.bound_type2(kAccessRemoteWrite | kAccessRemoteRead);
  t.expect_a(WrOpcode::kRdmaWrite, 3000, kWinOff + 100, rkey, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(t.bm.data() + kWinOff + 100, t.am.data(), 3000));
  std::memset(t.am.data(), 0, kWin);
  t.expect_a(WrOpcode::kRdmaRead, kWin, kWinOff, rkey, WcStatus::kSuccess);
  EXPECT_EQ(0, std::memcmp(t.bm.data() + kWinOff, t.am.data(), kWin));
}

TEST(MemoryWindow, OutsideTheWindowIsRemoteAccessErrorNothingWritten) {
  struct Case {
    const char* what;
    uint64_t off;
    uint32_t len;
  };
  // Each inside B's region, not inside the window.
  const Case cases[] = {{"crosses the end", kWinOff + kWin - 100, 200},
                        {"before the start", kWinOff - 8, 16},
                        {"after the end", kWinOff + kWin, 8}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    t.expect_a(WrOpcode::kRdmaWrite, k.len, k.off, rkey, WcStatus::kRemAccessErr);
  }
}

TEST(MemoryWindow, RightsBeyondTheWindowAndStaleKeysAreRemoteAccessErrors) {
  {
    SCOPED_TRACE("write through a read-only window");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteRead);
    t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey, WcStatus::kRemAccessErr);
  }
  {
    SCOPED_TRACE("atomic through a write-only window");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    t.expect_a(WrOpcode::kAtomicFetchAndAdd, 8, kWinOff, rkey, WcStatus::kRemAccessErr);
  }
  {
    SCOPED_TRACE("the window's key before the bind");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey - 1, WcStatus::kRemAccessErr);
  }
  {
    SCOPED_TRACE("the region deregistered under the window");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    ASSERT_TRUE(t.B().dereg_mr(t.kb.lkey));
    t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey, WcStatus::kRemAccessErr);
  }
  {
    SCOPED_TRACE("the window deallocated");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    ASSERT_TRUE(t.B().dealloc_mw(rkey));
    EXPECT_EQ(t.B().dealloc_mw(rkey).code(), ENOENT);
    t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey, WcStatus::kRemAccessErr);
  }
}

TEST(MemoryWindow, LocalInvalidateEndsRemoteAccess) {
  Mw t;
  uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
  ASSERT_TRUE(t.local_inv(rkey));
  std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].opcode, WcOpcode::kLocalInv);
  t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey, WcStatus::kRemAccessErr);
}

TEST(MemoryWindow, InvalidatedType2WindowBindsAgainWithANewKey) {
  Mw t;
  uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
  ASSERT_TRUE(t.local_inv(rkey));
  uint32_t again = t.bind(rkey, 0, 64, kAccessRemoteWrite);
  std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].status, WcStatus::kSuccess);
  EXPECT_NE(again, rkey);
  t.expect_a(WrOpcode::kRdmaWrite, 64, 0, again, WcStatus::kSuccess);
}

TEST(MemoryWindow, SendWithInvalidateInvalidatesTheWindowAtTheResponder) {
  Mw t;
  uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
  t.send_with_inv(rkey);
  std::vector<Cqe> rc = t.wait(t.B(), t.h.b().rcq, 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(rc[0].wc_flags & kWcWithInv, uint32_t{kWcWithInv});
  EXPECT_EQ(rc[0].imm_data, rkey);
  std::vector<Cqe> sc = t.wait(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kSuccess);
  t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, rkey, WcStatus::kRemAccessErr);
}

TEST(MemoryWindow, SendWithInvalidateOfAnUnknownWindowIsInvalidRequest) {
  Mw t;
  uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
  t.send_with_inv(inc_rkey(rkey));
  std::vector<Cqe> sc = t.wait(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(sc.size(), 1u);
  EXPECT_EQ(sc[0].status, WcStatus::kRemInvReqErr);
  std::vector<Cqe> rc = t.wait(t.B(), t.h.b().rcq, 1);
  ASSERT_EQ(rc.size(), 1u);
  EXPECT_EQ(rc[0].status, WcStatus::kRemInvReqErr);
}

TEST(MemoryWindow, BindErrorsAreMwBindErrAndFlushTheRest) {
  struct Case {
    const char* what;
    uint32_t mr_access;
    uint64_t off, len;
    uint32_t access;
  };
  const Case cases[] = {
      {"region without MW_BIND", kAll, 0, 64, kAccessRemoteRead},
      {"beyond the region", kAll | kAccessMwBind, (1 << 20) - 32, 64, kAccessRemoteRead},
      {"remote write without the region's local write", kAccessRemoteRead | kAccessMwBind, 0, 64,
       kAccessRemoteWrite},
      {"a bit that is no window right (ON_DEMAND)", kAll | kAccessMwBind, 0, 64,
       kAccessRemoteRead | kAccessOnDemand},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Mw t(k.mr_access);
    uint32_t mw = t.B().alloc_mw(t.h.b().pd, MwType::kType2).value();
    uint32_t rkey = t.bind(mw, k.off, k.len, k.access);
    ASSERT_TRUE(t.local_inv(rkey));  // flushed after the failed bind
    std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 2);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, WcStatus::kMwBindErr);
    EXPECT_EQ(c[0].opcode, WcOpcode::kBindMw);
    EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr);
    QpAttr a;
    t.B().query_qp(t.qb, &a, nullptr);
    EXPECT_EQ(a.qp_state, QpState::kErr);
  }
}

TEST(MemoryWindow, Type2BindsOnlyWhenFreeAndLocalInvalidateOfType1Fails) {
  {
    SCOPED_TRACE("type 2 bound twice");
    Mw t;
    uint32_t rkey = t.bound_type2(kAccessRemoteWrite);
    t.bind(rkey, 0, 64, kAccessRemoteWrite);
    std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, WcStatus::kMwBindErr);
  }
  {
    SCOPED_TRACE("LOCAL_INV of a type 1 window");
    Mw t;
    uint32_t mw = t.B().alloc_mw(t.h.b().pd, MwType::kType1).value();
    ASSERT_TRUE(t.local_inv(mw));
    std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, WcStatus::kLocQpOpErr);
    EXPECT_EQ(c[0].opcode, WcOpcode::kLocalInv);
  }
}

TEST(MemoryWindow, Type1BindRebindAndZeroLengthUnbind) {
  Mw t;
  uint32_t mw = t.B().alloc_mw(t.h.b().pd, MwType::kType1).value();
  uint32_t k1 = t.bind(mw, kWinOff, kWin, kAccessRemoteWrite);
  std::vector<Cqe> c = t.wait(t.B(), t.h.b().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, k1, WcStatus::kSuccess);
  // Rebinding (no invalidation needed for type 1) retires the old key.
  uint32_t k2 = t.bind(k1, 0, 128, kAccessRemoteWrite);
  c = t.wait(t.B(), t.h.b().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  t.expect_a(WrOpcode::kRdmaWrite, 64, 0, k2, WcStatus::kSuccess);
  // A zero-length bind unbinds.
  uint32_t k3 = t.bind(k2, 0, 0, 0);
  c = t.wait(t.B(), t.h.b().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  t.expect_a(WrOpcode::kRdmaWrite, 64, 0, k3, WcStatus::kRemAccessErr);
}

TEST(MemoryWindow, Type1StaleKeyIsRemoteAccessError) {
  Mw t;
  uint32_t mw = t.B().alloc_mw(t.h.b().pd, MwType::kType1).value();
  uint32_t k1 = t.bind(mw, kWinOff, kWin, kAccessRemoteWrite);
  uint32_t k2 = t.bind(k1, kWinOff, kWin, kAccessRemoteWrite);
  ASSERT_EQ(t.wait(t.B(), t.h.b().scq, 2).size(), 2u);
  t.expect_a(WrOpcode::kRdmaWrite, 64, kWinOff, k1, WcStatus::kRemAccessErr);
  (void)k2;
}

TEST(MemoryWindow, ControlPath) {
  Mw t;
  EXPECT_EQ(t.B().alloc_mw(999, MwType::kType2).status().code(), ENOENT);
  uint32_t pd = t.B().alloc_pd().value();
  uint32_t mw = t.B().alloc_mw(pd, MwType::kType1).value();
  EXPECT_EQ(t.B().dealloc_pd(pd).code(), EBUSY);  // ibv_dealloc_pd(3): windows hold it
  EXPECT_TRUE(t.B().dealloc_mw(mw));
  EXPECT_EQ(t.B().dealloc_mw(mw).code(), ENOENT);
  EXPECT_TRUE(t.B().dealloc_pd(pd));
  EXPECT_EQ(t.B().dealloc_mw(t.kb.rkey).code(), ENOENT);  // a region's rkey names no window
}

}  // namespace
}  // namespace uroce::transport::testing
