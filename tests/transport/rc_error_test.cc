/**
 * @file rc_error_test.cc
 * @brief RC error paths between two engines in fake time: RETRY_EXC_ERR after
 * (retry_cnt + 1) x local ACK timeout then WR_FLUSH_ERR, RNR with rnr_retry 7 succeeding once a
 * receive is posted, RNR_RETRY_EXC_ERR, REM_ACCESS_ERR with the target untouched,
 * REM_INV_REQ_ERR / LOC_LEN_ERR, LOC_PROT_ERR, deregistration killing keys at once
 * (IBA Vol 1 §9.7.6, §9.9.3, §10.6).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/rc_pair.h"

namespace uroce::transport::testing {
namespace {

TEST(RcError, RetryExceededAfterTimeoutTimesRetriesThenFlush) {
  Rc t;
  t.h.link(0).blackhole = true;  // B never hears anything: a peer that stopped answering
  const Timestamp t0 = t.h.now();
  ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 1, 3000, Rc::addr(t.bm), t.kb.rkey));
  ASSERT_TRUE(t.post(WrOpcode::kSend, 2, 100, 0, 0));
  ASSERT_TRUE(t.post(WrOpcode::kRdmaRead, 3, 100, Rc::addr(t.bm), t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(c[1].wr_id, 2u);
  EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(c[2].wr_id, 3u);
  EXPECT_EQ(c[2].status, WcStatus::kWrFlushErr);
  // Initial send + retry_cnt (3) retries, each waiting the full timeout:
  // 4 x 4.096 us x 2^10 = 16.777 ms.
  const Duration expected = Duration::nanos(4 * 4096 * 1024);
  const Duration took = t.h.now() - t0;
  EXPECT_GE(took, expected);
  EXPECT_LT(took, expected + Duration::micros(100));
  EXPECT_EQ(t.h.a().counters.get(Counter::local_ack_timeout_err), 3u);
  EXPECT_EQ(t.h.a().counters.get(Counter::req_transport_retries_exceeded), 1u);
  EXPECT_EQ(t.state(t.A(), t.qa), QpState::kErr);
  // ibv_get_async_event(3): the QP went to ERR through a completion error: one QP_FATAL.
  EXPECT_EQ(Rc::qp_error_events(t.h.a(), t.qa, AsyncEventType::kQpFatal), 1u);
  // Posting to a QP in ERR completes at once with WR_FLUSH_ERR, and raises nothing more.
  ASSERT_TRUE(t.post(WrOpcode::kSend, 4, 10, 0, 0));
  Cqe e[2];
  ASSERT_EQ(t.A().poll_cq(t.h.a().scq, e), 1u);
  EXPECT_EQ(e[0].wr_id, 4u);
  EXPECT_EQ(e[0].status, WcStatus::kWrFlushErr);
  t.h.run_until([] { return false; }, Duration::millis(50));
  EXPECT_EQ(Rc::qp_error_events(t.h.a(), t.qa, AsyncEventType::kQpFatal), 1u);
  EXPECT_EQ(t.h.a().observer.events.size(), 1u);
}

TEST(RcError, LinkCutShorterThanTimeoutTimesRetriesRecoversWithoutAnError) {
  Rc t;
  // Cut both directions for ~2.5 local ACK timeouts (4.194 ms each; retry_cnt 3 allows 4).
  t.h.link(0).blackhole = t.h.link(1).blackhole = true;
  const Timestamp t0 = t.h.now();
  ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 1, 3000, Rc::addr(t.bm), t.kb.rkey));
  const Timestamp restore = t0 + Duration::micros(10'500);
  t.h.run_until([&] { return t.h.now() >= restore; }, Duration::millis(20));
  ASSERT_GE(t.h.now(), restore);
  Cqe early[2];
  EXPECT_EQ(t.A().poll_cq(t.h.a().scq, early), 0u);  // still retrying, not failed
  t.h.link(0).blackhole = t.h.link(1).blackhole = false;
  // Expect: the retransmission after the next timeout (12.58 ms: the ones at 4.19 and 8.39 ms
  // were lost) gets through, the last of the 3 retries: success, the data in place, the QP in
  // RTS, 3 timeouts counted and no retry-exceeded, no async event.
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(std::memcmp(t.am.data(), t.bm.data(), 3000), 0);
  EXPECT_EQ(t.state(t.A(), t.qa), QpState::kRts);
  EXPECT_EQ(t.h.a().counters.get(Counter::local_ack_timeout_err), 3u);
  EXPECT_EQ(t.h.a().counters.get(Counter::req_transport_retries_exceeded), 0u);
  EXPECT_TRUE(t.h.a().observer.events.empty());
}

TEST(RcError, QpFatalOncePerTripToErrAndNotOnUserModify) {
  Rc t;
  // A user-requested move to ERR is not an error event.
  QpAttr e;
  e.qp_state = QpState::kErr;
  ASSERT_TRUE(t.B().modify_qp(t.qb, e, kAttrState));
  EXPECT_EQ(Rc::qp_error_events(t.h.b(), t.qb, AsyncEventType::kQpFatal), 0u);
  // Retry exhaustion, RESET, reconnect, exhaustion again: one event per trip.
  t.h.link(0).blackhole = true;
  for (int trip = 1; trip <= 2; ++trip) {
    SCOPED_TRACE(trip);
    ASSERT_TRUE(t.post(WrOpcode::kSend, 1, 10, 0, 0));
    ASSERT_EQ(t.wait_cqes(t.A(), t.h.a().scq, 1).size(), 1u);
    EXPECT_EQ(Rc::qp_error_events(t.h.a(), t.qa, AsyncEventType::kQpFatal),
              static_cast<size_t>(trip));
    QpAttr r;
    r.qp_state = QpState::kReset;
    ASSERT_TRUE(t.A().modify_qp(t.qa, r, kAttrState));
    QpAttr a = Rc::base();
    a.qp_state = QpState::kInit;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qp_access_flags = kAll;
    ASSERT_TRUE(
        t.A().modify_qp(t.qa, a, kAttrState | kAttrPort | kAttrPkeyIndex | kAttrAccessFlags));
    a.qp_state = QpState::kRtr;
    a.av = t.h.av_to_peer(0);
    a.dest_qp_num = t.qb;
    ASSERT_TRUE(t.A().modify_qp(t.qa, a,
                                kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                                    kAttrMaxDestRdAtomic | kAttrMinRnrTimer));
    a.qp_state = QpState::kRts;
    ASSERT_TRUE(t.A().modify_qp(t.qa, a,
                                kAttrState | kAttrSqPsn | kAttrTimeout | kAttrRetryCnt |
                                    kAttrRnrRetry | kAttrMaxQpRdAtomic));
  }
}

TEST(RcError, RnrRetryForeverSucceedsOnceReceiveIsPosted) {
  Rc t;  // rnr_retry 7
  ASSERT_TRUE(t.post(WrOpcode::kSend, 1, 5000, 0, 0));
  // No receive on B for 50 ms of fake time: RNR NAKs, no completion, no error.
  t.h.run_until([] { return false; }, Duration::millis(50));
  Cqe c[4];
  EXPECT_EQ(t.A().poll_cq(t.h.a().scq, c), 0u);
  EXPECT_GT(t.h.a().counters.get(Counter::rnr_nak_retry_err), 10u);
  EXPECT_GT(t.h.b().counters.get(Counter::out_of_buffer), 10u);
  EXPECT_EQ(t.state(t.A(), t.qa), QpState::kRts);
  t.post_recv_b(7, 8192);
  std::vector<Cqe> s = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, WcStatus::kSuccess);
  std::vector<Cqe> r = t.wait_cqes(t.B(), t.h.b().rcq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].wr_id, 7u);
  EXPECT_EQ(r[0].byte_len, 5000u);
  EXPECT_EQ(0, std::memcmp(t.bm.data(), t.am.data(), 5000));
}

TEST(RcError, RnrRetryExceeded) {
  QpAttr a = Rc::base();
  a.rnr_retry = 2;
  Rc t(a);
  ASSERT_TRUE(t.post(WrOpcode::kSendWithImm, 1, 10, 0, 0));
  ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 2, 10, Rc::addr(t.bm), t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(t.h.a().counters.get(Counter::rnr_nak_retry_err), 2u);
  EXPECT_EQ(t.h.a().counters.get(Counter::req_rnr_retries_exceeded), 1u);
  EXPECT_EQ(Rc::qp_error_events(t.h.a(), t.qa, AsyncEventType::kQpFatal), 1u);
}

TEST(RcError, RemoteAccessErrorLeavesTargetUntouched) {
  struct Case {
    const char* what;
    WrOpcode op;
    uint32_t len;
    int64_t off;  // from the start of B's region
    bool bad_key;
  };
  const Case cases[] = {
      {"bad rkey", WrOpcode::kRdmaWrite, 3000, 0, true},
      {"past the end", WrOpcode::kRdmaWrite, 3000, (1 << 20) - 1000, false},
      {"before the start", WrOpcode::kRdmaWrite, 8, -8, false},
      {"read bad rkey", WrOpcode::kRdmaRead, 100, 0, true},
      {"atomic past end", WrOpcode::kAtomicFetchAndAdd, 8, 1 << 20, false},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Rc t;
    std::vector<uint8_t> before = t.bm;
    std::vector<uint8_t> abefore = t.am;
    ASSERT_TRUE(t.post(WrOpcode::kSend, 1, 10, 0, 0));  // earlier WR completes normally
    t.post_recv_b(9, 64, 4096);
    before = t.bm;
    ASSERT_TRUE(t.post(k.op, 2, k.len, Rc::addr(t.bm) + static_cast<uint64_t>(k.off),
                       k.bad_key ? t.kb.rkey ^ 0x100 : t.kb.rkey));
    ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 3, 10, Rc::addr(t.bm), t.kb.rkey));
    std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 3);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].status, WcStatus::kSuccess);
    EXPECT_EQ(c[1].status, WcStatus::kRemAccessErr);
    EXPECT_EQ(c[2].status, WcStatus::kWrFlushErr);
    // SEND landed at offset 4096 before the failure; nothing else on B changed.
    std::memcpy(before.data() + 4096, t.am.data(), 10);
    EXPECT_EQ(before, t.bm);
    if (k.op == WrOpcode::kRdmaRead) {
      EXPECT_EQ(0, std::memcmp(abefore.data(), t.am.data(), abefore.size()));
    }
    EXPECT_EQ(t.state(t.B(), t.qb), QpState::kErr);
    EXPECT_EQ(Rc::qp_error_events(t.h.b(), t.qb, AsyncEventType::kQpAccessErr), 1u);
    EXPECT_EQ(Rc::qp_error_events(t.h.b(), t.qb, AsyncEventType::kQpFatal), 0u);
    // The requester's REM_ACCESS_ERR completion took A to ERR: QP_FATAL there.
    EXPECT_EQ(Rc::qp_error_events(t.h.a(), t.qa, AsyncEventType::kQpFatal), 1u);
    EXPECT_EQ(t.h.a().counters.get(Counter::req_remote_access_errors), 1u);
    EXPECT_EQ(t.h.b().counters.get(Counter::resp_remote_access_errors), 1u);
  }
}

TEST(RcError, DeregisteredRegionRefusedAtOnce) {
  Rc t;
  ASSERT_TRUE(t.B().dereg_mr(t.kb.lkey));
  std::vector<uint8_t> before = t.bm;
  ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 1, 100, Rc::addr(t.bm), t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(before, t.bm);
}

TEST(RcError, SendTooLongForReceiveIsLocLenAndRemInvReq) {
  Rc t;
  t.post_recv_b(5, 100);
  ASSERT_TRUE(t.post(WrOpcode::kSend, 1, 2000, 0, 0));
  std::vector<Cqe> s = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].status, WcStatus::kRemInvReqErr);
  std::vector<Cqe> r = t.wait_cqes(t.B(), t.h.b().rcq, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].wr_id, 5u);
  EXPECT_EQ(r[0].status, WcStatus::kLocLenErr);
  EXPECT_TRUE(t.h.b().observer.saw(AsyncEventType::kQpReqErr, t.qb));
}

TEST(RcError, BadLkeyIsLocProtErrInOrder) {
  Rc t;
  t.post_recv_b(1, 100);
  ASSERT_TRUE(t.post(WrOpcode::kSend, 1, 50, 0, 0));                    // fine
  ASSERT_TRUE(t.post(WrOpcode::kSend, 2, 50, 0, 0, t.ka.lkey ^ 0x40));  // bad lkey
  ASSERT_TRUE(t.post(WrOpcode::kRdmaWrite, 3, 50, Rc::addr(t.bm), t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[1].status, WcStatus::kLocProtErr);
  EXPECT_EQ(c[2].status, WcStatus::kWrFlushErr);
  // Atomic with a length other than 8: LOC_LEN_ERR.
  Rc u;
  ASSERT_TRUE(u.post(WrOpcode::kAtomicFetchAndAdd, 1, 4, Rc::addr(u.bm), u.kb.rkey));
  std::vector<Cqe> d = u.wait_cqes(u.A(), u.h.a().scq, 1);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].status, WcStatus::kLocLenErr);
}

TEST(RcError, OperationNotEnabledOnQpIsInvalidRequest) {
  Rc t(Rc::base(), kAccessLocalWrite | kAccessRemoteWrite);  // no REMOTE_READ on the QP
  ASSERT_TRUE(t.post(WrOpcode::kRdmaRead, 1, 64, Rc::addr(t.bm), t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemInvReqErr);
}

TEST(RcError, MisalignedAtomicIsInvalidRequest) {
  Rc t;
  ASSERT_TRUE(t.post(WrOpcode::kAtomicCmpAndSwp, 1, 8, Rc::addr(t.bm) + 4, t.kb.rkey));
  std::vector<Cqe> c = t.wait_cqes(t.A(), t.h.a().scq, 1);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemInvReqErr);
}

TEST(RcError, ModifyToErrFlushesBothQueuesWithSrqLastWqeEvent) {
  TwoEngines h(8);
  Engine& e = *h.a().engine;
  uint32_t srq = e.create_srq(h.a().pd, 16, 1, 0).value();
  QpInitAttr ia;
  ia.type = QpType::kRc;
  ia.pd = h.a().pd;
  ia.send_cq = h.a().scq;
  ia.recv_cq = h.a().rcq;
  ia.srq = srq;
  ia.max_send_wr = 8;
  ia.max_send_sge = 1;
  uint32_t qpn = e.create_qp(ia).value();
  QpAttr a;
  a.qp_state = QpState::kInit;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags));
  a.qp_state = QpState::kErr;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState));
  EXPECT_TRUE(h.a().observer.saw(AsyncEventType::kQpLastWqeReached, qpn));
  // The SRQ is not flushed: it is shared.
  std::vector<uint8_t> buf(64);
  MrKeys k = e.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(buf.data()), 64, kAll).value();
  Sge sg{reinterpret_cast<uint64_t>(buf.data()), 64, k.lkey};
  RecvWr r;
  r.sg = &sg;
  r.num_sge = 1;
  EXPECT_TRUE(e.post_srq_recv(srq, r));
  Cqe c[4];
  EXPECT_EQ(e.poll_cq(h.a().rcq, c), 0u);
}

}  // namespace
}  // namespace uroce::transport::testing
