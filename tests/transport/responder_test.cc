/**
 * @file responder_test.cc
 * @brief Handler-level tests of the RC responder (IBA Vol 1 §9.7.5.1): hand-built request
 * frames go through Engine::on_frame, the engine's output is captured and re-parsed.
 * Comment grammar (eRPC): "Receive X (in-order|duplicate|future)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

constexpr uint8_t kAck = 0x1f;
std::vector<uint8_t> bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

class ResponderTest : public ::testing::Test {
 protected:
  EngineUnderTest t;
  PacketBuilder& pb = t.pb;
};

TEST_F(ResponderTest, WriteOnlyThenDuplicateIsAckedNotReExecuted) {
  // Receive WRITE_ONLY psn 100, 512 bytes of 0x11 at offset 0 (in-order)
  // Expect: memory written, ACK psn 100 with MSN 1
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 512, bytes(512, 0x11)));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(c.p.psn, Psn(100));
  EXPECT_EQ(c.p.aeth.syndrome, kAck);
  EXPECT_EQ(c.p.aeth.msn, Msn(1));
  EXPECT_EQ(c.p.dest_qpn, Qpn(EngineUnderTest::kPeerQpn));
  EXPECT_EQ(t.mem()[0], 0x11);
  EXPECT_EQ(t.mem()[511], 0x11);
  // The application overwrites the target; the same packet arrives again.
  std::memset(t.mem(), 0x22, 512);
  // Receive WRITE_ONLY psn 100 (duplicate)
  // Expect: ACK psn 100 again (IBA 9.7.5.1.1), the write is not re-executed
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 512, bytes(512, 0x11)));
  ASSERT_EQ(t.tx(), 1u);
  c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(100));
  EXPECT_EQ(c.p.aeth.msn, Msn(1));
  EXPECT_EQ(t.mem()[0], 0x22);
  EXPECT_EQ(t.counters.get(Counter::duplicate_request), 1u);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(ResponderTest, FuturePsnNaksOncePerEpisode) {
  // Receive WRITE_ONLY psn 102 (future: 100 and 101 lost)
  // Expect: NAK PSN sequence error carrying the expected PSN 100
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 102, t.va(), t.keys.rkey, 4, bytes(4, 1)));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(100));
  EXPECT_EQ(c.p.aeth.syndrome, 0x60);  // NAK, code 0
  // Receive WRITE_ONLY psn 103 (future)
  // Expect: nothing: one NAK per episode (IBA 9.7.5.1.2)
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 103, t.va(), t.keys.rkey, 4, bytes(4, 1)));
  EXPECT_EQ(t.tx(), 0u);
  // Receive psn 100 (in-order), then psn 102 (future again: 101 lost)
  // Expect: ACK 100 then a new NAK for 101
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 4, bytes(4, 1)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(100));
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 102, t.va(), t.keys.rkey, 4, bytes(4, 1)));
  ASSERT_EQ(t.tx(), 1u);
  c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(101));
  EXPECT_EQ(c.p.aeth.syndrome, 0x60);
  EXPECT_EQ(t.counters.get(Counter::out_of_sequence), 3u);
}

TEST_F(ResponderTest, SendWithoutReceiveIsRnrNakedThenAccepted) {
  // Receive SEND_ONLY psn 100 with no receive WQE (in-order)
  // Expect: RNR NAK psn 100 with the QP's min_rnr_timer (5), counter out_of_buffer
  t.rx(pb.build(pb.spec(Opcode::kRcSendOnly, 100), bytes(100, 7)));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(100));
  EXPECT_EQ(c.p.aeth.syndrome, 0x20 | 5);
  EXPECT_EQ(t.counters.get(Counter::out_of_buffer), 1u);
  t.post_recv(42, 8192, 256);
  // Receive SEND_ONLY psn 100 again (in-order: the ePSN did not move)
  // Expect: ACK psn 100 and a receive completion of 100 bytes
  t.rx(pb.build(pb.spec(Opcode::kRcSendOnly, 100), bytes(100, 7)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.aeth.syndrome, kAck);
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].wr_id, 42u);
  EXPECT_EQ(q[0].byte_len, 100u);
  EXPECT_EQ(q[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(t.mem()[8192], 7);
}

TEST_F(ResponderTest, MultiPacketSendWithImmediate) {
  t.post_recv(1, 0, 4096);
  // Receive SEND_FIRST psn 100 (1024 B), SEND_MIDDLE 101, SEND_LAST_WITH_IMMEDIATE 102 (10 B)
  // Expect: one completion of 2058 bytes with the immediate in network order; one ACK (102)
  t.rx(pb.build(pb.spec(Opcode::kRcSendFirst, 100, false), bytes(1024, 1)));
  t.rx(pb.build(pb.spec(Opcode::kRcSendMiddle, 101, false), bytes(1024, 2)));
  wire::FrameSpec s = pb.spec(Opcode::kRcSendLastWithImmediate, 102);
  s.imm = 0x11223344;
  t.rx(pb.build(s, bytes(10, 3)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(102));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].byte_len, 2058u);
  EXPECT_TRUE(q[0].wc_flags & kWcWithImm);
  const uint8_t* imm = reinterpret_cast<const uint8_t*>(&q[0].imm_data);
  EXPECT_EQ(imm[0], 0x11);  // network order in memory, as ibv_wc.imm_data
  EXPECT_EQ(imm[3], 0x44);
  EXPECT_EQ(t.mem()[0], 1);
  EXPECT_EQ(t.mem()[1024], 2);
  EXPECT_EQ(t.mem()[2057], 3);
}

TEST_F(ResponderTest, DuplicateReadIsReReadFromMemory) {
  // Receive READ psn 100, 2048 bytes (in-order)
  // Expect: READ_RESPONSE_FIRST psn 100 and _LAST psn 101 with the memory's bytes
  t.rx(pb.read(100, t.va(1000), t.keys.rkey, 2048));
  ASSERT_EQ(t.tx(), 2u);
  Captured f = t.sink.pop(), l = t.sink.pop();
  EXPECT_EQ(f.p.opcode, Opcode::kRcRdmaReadResponseFirst);
  EXPECT_EQ(f.p.psn, Psn(100));
  EXPECT_EQ(l.p.opcode, Opcode::kRcRdmaReadResponseLast);
  EXPECT_EQ(l.p.psn, Psn(101));
  EXPECT_EQ(0, std::memcmp(f.p.payload.data(), t.mem() + 1000, 1024));
  EXPECT_EQ(0, std::memcmp(l.p.payload.data(), t.mem() + 2024, 1024));
  // The memory changes, then the whole READ arrives again.
  std::memset(t.mem() + 1000, 0x5c, 2048);
  // Receive READ psn 100 (duplicate)
  // Expect: the responses again, re-read: they carry the new bytes (IBA 9.7.5.1.1)
  t.rx(pb.read(100, t.va(1000), t.keys.rkey, 2048));
  ASSERT_EQ(t.tx(), 2u);
  EXPECT_EQ(t.sink.pop().p.payload[0], 0x5c);
  EXPECT_EQ(t.sink.pop().p.payload[1023], 0x5c);
  // Receive READ psn 101 for the second half only (duplicate: a resumed READ)
  // Expect: READ_RESPONSE_ONLY psn 101 with 1024 bytes
  t.rx(pb.read(101, t.va(2024), t.keys.rkey, 1024));
  ASSERT_EQ(t.tx(), 1u);
  Captured o = t.sink.pop();
  EXPECT_EQ(o.p.opcode, Opcode::kRcRdmaReadResponseOnly);
  EXPECT_EQ(o.p.psn, Psn(101));
  EXPECT_EQ(o.p.payload.size(), 1024u);
  // Receive WRITE_ONLY psn 102 (in-order: the READ took two PSNs)
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 102, t.va(), t.keys.rkey, 1, bytes(1, 9)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(102));
}

TEST_F(ResponderTest, DuplicateAtomicIsAnsweredFromReplayCache) {
  uint64_t* target = reinterpret_cast<uint64_t*>(t.mem() + 64);
  *target = 40;
  // Receive FETCH_ADD psn 100 add 2 (in-order)
  // Expect: ATOMIC_ACKNOWLEDGE psn 100 orig 40; memory 42
  t.rx(pb.atomic(Opcode::kRcFetchAdd, 100, t.va(64), t.keys.rkey, 2));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAtomicAcknowledge);
  EXPECT_EQ(c.p.atomic_ack_orig, 40u);
  EXPECT_EQ(*target, 42u);
  // Receive the same FETCH_ADD psn 100 (duplicate)
  // Expect: the cached answer 40 again; memory still 42 (IBA 9.4.5, not re-executed)
  t.rx(pb.atomic(Opcode::kRcFetchAdd, 100, t.va(64), t.keys.rkey, 2));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.atomic_ack_orig, 40u);
  EXPECT_EQ(*target, 42u);
  // Receive CMP_SWAP psn 101 compare 42 swap 7 (in-order)
  // Expect: orig 42, memory 7
  t.rx(pb.atomic(Opcode::kRcCompareSwap, 101, t.va(64), t.keys.rkey, 7, 42));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.atomic_ack_orig, 42u);
  EXPECT_EQ(*target, 7u);
}

TEST_F(ResponderTest, AcksCoalesce) {
  // Receive ten WRITE_ONLY psn 100..109 with AckReq (in-order) before the engine transmits
  // Expect: one ACK, psn 109, MSN 10
  for (uint32_t i = 0; i < 10; ++i)
    t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100 + i, t.va(), t.keys.rkey, 8, bytes(8, 1)));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(109));
  EXPECT_EQ(c.p.aeth.msn, Msn(10));
}

TEST_F(ResponderTest, RemoteAccessErrorNaksAndLeavesMemory) {
  std::vector<uint8_t> before = t.backing;
  // Receive WRITE_FIRST psn 100 whose RETH runs past the region (in-order)
  // Expect: NAK remote access error (code 2), nothing written, QP in ERR, kQpAccessErr
  t.rx(pb.write(Opcode::kRcRdmaWriteFirst, 100, t.va(EngineUnderTest::kRegion - 1024), t.keys.rkey,
                4096, bytes(1024, 0xee)));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.aeth.syndrome, 0x60 | 2);
  EXPECT_EQ(c.p.psn, Psn(100));
  EXPECT_EQ(before, t.backing);
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_TRUE(t.observer.saw(AsyncEventType::kQpAccessErr, t.qpn));
  // Receive anything afterwards
  // Expect: dropped (QP in ERR)
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 101, t.va(), t.keys.rkey, 4, bytes(4, 0xee)));
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(before, t.backing);
}

TEST_F(ResponderTest, RkeyOfAnotherPdIsRemoteAccessErrorAndTouchesNothing) {
  // A region with every right in a second PD: its rkey is valid, but not for this QP's PD.
  std::vector<uint8_t> other(4096, 0x5a);
  uint32_t pd2 = t.e->alloc_pd().value();
  MrKeys k2 = t.e->reg_mr(pd2, reinterpret_cast<uint64_t>(other.data()), other.size(), 0xf).value();
  std::vector<uint8_t> before = t.backing;
  // Receive WRITE_ONLY psn 100 with the other PD's rkey and address (in-order)
  // Expect: NAK remote access error, neither region written
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, reinterpret_cast<uint64_t>(other.data()), k2.rkey,
                64, bytes(64, 0xee)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.aeth.syndrome, 0x60 | 2);
  EXPECT_EQ(other, std::vector<uint8_t>(4096, 0x5a));
  EXPECT_EQ(before, t.backing);
  EXPECT_EQ(t.counters.get(Counter::resp_remote_access_errors), 1u);
}

TEST_F(ResponderTest, ReadPastTheRegionsEndIsRemoteAccessErrorAndReturnsNoData) {
  // Receive READ_REQUEST psn 100 for the region's last 512 bytes plus one (in-order)
  // Expect: one NAK remote access error and no READ response carrying memory
  t.rx(pb.read(100, t.va(EngineUnderTest::kRegion - 512), t.keys.rkey, 513));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(c.p.aeth.syndrome, 0x60 | 2);
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(ResponderTest, MiddleWithoutFirstIsInvalidRequest) {
  // Receive WRITE_MIDDLE psn 100 with no WRITE in progress (in-order)
  // Expect: NAK invalid request (code 1), QP in ERR, kQpReqErr
  t.rx(pb.build(pb.spec(Opcode::kRcRdmaWriteMiddle, 100), bytes(1024, 1)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.aeth.syndrome, 0x60 | 1);
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_TRUE(t.observer.saw(AsyncEventType::kQpReqErr, t.qpn));
}

TEST_F(ResponderTest, WrongPayloadLengthIsInvalidRequest) {
  // Receive WRITE_FIRST psn 100 with 1000 bytes (not one MTU) (in-order)
  // Expect: NAK invalid request
  t.rx(pb.write(Opcode::kRcRdmaWriteFirst, 100, t.va(), t.keys.rkey, 3000, bytes(1000, 1)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.aeth.syndrome, 0x60 | 1);
}

TEST_F(ResponderTest, ZeroLengthWriteNeedsNoRkey) {
  // Receive WRITE_ONLY psn 100, DMA length 0, rkey 0 (in-order)
  // Expect: ACK (IBA 9.4.4: no R_Key check for a zero-length RDMA WRITE)
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, 0, 0, 0, {}));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.aeth.syndrome, kAck);
}

TEST_F(ResponderTest, SendWithInvalidateAndSolicitedNotification) {
  t.post_recv(1, 0, 256);
  t.post_recv(2, 256, 256);
  ASSERT_TRUE(t.e->req_notify_cq(t.cq, /*solicited_only=*/true));
  // Receive SEND_ONLY psn 100 without SE (in-order)
  // Expect: a completion, but no notification (armed for solicited only)
  t.rx(pb.build(pb.spec(Opcode::kRcSendOnly, 100), bytes(8, 1)));
  EXPECT_TRUE(t.observer.cq_events.empty());
  // Receive SEND_ONLY_WITH_INVALIDATE psn 101 with SE (in-order)
  // Expect: WITH_INV completion carrying the rkey; one notification
  wire::FrameSpec s = pb.spec(Opcode::kRcSendOnlyWithInvalidate, 101);
  s.ieth_rkey = 0xfeedbeef;
  s.se = true;
  t.rx(pb.build(s, bytes(8, 2)));
  EXPECT_EQ(t.observer.cq_events.size(), 1u);
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_TRUE(q[1].wc_flags & kWcWithInv);
  EXPECT_EQ(q[1].imm_data, 0xfeedbeefu);
}

TEST(UcResponder, LostMiddleDropsMessageAndResyncsOnFirst) {
  EngineUnderTest t(QpType::kUc);
  PacketBuilder& pb = t.pb;
  t.post_recv(1, 0, 8192);
  auto uc = [&](Opcode op, uint32_t psn, uint8_t v, uint32_t len = 1024) {
    t.rx(pb.build(pb.spec(op, psn, false), bytes(len, v)));
  };
  // Receive UC SEND_FIRST 100, SEND_LAST 102 (101 lost)
  // Expect: no completion, no frame (UC has no ACKs)
  uc(Opcode::kUcSendFirst, 100, 1);
  uc(Opcode::kUcSendLast, 102, 1, 10);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_TRUE(t.cqes().empty());
  // Receive UC SEND_ONLY 103 (resync on ONLY)
  // Expect: a completion of 20 bytes in the same receive WQE
  uc(Opcode::kUcSendOnly, 103, 2, 20);
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].wr_id, 1u);
  EXPECT_EQ(q[0].byte_len, 20u);
  EXPECT_EQ(t.mem()[0], 2);
}

TEST_F(ResponderTest, PacketsWithoutAckReqGetADelayedAck) {
  // Receive WRITE_ONLY 100 and 101 without AckReq, 1 us apart (in-order)
  // Expect: no ACK yet; 20 us after the first, one ACK for 101
  const Timestamp first = t.now;
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 4, bytes(4, 1), false));
  t.now = t.now + Duration::micros(1);
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 101, t.va(4), t.keys.rkey, 4, bytes(4, 2), false));
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.e->next_deadline(), first + Duration::micros(20));
  t.now = first + Duration::micros(20);
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(c.p.psn, Psn(101));
  EXPECT_EQ(c.p.aeth.msn, Msn(2));
  EXPECT_TRUE(t.e->next_deadline().is_never());
  EXPECT_EQ(t.mem()[4], 2);
}

TEST_F(ResponderTest, AnAckReqBeforeTheDelayedAckReplacesIt) {
  // Receive WRITE_ONLY 100 without AckReq, then 101 with it
  // Expect: one ACK (101) right away, none later
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, t.va(), t.keys.rkey, 4, bytes(4, 1), false));
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 101, t.va(4), t.keys.rkey, 4, bytes(4, 2)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(101));
  EXPECT_TRUE(t.e->next_deadline().is_never());
  t.now = t.now + Duration::micros(50);
  EXPECT_EQ(t.tx(), 0u);
}

}  // namespace
}  // namespace uroce::transport::testing
