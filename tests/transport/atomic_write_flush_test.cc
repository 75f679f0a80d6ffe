/**
 * @file atomic_write_flush_test.cc
 * @brief Handler-level tests of RDMA ATOMIC WRITE and RDMA FLUSH (IBA 1.5 Annex A19, with the
 * checks and responses of Linux rxe): the responder's execution, its answer (a zero-length
 * RDMA READ Response Only), duplicates, and every refusal with the NAK it gets and nothing
 * written; the requester's frames, its completions, and its local refusals; Linux rxe's FLUSH
 * ICRC under EngineConfig::rxe_flush_icrc.
 * Comment grammar (eRPC): "Receive X (in-order|duplicate)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "support/packet_builder.h"
#include "transport/wire/icrc.h"
#include "transport/wire/parse.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

constexpr uint8_t kAck = 0x1f;
constexpr uint8_t kNakInvalid = 0x60 | 1;
constexpr uint8_t kNakAccess = 0x60 | 2;
constexpr uint32_t kEvery = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                            kAccessRemoteAtomic | kAccessFlushGlobal;

class AtomicWriteFlushTest : public ::testing::Test {
 protected:
  AtomicWriteFlushTest() {
    // The QP may take every operation and FLUSH of both placement types; the region of
    // EngineUnderTest has no flush rights, `flushable` has global visibility.
    set_qp_access(kEvery | kAccessFlushPersistent);
    flushable.assign(4096, 0x3c);
    fkeys = t.e->reg_mr(t.pd, fva(), flushable.size(), kEvery).value();
  }
  void set_qp_access(uint32_t acc) {
    QpAttr a;
    a.qp_access_flags = acc;
    ASSERT_TRUE(t.e->modify_qp(t.qpn, a, kAttrAccessFlags));
  }
  uint64_t fva(size_t off = 0) { return reinterpret_cast<uint64_t>(flushable.data()) + off; }
  std::vector<uint8_t> atomic_write(uint32_t psn, uint64_t va, uint32_t rkey, uint64_t value,
                                    uint32_t dma_len = 8, size_t payload = 8) {
    wire::FrameSpec s = pb.spec(Opcode::kRcAtomicWrite, psn, false);
    s.reth = {va, rkey, dma_len};
    std::vector<uint8_t> v(payload, 0);
    std::memcpy(v.data(), &value, std::min<size_t>(payload, 8));
    return pb.build(s, v);
  }
  std::vector<uint8_t> flush(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len,
                             uint8_t placement = kFlushGlobal, uint8_t selectivity = kFlushRange) {
    wire::FrameSpec s = pb.spec(Opcode::kRcFlush, psn, false);
    s.feth = {placement, selectivity};
    s.reth = {va, rkey, len};
    return pb.build(s);
  }
  /// The one frame sent is a zero-length READ Response Only for psn with msn.
  void expect_read_zero(uint32_t psn, uint32_t msn) {
    ASSERT_EQ(t.tx(), 1u);
    Captured c = t.sink.pop();
    EXPECT_EQ(c.p.opcode, Opcode::kRcRdmaReadResponseOnly);
    EXPECT_EQ(c.p.psn, Psn(psn));
    EXPECT_EQ(c.p.aeth.syndrome, kAck);
    EXPECT_EQ(c.p.aeth.msn, Msn(msn));
    EXPECT_TRUE(c.p.payload.empty());
  }
  /// The one frame sent is a NAK with syndrome for psn, and the QP went to ERR with event ev.
  void expect_fatal_nak(uint8_t syndrome, uint32_t psn, AsyncEventType ev) {
    ASSERT_EQ(t.tx(), 1u);
    Captured c = t.sink.pop();
    EXPECT_EQ(c.p.opcode, Opcode::kRcAcknowledge);
    EXPECT_EQ(c.p.aeth.syndrome, syndrome);
    EXPECT_EQ(c.p.psn, Psn(psn));
    EXPECT_EQ(t.state(), QpState::kErr);
    EXPECT_TRUE(t.observer.saw(ev, t.qpn));
  }

  EngineUnderTest t;
  PacketBuilder& pb = t.pb;
  std::vector<uint8_t> flushable;
  MrKeys fkeys;
};

// ---- Responder: ATOMIC WRITE ----------------------------------------------------------------

TEST_F(AtomicWriteFlushTest, AtomicWriteStoresEightBytesOnceAndDuplicatesAreOnlyAnswered) {
  // Receive ATOMIC_WRITE psn 100, 0x1122334455667788 at offset 64 (in-order)
  // Expect: the 8 bytes in memory as sent, READ_RESPONSE_ONLY psn 100 without payload, MSN 1
  t.rx(atomic_write(100, t.va(64), t.keys.rkey, 0x1122334455667788ull));
  expect_read_zero(100, 1);
  uint64_t v;
  std::memcpy(&v, t.mem() + 64, 8);
  EXPECT_EQ(v, 0x1122334455667788ull);
  EXPECT_EQ(t.counters.get(Counter::rx_atomic_requests), 1u);
  // A later WRITE (psn 101) overwrites the same 8 bytes; then the ATOMIC_WRITE arrives again.
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 101, t.va(64), t.keys.rkey, 8,
                std::vector<uint8_t>(8, 0x5a)));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.psn, Psn(101));
  // Receive ATOMIC_WRITE psn 100 (duplicate)
  // Expect: answered again from the replay record (psn 100, MSN 2), memory keeps the WRITE
  t.rx(atomic_write(100, t.va(64), t.keys.rkey, 0x1122334455667788ull));
  expect_read_zero(100, 2);
  EXPECT_EQ(t.mem()[64], 0x5a);
  EXPECT_EQ(t.mem()[71], 0x5a);
  EXPECT_EQ(t.counters.get(Counter::duplicate_request), 1u);
  EXPECT_EQ(t.counters.get(Counter::rx_atomic_requests), 1u);
  // An atomic with the ATOMIC_WRITE's PSN is not answered from its record (no atomic ACK).
  t.rx(pb.atomic(Opcode::kRcFetchAdd, 100, t.va(64), t.keys.rkey, 1));
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.mem()[64], 0x5a);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(AtomicWriteFlushTest, MisalignedAtomicWriteIsInvalidRequestAndWritesNothing) {
  std::vector<uint8_t> before = t.backing;
  // Receive ATOMIC_WRITE psn 100 at offset 65 (not 8-byte aligned) (in-order)
  // Expect: NAK invalid request (IBA 1.5 A19.4.2 via rxe), nothing written, QP in ERR
  t.rx(atomic_write(100, t.va(65), t.keys.rkey, ~0ull));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
  EXPECT_EQ(before, t.backing);
  EXPECT_EQ(t.counters.get(Counter::resp_remote_invalid_request), 1u);
}

TEST_F(AtomicWriteFlushTest, AtomicWritePastTheRegionIsRemoteAccessErrorAndWritesNothing) {
  std::vector<uint8_t> before = t.backing;
  // Receive ATOMIC_WRITE psn 100 at the region's last 4 bytes (4 past its end) (in-order)
  // Expect: NAK remote access error, canaries and region untouched
  t.rx(atomic_write(100, t.va(EngineUnderTest::kRegion - 4), t.keys.rkey, ~0ull));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
  EXPECT_EQ(before, t.backing);
}

TEST_F(AtomicWriteFlushTest, AtomicWriteOfOtherThanEightBytesIsInvalidRequest) {
  std::vector<uint8_t> before = t.backing;
  // Receive ATOMIC_WRITE psn 100 with RETH length 16 and 16 bytes of payload (in-order)
  // Expect: NAK invalid request, nothing written
  t.rx(atomic_write(100, t.va(64), t.keys.rkey, ~0ull, 16, 16));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
  EXPECT_EQ(before, t.backing);
}

TEST_F(AtomicWriteFlushTest, AtomicWriteShortPayloadIsInvalidRequest) {
  std::vector<uint8_t> before = t.backing;
  // Receive ATOMIC_WRITE psn 100 with RETH length 8 but 4 bytes of payload (in-order)
  // Expect: NAK invalid request, nothing written
  t.rx(atomic_write(100, t.va(64), t.keys.rkey, ~0ull, 8, 4));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
  EXPECT_EQ(before, t.backing);
}

TEST_F(AtomicWriteFlushTest, AtomicWriteNeedsRemoteWriteOnTheRegion) {
  std::vector<uint8_t> ro(64, 0x77);
  MrKeys k = t.e->reg_mr(t.pd, reinterpret_cast<uint64_t>(ro.data()), ro.size(),
                         kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic)
                 .value();
  // Receive ATOMIC_WRITE psn 100 into a region without remote write (in-order)
  // Expect: NAK remote access error (rxe checks IB_ACCESS_REMOTE_WRITE), region untouched
  t.rx(atomic_write(100, reinterpret_cast<uint64_t>(ro.data()), k.rkey, ~0ull));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
  EXPECT_EQ(ro, std::vector<uint8_t>(64, 0x77));
}

TEST_F(AtomicWriteFlushTest, AtomicWriteOnAQpWithoutRemoteWriteIsInvalidRequest) {
  set_qp_access(kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic);
  std::vector<uint8_t> before = t.backing;
  // Receive ATOMIC_WRITE psn 100 on a QP that does not allow remote write (in-order)
  // Expect: NAK invalid request (IBA 9.7.5.1.4), nothing written
  t.rx(atomic_write(100, t.va(64), t.keys.rkey, ~0ull));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
  EXPECT_EQ(before, t.backing);
}

// ---- Responder: FLUSH -----------------------------------------------------------------------

TEST_F(AtomicWriteFlushTest, FlushOfARangeAndOfTheWholeRegionAreAnsweredInOrder) {
  // Receive WRITE_ONLY psn 100 (no AckReq), FLUSH psn 101 of its range (in-order)
  // Expect: one READ_RESPONSE_ONLY psn 101 without payload, MSN 2 (it covers the WRITE too)
  t.rx(pb.write(Opcode::kRcRdmaWriteOnly, 100, fva(0), fkeys.rkey, 256,
                std::vector<uint8_t>(256, 0x42), false));
  t.rx(flush(101, fva(0), fkeys.rkey, 256));
  expect_read_zero(101, 2);
  EXPECT_EQ(flushable[255], 0x42);
  // Receive FLUSH psn 102, selectivity "whole region", with no address or length (in-order)
  // Expect: answered, MSN 3
  t.rx(flush(102, 0, fkeys.rkey, 0, kFlushGlobal, kFlushMr));
  expect_read_zero(102, 3);
  // Receive FLUSH psn 101 (duplicate)
  // Expect: answered again (a FLUSH is idempotent), psn 101, MSN still 3
  t.rx(flush(101, fva(0), fkeys.rkey, 256));
  expect_read_zero(101, 3);
  EXPECT_EQ(t.counters.get(Counter::duplicate_request), 1u);
  EXPECT_EQ(t.state(), QpState::kRts);
}

TEST_F(AtomicWriteFlushTest, FlushToARegionWithoutFlushRightsIsRemoteAccessError) {
  // Receive FLUSH psn 100 of EngineUnderTest's region (every right but flush) (in-order)
  // Expect: NAK remote access error, QP in ERR, kQpAccessErr
  t.rx(flush(100, t.va(0), t.keys.rkey, 4096));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
  EXPECT_EQ(t.counters.get(Counter::resp_remote_access_errors), 1u);
}

TEST_F(AtomicWriteFlushTest, FlushOfTheWholeRegionStillNeedsItsRights) {
  // Receive FLUSH psn 100, whole region, of the region without flush rights (in-order)
  // Expect: NAK remote access error
  t.rx(flush(100, 0, t.keys.rkey, 0, kFlushGlobal, kFlushMr));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
}

TEST_F(AtomicWriteFlushTest, FlushWithAnUnknownRkeyIsRemoteAccessErrorEvenForZeroBytes) {
  // Receive FLUSH psn 100 of zero bytes with an rkey no region has (in-order)
  // Expect: NAK remote access error (unlike a zero-length WRITE, FLUSH always names a region)
  t.rx(flush(100, fva(0), fkeys.rkey ^ 0x00ff0000u, 0));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
}

TEST_F(AtomicWriteFlushTest, FlushPastTheRegionIsRemoteAccessError) {
  // Receive FLUSH psn 100 of 4097 bytes of a 4096-byte region (in-order)
  // Expect: NAK remote access error
  t.rx(flush(100, fva(0), fkeys.rkey, 4097));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
}

TEST_F(AtomicWriteFlushTest, FlushToPersistenceIsRemoteAccessErrorNoRegionHasThatRight) {
  // Receive FLUSH psn 100, placement type persistence, on a QP that allows it (in-order)
  // Expect: NAK remote access error: no region can be registered with persistence rights
  t.rx(flush(100, fva(0), fkeys.rkey, 64, kFlushPersistent));
  expect_fatal_nak(kNakAccess, 100, AsyncEventType::kQpAccessErr);
  EXPECT_FALSE(t.e->reg_mr(t.pd, fva(0), 64, kAccessLocalWrite | kAccessFlushPersistent));
}

TEST_F(AtomicWriteFlushTest, FlushTypeTheQpDoesNotAllowIsInvalidRequest) {
  set_qp_access(kEvery);  // global visibility only
  // Receive FLUSH psn 100, placement type persistence (in-order)
  // Expect: NAK invalid request (the QP's rights are checked first, as rxe does)
  t.rx(flush(100, fva(0), fkeys.rkey, 64, kFlushPersistent));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
}

TEST_F(AtomicWriteFlushTest, ReservedPlacementTypeIsInvalidRequest) {
  // Receive FLUSH psn 100 with placement type 0 (no bit) (in-order)
  // Expect: NAK invalid request
  t.rx(flush(100, fva(0), fkeys.rkey, 64, 0));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
}

TEST_F(AtomicWriteFlushTest, ReservedSelectivityLevelIsInvalidRequest) {
  // Receive FLUSH psn 100 with selectivity level 2 (reserved) (in-order)
  // Expect: NAK invalid request
  t.rx(flush(100, fva(0), fkeys.rkey, 64, kFlushGlobal, 2));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
}

TEST_F(AtomicWriteFlushTest, FlushWithoutFlushRightsOnTheQpIsInvalidRequest) {
  set_qp_access(kAccessLocalWrite | kAccessRemoteWrite);
  // Receive FLUSH psn 100, global visibility, on a QP without flush rights (in-order)
  // Expect: NAK invalid request
  t.rx(flush(100, fva(0), fkeys.rkey, 64));
  expect_fatal_nak(kNakInvalid, 100, AsyncEventType::kQpReqErr);
}

TEST_F(AtomicWriteFlushTest, ResponderResourcesBoundAtomicWritesAndFlushes) {
  // max_dest_rd_atomic is 4. Receive four ATOMIC_WRITEs and a FLUSH (psn 100..104) before the
  // engine transmits (in-order)
  // Expect: the fifth is not taken (no resource; the requester resends it), four responses
  for (uint32_t i = 0; i < 4; ++i) t.rx(atomic_write(100 + i, t.va(8 * i), t.keys.rkey, 1000 + i));
  t.rx(flush(104, fva(0), fkeys.rkey, 64));
  ASSERT_EQ(t.tx(), 4u);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(t.sink.pop().p.psn, Psn(100 + i));
  // Receive FLUSH psn 104 again (in-order now)
  // Expect: answered, MSN 5
  t.rx(flush(104, fva(0), fkeys.rkey, 64));
  expect_read_zero(104, 5);
}

// ---- Requester ------------------------------------------------------------------------------

class AtomicWriteFlushRequesterTest : public AtomicWriteFlushTest {
 protected:
  Status post(WrOpcode op, uint64_t id, uint64_t raddr, uint32_t rkey, uint64_t value = 0,
              uint32_t flush_len = 0, uint8_t type = kFlushGlobal, uint8_t level = kFlushRange,
              uint32_t flags = kSendSignaled) {
    SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.send_flags = flags;
    w.remote_addr = raddr;
    w.rkey = rkey;
    w.compare_add = value;
    w.flush_len = flush_len;
    w.flush_type = type;
    w.flush_level = level;
    return t.e->post_send(t.qpn, w, t.now);
  }
};

TEST_F(AtomicWriteFlushRequesterTest, FramesCarryTheOperationAndAZeroLengthReadResponseEndsIt) {
  ASSERT_TRUE(post(WrOpcode::kAtomicWrite, 1, 0x10008, 0xabc, 0x0102030405060708ull));
  ASSERT_TRUE(post(WrOpcode::kFlush, 2, 0x20000, 0xdef, 0, 4096, kFlushGlobal, kFlushMr));
  ASSERT_EQ(t.tx(), 2u);
  Captured aw = t.sink.pop(), fl = t.sink.pop();
  EXPECT_EQ(aw.p.opcode, Opcode::kRcAtomicWrite);
  EXPECT_EQ(aw.p.psn, Psn(500));
  EXPECT_EQ(aw.p.reth, (wire::RethValue{0x10008, 0xabc, 8}));
  ASSERT_EQ(aw.p.payload.size(), 8u);
  uint64_t v;
  std::memcpy(&v, aw.p.payload.data(), 8);
  EXPECT_EQ(v, 0x0102030405060708ull);  // the bytes as they lie in memory
  EXPECT_EQ(fl.p.opcode, Opcode::kRcFlush);
  EXPECT_EQ(fl.p.psn, Psn(501));
  EXPECT_EQ(fl.p.feth, (wire::FethValue{kFlushGlobal, kFlushMr}));
  EXPECT_EQ(fl.p.reth, (wire::RethValue{0x20000, 0xdef, 4096}));
  // Receive READ_RESPONSE_ONLY psn 500 and 501, no payload
  // Expect: completions ATOMIC_WRITE (8 bytes) then FLUSH, in order
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, {}, 1));
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 501, {}, 2));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[0].wr_id, 1u);
  EXPECT_EQ(q[0].status, WcStatus::kSuccess);
  EXPECT_EQ(q[0].opcode, WcOpcode::kAtomicWrite);
  EXPECT_EQ(q[0].byte_len, 8u);
  EXPECT_EQ(q[1].wr_id, 2u);
  EXPECT_EQ(q[1].status, WcStatus::kSuccess);
  EXPECT_EQ(q[1].opcode, WcOpcode::kFlush);
}

TEST_F(AtomicWriteFlushRequesterTest, AnAckPastAnUnansweredAtomicWriteResendsIt) {
  ASSERT_TRUE(post(WrOpcode::kAtomicWrite, 1, 0x10008, 0xabc, 7));
  ASSERT_TRUE(t.post_send(WrOpcode::kRdmaWrite, 2, 0, 16));
  ASSERT_EQ(t.tx(), 2u);
  t.sink.pop();
  t.sink.pop();
  // Receive ACK psn 501: covers the WRITE, but the ATOMIC_WRITE's response never came
  // Expect: implied NAK, the ATOMIC_WRITE (psn 500) goes again; nothing completes yet
  t.rx(pb.ack(501));
  EXPECT_TRUE(t.cqes().empty());
  ASSERT_GE(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAtomicWrite);
  EXPECT_EQ(c.p.psn, Psn(500));
  EXPECT_EQ(t.counters.get(Counter::implied_nak_seq_err), 1u);
}

TEST_F(AtomicWriteFlushRequesterTest, AReadResponseWithDataToAFlushIsABadResponse) {
  ASSERT_TRUE(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, 64));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  // Receive READ_RESPONSE_ONLY psn 500 with 8 bytes
  // Expect: BAD_RESP_ERR, QP in ERR
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, std::vector<uint8_t>(8, 1), 1));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].status, WcStatus::kBadRespErr);
  EXPECT_EQ(t.state(), QpState::kErr);
}

TEST_F(AtomicWriteFlushRequesterTest, RemoteAccessErrorNakCompletesTheFlushWithRemAccessErr) {
  ASSERT_TRUE(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, 64, kFlushPersistent));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  t.rx(pb.ack(500, kNakAccess));
  auto q = t.cqes();
  ASSERT_EQ(q.size(), 1u);
  EXPECT_EQ(q[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(q[0].opcode, WcOpcode::kFlush);
}

TEST_F(AtomicWriteFlushRequesterTest, MaxRdAtomicLimitsAtomicWritesAndFlushesInFlight) {
  // max_rd_atomic is 4: four ATOMIC_WRITE/FLUSH go out, the fifth waits for a response.
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(post(WrOpcode::kAtomicWrite, i, 0x10000 + 8 * i, 1));
  ASSERT_TRUE(post(WrOpcode::kFlush, 3, 0x20000, 0xdef, 0, 64));
  ASSERT_TRUE(post(WrOpcode::kAtomicWrite, 4, 0x10020, 1));
  EXPECT_EQ(t.tx(), 4u);
  while (!t.sink.empty()) t.sink.pop();
  t.rx(pb.read_response(Opcode::kRcRdmaReadResponseOnly, 500, {}, 1));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kRcAtomicWrite);
  EXPECT_EQ(c.p.psn, Psn(504));
}

TEST_F(AtomicWriteFlushRequesterTest, UndefinedFlushTypeOrLevelIsRefusedAtPost) {
  EXPECT_EQ(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, 64, 0).code(), EINVAL);
  EXPECT_EQ(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, 64, 4).code(), EINVAL);
  EXPECT_EQ(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, 64, kFlushGlobal, 2).code(), EINVAL);
  EXPECT_EQ(post(WrOpcode::kFlush, 1, 0x20000, 0xdef, 0, (1u << 31) + 1).code(), EINVAL);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_TRUE(t.cqes().empty());
}

// [device] rxe_flush_icrc (EngineConfig::rxe_flush_icrc): Linux rxe's ICRC of an RC FLUSH
// (wire::icrc_compute_rxe_flush(); rxe drops a FLUSH with IBA's).
class RxeFlushIcrcTest : public ::testing::TestWithParam<bool> {
 protected:
  RxeFlushIcrcTest()
      : t(QpType::kRc, nullptr, std::nullopt, LossRecovery::kGoBackN, 0, false, GetParam()) {
    QpAttr a;
    a.qp_access_flags = kEvery;
    EXPECT_TRUE(t.e->modify_qp(t.qpn, a, kAttrAccessFlags));
    region.assign(4096, 0x3c);
    keys =
        t.e->reg_mr(t.pd, reinterpret_cast<uint64_t>(region.data()), region.size(), kEvery).value();
  }
  /// A FLUSH of the whole region at psn, with IBA's ICRC or (rxe) Linux rxe's.
  std::vector<uint8_t> flush(uint32_t psn, bool rxe) {
    wire::FrameSpec s = t.pb.spec(Opcode::kRcFlush, psn, false);
    s.feth = {kFlushGlobal, kFlushMr};
    s.reth = {reinterpret_cast<uint64_t>(region.data()), keys.rkey, 0};
    std::vector<uint8_t> f = t.pb.build(s);
    if (rxe) {
      const std::span<const uint8_t> l3(f.data() + 14, f.size() - 14 - wire::kIcrcLen);
      wire::store_icrc(f.data() + f.size() - wire::kIcrcLen, wire::icrc_compute_rxe_flush(l3, 20));
    }
    return f;
  }
  EngineUnderTest t;
  std::vector<uint8_t> region;
  MrKeys keys;
};

TEST_P(RxeFlushIcrcTest, FlushRequestsCarryRxesIcrcOnlyWhenSetAndOtherFramesIbas) {
  SendWr w;
  w.wr_id = 1;
  w.opcode = WrOpcode::kFlush;
  w.send_flags = kSendSignaled;
  w.remote_addr = 0x20000;
  w.rkey = 0xdef;
  w.flush_len = 64;
  w.flush_type = kFlushGlobal;
  ASSERT_TRUE(t.e->post_send(t.qpn, w, t.now));
  w.wr_id = 2;
  w.opcode = WrOpcode::kAtomicWrite;
  w.remote_addr = 0x20008;
  ASSERT_TRUE(t.e->post_send(t.qpn, w, t.now));
  ASSERT_EQ(t.tx(), 2u);
  const std::vector<uint8_t> fl = t.sink.pop_raw();
  wire::ParsedPacket p;
  ASSERT_EQ(wire::parse_headers(fl, &p), wire::DropReason::kOk);
  EXPECT_EQ(p.opcode, Opcode::kRcFlush);
  EXPECT_EQ(wire::check_icrc(fl, p) == wire::DropReason::kOk, !GetParam());
  EXPECT_EQ(wire::check_icrc_rxe_flush(fl, p) == wire::DropReason::kOk, GetParam());
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kRcAtomicWrite);  // pop() checks IBA's ICRC
}

TEST_P(RxeFlushIcrcTest, ReceivedFlushWithRxesIcrcIsTakenOnlyWhenSetIbasAlways) {
  // Receive FLUSH psn 100 with IBA's ICRC (in-order)
  // Expect: answered (READ_RESPONSE_ONLY, no payload) either way
  t.rx(flush(100, false));
  ASSERT_EQ(t.tx(), 1u);
  EXPECT_EQ(t.sink.pop().p.opcode, Opcode::kRcRdmaReadResponseOnly);
  // Receive FLUSH psn 101 with rxe's ICRC (in-order)
  // Expect: answered when set; else dropped at the gate as a bad ICRC, nothing sent
  const uint64_t bad_before = t.counters.get(wire::drop_counter(wire::DropReason::kBadIcrc));
  t.rx(flush(101, true));
  if (GetParam()) {
    ASSERT_EQ(t.tx(), 1u);
    Captured c = t.sink.pop();
    EXPECT_EQ(c.p.opcode, Opcode::kRcRdmaReadResponseOnly);
    EXPECT_EQ(c.p.psn, Psn(101));
  } else {
    EXPECT_EQ(t.tx(), 0u);
    EXPECT_EQ(t.counters.get(wire::drop_counter(wire::DropReason::kBadIcrc)), bad_before + 1);
  }
  EXPECT_EQ(t.state(), QpState::kRts);
}

INSTANTIATE_TEST_SUITE_P(Setting, RxeFlushIcrcTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& i) {
                           return i.param ? std::string("RxeFlushIcrc") : std::string("Default");
                         });

TEST(AtomicWriteFlushUc, AreRcOperationsOnly) {
  EngineUnderTest u(QpType::kUc);
  SendWr w;
  w.opcode = WrOpcode::kAtomicWrite;
  EXPECT_EQ(u.e->post_send(u.qpn, w, u.now).code(), EINVAL);
  w.opcode = WrOpcode::kFlush;
  w.flush_type = kFlushGlobal;
  EXPECT_EQ(u.e->post_send(u.qpn, w, u.now).code(), EINVAL);
}

}  // namespace
}  // namespace uroce::transport::testing
