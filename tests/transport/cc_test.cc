/**
 * @file cc_test.cc
 * @brief The congestion-control seam and frame fields: CE marks -> notification point ->
 * CNP (Annex 17 §A17.9.3), CNP -> reaction point, the per-QP send-time gate and its deadline,
 * AckReq often enough for a paced sender's timer,
 * DSCP from the AV traffic class -> TxMeta priority, the receive gate's drop counters, and
 * round trips from peer timestamps (the TSETH echo and hold time).
 */
#include <gtest/gtest.h>

#include <vector>

#include "cc/congestion.h"
#include "cc/factory.h"
#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

class FakeQpCc final : public QpCongestion {
 public:
  Timestamp next_send_time(uint32_t, Timestamp now) const override {
    return gate > now ? gate : now;
  }
  void on_packet_sent(uint32_t bytes, Timestamp now) override {
    sent_bytes += bytes;
    if (pace.ns) gate = now + pace;  // a fixed rate: the next packet `pace` after this one
  }
  void on_cnp(Timestamp) override { ++cnps; }
  void on_rtt(Duration rtt, Timestamp) override { rtts.push_back(rtt); }
  void on_loss(Timestamp) override { ++losses; }
  Timestamp next_deadline() const override { return Timestamp::never(); }
  void on_timer(Timestamp) override {}
  uint64_t rate_bps() const override { return 0; }
  Timestamp gate{0};
  Duration pace{0};
  uint64_t sent_bytes = 0;
  int cnps = 0;
  int losses = 0;
  std::vector<Duration> rtts;
};

class AlwaysNp final : public NotificationPoint {
 public:
  bool on_ce_marked(uint32_t, Timestamp) override { return true; }
};

class FakeFactory final : public CongestionFactory {
 public:
  std::unique_ptr<QpCongestion> make_qp(uint32_t, uint64_t) override {
    auto p = std::make_unique<FakeQpCc>();
    last = p.get();
    return p;
  }
  std::unique_ptr<NotificationPoint> make_np() override { return std::make_unique<AlwaysNp>(); }
  FakeQpCc* last = nullptr;
};

TEST(Congestion, CeMarkedRequestMakesACnpToTheSourceQp) {
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  // Receive WRITE_ONLY psn 100 with ECN = CE (in-order)
  // Expect: the ACK and a CNP: opcode 0x81, BECN, DestQP = the peer's QPN, CNP DSCP 48
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, 100);
  s.reth = {t.va(), t.keys.rkey, 4};
  s.ecn = wire::kEcnCe;
  std::vector<uint8_t> pl(4, 1);
  t.rx(t.pb.build(s, pl));
  EXPECT_EQ(t.counters.get(Counter::np_ecn_marked_roce_packets), 1u);
  ASSERT_EQ(t.tx(), 2u);
  Captured ack = t.sink.pop();
  EXPECT_EQ(ack.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_TRUE(t.sink.front_meta().is_cnp);
  EXPECT_EQ(t.sink.front_meta().priority, 6);  // DSCP 48 -> class 6
  Captured cnp = t.sink.pop();
  EXPECT_EQ(cnp.p.opcode, Opcode::kCnp);
  EXPECT_TRUE(cnp.p.becn);
  EXPECT_EQ(cnp.p.dest_qpn, Qpn(EngineUnderTest::kPeerQpn));
  EXPECT_EQ(cnp.p.dscp, 48);
  EXPECT_EQ(cnp.p.dst_ip, Gid::from_ipv4(0xc6120001u));
  EXPECT_EQ(t.counters.get(Counter::np_cnp_sent), 1u);
}

TEST(Congestion, WithAVlanEveryFrameIsTaggedWithItsPriorityAsPcp) {
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f, /*vlan=*/5);
  // Receive a tagged (VID 5, PCP 3) CE-marked WRITE_ONLY psn 100
  // Expect: accepted; the ACK tagged VID 5 / PCP 3 (RoCE DSCP 26 -> priority 3) and the CNP
  // tagged VID 5 / PCP 6 (DSCP 48 -> priority 6), PCP = TxMeta::priority each.
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, 100);
  s.vlan = true;
  s.vid = 5;
  s.pcp = 3;
  s.reth = {t.va(), t.keys.rkey, 4};
  s.ecn = wire::kEcnCe;
  std::vector<uint8_t> pl(4, 7);
  t.rx(t.pb.build(s, pl));
  EXPECT_EQ(t.mem()[0], 7);
  ASSERT_EQ(t.tx(), 2u);
  EXPECT_EQ(t.sink.front_meta().priority, 3);
  Captured ack = t.sink.pop();
  EXPECT_EQ(ack.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_TRUE(ack.p.has_vlan);
  EXPECT_EQ(ack.p.vid, 5);
  EXPECT_EQ(ack.p.pcp, 3);
  EXPECT_EQ(t.sink.front_meta().priority, 6);
  Captured cnp = t.sink.pop();
  EXPECT_EQ(cnp.p.opcode, Opcode::kCnp);
  EXPECT_TRUE(cnp.p.has_vlan);
  EXPECT_EQ(cnp.p.vid, 5);
  EXPECT_EQ(cnp.p.pcp, 6);
  // A SEND from the engine: tagged with the RoCE priority.
  ASSERT_TRUE(t.post_send(WrOpcode::kSend, 1, 0, 64));
  ASSERT_EQ(t.tx(), 1u);
  Captured send = t.sink.pop();
  EXPECT_EQ(send.p.opcode, Opcode::kRcSendOnly);
  EXPECT_TRUE(send.p.has_vlan);
  EXPECT_EQ(send.p.vid, 5);
  EXPECT_EQ(send.p.pcp, 3);
  // Without a VLAN nothing is tagged.
  EngineUnderTest u(QpType::kRc, &f);
  u.rx(u.pb.build(s, pl));
  ASSERT_EQ(u.tx(), 2u);
  EXPECT_FALSE(u.sink.pop().p.has_vlan);
  EXPECT_FALSE(u.sink.pop().p.has_vlan);
}

/// CNPs among the frames the engine sent since the last call (the rest are dropped).
int pop_cnps(EngineUnderTest& t) {
  t.tx();
  int n = 0;
  while (!t.sink.empty()) n += t.sink.pop().p.opcode == Opcode::kCnp;
  return n;
}

TEST(Congestion, CeInsideTheIntervalSendsOneCoalescedCnpWhenItEnds) {
  // docs/dcqcn-pfc.md §1.3: a CE packet sends a CNP at once if none went out in the last
  // min_time_between_cnps (N = 50 us here); later CEs inside N are coalesced into one CNP
  // sent when N ends, and nothing more after.
  dcqcn::DcqcnParams p;
  p.min_time_between_cnps = 50;
  cc::Factory f(p);
  EngineUnderTest t(QpType::kRc, &f);
  const Timestamp t0 = t.now;
  auto ce_write = [&](uint32_t psn) {
    wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, psn);
    s.reth = {t.va(), t.keys.rkey, 4};
    s.ecn = wire::kEcnCe;
    std::vector<uint8_t> pl(4, 1);
    t.rx(t.pb.build(s, pl));
  };
  ce_write(100);
  EXPECT_EQ(pop_cnps(t), 1);
  t.now = t0 + Duration::micros(10);
  ce_write(101);
  EXPECT_EQ(pop_cnps(t), 0);
  t.now = t0 + Duration::micros(20);
  ce_write(102);
  EXPECT_EQ(pop_cnps(t), 0);
  // The engine asks to be woken when the coalesced CNP is due, and not later.
  EXPECT_LE(t.e->next_deadline(), t0 + Duration::micros(50));
  t.now = t0 + Duration::micros(49);
  EXPECT_EQ(pop_cnps(t), 0);
  t.now = t0 + Duration::micros(50);
  EXPECT_EQ(pop_cnps(t), 1);
  t.now = t0 + Duration::micros(500);
  EXPECT_EQ(pop_cnps(t), 0);
  EXPECT_EQ(t.counters.get(Counter::np_ecn_marked_roce_packets), 3u);
  EXPECT_EQ(t.counters.get(Counter::np_cnp_sent), 2u);
}

TEST(Congestion, CnpReachesTheReactionPoint) {
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  FakeQpCc* cc = f.last;
  wire::FrameSpec s = t.pb.spec(Opcode::kCnp, 0, false);
  s.becn = true;
  t.rx(t.pb.build(s));
  EXPECT_EQ(cc->cnps, 1);
  EXPECT_EQ(t.counters.get(Counter::rp_cnp_handled), 1u);
  s.dest_qpn = Qpn(0xabcdef);
  t.rx(t.pb.build(s));
  EXPECT_EQ(t.counters.get(Counter::rp_cnp_ignored), 1u);
}

TEST(Congestion, SendTimeGateHoldsRequestsNotAcks) {
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  FakeQpCc* cc = f.last;
  cc->gate = t.now + Duration::micros(10);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 100));
  // Receive a request meanwhile: its ACK is not gated.
  std::vector<uint8_t> pl(4, 1);
  t.rx(t.pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 4, pl));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(t.e->next_deadline(), cc->gate);
  t.now = cc->gate;
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcRdmaWriteOnly);
  EXPECT_EQ(cc->sent_bytes, c.bytes.size());
}

TEST(Congestion, APacedSenderRequestsAcksWithinAQuarterOfItsTimeout) {
  // A 32-packet WRITE paced at one packet per 2 ms (a sender DCQCN holds near rpg_min_rate):
  // AckReq every 16 packets alone would leave 30 ms between ACKs, more than the 16.8 ms local
  // ACK timeout (timeout 12). Expect: AckReq at least every timeout / 4 (4.2 ms) plus one
  // pacing step, so ACKs come back inside the timer; unpaced, only every 16th and the last.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  FakeQpCc* cc = f.last;
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 32 * 1024));
  const Duration step = Duration::millis(2);
  cc->pace = step;
  Timestamp last_req = t.now;
  int reqs = 0;
  for (int i = 0; i < 32; ++i) {
    ASSERT_EQ(t.tx(), 1u) << "packet " << i;
    Captured c = t.sink.pop();
    if (c.p.ackreq) {
      EXPECT_LE((t.now - last_req).ns, Duration::micros(4200).ns + step.ns) << "packet " << i;
      last_req = t.now;
      ++reqs;
    }
    t.now = t.now + step;
  }
  EXPECT_GE(reqs, 10);
  EngineUnderTest u(QpType::kRc, &f);
  ASSERT_TRUE(u.post_send(WrOpcode::kRdmaWrite, 1, 0, 32 * 1024));
  ASSERT_EQ(u.tx(), 32u);
  std::vector<int> with_req;
  for (int i = 0; i < 32; ++i)
    if (u.sink.pop().p.ackreq) with_req.push_back(i);
  EXPECT_EQ(with_req, (std::vector<int>{15, 31}));
}

TEST(Congestion, ReadRequesterIsTheNotificationPointForReadResponses) {
  // READ data flows from the responder to the requester, so the requester sees the CE marks
  // and must send the CNP (docs/dcqcn-pfc.md §1.3: for RDMA READ the requester is the NP).
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 512, 0x9000, 0x77));  // psn 500
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  // Receive READ_RESPONSE_ONLY psn 500 with ECN = CE
  // Expect: the READ completes, and a CNP goes to the responder's QP
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaReadResponseOnly, 500, false);
  s.aeth.syndrome = 0x1f;
  s.ecn = wire::kEcnCe;
  std::vector<uint8_t> data(512, 0x3c);
  t.rx(t.pb.build(s, data));
  ASSERT_EQ(t.cqes().size(), 1u);
  ASSERT_EQ(t.tx(), 1u);
  Captured cnp = t.sink.pop();
  EXPECT_EQ(cnp.p.opcode, Opcode::kCnp);
  EXPECT_EQ(cnp.p.dest_qpn, Qpn(EngineUnderTest::kPeerQpn));
  EXPECT_EQ(t.counters.get(Counter::np_cnp_sent), 1u);
  QpTraffic q;
  ASSERT_TRUE(t.e->qp_traffic(t.qpn, &q));
  EXPECT_EQ(q.np_ecn_marked, 1u);
  EXPECT_EQ(q.np_cnp_sent, 1u);
}

TEST(Congestion, CnpsBypassAClosedSendTimeGate) {
  // The rate limiter holds the QP's requests, never its CNPs (they ride the CNP class).
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  f.last->gate = t.now + Duration::millis(1);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 100));
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, 100);
  s.reth = {t.va(), t.keys.rkey, 4};
  s.ecn = wire::kEcnCe;
  std::vector<uint8_t> pl(4, 1);
  t.rx(t.pb.build(s, pl));
  // Expect: the ACK and the CNP now; the WRITE waits for the gate
  ASSERT_EQ(t.tx(), 2u);
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kCnp);
  EXPECT_EQ(t.tx(), 0u);
  t.now = f.last->gate;
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kRcRdmaWriteOnly);
}

/// Frames one poll_transmit sends of a 16 KiB WRITE (16 packets at MTU 1024) at line rate,
/// with the DCQCN pacer's bucket `burst` bytes deep.
size_t frames_in_one_poll(uint64_t burst) {
  cc::Factory f(dcqcn::nvidia_firmware_preset(), burst);
  EngineUnderTest t(QpType::kRc, &f);
  EXPECT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 16384));
  return t.tx();
}

TEST(Congestion, PacerBucketLetsOneMessageLeaveInOnePoll) {
  // Depth 0 spaces every frame at the rate: one frame per call at the same instant, so each
  // frame costs a whole progress round. 64 KiB (config::Dcqcn's default max_burst_bytes) lets the
  // message go at once; the rate still holds over time (lib/dcqcn pacer tests).
  EXPECT_EQ(frames_in_one_poll(0), 1u);
  EXPECT_EQ(frames_in_one_poll(65536), 16u);
  EXPECT_LT(frames_in_one_poll(4096), 16u);
}

TEST(Frames, TrafficClassSetsDscpAndPriority) {
  EngineUnderTest t;
  QpAttr a;
  a.qp_state = QpState::kSqd;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState));
  a.av.dgid = Gid::from_ipv4(0xc6120001u);
  a.av.traffic_class = 34 << 2;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrAv));
  a.qp_state = QpState::kRts;
  ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrState));
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 10));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.front_meta().priority, 4);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.dscp, 34);
  EXPECT_EQ(c.p.ecn, wire::kEcnEct0);
  EXPECT_EQ(c.p.src_mac, (MacAddr{{0x02, 0, 0, 0, 0, 0x02}}));
  EXPECT_EQ(c.p.dst_mac, t.neigh.peer);
}

TEST(Gate, DropsAreCountedByReason) {
  EngineUnderTest t;
  std::vector<uint8_t> pl(4, 1);
  // Unknown QPN.
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, 100);
  s.dest_qpn = Qpn(0x777777);
  t.rx(t.pb.build(s, pl));
  EXPECT_EQ(t.counters.get(Counter::rx_unknown_qp), 1u);
  // Bad ICRC.
  auto f = t.pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 4, pl);
  f[f.size() - 6] ^= 1;
  t.rx(f);
  EXPECT_EQ(t.counters.get(Counter::rx_icrc_encapsulated), 1u);
  // UC opcode to an RC QP.
  t.rx(t.pb.build(t.pb.spec(Opcode::kUcSendOnly, 100), pl));
  EXPECT_EQ(t.counters.get(Counter::rx_bad_qp_state), 1u);
  // Wrong partition.
  s = t.pb.spec(Opcode::kRcSendOnly, 100);
  s.pkey = 0x1234;
  t.rx(t.pb.build(s, pl));
  EXPECT_EQ(t.counters.get(Counter::rx_pkey_violation), 1u);
  // Not RoCE: a short frame.
  std::vector<uint8_t> junk(10, 0);
  t.rx(junk);
  EXPECT_GE(t.counters.get(Counter::rx_malformed), 1u);
  // None of them reached the responder.
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.counters.get(Counter::rx_vport_rdma_unicast_packets), 3u);
}

TEST(Congestion, RoundTripOfAFirstTransmissionGoesToTheQp) {
  // The requester times one packet that asks for an ACK and hands the round trip to the QP's
  // congestion control when the ACK covers it; one sample per ACK.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 1024));
  ASSERT_EQ(t.tx(), 1u);
  t.now = t.now + Duration::micros(7);
  t.rx(t.pb.ack(EngineUnderTest::kSqPsn));
  ASSERT_EQ(f.last->rtts.size(), 1u);
  EXPECT_EQ(f.last->rtts[0], Duration::micros(7));
  // A second message: a new sample, the first not repeated.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 1024));
  ASSERT_EQ(t.tx(), 1u);
  t.now = t.now + Duration::micros(3);
  t.rx(t.pb.ack(EngineUnderTest::kSqPsn + 1));
  ASSERT_EQ(f.last->rtts.size(), 2u);
  EXPECT_EQ(f.last->rtts[1], Duration::micros(3));
}

TEST(Congestion, NoRoundTripFromAResentPacket) {
  // Karn's rule: once the timed packet went again, its ACK may answer either copy.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 1024));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  // A sequence NAK for it: resent.
  t.now = t.now + Duration::micros(5);
  t.rx(t.pb.ack(EngineUnderTest::kSqPsn, wire::kAethTypeNak | wire::kAethNakPsnSeqError));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(EngineUnderTest::kSqPsn));
  t.now = t.now + Duration::micros(5);
  t.rx(t.pb.ack(EngineUnderTest::kSqPsn));
  EXPECT_TRUE(f.last->rtts.empty());
  EXPECT_EQ(t.cqes().size(), 1u);
}

TEST(Congestion, ReadResponsesPassTheSendTimeGate) {
  // The responder is a READ's data sender: its QP's rate (lowered by the CNPs its responses
  // draw) spaces the responses as it spaces requests, and they count as sent data.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  FakeQpCc* cc = f.last;
  cc->pace = Duration::micros(10);
  t.rx(t.pb.read(100, t.va(), t.keys.rkey, 3 * 1024));
  const Opcode want[] = {Opcode::kRcRdmaReadResponseFirst, Opcode::kRcRdmaReadResponseMiddle,
                         Opcode::kRcRdmaReadResponseLast};
  uint64_t bytes = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(t.tx(), 1u) << "response " << i;
    Captured c = t.sink.pop();
    EXPECT_EQ(c.p.opcode, want[i]);
    bytes += c.bytes.size();
    EXPECT_EQ(cc->sent_bytes, bytes);
    if (i < 2) {
      // Expect: nothing more until the gate opens, and the engine's deadline says when.
      EXPECT_EQ(t.tx(), 0u);
      EXPECT_EQ(t.e->next_deadline(), cc->gate);
      t.now = cc->gate;
    }
  }
}

TEST(Congestion, ARoundTripThatTimedAReadIsNotTheQpsRate) {
  // A READ's round trip ends with its first response, which crossed the path back: it says
  // nothing about the queues this QP's requests cross, so the QP's rate does not get it.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 1024, 0x9000, 0x77));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  t.now = t.now + Duration::micros(7);
  std::vector<uint8_t> data(1024, 0x3c);
  t.rx(t.pb.read_response(Opcode::kRcRdmaReadResponseOnly, EngineUnderTest::kSqPsn, data));
  ASSERT_EQ(t.cqes().size(), 1u);
  EXPECT_TRUE(f.last->rtts.empty());
  // A WRITE after it is timed as before.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 1024));
  ASSERT_EQ(t.tx(), 1u);
  t.now = t.now + Duration::micros(3);
  t.rx(t.pb.ack(EngineUnderTest::kSqPsn + 1));
  ASSERT_EQ(f.last->rtts.size(), 1u);
  EXPECT_EQ(f.last->rtts[0], Duration::micros(3));
}

TEST(Congestion, AReadResponseLostOnTheWayBackIsNotTheQpsLoss) {
  // A hole in a READ's responses: its request arrived, the loss is on the path back. The
  // rest is asked again; the QP's congestion control hears of no loss. A sequence NAK (the
  // peer missed one of this side's packets) is this side's loss.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 3 * 1024, 0x9000, 0x77));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  std::vector<uint8_t> data(1024, 0x3c);
  t.rx(t.pb.read_response(Opcode::kRcRdmaReadResponseFirst, EngineUnderTest::kSqPsn, data));
  t.rx(t.pb.read_response(Opcode::kRcRdmaReadResponseLast, EngineUnderTest::kSqPsn + 2, data));
  ASSERT_EQ(t.tx(), 1u);
  Captured again = t.sink.pop();
  EXPECT_EQ(again.p.opcode, Opcode::kRcRdmaReadRequest);
  EXPECT_EQ(again.p.psn, Psn(EngineUnderTest::kSqPsn + 1));
  EXPECT_EQ(f.last->losses, 0);

  EngineUnderTest u(QpType::kRc, &f);
  ASSERT_TRUE(u.post_send(WrOpcode::kRdmaWrite, 1, 0, 1024));
  ASSERT_EQ(u.tx(), 1u);
  u.rx(u.pb.ack(EngineUnderTest::kSqPsn, wire::kAethTypeNak | wire::kAethNakPsnSeqError));
  EXPECT_EQ(f.last->losses, 1);
}

// ---- Peer timestamps (uroce's extension, wire/ts_ext.h) ----

/// An ACK of psn with a TSETH echoing stamp, held `hold` at the responder.
std::vector<uint8_t> stamped_ack(const EngineUnderTest& t, uint32_t psn, uint32_t stamp,
                                 Duration hold) {
  wire::FrameSpec s = t.pb.spec(Opcode::kRcAcknowledge, psn, false);
  s.aeth.syndrome = 0x1f;
  s.has_tseth = true;
  s.tseth = {stamp, static_cast<uint32_t>(hold.ns)};
  return t.pb.build(s);
}

TEST(PeerTimestamps, TheRoundTripLeavesOutTheResponderHoldTime) {
  // The request asking for an ACK carries the clock; the ACK echoes it with the time the
  // responder held it; the QP's control gets the rest, the fabric's round trip, and no sample
  // of the requester's own timing beside it.
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f, std::nullopt, LossRecovery::kGoBackN, 0, true);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 1000));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  ASSERT_TRUE(c.p.ackreq);
  ASSERT_TRUE(c.p.has_tseth);
  EXPECT_EQ(c.p.tseth.stamp, static_cast<uint32_t>(t.now.ns));
  t.now = t.now + Duration::micros(10);
  t.rx(stamped_ack(t, EngineUnderTest::kSqPsn, c.p.tseth.stamp, Duration::micros(4)));
  ASSERT_EQ(f.last->rtts.size(), 1u);
  EXPECT_EQ(f.last->rtts[0], Duration::micros(6));
  EXPECT_EQ(t.counters.get(Counter::ts_samples), 1u);
  EXPECT_EQ(t.cqes().size(), 1u);
}

TEST(PeerTimestamps, AnEchoFromTheFutureOrLongerThanItsHoldIsIgnored) {
  FakeFactory f;
  EngineUnderTest t(QpType::kRc, &f, std::nullopt, LossRecovery::kGoBackN, 0, true);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 1000));
  ASSERT_EQ(t.tx(), 1u);
  const uint32_t stamp = t.sink.pop().p.tseth.stamp;
  t.now = t.now + Duration::micros(10);
  // Forged: a stamp 1 µs ahead of the clock, then a hold longer than the round trip.
  t.rx(stamped_ack(t, EngineUnderTest::kSqPsn - 1, stamp + 11'000, Duration{}));
  t.rx(stamped_ack(t, EngineUnderTest::kSqPsn - 1, stamp, Duration::micros(10)));
  EXPECT_TRUE(f.last->rtts.empty());
  EXPECT_EQ(t.counters.get(Counter::ts_samples), 0u);
}

TEST(PeerTimestamps, TheResponderEchoesEachStampOnceWithItsHoldTime) {
  EngineUnderTest t(QpType::kRc, nullptr, std::nullopt, LossRecovery::kGoBackN, 0, true);
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, EngineUnderTest::kRqPsn, true);
  s.reth = {t.va(), t.keys.rkey, 8};
  s.has_tseth = true;
  s.tseth.stamp = 0xabcdef01;
  std::vector<uint8_t> pl(8, 7);
  t.rx(t.pb.build(s, pl));
  t.now = t.now + Duration::micros(3);
  ASSERT_EQ(t.tx(), 1u);
  Captured ack = t.sink.pop();
  EXPECT_EQ(ack.p.opcode, Opcode::kRcAcknowledge);
  ASSERT_TRUE(ack.p.has_tseth);
  EXPECT_EQ(ack.p.tseth, (wire::TsethValue{0xabcdef01, 3000}));
  // The same packet again (a duplicate, no TSETH this time): its ACK echoes nothing.
  s.has_tseth = false;
  t.rx(t.pb.build(s, pl));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_FALSE(t.sink.pop().p.has_tseth);
}

TEST(PeerTimestamps, AFrameWithATsethForAQpWithoutThemIsDropped) {
  EngineUnderTest t;
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, EngineUnderTest::kRqPsn, true);
  s.reth = {t.va(), t.keys.rkey, 8};
  s.has_tseth = true;
  std::vector<uint8_t> pl(8, static_cast<uint8_t>(~t.mem()[0]));
  const std::vector<uint8_t> before(t.mem(), t.mem() + 8);
  t.rx(t.pb.build(s, pl));
  EXPECT_EQ(t.counters.get(Counter::ts_unnegotiated), 1u);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(std::vector<uint8_t>(t.mem(), t.mem() + 8), before);  // nothing placed
  EXPECT_TRUE(t.canaries_intact());
}

TEST(PeerTimestamps, AFullPathMtuPacketWithAnSrethCarriesNone) {
  // The TSETH rides only where the frame stays within what roce_path_mtu() keeps room for:
  // a 1024-byte WRITE ONLY with an SRETH has no room left for it, a shorter one has.
  EngineUnderTest t(QpType::kRc, nullptr, std::nullopt, LossRecovery::kSelective, 0, true);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 1024));
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 1000));
  ASSERT_EQ(t.tx(), 2u);
  Captured full = t.sink.pop();
  Captured shorter = t.sink.pop();
  EXPECT_TRUE(full.p.ackreq && shorter.p.ackreq);
  EXPECT_FALSE(full.p.has_tseth);
  EXPECT_TRUE(shorter.p.has_tseth);
}

}  // namespace
}  // namespace uroce::transport::testing
