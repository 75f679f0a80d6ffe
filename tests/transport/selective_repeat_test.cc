/**
 * @file selective_repeat_test.cc
 * @brief Handler-level tests of selective repeat (uroce's extension, docs/loss-recovery.md):
 * hand-built frames go through Engine::on_frame, the engine's output is captured and
 * re-parsed. Responder: packets ahead of the expected PSN are placed where their SRETH says and
 * retired in order, ACKs carry the held PSNs; what cannot be placed is dropped and handled when
 * it arrives in order. Requester: only what the peer lacks is resent; READ responses ahead of
 * a lost one are placed and only the missing run is asked again, within max_rd_atomic; a READ
 * longer than the window is asked for in parts; forged SACK bits are counted and ignored. Bad
 * input: an extension frame for a go-back-N QP, a READ response of the wrong length.
 * Comment grammar (eRPC): "Receive X (in-order|duplicate|future)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

constexpr uint32_t kMtu = 1024;
std::vector<uint8_t> bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

class SelectiveRepeatTest : public ::testing::Test {
 protected:
  /// ooo_placement: the QP opts in to placing every packet as it arrives.
  explicit SelectiveRepeatTest(bool ooo_placement = false)
      : t{QpType::kRc, nullptr, std::nullopt, LossRecovery::kSelective,
          0,           false,   false,        ooo_placement} {}

  EngineUnderTest t;
  PacketBuilder& pb = t.pb;

  /// A WRITE packet with an SRETH: va is where its payload goes.
  std::vector<uint8_t> write(Opcode op, uint32_t psn, uint64_t va, std::span<const uint8_t> data,
                             uint32_t dma_len = 0, bool ackreq = false, uint32_t rkey = 0) {
    wire::FrameSpec s = pb.spec(op, psn, ackreq);
    if (!rkey) rkey = t.keys.rkey;
    s.reth = {va, rkey, dma_len};
    s.ext = wire::UroceExt::kSreth;
    s.sreth = {0, rkey, va};
    return pb.build(s, data);
  }
  /// A SEND packet with an SRETH: message recv_seq, at offset off of it.
  std::vector<uint8_t> send(Opcode op, uint32_t psn, uint32_t recv_seq, uint32_t off,
                            std::span<const uint8_t> data, bool ackreq = false) {
    wire::FrameSpec s = pb.spec(op, psn, ackreq);
    s.ext = wire::UroceExt::kSreth;
    s.sreth = {recv_seq, 0, off};
    return pb.build(s, data);
  }
  /// An ACK of psn with the given held PSNs as a SACKETH.
  std::vector<uint8_t> sack(uint32_t psn, std::vector<uint32_t> held) {
    wire::FrameSpec s = pb.spec(Opcode::kRcAcknowledge, psn, false);
    s.aeth.syndrome = 0x1f;
    s.ext = wire::UroceExt::kSack;
    s.sack.base = Psn(psn + 2);
    s.sack.nwords = wire::kSackMaxWords;
    for (uint32_t x : held) s.sack.set(x - (psn + 2));
    return pb.build(s);
  }
  /// The PSNs of the NAKs with `code` among the frames sent (captured earlier by tx()).
  std::vector<uint32_t> nak_psns(uint8_t code) {
    std::vector<uint32_t> out;
    while (!t.sink.empty()) {
      Captured c = t.sink.pop();
      if (c.p.aeth.syndrome == wire::aeth_syndrome(wire::kAethTypeNak, code))
        out.push_back(c.p.psn.value());
    }
    return out;
  }
  /// Captures every frame sent now; returns their PSNs.
  std::vector<uint32_t> sent_psns() {
    t.tx();
    std::vector<uint32_t> out;
    while (!t.sink.empty()) out.push_back(t.sink.pop().p.psn.value());
    return out;
  }
};

/// The same, on a QP that opted in to out-of-order placement (uroce_qp_set_ooo_placement).
class SelectiveRepeatOooPlacement : public SelectiveRepeatTest {
 protected:
  SelectiveRepeatOooPlacement() : SelectiveRepeatTest(true) {}
};

TEST_F(SelectiveRepeatTest, WriteAheadOfAGapIsHeldAndPlacedOnlyWhenTheGapFills) {
  const uint64_t va = t.va(8192);
  const std::vector<uint8_t> old(t.mem() + 8192, t.mem() + 8192 + 4 * kMtu);
  // Receive WRITE_FIRST psn 100 (in-order), 4 packets of 1024
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 1), 4 * kMtu));
  // Receive WRITE_MIDDLE psn 102 (future: 101 lost)
  // Expect: held, its bytes not yet in place; an ACK of 100 whose SACKETH holds 102
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 102, va + 2 * kMtu, bytes(kMtu, 3)));
  EXPECT_EQ(std::memcmp(t.mem() + 8192 + 2 * kMtu, old.data() + 2 * kMtu, kMtu), 0);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 1u);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_placed), 0u);
  t.tx();
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAcknowledge);
  EXPECT_EQ(c.p.psn, Psn(100));
  ASSERT_EQ(c.p.ext, wire::UroceExt::kSack);
  EXPECT_EQ(c.p.sack.base, Psn(102));
  EXPECT_TRUE(c.p.sack.has(0));
  EXPECT_FALSE(c.p.sack.has(1));
  // Receive WRITE_LAST psn 103 (future)
  // Expect: held (the SACKETH holds 102 and 103), not placed: the message's last byte must
  // not appear while 101 is missing
  t.rx(write(Opcode::kRcRdmaWriteLast, 103, va + 3 * kMtu, bytes(kMtu, 4)));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 2u);
  EXPECT_EQ(std::memcmp(t.mem() + 8192 + 2 * kMtu, old.data() + 2 * kMtu, 2 * kMtu), 0);
  t.tx();
  c = t.sink.pop();
  ASSERT_EQ(c.p.ext, wire::UroceExt::kSack);
  EXPECT_TRUE(c.p.sack.has(0));
  EXPECT_TRUE(c.p.sack.has(1));
  // Receive WRITE_MIDDLE psn 101 (in-order)
  // Expect: 102 and 103 retired too: a plain ACK of 103 with MSN 1 (one message), every byte
  // in place
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 101, va + kMtu, bytes(kMtu, 2)));
  t.tx();
  c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(103));
  EXPECT_EQ(c.p.aeth.msn, Msn(1));
  EXPECT_EQ(c.p.ext, wire::UroceExt::kNone);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(t.mem()[8192 + i * kMtu + 5], i + 1);
  EXPECT_EQ(t.mem()[8192 + 4 * kMtu - 1], 4);
  EXPECT_EQ(t.counters.get(Counter::rx_write_requests), 1u);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, ALaterMessageIsNotVisibleBeforeAnEarlierOneIsWhole) {
  // Receive WRITE_ONLY psn 101 (future: 100 lost), 8 bytes at va
  // Expect: held, not placed: a program writing data then a flag sees the flag only after the
  // data (as on a NIC that places in order)
  const uint8_t old = t.mem()[2048 + 7];
  ASSERT_NE(old, 0x77);
  t.rx(write(Opcode::kRcRdmaWriteOnly, 101, t.va(2048), bytes(8, 0x77), 8));
  EXPECT_EQ(t.mem()[2048 + 7], old);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 1u);
  // Receive WRITE_ONLY psn 100 (in-order)
  // Expect: both placed, the ACK covers 101
  t.rx(write(Opcode::kRcRdmaWriteOnly, 100, t.va(), bytes(64, 0x66), 64, true));
  EXPECT_EQ(t.mem()[63], 0x66);
  EXPECT_EQ(t.mem()[2048 + 7], 0x77);
  t.tx();
  EXPECT_EQ(t.sink.pop().p.psn, Psn(101));
  EXPECT_TRUE(t.canaries_intact());
}

// riostream's bandwidth test (issue 31): the sender RDMA-writes the same buffer many times into
// the same remote bytes, the earlier writes carrying the stale poll byte and the last one the
// new marker; the receiver spins until its poll byte (the buffer's last byte) holds the marker.
// An earlier write's packet resent after the later ones must not undo them: on an in-order NIC
// the bytes end as the last write left them.
TEST_F(SelectiveRepeatTest, AnEarlierWriteResentAfterALaterOneToTheSameBytesDoesNotUndoIt) {
  const uint64_t va = t.va(4096);
  std::vector<uint8_t> stale = bytes(64, 0x11), marked = bytes(64, 0x11);
  stale[63] = 0xff;  // the poll byte before the marker
  marked[63] = 0x00;
  // Receive WRITE_ONLY psn 101 (future: 100, the earlier write to the same bytes, lost)
  // Expect: held, its bytes not yet in place
  t.rx(write(Opcode::kRcRdmaWriteOnly, 101, va, marked, 64));
  EXPECT_NE(t.mem()[4096 + 63], 0x00);
  // Receive WRITE_ONLY psn 100 (in-order: the resend of the stale write)
  // Expect: the stale bytes, then the held write over them: the poll byte holds the marker;
  // an ACK of 101
  t.rx(write(Opcode::kRcRdmaWriteOnly, 100, va, stale, 64, true));
  EXPECT_EQ(t.mem()[4096 + 63], 0x00);
  t.tx();
  EXPECT_EQ(t.sink.pop().p.psn, Psn(101));
  EXPECT_TRUE(t.canaries_intact());
}

// As above with two-packet writes whose last packet was lost: the earlier write's LAST resent
// after the later write arrived whole.
TEST_F(SelectiveRepeatTest, AnEarlierWritesLastPacketResentAfterALaterWriteDoesNotUndoIt) {
  const uint64_t va = t.va(8192);
  // Receive WRITE_FIRST psn 100 (in-order) of write A (2 packets at va, all 0xa1)
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 0xa1), 2 * kMtu));
  // Receive WRITE_FIRST psn 102, WRITE_LAST psn 103 (future: A's LAST 101 lost) of write B
  // (2 packets at the same va, all 0xb2)
  t.rx(write(Opcode::kRcRdmaWriteFirst, 102, va, bytes(kMtu, 0xb2), 2 * kMtu));
  t.rx(write(Opcode::kRcRdmaWriteLast, 103, va + kMtu, bytes(kMtu, 0xb2)));
  // Receive WRITE_LAST psn 101 (in-order: A's LAST resent)
  // Expect: every byte as B left it, the last one too; an ACK of 103, MSN 2
  t.rx(write(Opcode::kRcRdmaWriteLast, 101, va + kMtu, bytes(kMtu, 0xa1), 0, true));
  EXPECT_EQ(std::memcmp(t.mem() + 8192, bytes(2 * kMtu, 0xb2).data(), 2 * kMtu), 0);
  t.tx();
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(103));
  EXPECT_EQ(c.p.aeth.msn, Msn(2));
  EXPECT_TRUE(t.canaries_intact());
}

// The same with the earlier write's FIRST lost: the later write's FIRST arrived ahead of the
// gap, and the resent FIRST of the earlier write goes to the same bytes after it.
TEST_F(SelectiveRepeatTest, AnEarlierWritesFirstPacketResentAfterALaterWriteDoesNotUndoIt) {
  const uint64_t va = t.va(8192);
  // Receive WRITE_LAST psn 101 of write A (future: A's FIRST 100 lost), then write B whole:
  // WRITE_FIRST psn 102, WRITE_LAST psn 103, both at the same va as A
  t.rx(write(Opcode::kRcRdmaWriteLast, 101, va + kMtu, bytes(kMtu, 0xa1)));
  t.rx(write(Opcode::kRcRdmaWriteFirst, 102, va, bytes(kMtu, 0xb2), 2 * kMtu));
  t.rx(write(Opcode::kRcRdmaWriteLast, 103, va + kMtu, bytes(kMtu, 0xb2)));
  // Receive WRITE_FIRST psn 100 (in-order: A's FIRST resent)
  // Expect: every byte as B left it; an ACK of 103, MSN 2
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 0xa1), 2 * kMtu, true));
  EXPECT_EQ(std::memcmp(t.mem() + 8192, bytes(2 * kMtu, 0xb2).data(), 2 * kMtu), 0);
  t.tx();
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(103));
  EXPECT_EQ(c.p.aeth.msn, Msn(2));
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, SendsGoIntoTheirOwnReceiveWqesAndCompleteInOrder) {
  t.post_recv(10, 0, 2048);
  t.post_recv(11, 4096, 2048);
  // Receive SEND_FIRST psn 101 for message 1 (future: 100 lost), then its SEND_LAST psn 102
  // Expect: both held, nothing in the second WQE's buffer yet; no completion
  const uint8_t old = t.mem()[4096 + kMtu + 299];
  ASSERT_NE(old, 0x3c);
  ASSERT_NE(t.mem()[4096], 0x22);
  t.rx(send(Opcode::kRcSendFirst, 101, 1, 0, bytes(kMtu, 0x22)));
  t.rx(send(Opcode::kRcSendLast, 102, 1, kMtu, bytes(300, 0x3c)));
  EXPECT_NE(t.mem()[4096], 0x22);
  EXPECT_EQ(t.mem()[4096 + kMtu + 299], old);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 2u);
  EXPECT_TRUE(t.cqes().empty());
  // Receive SEND_ONLY psn 100 for message 0 (in-order)
  // Expect: both complete, wr 10 (500 bytes) then wr 11 (1324 bytes), every byte in place
  t.rx(send(Opcode::kRcSendOnly, 100, 0, 0, bytes(500, 0x11), true));
  std::vector<Cqe> c = t.cqes();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].wr_id, 10u);
  EXPECT_EQ(c[0].byte_len, 500u);
  EXPECT_EQ(c[1].wr_id, 11u);
  EXPECT_EQ(c[1].byte_len, kMtu + 300);
  EXPECT_EQ(c[1].status, WcStatus::kSuccess);
  EXPECT_EQ(t.mem()[0], 0x11);
  EXPECT_EQ(t.mem()[4096], 0x22);
  EXPECT_EQ(t.mem()[4096 + kMtu], 0x3c);
  EXPECT_EQ(t.mem()[4096 + kMtu + 299], 0x3c);
}

TEST_F(SelectiveRepeatTest, AWriteThatFailsItsChecksIsNotPlacedAndIsNakedInOrder) {
  std::vector<uint8_t> before(t.mem(), t.mem() + 2048);
  // Receive WRITE_ONLY psn 101 with a wrong R_Key (future)
  // Expect: nothing written, counted as not taken
  t.rx(write(Opcode::kRcRdmaWriteOnly, 101, t.va(), bytes(64, 9), 64, true, t.keys.rkey ^ 0x100));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_dropped), 1u);
  EXPECT_EQ(std::memcmp(t.mem(), before.data(), before.size()), 0);
  // Receive WRITE_ONLY psn 100 (in-order), then the bad one again (in-order)
  // Expect: ACK of 100, then NAK remote access error at 101; the QP goes to ERR
  t.rx(write(Opcode::kRcRdmaWriteOnly, 100, t.va(1024), bytes(8, 7), 8, true));
  t.rx(write(Opcode::kRcRdmaWriteOnly, 101, t.va(), bytes(64, 9), 64, true, t.keys.rkey ^ 0x100));
  t.tx();
  EXPECT_EQ(nak_psns(wire::kAethNakRemoteAccessError), std::vector<uint32_t>{101});
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_EQ(std::memcmp(t.mem(), before.data(), 1024), 0);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, APacketNamingAnotherPlaceThanItsMessageIsNakedAndNeverPlaced) {
  const uint64_t va = t.va(8192);
  // Receive WRITE_FIRST psn 100 (in-order) of 4 packets at va
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 1), 4 * kMtu));
  // Receive WRITE_MIDDLE psn 102 (future) whose SRETH names va + 5 MTU, not va + 2 MTU
  // Expect: held unplaced (the place is inside the MR, so it passes the checks)
  const std::vector<uint8_t> old(t.mem() + 8192, t.mem() + 8192 + 6 * kMtu);
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 102, va + 5 * kMtu, bytes(kMtu, 3)));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 1u);
  // Receive WRITE_MIDDLE psn 101 (in-order)
  // Expect: retiring 102 finds it named elsewhere than the WRITE stands: NAK invalid request
  // at 102, the QP in ERR; its bytes nowhere
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 101, va + kMtu, bytes(kMtu, 2)));
  t.tx();
  EXPECT_EQ(nak_psns(wire::kAethNakInvalidRequest), std::vector<uint32_t>{102});
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_EQ(std::memcmp(t.mem() + 8192 + 2 * kMtu, old.data() + 2 * kMtu, 4 * kMtu), 0);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatOooPlacement, WithTheOptInAPacketNamingAnotherPlaceIsPlacedThereAndNaked) {
  const uint64_t va = t.va(8192);
  // Receive WRITE_FIRST psn 100 (in-order) of 4 packets; WRITE_MIDDLE psn 102 (future) whose
  // SRETH names va + 5 MTU
  // Expect: placed there at once (inside the MR: allowed)
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 1), 4 * kMtu));
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 102, va + 5 * kMtu, bytes(kMtu, 3)));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_placed), 1u);
  EXPECT_EQ(t.mem()[8192 + 5 * kMtu], 3);
  // Receive WRITE_MIDDLE psn 101 (in-order)
  // Expect: NAK invalid request at 102, the QP in ERR
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 101, va + kMtu, bytes(kMtu, 2)));
  t.tx();
  EXPECT_EQ(nak_psns(wire::kAethNakInvalidRequest), std::vector<uint32_t>{102});
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, ADeferredLastPacketNamingAnotherPlaceIsNakedAndNeverPlaced) {
  const uint64_t va = t.va(8192);
  // Receive WRITE_FIRST psn 100 (in-order) of 3 packets at va
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 1), 3 * kMtu));
  // Receive WRITE_LAST psn 102 (future) whose SRETH names va + 5 MTU, not va + 2 MTU
  // Expect: held unplaced
  const std::vector<uint8_t> old(t.mem() + 8192, t.mem() + 8192 + 6 * kMtu);
  t.rx(write(Opcode::kRcRdmaWriteLast, 102, va + 5 * kMtu, bytes(kMtu, 3)));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 1u);
  // Receive WRITE_MIDDLE psn 101 (in-order)
  // Expect: NAK invalid request at 102, the QP in ERR; its bytes nowhere
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 101, va + kMtu, bytes(kMtu, 2)));
  t.tx();
  EXPECT_EQ(nak_psns(wire::kAethNakInvalidRequest), std::vector<uint32_t>{102});
  EXPECT_EQ(t.state(), QpState::kErr);
  EXPECT_EQ(std::memcmp(t.mem() + 8192 + 2 * kMtu, old.data() + 2 * kMtu, 4 * kMtu), 0);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatOooPlacement, AQpThatOptedInPlacesTheLastPacketAtOnce) {
  EXPECT_TRUE(t.e->ooo_placement(t.qpn));
  const uint64_t va = t.va(8192);
  // Receive WRITE_FIRST psn 100 (in-order), WRITE_LAST psn 102 (future: 101 lost)
  // Expect: the last packet's bytes in place at once
  t.rx(write(Opcode::kRcRdmaWriteFirst, 100, va, bytes(kMtu, 1), 3 * kMtu));
  t.rx(write(Opcode::kRcRdmaWriteLast, 102, va + 2 * kMtu, bytes(kMtu, 3)));
  EXPECT_EQ(t.mem()[8192 + 3 * kMtu - 1], 3);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_placed), 1u);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_deferred), 0u);
  // Receive WRITE_MIDDLE psn 101 (in-order)
  // Expect: the message whole, ACK of 102
  t.rx(write(Opcode::kRcRdmaWriteMiddle, 101, va + kMtu, bytes(kMtu, 2)));
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(t.mem()[8192 + i * kMtu + 5], i + 1);
  t.tx();
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.psn, Psn(102));
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, OooPlacementChangesOnlyBeforeTheQpLeavesInit) {
  EXPECT_FALSE(t.e->ooo_placement(t.qpn));
  // In RTS: EINVAL
  EXPECT_EQ(t.e->set_ooo_placement(t.qpn, true).code(), EINVAL);
  QpInitAttr ia;
  ia.type = QpType::kRc;
  ia.pd = t.pd;
  ia.send_cq = ia.recv_cq = t.cq;
  ia.max_send_wr = ia.max_recv_wr = 4;
  ia.max_send_sge = ia.max_recv_sge = 1;
  const uint32_t rc = t.e->create_qp(ia).value();
  EXPECT_TRUE(t.e->set_ooo_placement(rc, true));
  EXPECT_TRUE(t.e->ooo_placement(rc));
  ia.type = QpType::kUd;
  const uint32_t ud = t.e->create_qp(ia).value();
  EXPECT_EQ(t.e->set_ooo_placement(ud, true).code(), EINVAL);
  EXPECT_EQ(t.e->set_ooo_placement(0xabcdef, true).code(), ENOENT);
}

TEST_F(SelectiveRepeatTest, BeyondTheWindowAndReadRequestsAreNotHeld) {
  const uint32_t window = t.e->config().sr_window;
  // Receive WRITE_ONLY at 100 + window (future, beyond the window); READ at 101 (future)
  // Expect: neither held; the READ is answered when it comes again in order
  t.rx(write(Opcode::kRcRdmaWriteOnly, 100 + window, t.va(), bytes(8, 1), 8));
  t.rx(pb.read(101, t.va(), t.keys.rkey, 16));
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_dropped), 2u);
  EXPECT_EQ(t.counters.get(Counter::sr_ooo_placed), 0u);
  t.rx(write(Opcode::kRcRdmaWriteOnly, 100, t.va(), bytes(8, 1), 8, true));
  t.rx(pb.read(101, t.va(), t.keys.rkey, 16));
  t.tx();
  bool response = false;
  while (!t.sink.empty()) response |= t.sink.pop().p.opcode == Opcode::kRcRdmaReadResponseOnly;
  EXPECT_TRUE(response);
}

TEST_F(SelectiveRepeatTest, AReadAskedAgainAcrossALostPartIsAnsweredUpToWhatWasAnswered) {
  // Receive READ 100..101 (a first part, answered); the part at 102.. is lost. Receive a READ
  // for 101..103: the requester asks again for the run it misses, which crosses into the lost
  // part. Expect: PSN 101 answered again (a one-packet READ response), 102..103 not (they come
  // as a new request at 102); a go-back-N responder answers nothing (no IBA requester asks so).
  t.rx(pb.read(100, t.va(), t.keys.rkey, 2 * kMtu));
  t.tx();
  while (!t.sink.empty()) t.sink.pop();
  t.rx(pb.read(101, t.va(kMtu), t.keys.rkey, 3 * kMtu));
  t.tx();
  ASSERT_FALSE(t.sink.empty());
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcRdmaReadResponseOnly);
  EXPECT_EQ(c.p.psn, Psn(101));
  EXPECT_EQ(c.p.payload.size(), kMtu);
  EXPECT_EQ(std::memcmp(c.p.payload.data(), t.mem() + kMtu, kMtu), 0);
  EXPECT_TRUE(t.sink.empty());
  t.rx(pb.read(102, t.va(2 * kMtu), t.keys.rkey, 2 * kMtu));  // the rest, as new
  t.tx();
  std::vector<uint32_t> psns;
  while (!t.sink.empty()) psns.push_back(t.sink.pop().p.psn.value());
  EXPECT_EQ(psns, (std::vector<uint32_t>{102, 103}));

  EngineUnderTest gbn;
  gbn.rx(gbn.pb.read(100, gbn.va(), gbn.keys.rkey, 2 * kMtu));
  gbn.tx();
  while (!gbn.sink.empty()) gbn.sink.pop();
  gbn.rx(gbn.pb.read(101, gbn.va(kMtu), gbn.keys.rkey, 3 * kMtu));
  EXPECT_EQ(gbn.tx(), 0u);
}

TEST_F(SelectiveRepeatTest, RequesterResendsOnlyWhatThePeerLacks) {
  // Post a 4-packet WRITE (PSN 500..503); all four go out.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 4 * kMtu));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501, 502, 503}));
  // Receive ACK 500 with 502 and 503 held: 501 was lost (sent before packets that arrived)
  // Expect: 501 alone goes again
  t.now = t.now + Duration::micros(5);
  t.rx(sack(500, {502, 503}));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{501}));
  EXPECT_EQ(t.counters.get(Counter::sr_loss_events), 1u);
  // Receive ACK 503 (cumulative)
  // Expect: the WRITE completes once, nothing else is sent
  t.rx(pb.ack(503, 0x1f, 1));
  EXPECT_TRUE(sent_psns().empty());
  std::vector<Cqe> c = t.cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(t.counters.get(Counter::roce_adp_retrans), 1u);
}

TEST_F(SelectiveRepeatTest, AWindowLostWholeGoesAgainAfterTheLongTimeoutBackedOff) {
  // Post an 8-packet WRITE (PSN 500..507); all eight go out and nothing comes back. With more
  // than 3 in flight the short timeout (100 µs) does not apply: the long one (320 µs) resends
  // everything, then waits twice as long before the next resend.
  const Timestamp t0 = t.now;
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 8 * kMtu));
  const std::vector<uint32_t> all{500, 501, 502, 503, 504, 505, 506, 507};
  EXPECT_EQ(sent_psns(), all);
  t.now = t0 + Duration::micros(101);
  EXPECT_TRUE(sent_psns().empty());
  EXPECT_EQ(t.e->next_deadline(), t0 + Duration::micros(320));
  t.now = t0 + Duration::micros(320);
  EXPECT_EQ(sent_psns(), all);
  EXPECT_EQ(t.counters.get(Counter::sr_rto_high), 1u);
  EXPECT_EQ(t.counters.get(Counter::sr_rto_low), 0u);
  const Timestamp t1 = t.now;
  t.now = t1 + Duration::micros(639);
  EXPECT_TRUE(sent_psns().empty());
  t.now = t1 + Duration::micros(640);
  EXPECT_EQ(sent_psns(), all);
  EXPECT_EQ(t.counters.get(Counter::sr_rto_high), 2u);
  // Receive ACK 507: the WRITE completes once; the timer stops.
  t.rx(pb.ack(507, 0x1f, 1));
  EXPECT_EQ(t.cqes().size(), 1u);
  t.now = t.now + Duration::millis(5);
  EXPECT_TRUE(sent_psns().empty());
  EXPECT_EQ(t.counters.get(Counter::sr_rto_high), 2u);
}

TEST_F(SelectiveRepeatTest, ALostTailGoesAgainAfterTheShortTimeout) {
  // Post a 2-packet WRITE; the ACK of 500 arrives, 501 (the tail) is lost: at most 3 in
  // flight, so 100 µs after the progress it goes again.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 2 * kMtu));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501}));
  t.now = t.now + Duration::micros(2);
  t.rx(pb.ack(500, 0x1f, 0));
  const Timestamp p = t.now;
  t.now = p + Duration::micros(99);
  EXPECT_TRUE(sent_psns().empty());
  t.now = p + Duration::micros(100);
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{501}));
  EXPECT_EQ(t.counters.get(Counter::sr_rto_low), 1u);
  EXPECT_EQ(t.counters.get(Counter::sr_rto_high), 0u);
}

/// The READ requests among the frames sent now: {psn, va, dma_len} each.
struct ReadReq {
  uint32_t psn;
  uint64_t va;
  uint32_t len;
  bool operator==(const ReadReq&) const = default;
};
std::vector<ReadReq> read_requests(EngineUnderTest& t) {
  t.tx();
  std::vector<ReadReq> out;
  while (!t.sink.empty()) {
    Captured c = t.sink.pop();
    if (c.p.opcode == Opcode::kRcRdmaReadRequest)
      out.push_back({c.p.psn.value(), c.p.reth.va, c.p.reth.dma_len});
  }
  return out;
}

/// READ response k (0-based) of a READ of n packets at PSN first: opcode by position, payload
/// kMtu bytes of 0x10 + k.
std::vector<uint8_t> response(PacketBuilder& pb, uint32_t first, uint32_t k, uint32_t n) {
  const Opcode op = n == 1       ? Opcode::kRcRdmaReadResponseOnly
                    : k == 0     ? Opcode::kRcRdmaReadResponseFirst
                    : k + 1 == n ? Opcode::kRcRdmaReadResponseLast
                                 : Opcode::kRcRdmaReadResponseMiddle;
  return pb.read_response(op, first + k, bytes(kMtu, static_cast<uint8_t>(0x10 + k)));
}

/// Whether mem[off, off + n packets) holds response k's pattern in packet k.
bool read_landed(EngineUnderTest& t, size_t off, uint32_t n) {
  for (uint32_t k = 0; k < n; ++k)
    for (uint32_t b = 0; b < kMtu; ++b)
      if (t.mem()[off + k * kMtu + b] != static_cast<uint8_t>(0x10 + k)) return false;
  return true;
}

TEST_F(SelectiveRepeatTest, ReadResponsesAheadOfALostOneArePlacedAndOnlyItIsAskedAgain) {
  // Post a 4-packet READ into mem[0..4096) (PSNs 500..503); one request goes out.
  std::memset(t.mem(), 0, 4 * kMtu);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 4 * kMtu, 0x1000, 0xabc));
  EXPECT_EQ(read_requests(t), (std::vector<ReadReq>{{500, 0x1000, 4 * kMtu}}));
  // Receive READ FIRST 500, then LAST 503 (in-order, then future: 501 and 502 lost)
  // Expect: 503 placed at offset 3 KiB; a READ request for 501..502 alone (2 KiB at +1 KiB)
  t.rx(response(pb, 500, 0, 4));
  t.rx(response(pb, 500, 3, 4));
  EXPECT_EQ(t.mem()[3 * kMtu], 0x13);
  EXPECT_EQ(read_requests(t), (std::vector<ReadReq>{{501, 0x1000 + kMtu, 2 * kMtu}}));
  EXPECT_TRUE(t.cqes().empty());
  // Receive the re-request's responses 501 and 502 (its FIRST and LAST)
  // Expect: the READ completes once with every byte where it belongs, nothing more is asked
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseFirst, 501, bytes(kMtu, 0x11)));
  EXPECT_TRUE(read_requests(t).empty());
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseLast, 502, bytes(kMtu, 0x12)));
  std::vector<Cqe> done = t.cqes();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(read_landed(t, 0, 4));
  EXPECT_TRUE(read_requests(t).empty());
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, EachResponseOfARunAskedAgainAsksForNothingMore) {
  // An 8-packet READ (500..507); 501..504 are lost, 505..507 arrive. One re-request for the
  // run; its responses, arriving one by one, prove nothing else lost (each is later in
  // transmission order than the ones before it only).
  std::memset(t.mem(), 0, 8 * kMtu);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 8 * kMtu, 0x1000, 0xabc));
  ASSERT_EQ(read_requests(t).size(), 1u);
  t.rx(response(pb, 500, 0, 8));
  for (uint32_t k = 5; k < 8; ++k) t.rx(response(pb, 500, k, 8));
  EXPECT_EQ(read_requests(t), (std::vector<ReadReq>{{501, 0x1000 + kMtu, 4 * kMtu}}));
  for (uint32_t k = 1; k < 5; ++k) {
    t.rx(pb.read_response(k == 1   ? Opcode::kRcRdmaReadResponseFirst
                          : k == 4 ? Opcode::kRcRdmaReadResponseLast
                                   : Opcode::kRcRdmaReadResponseMiddle,
                          500 + k, bytes(kMtu, static_cast<uint8_t>(0x10 + k))));
    EXPECT_TRUE(read_requests(t).empty()) << "after response " << 500 + k;
  }
  ASSERT_EQ(t.cqes().size(), 1u);
  EXPECT_TRUE(read_landed(t, 0, 8));
  EXPECT_EQ(t.counters.get(Counter::sr_loss_events), 1u);
}

TEST_F(SelectiveRepeatTest, AReRequestWaitsWhileMaxRdAtomicRequestsAreOut) {
  // max_rd_atomic 4: READ A of 8 packets (500..507) and READs B, C, D of 1 (508, 509, 510)
  // are all out. 501 is lost and 502 arrives: A is still being answered, so asking for 501 now
  // would be a fifth request, which the responder drops. It goes once A's last response is in.
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 8 * kMtu, 0x1000, 0xabc));
  for (uint64_t i = 0; i < 3; ++i)
    ASSERT_TRUE(
        t.post_send(WrOpcode::kRdmaRead, 2 + i, (8 + i) * kMtu, kMtu, 0x9000 + i * kMtu, 0xabc));
  EXPECT_EQ(read_requests(t).size(), 4u);
  t.rx(response(pb, 500, 0, 8));
  t.rx(response(pb, 500, 2, 8));
  EXPECT_TRUE(read_requests(t).empty());
  for (uint32_t k = 3; k < 8; ++k) t.rx(response(pb, 500, k, 8));
  EXPECT_EQ(read_requests(t), (std::vector<ReadReq>{{501, 0x1000 + kMtu, kMtu}}));
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 501, bytes(kMtu, 0x11)));
  for (uint32_t i = 0; i < 3; ++i) t.rx(response(pb, 508 + i, 0, 1));
  std::vector<Cqe> done = t.cqes();
  ASSERT_EQ(done.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(done[i].wr_id, 1u + i);
  EXPECT_TRUE(read_landed(t, 0, 8));
}

TEST_F(SelectiveRepeatTest, AReadResponseOfTheWrongLengthAheadOfAGapIsFatal) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 4 * kMtu, 0x1000, 0xabc));
  EXPECT_EQ(read_requests(t).size(), 1u);
  // Receive MIDDLE 502 with 100 bytes (future, and short)
  // Expect: BAD_RESP_ERR, nothing placed
  std::memset(t.mem(), 0, 4 * kMtu);
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseMiddle, 502, bytes(100, 0x77)));
  std::vector<Cqe> c = t.cqes();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kBadRespErr);
  EXPECT_EQ(t.mem()[2 * kMtu], 0);
}

TEST(SelectiveRepeatWindow, AReadLongerThanTheWindowIsAskedForInParts) {
  // Window 16 PSNs: a 40-packet READ is asked for in parts that stay inside it (the first 15,
  // then a part whenever a quarter of the window is free); every byte lands, one completion.
  EngineUnderTest t{QpType::kRc, nullptr, std::nullopt, LossRecovery::kSelective, 16};
  std::memset(t.mem(), 0, 40 * kMtu);
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaRead, 1, 0, 40 * kMtu, 0x10000, 0xabc));
  std::vector<ReadReq> asked = read_requests(t);
  ASSERT_EQ(asked, (std::vector<ReadReq>{{500, 0x10000, 15 * kMtu}}));
  uint32_t next = 500, parts = 1;
  std::vector<ReadReq> queue = asked;
  while (!queue.empty()) {
    const ReadReq r = queue.front();
    queue.erase(queue.begin());
    const uint32_t n = (r.len + kMtu - 1) / kMtu;
    ASSERT_EQ(r.psn, next) << "parts follow each other";
    EXPECT_LE(r.psn + n, 540u);
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t idx = r.psn - 500 + k;
      const Opcode op = n == 1       ? Opcode::kRcRdmaReadResponseOnly
                        : k == 0     ? Opcode::kRcRdmaReadResponseFirst
                        : k + 1 == n ? Opcode::kRcRdmaReadResponseLast
                                     : Opcode::kRcRdmaReadResponseMiddle;
      t.rx(t.pb.read_response(op, r.psn + k, bytes(kMtu, static_cast<uint8_t>(0x10 + idx))));
      for (const ReadReq& more : read_requests(t)) {
        // Expect: a part never reaches 16 PSNs past the oldest response not yet in.
        EXPECT_LT(more.psn + (more.len + kMtu - 1) / kMtu, r.psn + k + 1 + 16);
        queue.push_back(more);
        ++parts;
      }
    }
    next = r.psn + n;
  }
  EXPECT_EQ(next, 540u);
  EXPECT_GE(parts, 3u);
  std::vector<Cqe> done = t.cqes();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(read_landed(t, 0, 40));
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(SelectiveRepeatTest, ForgedSackBitsAreCountedAndIgnored) {
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 1, 0, 2 * kMtu));
  EXPECT_EQ(sent_psns(), (std::vector<uint32_t>{500, 501}));
  // Receive ACK 499 claiming 600 and 700 (never sent)
  // Expect: counted, nothing resent, no completion
  t.now = t.now + Duration::micros(5);
  t.rx(sack(499, {600, 700}));
  EXPECT_EQ(t.counters.get(Counter::sr_bad_sack), 1u);
  EXPECT_TRUE(sent_psns().empty());
  EXPECT_TRUE(t.cqes().empty());
  // Receive ACK 501: complete once
  t.rx(pb.ack(501, 0x1f, 1));
  EXPECT_EQ(t.cqes().size(), 1u);
}

TEST(SelectiveRepeatNegotiation, AnExtensionFrameForAGoBackNQpIsDropped) {
  EngineUnderTest t;  // go-back-N
  wire::FrameSpec s = t.pb.spec(Opcode::kRcRdmaWriteOnly, 100, true);
  s.reth = {t.va(), t.keys.rkey, 8};
  s.ext = wire::UroceExt::kSreth;
  s.sreth = {0, t.keys.rkey, t.va()};
  std::vector<uint8_t> before(t.mem(), t.mem() + 8);
  t.rx(t.pb.build(s, bytes(8, 0x77)));
  EXPECT_EQ(t.counters.get(Counter::sr_unnegotiated), 1u);
  EXPECT_EQ(std::memcmp(t.mem(), before.data(), 8), 0);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_FALSE(t.e->selective_repeat(t.qpn));
  // Not in RTS: selective repeat can no longer be switched on.
  EXPECT_FALSE(t.e->set_selective_repeat(t.qpn, true));
}

}  // namespace
}  // namespace uroce::transport::testing
