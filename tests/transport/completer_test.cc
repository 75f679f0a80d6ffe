/**
 * @file completer_test.cc
 * @brief Handler-level tests of the RC requester and completer (IBA Vol 1 §9.7.4, §9.7.5.2,
 * §9.7.6): the engine's requests are captured, hand-built ACK/NAK/read responses are fed
 * back. Comment grammar (eRPC): "Receive X (in-order|duplicate|future)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

class CompleterTest : public ::testing::Test {
 protected:
  EngineUnderTest t;
  PacketBuilder& pb = t.pb;
  /// Transmits and returns the PSNs of what went out.
  std::vector<uint32_t> sent_psns() {
    t.tx();
    std::vector<uint32_t> v;
    while (!t.sink.empty()) v.push_back(t.sink.pop().p.psn.value());
    return v;
  }
};

TEST_F(CompleterTest, SegmentationAndInOrderCompletion) {
  // Two 2 KiB WRITEs at MTU 1024: psn 500 FIRST, 501 LAST(AckReq), 502 FIRST, 503 LAST(AckReq).
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 2048));
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 2048));
  ASSERT_EQ(t.tx(), 4u);
  Captured f = t.sink.pop();
  EXPECT_EQ(f.p.opcode, Opcode::kRcRdmaWriteFirst);
  EXPECT_EQ(f.p.psn, Psn(500));
  EXPECT_EQ(f.p.reth.dma_len, 2048u);
  EXPECT_EQ(f.p.reth.rkey, 0xabcu);
  EXPECT_FALSE(f.p.ackreq);
  EXPECT_EQ(f.p.ecn, wire::kEcnEct0);
  EXPECT_EQ(f.p.dscp, 26);
  EXPECT_EQ(f.p.udp_dport, 4791);
  EXPECT_GE(f.p.udp_sport, 0xc000);
  Captured l = t.sink.pop();
  EXPECT_EQ(l.p.opcode, Opcode::kRcRdmaWriteLast);
  EXPECT_TRUE(l.p.ackreq);
  EXPECT_EQ(0, std::memcmp(l.p.payload.data(), t.mem() + 1024, 1024));
  t.sink.pop();
  t.sink.pop();
  // Receive ACK psn 501 (in-order)
  // Expect: WR 1 completes, WR 2 not yet
  t.rx(pb.ack(501));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].wr_id, 1u);
  EXPECT_EQ(q[0].opcode, WcOpcode::kRdmaWrite);
  // Receive ACK psn 501 again (duplicate): nothing. Then ACK 503: WR 2.
  t.rx(pb.ack(501));
  EXPECT_TRUE(t.cqes().empty());
  t.rx(pb.ack(503));
  q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].wr_id, 2u);
  // Nothing outstanding: no timer.
  EXPECT_TRUE(t.e->next_deadline().is_never());
}

TEST_F(CompleterTest, NakSequenceErrorGoesBackToTheNakedPsn) {
  ASSERT_TRUE(t.post_send(WrOpcode::kSend, 1, 0, 4096));  // psn 500..503
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501, 502, 503}));
  // Receive NAK PSN sequence error psn 502 (in-order)
  // Expect: 502 and 503 sent again, nothing else; no completion yet
  t.rx(pb.ack(502, 0x60));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{502, 503}));
  EXPECT_TRUE(t.cqes().empty());
  EXPECT_EQ(t.counters.get(Counter::packet_seq_err), 1u);
  EXPECT_EQ(t.counters.get(Counter::roce_adp_retrans), 2u);
  // Receive the same NAK again (duplicate)
  // Expect: no second go-back (the retry for 502 is already under way)
  t.rx(pb.ack(502, 0x60));
  EXPECT_TRUE(sent_psns().empty());
  t.rx(pb.ack(503));
  EXPECT_EQ(t.cqes().size(), 1u);
}

TEST_F(CompleterTest, ImpliedNakResendsTheRead) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 1024, 0x9000, 0x77));  // psn 500
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 4096, 100));             // psn 501
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501}));
  // Receive ACK psn 501 (future for the READ: its response was lost)
  // Expect: implied NAK: the READ request goes out again from psn 500, then the WRITE
  t.rx(pb.ack(501));
  t.tx();
  ASSERT_EQ(t.sink.size(), 2u);
  Captured r = t.sink.pop();
  EXPECT_EQ(r.p.opcode, Opcode::kRcRdmaReadRequest);
  EXPECT_EQ(r.p.psn, Psn(500));
  EXPECT_EQ(r.p.reth.va, 0x9000u);
  EXPECT_EQ(r.p.reth.dma_len, 1024u);
  t.sink.pop();
  EXPECT_EQ(t.counters.get(Counter::implied_nak_seq_err), 1u);
  EXPECT_TRUE(t.cqes().empty());
  // Receive READ_RESPONSE_ONLY psn 500 (in-order)
  // Expect: the READ completes with the data; the earlier ACK 501 completes the WRITE too
  std::vector<uint8_t> data(1024, 0x3c);
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, data));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].wr_id, 1u);
  EXPECT_EQ(q[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(q[0].byte_len, 1024u);
  EXPECT_EQ(q[1].wr_id, 2u);
  EXPECT_EQ(t.mem()[0], 0x3c);
  EXPECT_EQ(t.mem()[1023], 0x3c);
}

TEST_F(CompleterTest, LostMiddleReadResponseResumesTheRead) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 3072, 0x9000, 0x77));  // psn 500..502
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  std::vector<uint8_t> a(1024, 1), b(1024, 2), c(1024, 3);
  // Receive READ_RESPONSE_FIRST 500 (in-order), READ_RESPONSE_LAST 502 (future: 501 lost)
  // Expect: a new READ request psn 501 for the remaining 2048 bytes at va + 1024
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseFirst, 500, a));
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseLast, 502, c));
  t.tx();
  ASSERT_EQ(t.sink.size(), 1u);
  Captured r = t.sink.pop();
  EXPECT_EQ(r.p.psn, Psn(501));
  EXPECT_EQ(r.p.reth.va, 0x9000u + 1024);
  EXPECT_EQ(r.p.reth.dma_len, 2048u);
  // Receive the resumed stream: READ_RESPONSE_FIRST 501, LAST 502 (in-order)
  // Expect: the READ completes; all three KiB in place
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseFirst, 501, b));
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseLast, 502, c));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].status, WcStatus::kSuccess);
  EXPECT_EQ(t.mem()[0], 1);
  EXPECT_EQ(t.mem()[1024], 2);
  EXPECT_EQ(t.mem()[2048], 3);
}

TEST_F(CompleterTest, LocalAckTimeoutRetransmitsAtTheRightTime) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 10));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  // Expect: the timer is 4.096 us * 2^12 = 16.777216 ms after the send
  const Timestamp sent = t.now;
  EXPECT_EQ(t.e->next_deadline(), sent + Duration::nanos(4096LL << 12));
  t.now = t.e->next_deadline() - Duration::nanos(1);
  EXPECT_TRUE(sent_psns().empty());
  t.now = t.e->next_deadline();
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  EXPECT_EQ(t.counters.get(Counter::local_ack_timeout_err), 1u);
}

TEST_F(CompleterTest, RnrNakWaitsTheTimerThenResends) {
  ASSERT_TRUE(t.post_send(WrOpcode::kSend, 1, 0, 10));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  // Receive RNR NAK psn 500 timer code 14 (1.28 ms, IBA Table 45)
  // Expect: nothing before 1.28 ms, then the SEND again
  t.rx(pb.ack(500, 0x20 | 14));
  EXPECT_TRUE(sent_psns().empty());
  EXPECT_EQ(t.e->next_deadline(), t.now + Duration::micros(1280));
  t.now = t.now + Duration::micros(1279);
  EXPECT_TRUE(sent_psns().empty());
  t.now = t.now + Duration::micros(1);
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  EXPECT_EQ(t.counters.get(Counter::rnr_nak_retry_err), 1u);
}

TEST_F(CompleterTest, MaxRdAtomicLimitsOutstandingReads) {
  // max_rd_atomic 4: the fifth READ waits until one completes.
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, static_cast<uint64_t>(i), 0, 8, 0x9000, 1));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501, 502, 503}));
  std::vector<uint8_t> d(8, 1);
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, d));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{504}));
}

TEST_F(CompleterTest, FenceWaitsForEarlierReads) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 8, 0x9000, 1));
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 8, 0x9000, 1, kSendSignaled | kSendFence));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  std::vector<uint8_t> d(8, 1);
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, d));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{501}));
}

TEST_F(CompleterTest, UnresolvedNeighbourCountsAndRetriesLater) {
  t.neigh.known = false;
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 10));
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.counters.get(Counter::tx_no_neighbor), 1u);
  EXPECT_FALSE(t.e->next_deadline().is_never());
  t.neigh.known = true;
  t.now = t.e->next_deadline();
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
}

TEST_F(CompleterTest, SqdDrainsThenRaisesSqDrained) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 10));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500}));
  QpAttr a;
  a.qp_state = QpState::kSqd;
  a.en_sqd_async_notify = 1;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState | kAttrEnSqdAsyncNotify));
  // A WR posted in SQD is queued, not started.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 10));
  EXPECT_TRUE(sent_psns().empty());
  // Receive ACK psn 500 (in-order)
  // Expect: WR 1 completes, the SQ is drained: kSqDrained
  t.rx(pb.ack(500));
  EXPECT_TRUE(t.observer.saw(AsyncEventType::kSqDrained, t.qpn));
  EXPECT_EQ(t.cqes().size(), 1u);
  a.qp_state = QpState::kRts;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{501}));
}

TEST_F(CompleterTest, SendWithInvalidateCarriesIeth) {
  Sge sg{t.va(), 16, t.keys.lkey};
  SendWr w;
  w.opcode = WrOpcode::kSendWithInv;
  w.invalidate_rkey = 0x12345678;
  w.send_flags = kSendSignaled | kSendSolicited;
  w.sg = &sg;
  w.num_sge = 1;
  ASSERT_TRUE(t.e->post_send(t.qpn, w, t.now));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcSendOnlyWithInvalidate);
  EXPECT_EQ(c.p.ieth_rkey, 0x12345678u);
  EXPECT_TRUE(c.p.se);
}

TEST_F(CompleterTest, FatalNaksCompleteWithTheirStatus) {
  struct Case {
    uint8_t syndrome;
    WcStatus st;
  };
  for (Case k : {Case{0x61, WcStatus::kRemInvReqErr}, Case{0x62, WcStatus::kRemAccessErr},
                 Case{0x63, WcStatus::kRemOpErr}}) {
    EngineUnderTest u;
    ASSERT_TRUE(u.post_send(WrOpcode::kRdmaWrite, 1, 0, 10));
    ASSERT_TRUE(u.post_send(WrOpcode::kRdmaWrite, 2, 0, 10));
    u.tx();
    // Receive NAK psn 500 (in-order)
    // Expect: WR 1 with the NAK's status, WR 2 flushed, QP in ERR
    u.rx(u.pb.ack(500, k.syndrome));
    auto q = u.cqes();
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[0].status, k.st);
    EXPECT_EQ(q[1].status, WcStatus::kWrFlushErr);
    EXPECT_EQ(u.state(), QpState::kErr);
  }
}

/// Posts and sends `n` one-packet unsignaled WRITEs `gap` apart; returns the PSNs that asked
/// for an ACK.
std::vector<uint32_t> stream_unsignaled(EngineUnderTest& t, int n, Duration gap) {
  std::vector<uint32_t> asked;
  for (int i = 0; i < n; ++i) {
    if (i) t.now = t.now + gap;
    EXPECT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 10 + i, 0, 10, 0x1000, 0xabc, 0));
    EXPECT_EQ(t.tx(), 1u);
    Captured c = t.sink.pop();
    if (c.p.ackreq) asked.push_back(c.p.psn.value());
  }
  return asked;
}

std::vector<uint32_t> psns(uint32_t from, uint32_t to) {
  std::vector<uint32_t> v;
  for (uint32_t p = from; p < to; ++p) v.push_back(p);
  return v;
}

TEST_F(CompleterTest, UnsignaledStreamAsksForAnAckEvery16thPacket) {
  // 40 unsignaled WRITEs 100 ns apart: the first kAckReqInterval ask (not yet a stream), then
  // every kAckReqInterval-th; a signaled WRITE after them asks too.
  std::vector<uint32_t> want = psns(500, 516);
  want.push_back(531);
  EXPECT_EQ(stream_unsignaled(t, 40, Duration::nanos(100)), want);
  t.now = t.now + Duration::nanos(100);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 99, 0, 10));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_TRUE(t.sink.pop().p.ackreq);
  // Receive ACK 540 (covers all): only the signaled WR completes, the SQ is empty again.
  t.rx(pb.ack(540));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].wr_id, 99u);
  EXPECT_TRUE(t.e->next_deadline().is_never());
}

TEST_F(CompleterTest, SparseUnsignaledWritesAskEveryTime) {
  // 4 unsignaled WRITEs 10 us apart (more than kAckReqStreamGap): each asks, as a signaled one.
  EXPECT_EQ(stream_unsignaled(t, 4, Duration::micros(10)),
            (std::vector<uint32_t>{500, 501, 502, 503}));
}

TEST_F(CompleterTest, ShortUnsignaledBurstsAskOnTheirLastMessage) {
  // Three times, 1 ms apart: two unsignaled WRITEs posted together. Expect: the second of each
  // pair asks (the SQ runs empty after it, and two packets are no stream), the first does not.
  std::vector<uint32_t> asked;
  for (int round = 0; round < 3; ++round) {
    t.now = t.now + Duration::millis(1);
    ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 10, 0x1000, 0xabc, 0));
    ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 10, 0x1000, 0xabc, 0));
    ASSERT_EQ(t.tx(), 2u);
    while (!t.sink.empty()) {
      Captured c = t.sink.pop();
      if (c.p.ackreq) asked.push_back(c.p.psn.value());
    }
  }
  EXPECT_EQ(asked, (std::vector<uint32_t>{501, 503, 505}));
}

TEST_F(CompleterTest, AckProbeResendsTheLastUnaskedPacket) {
  // 20 unsignaled WRITEs 100 ns apart: 500-515 ask, 516-519 (a stream now) do not. No ACK for
  // them comes (a peer that ACKs only on AckReq). Expect: 200 us after 519 went out, 519 again
  // with AckReq; counted as a probe, not as a retransmission or an ACK timeout.
  EXPECT_EQ(stream_unsignaled(t, 20, Duration::nanos(100)), psns(500, 516));
  t.rx(pb.ack(515));
  const Timestamp last = t.now;
  EXPECT_EQ(t.e->next_deadline(), last + Duration::micros(200));
  t.now = last + Duration::micros(200) - Duration::nanos(1);
  EXPECT_EQ(t.tx(), 0u);
  t.now = last + Duration::micros(200);
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(519));
  EXPECT_EQ(c.p.opcode, Opcode::kRcRdmaWriteOnly);
  EXPECT_TRUE(c.p.ackreq);
  EXPECT_EQ(t.counters.get(Counter::req_ack_probes), 1u);
  EXPECT_EQ(t.counters.get(Counter::roce_adp_retrans), 0u);
  EXPECT_EQ(t.counters.get(Counter::local_ack_timeout_err), 0u);
  // Receive ACK 519: nothing outstanding, no timer left.
  t.rx(pb.ack(519));
  EXPECT_TRUE(t.e->next_deadline().is_never());
  EXPECT_TRUE(t.cqes().empty());  // all unsignaled
}

TEST_F(CompleterTest, AnAckBeforeTheProbeCancelsIt) {
  // The stream's delayed ACK (a uroce responder's) arrives first: no probe.
  EXPECT_EQ(stream_unsignaled(t, 20, Duration::nanos(100)), psns(500, 516));
  t.now = t.now + Duration::micros(20);
  t.rx(pb.ack(519));
  t.now = t.now + Duration::micros(300);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.counters.get(Counter::req_ack_probes), 0u);
  EXPECT_TRUE(t.e->next_deadline().is_never());
}

TEST_F(CompleterTest, ShortAckTimeoutAsksOnEveryMessage) {
  // timeout 7 = 524 us leaves no room for a 200 us probe before the ACK timer.
  // (RTS -> SQD -> SQD with the timeout -> RTS: IBA 11.2.5 allows it only in SQD.)
  QpAttr a;
  a.qp_state = QpState::kSqd;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState));
  a.timeout = 7;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState | kAttrTimeout));
  a.qp_state = QpState::kRts;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState));
  EXPECT_EQ(stream_unsignaled(t, 20, Duration::nanos(100)), psns(500, 520));
}

}  // namespace
}  // namespace uroce::transport::testing
