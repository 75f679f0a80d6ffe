/**
 * @file control_test.cc
 * @brief Engine control path: modify_qp against the ibv_modify_qp(3) table (EINVAL, nothing
 * changes on failure), value checks, EBUSY rules of PD/CQ/SRQ, post_send/post_recv errors,
 * CQ overflow and notification, CQ event moderation and completion timestamps (injected
 * time), SRQ limit event, the QPN tag of a shared netdev.
 */
#include <gtest/gtest.h>

#include <vector>

#include "support/packet_builder.h"
#include "support/two_engines.h"
#include "transport/engine_impl.h"

namespace uroce::transport::testing {
namespace {

struct Fixture {
  Fixture() {
    EngineConfig cfg;
    cfg.gids = {Gid::from_ipv4(0xc6120001u)};
    e = std::make_unique<Engine>(cfg, &ctr, &obs);
    pd = e->alloc_pd().value();
    cq = e->create_cq(4).value();
  }
  uint32_t qp(QpType t, uint32_t srq = 0) {
    QpInitAttr ia;
    ia.type = t;
    ia.pd = pd;
    ia.send_cq = ia.recv_cq = cq;
    ia.srq = srq;
    ia.max_send_wr = 3;
    ia.max_recv_wr = 2;
    ia.max_send_sge = 2;
    ia.max_recv_sge = 1;
    ia.max_inline_data = 16;
    auto r = e->create_qp(ia);
    EXPECT_TRUE(r);
    EXPECT_EQ(ia.max_send_wr, 4u);  // rounded up and written back
    return r.value();
  }
  QpState state(uint32_t q) {
    QpAttr a;
    e->query_qp(q, &a, nullptr);
    return a.qp_state;
  }
  CounterBlock ctr;
  RecordingObserver obs;
  std::unique_ptr<Engine> e;
  uint32_t pd = 0, cq = 0;
};

constexpr uint32_t kInitRc = kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags;
constexpr uint32_t kRtrRc = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                            kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
constexpr uint32_t kRtsRc =
    kAttrState | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrSqPsn | kAttrMaxQpRdAtomic;

QpAttr good_attr(QpState s) {
  QpAttr a;
  a.qp_state = s;
  a.av.dgid = Gid::from_ipv4(0xc6120002u);
  a.path_mtu = 3;
  a.dest_qp_num = 99;
  return a;
}

// A connected QP's path is told to the observer before it reaches RTR (uroce-hostd registers
// it) and again when its AV changes; a refusal fails the modify and leaves the QP in INIT;
// reset and destroy tell that it left. UD QPs tell nothing.
TEST(Control, ConnectedQpTellsItsPathAtRtrAndItsEnd) {
  Fixture f;
  const uint32_t q = f.qp(QpType::kRc);
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kInit), kInitRc));
  EXPECT_TRUE(f.obs.paths.empty());
  f.obs.refuse_connect = EADDRINUSE;
  EXPECT_EQ(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc).code(), EADDRINUSE);
  EXPECT_EQ(f.state(q), QpState::kInit);
  f.obs.refuse_connect = 0;
  f.obs.paths.clear();
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc));
  ASSERT_EQ(f.obs.paths.size(), 1u);
  const RecordingObserver::Path p = f.obs.paths[0];
  EXPECT_EQ(p.qpn, q);
  EXPECT_EQ(p.dgid, Gid::from_ipv4(0xc6120002u));
  EXPECT_EQ(p.dqpn, 99u);
  EXPECT_GE(p.sport, 0xc000) << "the engine's per-QP source port, as rxe";
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kRts), kRtsRc));
  EXPECT_EQ(f.obs.paths.size(), 1u) << "RTS with the same path tells nothing";
  // A path that changes after RTR (SQD -> SQD with an AV, IBA's table) is told again.
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kSqd), kAttrState));
  QpAttr moved = good_attr(QpState::kSqd);
  moved.av.udp_sport = 0xd00d;
  ASSERT_TRUE(f.e->modify_qp(q, moved, kAttrState | kAttrAv));
  ASSERT_EQ(f.obs.paths.size(), 2u);
  EXPECT_EQ(f.obs.paths[1].sport, 0xd00d);
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kSqd), kAttrState | kAttrAv));
  ASSERT_EQ(f.obs.paths.size(), 3u);
  EXPECT_EQ(f.obs.paths[2].sport, p.sport) << "the engine's port again, the same for the path";
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kReset), kAttrState));
  EXPECT_EQ(f.obs.left, std::vector<uint32_t>{q});
  ASSERT_TRUE(f.e->destroy_qp(q));
  EXPECT_EQ(f.obs.left.size(), 1u) << "a QP in RESET has no connection to leave";
  const uint32_t r = f.qp(QpType::kUc);
  ASSERT_TRUE(f.e->modify_qp(r, good_attr(QpState::kInit), kInitRc));
  ASSERT_TRUE(f.e->modify_qp(r, good_attr(QpState::kRtr),
                             kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn));
  ASSERT_TRUE(f.e->destroy_qp(r));
  EXPECT_EQ(f.obs.left, (std::vector<uint32_t>{q, r}));
  f.obs.paths.clear();
  f.qp(QpType::kUd);
  EXPECT_TRUE(f.obs.paths.empty());
}

// Exclusive mode: QPN = generation << 16 | slot, slots from kFirstQpSlot, a slot reused with
// its generation bumped.
TEST(Control, ExclusiveQpnsAreGenerationAndSlot) {
  EngineConfig cfg;
  cfg.gids = {Gid::from_ipv4(0xc6120001u)};
  CounterBlock ctr;
  RecordingObserver obs;
  Engine e(cfg, &ctr, &obs);
  uint32_t pd = e.alloc_pd().value(), cq = e.create_cq(4).value();
  QpInitAttr ia;
  ia.type = QpType::kRc;
  ia.pd = pd;
  ia.send_cq = ia.recv_cq = cq;
  const uint32_t a = e.create_qp(ia).value(), b = e.create_qp(ia).value();
  EXPECT_EQ(a, 1u << 16 | kFirstQpSlot);
  EXPECT_EQ(b, 1u << 16 | (kFirstQpSlot + 1));
  ASSERT_TRUE(e.destroy_qp(a));
  EXPECT_EQ(e.create_qp(ia).value(), 2u << 16 | kFirstQpSlot);  // the slot, next generation
}

/// An engine numbering QPs in block `block` of 2^bits QPNs, with a PD and a CQ for them.
struct BlockEngine {
  BlockEngine(uint32_t block, uint8_t bits) {
    cfg.gids = {Gid::from_ipv4(0xc6120001u)};
    cfg.qpn_block_bits = bits;
    cfg.qpn_block = block;
    e = std::make_unique<Engine>(cfg, &ctr, &obs);
    ia.type = QpType::kRc;
    ia.pd = e->alloc_pd().value();
    ia.send_cq = ia.recv_cq = e->create_cq(4).value();
  }
  EngineConfig cfg;
  CounterBlock ctr;
  RecordingObserver obs;
  std::unique_ptr<Engine> e;
  QpInitAttr ia;
};

// uroce-hostd steers frames by the destination QPN's block: every QPN of the engine is in its
// block, and found again by its whole number.
TEST(Control, QpnsStayInTheirBlock) {
  BlockEngine b(0x2a5, 13);
  for (int i = 0; i < 100; ++i) {
    const uint32_t q = b.e->create_qp(b.ia).value();
    EXPECT_EQ(q >> 13, 0x2a5u) << std::hex << q;
    EXPECT_EQ(q & 0x1fff, static_cast<uint32_t>(i));  // block > 0: numbers from 0
    QpAttr a;
    EXPECT_TRUE(b.e->query_qp(q, &a, nullptr));
    EXPECT_FALSE(b.e->query_qp(q ^ (1u << 13), &a, nullptr));  // same slot, another block
  }
}

// Cyclic: a destroyed QP's number comes back only after every other free number of the block
// was given (rxe's cyclic allocation).
TEST(Control, BlockNumbersComeBackOnlyAfterTheRestOfTheBlock) {
  BlockEngine b(3, kMinQpnBlockBits);
  const uint32_t n = 1u << kMinQpnBlockBits;
  const uint32_t first = b.e->create_qp(b.ia).value();
  const uint32_t keep = b.e->create_qp(b.ia).value();  // stays live throughout
  ASSERT_TRUE(b.e->destroy_qp(first));
  std::vector<bool> seen(n);
  seen[keep & (n - 1)] = true;
  // n - 1 more QPs, each destroyed at once: every number but `keep`'s, `first`'s last.
  for (uint32_t i = 0; i < n - 1; ++i) {
    const uint32_t q = b.e->create_qp(b.ia).value();
    ASSERT_EQ(q >> kMinQpnBlockBits, 3u);
    ASSERT_FALSE(seen[q & (n - 1)]) << "number " << (q & (n - 1)) << " came back early";
    seen[q & (n - 1)] = true;
    if (i < n - 2) {
      EXPECT_NE(q, first) << "reused after " << i << " others";
    } else {
      EXPECT_EQ(q, first);
    }
    ASSERT_TRUE(b.e->destroy_qp(q));
  }
}

// A process holds at least 4096 live QPs in its block; one more than the block holds fails,
// and a QP destroyed then frees its number for the next.
TEST(Control, BlockHoldsItsSizeInLiveQps) {
  BlockEngine b(1, kMinQpnBlockBits);
  const uint32_t n = 1u << kMinQpnBlockBits;
  ASSERT_GE(n, 4096u);
  std::vector<uint32_t> qps;
  for (uint32_t i = 0; i < n; ++i) {
    auto q = b.e->create_qp(b.ia);
    ASSERT_TRUE(q) << i;
    qps.push_back(q.value());
  }
  EXPECT_EQ(b.e->create_qp(b.ia).status(), Status::no_memory());
  ASSERT_TRUE(b.e->destroy_qp(qps[100]));
  EXPECT_EQ(b.e->create_qp(b.ia).value(), qps[100]);
}

// Block 0 holds QP0 and QP1: its numbers start at kFirstQpSlot.
TEST(Control, BlockZeroSkipsTheSpecialQps) {
  BlockEngine b(0, kMinQpnBlockBits);
  EXPECT_EQ(b.e->create_qp(b.ia).value(), kFirstQpSlot);
}

TEST(Control, ModifyQpTableOnTheEngine) {
  Fixture f;
  uint32_t q = f.qp(QpType::kRc);
  EXPECT_EQ(f.state(q), QpState::kReset);
  // RESET -> RTR does not exist.
  EXPECT_EQ(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc), Status::invalid());
  // RESET -> INIT with a UD-only attribute.
  EXPECT_EQ(f.e->modify_qp(q, good_attr(QpState::kInit), kInitRc | kAttrQkey), Status::invalid());
  EXPECT_EQ(f.state(q), QpState::kReset);
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kInit), kInitRc));
  // INIT -> RTR missing MIN_RNR_TIMER.
  EXPECT_EQ(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc & ~kAttrMinRnrTimer),
            Status::invalid());
  // Bad values: path MTU 6, MTU above the port's, sgid index out of range.
  QpAttr bad = good_attr(QpState::kRtr);
  bad.path_mtu = 6;
  EXPECT_EQ(f.e->modify_qp(q, bad, kRtrRc), Status::invalid());
  bad = good_attr(QpState::kRtr);
  bad.av.sgid_index = 3;
  EXPECT_EQ(f.e->modify_qp(q, bad, kRtrRc), Status::invalid());
  bad = good_attr(QpState::kRtr);
  bad.max_dest_rd_atomic = 200;
  EXPECT_EQ(f.e->modify_qp(q, bad, kRtrRc), Status::invalid());
  // Nothing changed by the failed calls.
  EXPECT_EQ(f.state(q), QpState::kInit);
  QpAttr got;
  f.e->query_qp(q, &got, nullptr);
  EXPECT_EQ(got.dest_qp_num, 0u);
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc));
  QpAttr rts = good_attr(QpState::kRts);
  rts.retry_cnt = 8;
  EXPECT_EQ(f.e->modify_qp(q, rts, kRtsRc), Status::invalid());
  rts.retry_cnt = 7;
  // CUR_STATE that does not match.
  rts.cur_qp_state = QpState::kInit;
  EXPECT_EQ(f.e->modify_qp(q, rts, kRtsRc | kAttrCurState), Status::invalid());
  rts.cur_qp_state = QpState::kRtr;
  ASSERT_TRUE(f.e->modify_qp(q, rts, kRtsRc | kAttrCurState));
  EXPECT_EQ(f.state(q), QpState::kRts);
  // RTS -> SQD -> RTS, and RTS -> RESET.
  QpAttr s = good_attr(QpState::kSqd);
  ASSERT_TRUE(f.e->modify_qp(q, s, kAttrState | kAttrEnSqdAsyncNotify));
  s.qp_state = QpState::kRts;
  ASSERT_TRUE(f.e->modify_qp(q, s, kAttrState));
  s.qp_state = QpState::kReset;
  ASSERT_TRUE(f.e->modify_qp(q, s, kAttrState));
  EXPECT_EQ(f.state(q), QpState::kReset);
  // UD: INIT needs QKEY; RTR needs nothing; RTS needs SQ_PSN.
  uint32_t u = f.qp(QpType::kUd);
  QpAttr ua;
  ua.qp_state = QpState::kInit;
  EXPECT_EQ(f.e->modify_qp(u, ua, kAttrState | kAttrPkeyIndex | kAttrPort), Status::invalid());
  ASSERT_TRUE(f.e->modify_qp(u, ua, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrQkey));
  ua.qp_state = QpState::kRtr;
  ASSERT_TRUE(f.e->modify_qp(u, ua, kAttrState));
  ua.qp_state = QpState::kRts;
  EXPECT_EQ(f.e->modify_qp(u, ua, kAttrState), Status::invalid());
  ASSERT_TRUE(f.e->modify_qp(u, ua, kAttrState | kAttrSqPsn));
  EXPECT_EQ(f.e->modify_qp(12345, ua, kAttrState), Status::not_found());
}

TEST(Control, EbusyRules) {
  Fixture f;
  uint32_t srq = f.e->create_srq(f.pd, 8, 1, 0).value();
  uint32_t q = f.qp(QpType::kRc, srq);
  std::vector<uint8_t> buf(64);
  MrKeys k = f.e->reg_mr(f.pd, reinterpret_cast<uint64_t>(buf.data()), 64, 0).value();
  EXPECT_EQ(f.e->dealloc_pd(f.pd), Status::busy());
  EXPECT_EQ(f.e->destroy_cq(f.cq), Status::busy());
  EXPECT_EQ(f.e->destroy_srq(srq), Status::busy());
  ASSERT_TRUE(f.e->destroy_qp(q));
  EXPECT_EQ(f.e->dealloc_pd(f.pd), Status::busy());  // SRQ and MR still use it
  ASSERT_TRUE(f.e->destroy_srq(srq));
  EXPECT_EQ(f.e->dealloc_pd(f.pd), Status::busy());  // MR
  ASSERT_TRUE(f.e->dereg_mr(k.lkey));
  EXPECT_EQ(f.e->dereg_mr(k.lkey), Status::not_found());
  ASSERT_TRUE(f.e->destroy_cq(f.cq));
  ASSERT_TRUE(f.e->dealloc_pd(f.pd));
  EXPECT_EQ(f.e->dealloc_pd(f.pd), Status::not_found());
  // MR rules through the engine.
  uint32_t pd2 = f.e->alloc_pd().value();
  EXPECT_EQ(
      f.e->reg_mr(pd2, reinterpret_cast<uint64_t>(buf.data()), 64, kAccessRemoteWrite).status(),
      Status::invalid());
  EXPECT_EQ(f.e->reg_mr(pd2 + 5, reinterpret_cast<uint64_t>(buf.data()), 64, 0).status(),
            Status::not_found());
}

TEST(Control, PostErrors) {
  Fixture f;
  uint32_t q = f.qp(QpType::kRc);
  SendWr w;
  w.opcode = WrOpcode::kSend;
  // RESET: posting is not allowed.
  EXPECT_EQ(f.e->post_send(q, w, Timestamp{0}), Status::invalid());
  EXPECT_EQ(f.e->post_recv(q, RecvWr{}), Status::invalid());
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kInit), kInitRc));
  EXPECT_TRUE(f.e->post_recv(q, RecvWr{}));  // INIT allows receives
  EXPECT_TRUE(f.e->post_recv(q, RecvWr{}));
  EXPECT_EQ(f.e->post_recv(q, RecvWr{}), Status::no_memory());  // RQ of 2 full
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kRtr), kRtrRc));
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kRts), kRtsRc));
  Sge sg[3] = {};
  w.sg = sg;
  w.num_sge = 3;  // max_send_sge 2
  EXPECT_EQ(f.e->post_send(q, w, Timestamp{0}), Status::invalid());
  w.num_sge = 1;
  sg[0].length = 33;  // inline limit: 16 asked, 32 given (what a WQE of 2 SGEs holds, as rxe)
  w.send_flags = kSendInline;
  EXPECT_EQ(f.e->post_send(q, w, Timestamp{0}), Status::invalid());
  w.opcode = WrOpcode::kBindMw;
  w.send_flags = 0;
  EXPECT_EQ(f.e->post_send(q, w, Timestamp{0}), Status::invalid());
  // UC does not do READ; UD needs an address handle.
  uint32_t uc = f.qp(QpType::kUc);
  SendWr r;
  r.opcode = WrOpcode::kRdmaRead;
  EXPECT_EQ(f.e->post_send(uc, r, Timestamp{0}), Status::invalid());
  uint32_t ud = f.qp(QpType::kUd);
  QpAttr ua;
  ua.qp_state = QpState::kInit;
  ASSERT_TRUE(f.e->modify_qp(ud, ua, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrQkey));
  ua.qp_state = QpState::kRtr;
  ASSERT_TRUE(f.e->modify_qp(ud, ua, kAttrState));
  ua.qp_state = QpState::kRts;
  ASSERT_TRUE(f.e->modify_qp(ud, ua, kAttrState | kAttrSqPsn));
  SendWr d;
  EXPECT_EQ(f.e->post_send(ud, d, Timestamp{0}), Status::invalid());
  // SQ full: 4 entries.
  SendWr ok;
  ok.opcode = WrOpcode::kRdmaWrite;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(f.e->post_send(q, ok, Timestamp{0}));
  EXPECT_EQ(f.e->post_send(q, ok, Timestamp{0}), Status::no_memory());
}

TEST(Control, CqOverflowRaisesCqErrAndArmNotifies) {
  Fixture f;  // CQ depth 4
  uint32_t q = f.qp(QpType::kRc);
  ASSERT_TRUE(f.e->modify_qp(q, good_attr(QpState::kInit), kInitRc));
  ASSERT_TRUE(f.e->req_notify_cq(f.cq, false));
  f.e->post_recv(q, RecvWr{});
  f.e->post_recv(q, RecvWr{});
  // ERR flushes both receives: one notification (the arm is consumed).
  QpAttr e;
  e.qp_state = QpState::kErr;
  ASSERT_TRUE(f.e->modify_qp(q, e, kAttrState));
  EXPECT_EQ(f.obs.cq_events.size(), 1u);
  for (int i = 0; i < 4; ++i) f.e->post_recv(q, RecvWr{});  // each flushed at once
  EXPECT_TRUE(f.obs.saw(AsyncEventType::kCqErr, f.cq));
  Cqe c[8];
  EXPECT_EQ(f.e->poll_cq(f.cq, c), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c[i].status, WcStatus::kWrFlushErr);
}

TEST(Control, SrqLimitEventFiresOnce) {
  EngineUnderTest t;
  uint32_t srq = t.e->create_srq(t.pd, 8, 1, 3).value();
  QpInitAttr ia;
  ia.type = QpType::kUd;
  ia.pd = t.pd;
  ia.send_cq = ia.recv_cq = t.cq;
  ia.srq = srq;
  ia.max_send_wr = 4;
  uint32_t q = t.e->create_qp(ia).value();
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qkey = 5;
  ASSERT_TRUE(t.e->modify_qp(q, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrQkey));
  a.qp_state = QpState::kRtr;
  ASSERT_TRUE(t.e->modify_qp(q, a, kAttrState));
  for (int i = 0; i < 4; ++i) {
    Sge sg{t.va(static_cast<size_t>(i) * 1024), 1024, t.keys.lkey};
    RecvWr r;
    r.wr_id = static_cast<uint64_t>(i);
    r.sg = &sg;
    r.num_sge = 1;
    ASSERT_TRUE(t.e->post_srq_recv(srq, r));
  }
  PacketBuilder pb(t.neigh.peer, MacAddr{{0x02, 0, 0, 0, 0, 0x02}}, Gid::from_ipv4(0xc6120001u),
                   Gid::from_ipv4(0xc6120002u), q);
  for (int i = 0; i < 3; ++i) {
    wire::FrameSpec s = pb.spec(wire::Opcode::kUdSendOnly, static_cast<uint32_t>(i), false);
    s.deth = {5, Qpn(0x77)};
    std::vector<uint8_t> payload(100, 1);
    t.rx(pb.build(s, payload));
  }
  // 4 posted, 3 consumed: fewer than 3 left once, after the second datagram.
  int n = 0;
  for (const auto& ev : t.observer.events) n += ev.type == AsyncEventType::kSrqLimitReached;
  EXPECT_EQ(n, 1);
  uint32_t limit = 9;
  ASSERT_TRUE(t.e->query_srq(srq, nullptr, nullptr, &limit));
  EXPECT_EQ(limit, 0u);  // disarmed
  EXPECT_EQ(t.cqes().size(), 3u);
}

// ---- CQ event moderation and completion timestamps (Engine::modify_cq, Cqe::ts) ----------

/// A CQ of 64 entries with an RC QP in ERR on it: every post_recv completes at once (flushed),
/// one completion per call, at the engine's current time.
struct ModFixture : Fixture {
  ModFixture() {
    mcq = e->create_cq(64).value();
    QpInitAttr ia;
    ia.type = QpType::kRc;
    ia.pd = pd;
    ia.send_cq = ia.recv_cq = mcq;
    ia.max_send_wr = 4;
    ia.max_recv_wr = 64;
    ia.max_send_sge = ia.max_recv_sge = 1;
    q = e->create_qp(ia).value();
    EXPECT_TRUE(e->modify_qp(q, good_attr(QpState::kInit), kInitRc));
    QpAttr err;
    err.qp_state = QpState::kErr;
    EXPECT_TRUE(e->modify_qp(q, err, kAttrState));
  }
  /// One completion at time t (ns).
  void complete_at(int64_t t) {
    e->advance_clock(Timestamp{t});
    EXPECT_TRUE(e->post_recv(q, RecvWr{}));
  }
  /// A progress step at time t (fires due moderation timers).
  void step_at(int64_t t) { e->poll_transmit(sink, neigh, Timestamp{t}); }
  size_t events() const { return obs.cq_events.size(); }
  uint32_t mcq = 0, q = 0;
  CaptureSink sink;
  FixedNeighbors neigh;
};

TEST(CqModeration, UnmoderatedCqSignalsTheFirstCompletion) {
  ModFixture f;
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(1000);
  EXPECT_EQ(f.events(), 1u);
  EXPECT_EQ(f.obs.cq_events.back(), f.mcq);
  f.complete_at(2000);  // the arm was consumed
  EXPECT_EQ(f.events(), 1u);
}

TEST(CqModeration, CountSignalsAtTheNthCompletionOfTheArm) {
  ModFixture f;
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 3, Duration{}));
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(1000);
  f.complete_at(2000);
  EXPECT_EQ(f.events(), 0u);
  EXPECT_TRUE(f.e->next_deadline().is_never());  // no period: no timer
  f.complete_at(3000);
  EXPECT_EQ(f.events(), 1u);
  f.complete_at(4000);  // not armed: not counted
  f.complete_at(5000);
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(6000);
  f.complete_at(7000);
  EXPECT_EQ(f.events(), 1u);  // the count starts again at the arm
  f.complete_at(8000);
  EXPECT_EQ(f.events(), 2u);
}

TEST(CqModeration, PeriodSignalsThatLongAfterTheFirstCompletion) {
  ModFixture f;
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 100, Duration::micros(50)));
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(10'000);
  f.complete_at(20'000);
  EXPECT_EQ(f.events(), 0u);
  EXPECT_EQ(f.e->next_deadline(), Timestamp{10'000 + 50'000});  // from the first completion
  f.step_at(59'999);
  EXPECT_EQ(f.events(), 0u);
  f.step_at(60'000);
  EXPECT_EQ(f.events(), 1u);
  EXPECT_TRUE(f.e->next_deadline().is_never());
  f.step_at(200'000);
  EXPECT_EQ(f.events(), 1u);
}

TEST(CqModeration, CountEndsThePeriodEarly) {
  ModFixture f;
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 2, Duration::micros(50)));
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(10'000);
  f.complete_at(11'000);
  EXPECT_EQ(f.events(), 1u);
  EXPECT_TRUE(f.e->next_deadline().is_never());
  f.step_at(100'000);
  EXPECT_EQ(f.events(), 1u);  // the period's timer went with the event
}

TEST(CqModeration, ModifyReleasesAHeldEventAndRejectsBadValues) {
  ModFixture f;
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 10, Duration::micros(1000)));
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(1000);
  EXPECT_EQ(f.events(), 0u);
  EXPECT_EQ(f.e->modify_cq(f.mcq, kMaxCqModCount + 1, Duration{}), Status::invalid());
  EXPECT_EQ(f.e->modify_cq(f.mcq, 1, Duration::micros(kMaxCqModPeriodUs + 1)), Status::invalid());
  EXPECT_EQ(f.e->modify_cq(f.mcq, 1, Duration{-1}), Status::invalid());
  EXPECT_EQ(f.e->modify_cq(f.mcq + 100, 1, Duration{}), Status::not_found());
  EXPECT_EQ(f.events(), 0u);  // the failed calls changed nothing
  EXPECT_EQ(f.e->next_deadline(), Timestamp{1000 + 1'000'000});
  // Moderation off: the event held back goes at once.
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 0, Duration{}));
  EXPECT_EQ(f.events(), 1u);
  EXPECT_TRUE(f.e->next_deadline().is_never());
  // The largest values are accepted.
  EXPECT_TRUE(f.e->modify_cq(f.mcq, kMaxCqModCount, Duration::micros(kMaxCqModPeriodUs)));
}

TEST(CqModeration, DestroyingACqDropsItsTimer) {
  ModFixture f;
  ASSERT_TRUE(f.e->modify_cq(f.mcq, 0, Duration::micros(5)));
  ASSERT_TRUE(f.e->req_notify_cq(f.mcq, false));
  f.complete_at(1000);
  EXPECT_FALSE(f.e->next_deadline().is_never());
  ASSERT_TRUE(f.e->destroy_qp(f.q));
  ASSERT_TRUE(f.e->destroy_cq(f.mcq));
  EXPECT_TRUE(f.e->next_deadline().is_never());
  f.step_at(100'000);
  EXPECT_EQ(f.events(), 0u);
}

TEST(CqTimestamp, EachCompletionCarriesTheEngineTimeItWasMadeAt) {
  ModFixture f;
  f.complete_at(1234);
  f.complete_at(5678);
  f.e->advance_clock(Timestamp{10});  // the clock never goes back
  EXPECT_TRUE(f.e->post_recv(f.q, RecvWr{}));
  Cqe c[4];
  ASSERT_EQ(f.e->poll_cq(f.mcq, c), 3u);
  EXPECT_EQ(c[0].ts, Timestamp{1234});
  EXPECT_EQ(c[1].ts, Timestamp{5678});
  EXPECT_EQ(c[2].ts, Timestamp{5678});
}

}  // namespace
}  // namespace uroce::transport::testing
