/**
 * @file xrc_test.cc
 * @brief XRC (IBA Vol 1 §11.2.5.2, XRCETH §9.3.9): handler-level tests of an XRC_RECV QP
 * (requests naming an XRC SRQ of its domain: receives, RDMA through the SRQ's PD, the XRC
 * responses; a bad XRCETH NAKed with nothing written) and of an XRC_SEND QP (its frames and
 * completions), the engine's control checks, and XRC traffic between two engines over a
 * lossy link (go-back-N).
 * Comment grammar (eRPC): "Receive X (in-order|duplicate)" / "Expect: ...".
 */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/packet_builder.h"

namespace uroce::transport::testing {
namespace {

using wire::Opcode;

constexpr uint8_t kAck = 0x1f;
constexpr uint8_t kNakInvalid = 0x60 | 1;
constexpr uint8_t kNakAccess = 0x60 | 2;

/// Brings an XRC QP to RTS towards peer_qpn (the masks ibv_modify_qp(3) and the kernel ask of
/// XRC_SEND and XRC_RECV).
void xrc_to_rts(Engine& e, uint32_t qpn, QpType type, const AddressVector& av, uint32_t peer_qpn,
                uint32_t rq_psn, uint32_t sq_psn) {
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qp_access_flags =
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags));
  a.qp_state = QpState::kRtr;
  a.av = av;
  a.path_mtu = 3;  // 1024
  a.dest_qp_num = peer_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 5;
  uint32_t m = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
  if (type == QpType::kXrcRecv) m |= kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
  ASSERT_TRUE(e.modify_qp(qpn, a, m));
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  a.timeout = 12;
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.max_rd_atomic = 4;
  m = kAttrState | kAttrSqPsn | kAttrTimeout;
  if (type == QpType::kXrcSend) m |= kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
  ASSERT_TRUE(e.modify_qp(qpn, a, m));
}

/// One engine with an XRC_RECV QP (domain `xrcd`) and an XRC_SEND QP, both in RTS towards a
/// PacketBuilder peer; XRC SRQ `srq` of the domain completing on `rcq`, protected by PD `pd`
/// (where EngineUnderTest's region is); a second domain with its SRQ `other_srq`, and a basic
/// SRQ `basic_srq`. The XRC_RECV QP expects PSN 100, the XRC_SEND QP starts at PSN 500.
class XrcTest : public ::testing::Test {
 protected:
  XrcTest() {
    Engine& e = *t.e;
    xrcd = e.alloc_xrcd().value();
    other_xrcd = e.alloc_xrcd().value();
    rcq = e.create_cq(64).value();
    srq = e.create_xrc_srq(t.pd, xrcd, rcq, 16, 2, 0).value();
    other_srq = e.create_xrc_srq(t.pd, other_xrcd, rcq, 16, 2, 0).value();
    basic_srq = e.create_srq(t.pd, 16, 2, 0).value();
    QpInitAttr ia;
    ia.type = QpType::kXrcRecv;
    ia.xrcd = xrcd;
    recv_qpn = e.create_qp(ia).value();
    QpInitAttr sa;
    sa.type = QpType::kXrcSend;
    sa.pd = t.pd;
    sa.send_cq = t.cq;
    sa.max_send_wr = 16;
    sa.max_send_sge = 2;
    send_qpn = e.create_qp(sa).value();
    AddressVector av;
    av.dgid = Gid::from_ipv4(0xc6120001u);
    xrc_to_rts(e, recv_qpn, QpType::kXrcRecv, av, 0x321, 100, 700);
    xrc_to_rts(e, send_qpn, QpType::kXrcSend, av, 0x456, 900, 500);
    to_recv = PacketBuilder(t.neigh.peer, MacAddr{{0x02, 0, 0, 0, 0, 0x02}},
                            Gid::from_ipv4(0xc6120001u), Gid::from_ipv4(0xc6120002u), recv_qpn);
    to_send = PacketBuilder(t.neigh.peer, MacAddr{{0x02, 0, 0, 0, 0, 0x02}},
                            Gid::from_ipv4(0xc6120001u), Gid::from_ipv4(0xc6120002u), send_qpn);
  }
  /// Posts a receive of len bytes at offset off of the region to SRQ s.
  void post_srq(uint32_t s, uint64_t id, size_t off, uint32_t len) {
    Sge sg{t.va(off), len, t.keys.lkey};
    RecvWr r;
    r.wr_id = id;
    r.sg = &sg;
    r.num_sge = 1;
    ASSERT_TRUE(t.e->post_srq_recv(s, r));
  }
  /// An XRC SEND packet to the XRC_RECV QP naming SRQ number srqn.
  std::vector<uint8_t> send(Opcode op, uint32_t psn, uint32_t srqn,
                            const std::vector<uint8_t>& payload, bool ackreq = true) {
    wire::FrameSpec s = to_recv.spec(op, psn, ackreq);
    s.xrc_srqn = srqn;
    return to_recv.build(s, payload);
  }
  std::vector<Cqe> poll(uint32_t cq) {
    Cqe c[16];
    size_t n = t.e->poll_cq(cq, c);
    return {c, c + n};
  }
  QpState state(uint32_t qpn) {
    QpAttr a;
    t.e->query_qp(qpn, &a, nullptr);
    return a.qp_state;
  }
  /// The one frame sent: an XRC ACK/NAK with syndrome for psn.
  void expect_xrc_ack(uint8_t syndrome, uint32_t psn) {
    ASSERT_EQ(t.tx(), 1u);
    Captured c = t.sink.pop();
    EXPECT_EQ(c.p.opcode, Opcode::kXrcAcknowledge);
    EXPECT_EQ(c.p.dest_qpn, Qpn(0x321));
    EXPECT_EQ(c.p.aeth.syndrome, syndrome);
    EXPECT_EQ(c.p.psn, Psn(psn));
  }
  /// A SEND naming srqn is refused: NAK invalid request, QP to ERR, nothing written, no
  /// completion.
  void expect_refused(uint32_t srqn) {
    post_srq(srq, 1, 0, 256);
    post_srq(other_srq, 2, 256, 256);
    post_srq(basic_srq, 3, 512, 256);
    const std::vector<uint8_t> before = t.backing;
    t.rx(send(Opcode::kXrcSendOnly, 100, srqn, std::vector<uint8_t>(64, 0x77)));
    expect_xrc_ack(kNakInvalid, 100);
    EXPECT_EQ(state(recv_qpn), QpState::kErr);
    EXPECT_TRUE(t.observer.saw(AsyncEventType::kQpReqErr, recv_qpn));
    EXPECT_EQ(t.backing, before);
    EXPECT_TRUE(poll(rcq).empty());
    EXPECT_EQ(t.counters.get(Counter::resp_remote_invalid_request), 1u);
  }

  EngineUnderTest t;
  uint32_t xrcd = 0, other_xrcd = 0, rcq = 0, srq = 0, other_srq = 0, basic_srq = 0;
  uint32_t recv_qpn = 0, send_qpn = 0;
  PacketBuilder to_recv, to_send;
};

// ---- XRC_RECV: the responder ----------------------------------------------------------------

TEST_F(XrcTest, SendLandsInTheNamedSrqAndCompletesOnItsCq) {
  post_srq(srq, 11, 1024, 4096);
  std::vector<uint8_t> first(1024), last(300);
  fill_pattern(first.data(), first.size(), 3);
  fill_pattern(last.data(), last.size(), 4);
  // Receive XRC_SEND_FIRST psn 100 and XRC_SEND_LAST_WITH_IMMEDIATE psn 101 naming `srq`
  // Expect: 1324 bytes in the SRQ's WQE, one XRC_ACKNOWLEDGE psn 101, a receive completion on
  // the SRQ's CQ naming the XRC_RECV QP
  t.rx(send(Opcode::kXrcSendFirst, 100, srq, first, false));
  wire::FrameSpec s = to_recv.spec(Opcode::kXrcSendLastWithImmediate, 101, true);
  s.xrc_srqn = srq;
  s.imm = 0x01020304;
  t.rx(to_recv.build(s, last));
  expect_xrc_ack(kAck, 101);
  EXPECT_EQ(std::memcmp(t.mem() + 1024, first.data(), first.size()), 0);
  EXPECT_EQ(std::memcmp(t.mem() + 2048, last.data(), last.size()), 0);
  const auto c = poll(rcq);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 11u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(c[0].byte_len, 1324u);
  EXPECT_EQ(c[0].qp_num, recv_qpn);
  EXPECT_EQ(c[0].wc_flags, uint32_t{kWcWithImm});
  EXPECT_TRUE(poll(t.cq).empty());
  EXPECT_EQ(state(recv_qpn), QpState::kRts);
  // Receive XRC_SEND_ONLY psn 101 again (duplicate)
  // Expect: re-ACKed, no WQE taken
  t.rx(send(Opcode::kXrcSendOnly, 101, srq, last));
  expect_xrc_ack(kAck, 101);
  EXPECT_TRUE(t.canaries_intact());
}

TEST_F(XrcTest, SendWithAnEmptySrqIsRnrNaked) {
  // Receive XRC_SEND_ONLY psn 100 naming `srq`, which has no WQE
  // Expect: an XRC RNR NAK for psn 100, the QP stays in RTS
  t.rx(send(Opcode::kXrcSendOnly, 100, srq, std::vector<uint8_t>(8, 1)));
  expect_xrc_ack(0x20 | 5, 100);
  EXPECT_EQ(state(recv_qpn), QpState::kRts);
  EXPECT_EQ(t.counters.get(Counter::out_of_buffer), 1u);
}

TEST_F(XrcTest, SendToAnSrqOfAnotherDomainIsInvalidRequest) { expect_refused(other_srq); }

TEST_F(XrcTest, SendToANonexistentSrqIsInvalidRequest) { expect_refused(0x123456); }

TEST_F(XrcTest, SendToABasicSrqIsInvalidRequest) { expect_refused(basic_srq); }

TEST_F(XrcTest, ALaterPacketNamingAnotherSrqIsInvalidRequest) {
  post_srq(srq, 1, 0, 4096);
  uint32_t third = t.e->create_xrc_srq(t.pd, xrcd, rcq, 4, 1, 0).value();
  post_srq(third, 2, 8192, 4096);
  // Receive XRC_SEND_FIRST psn 100 naming `srq`, XRC_SEND_LAST psn 101 naming `third` (same
  // domain)
  // Expect: NAK invalid request for 101; the WQE of `srq` completes in error, `third` keeps its
  // WQE and nothing lands there
  t.rx(send(Opcode::kXrcSendFirst, 100, srq, std::vector<uint8_t>(1024, 1), false));
  const std::vector<uint8_t> before(t.mem() + 8192, t.mem() + 8192 + 64);
  t.rx(send(Opcode::kXrcSendLast, 101, third, std::vector<uint8_t>(64, 2)));
  expect_xrc_ack(kNakInvalid, 101);
  EXPECT_EQ(state(recv_qpn), QpState::kErr);
  EXPECT_EQ(std::vector<uint8_t>(t.mem() + 8192, t.mem() + 8192 + 64), before);
  const auto c = poll(rcq);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 1u);
  EXPECT_NE(c[0].status, WcStatus::kSuccess);
}

TEST_F(XrcTest, RdmaIsCheckedAgainstTheNamedSrqsPd) {
  // A region of another PD, and an SRQ of the domain on that PD.
  uint32_t pd2 = t.e->alloc_pd().value();
  std::vector<uint8_t> other(4096, 0x11);
  MrKeys k2 = t.e->reg_mr(pd2, reinterpret_cast<uint64_t>(other.data()), other.size(), 0xf).value();
  uint32_t srq2 = t.e->create_xrc_srq(pd2, xrcd, rcq, 4, 1, 0).value();
  // Receive XRC_RDMA_WRITE_ONLY psn 100 naming srq2 into pd2's region
  // Expect: written, XRC ACK
  wire::FrameSpec s = to_recv.spec(Opcode::kXrcRdmaWriteOnly, 100, true);
  s.xrc_srqn = srq2;
  s.reth = {reinterpret_cast<uint64_t>(other.data()) + 8, k2.rkey, 16};
  t.rx(to_recv.build(s, std::vector<uint8_t>(16, 0x99)));
  expect_xrc_ack(kAck, 100);
  EXPECT_EQ(other[8], 0x99);
  EXPECT_EQ(other[23], 0x99);
  EXPECT_EQ(other[24], 0x11);
  // Receive XRC_RDMA_READ_REQUEST psn 101 naming `srq` (the region's PD) for 64 bytes
  // Expect: an XRC_RDMA_READ_RESPONSE_ONLY with the bytes
  wire::FrameSpec r = to_recv.spec(Opcode::kXrcRdmaReadRequest, 101, false);
  r.xrc_srqn = srq;
  r.reth = {t.va(128), t.keys.rkey, 64};
  t.rx(to_recv.build(r));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kXrcRdmaReadResponseOnly);
  EXPECT_EQ(c.p.psn, Psn(101));
  ASSERT_EQ(c.p.payload.size(), 64u);
  EXPECT_EQ(std::memcmp(c.p.payload.data(), t.mem() + 128, 64), 0);
  // Receive XRC_RDMA_WRITE_ONLY psn 102 naming srq2 (pd2) into the region of `srq`'s PD
  // Expect: NAK remote access error, nothing written
  const std::vector<uint8_t> before = t.backing;
  s = to_recv.spec(Opcode::kXrcRdmaWriteOnly, 102, true);
  s.xrc_srqn = srq2;
  s.reth = {t.va(0), t.keys.rkey, 16};
  t.rx(to_recv.build(s, std::vector<uint8_t>(16, 0x55)));
  expect_xrc_ack(kNakAccess, 102);
  EXPECT_EQ(t.backing, before);
  EXPECT_EQ(state(recv_qpn), QpState::kErr);
}

TEST_F(XrcTest, AtomicIsAnsweredWithAnXrcAtomicAck) {
  uint64_t v = 40;
  std::memcpy(t.mem() + 64, &v, 8);
  // Receive XRC_FETCH_ADD psn 100 naming `srq`, add 2
  // Expect: XRC_ATOMIC_ACKNOWLEDGE with 40, memory 42
  wire::FrameSpec s = to_recv.spec(Opcode::kXrcFetchAdd, 100, false);
  s.xrc_srqn = srq;
  s.atomic_eth = {t.va(64), t.keys.rkey, 2, 0};
  t.rx(to_recv.build(s));
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, Opcode::kXrcAtomicAcknowledge);
  EXPECT_EQ(c.p.atomic_ack_orig, 40u);
  std::memcpy(&v, t.mem() + 64, 8);
  EXPECT_EQ(v, 42u);
}

TEST_F(XrcTest, RcOpcodesAreNotForAnXrcQpNorXrcOnesForAnRcQp) {
  post_srq(srq, 1, 0, 256);
  // Receive RC_SEND_ONLY psn 100 on the XRC_RECV QP, XRC_SEND_ONLY psn 100 on the RC QP
  // Expect: both dropped (rx_bad_qp_state), nothing sent, nothing completed
  t.rx(to_recv.build(to_recv.spec(Opcode::kRcSendOnly, 100), std::vector<uint8_t>(8, 1)));
  wire::FrameSpec s = t.pb.spec(Opcode::kXrcSendOnly, 100);
  s.xrc_srqn = srq;
  t.rx(t.pb.build(s, std::vector<uint8_t>(8, 1)));
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_EQ(t.counters.get(Counter::rx_bad_qp_state), 2u);
  EXPECT_TRUE(poll(rcq).empty());
}

TEST_F(XrcTest, TruncatedXrcethIsDroppedAsMalformed) {
  post_srq(srq, 1, 0, 256);
  // An XRC_SEND_ONLY whose transport part is a bare BTH and the ICRC: the 4 bytes its XRCETH
  // needs are not there (an RC_SEND_ONLY without payload, its opcode rewritten)
  // Expect: dropped at the gate, counted in rx_malformed, nothing sent, no WQE taken
  std::vector<uint8_t> f = to_recv.build(to_recv.spec(Opcode::kRcSendOnly, 100));
  const size_t bth = 14 + 20 + 8;  // Ethernet, IPv4, UDP
  ASSERT_EQ(f.size(), bth + 12 + 4);
  f[bth] = static_cast<uint8_t>(Opcode::kXrcSendOnly);
  wire::ParsedPacket p;
  EXPECT_EQ(wire::parse(f, &p), wire::DropReason::kHeaderTruncated);
  t.rx(f);
  EXPECT_EQ(t.counters.get(Counter::rx_malformed), 1u);
  EXPECT_EQ(t.tx(), 0u);
  EXPECT_TRUE(poll(rcq).empty());
}

// ---- XRC_SEND: the requester ----------------------------------------------------------------

TEST_F(XrcTest, XrcSendNamesTheRemoteSrqInEveryRequestPacket) {
  Sge sg{t.va(0), 1500, t.keys.lkey};
  SendWr w;
  w.wr_id = 7;
  w.opcode = WrOpcode::kSend;
  w.send_flags = kSendSignaled;
  w.sg = &sg;
  w.num_sge = 1;
  w.xrc_srqn = 0xabcdef;
  ASSERT_TRUE(t.e->post_send(send_qpn, w, t.now));
  // Expect: XRC_SEND_FIRST psn 500 and XRC_SEND_LAST psn 501 to QP 0x456, both with XRCETH
  // 0xabcdef
  ASSERT_EQ(t.tx(), 2u);
  Captured a = t.sink.pop(), b = t.sink.pop();
  EXPECT_EQ(a.p.opcode, Opcode::kXrcSendFirst);
  EXPECT_EQ(b.p.opcode, Opcode::kXrcSendLast);
  EXPECT_EQ(a.p.xrc_srqn, 0xabcdefu);
  EXPECT_EQ(b.p.xrc_srqn, 0xabcdefu);
  EXPECT_EQ(a.p.dest_qpn, Qpn(0x456));
  EXPECT_EQ(a.p.psn, Psn(500));
  EXPECT_EQ(b.p.payload.size(), 476u);
  // Receive XRC_ACKNOWLEDGE psn 501
  // Expect: the WR completes on the send CQ
  wire::FrameSpec ack = to_send.spec(Opcode::kXrcAcknowledge, 501, false);
  ack.aeth.syndrome = kAck;
  t.rx(to_send.build(ack));
  const auto c = poll(t.cq);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].wr_id, 7u);
  EXPECT_EQ(c[0].status, WcStatus::kSuccess);
  EXPECT_EQ(c[0].qp_num, send_qpn);
}

TEST_F(XrcTest, InvalidRequestNakFailsTheWrWithRemInvReqErr) {
  Sge sg{t.va(0), 8, t.keys.lkey};
  SendWr w;
  w.wr_id = 9;
  w.opcode = WrOpcode::kSend;
  w.send_flags = kSendSignaled;
  w.sg = &sg;
  w.num_sge = 1;
  w.xrc_srqn = 0x999;
  ASSERT_TRUE(t.e->post_send(send_qpn, w, t.now));
  ASSERT_EQ(t.tx(), 1u);
  t.sink.pop();
  // Receive an XRC NAK invalid request for psn 500
  // Expect: REM_INV_REQ_ERR, the XRC_SEND QP in ERR
  wire::FrameSpec nak = to_send.spec(Opcode::kXrcAcknowledge, 500, false);
  nak.aeth.syndrome = kNakInvalid;
  t.rx(to_send.build(nak));
  const auto c = poll(t.cq);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(state(send_qpn), QpState::kErr);
}

TEST_F(XrcTest, ReadAndAtomicGoAsXrcRequests) {
  Sge sg{t.va(0), 64, t.keys.lkey};
  SendWr w;
  w.opcode = WrOpcode::kRdmaRead;
  w.sg = &sg;
  w.num_sge = 1;
  w.remote_addr = 0x1000;
  w.rkey = 0x77;
  w.xrc_srqn = 5;
  ASSERT_TRUE(t.e->post_send(send_qpn, w, t.now));
  Sge sg8{t.va(64), 8, t.keys.lkey};
  w.opcode = WrOpcode::kAtomicCmpAndSwp;
  w.sg = &sg8;
  ASSERT_TRUE(t.e->post_send(send_qpn, w, t.now));
  ASSERT_EQ(t.tx(), 2u);
  Captured r = t.sink.pop(), a = t.sink.pop();
  EXPECT_EQ(r.p.opcode, Opcode::kXrcRdmaReadRequest);
  EXPECT_EQ(r.p.xrc_srqn, 5u);
  EXPECT_EQ(r.p.reth.dma_len, 64u);
  EXPECT_EQ(a.p.opcode, Opcode::kXrcCompareSwap);
  EXPECT_EQ(a.p.xrc_srqn, 5u);
}

// ---- Control path ---------------------------------------------------------------------------

TEST_F(XrcTest, ControlPathChecks) {
  Engine& e = *t.e;
  // A domain in use by an SRQ or a QP cannot go; an unknown one is ENOENT.
  EXPECT_EQ(e.dealloc_xrcd(xrcd).code(), EBUSY);
  EXPECT_EQ(e.dealloc_xrcd(12345).code(), ENOENT);
  uint32_t empty = e.alloc_xrcd().value();
  EXPECT_TRUE(e.dealloc_xrcd(empty));
  EXPECT_EQ(e.dealloc_xrcd(empty).code(), ENOENT);
  // An XRC SRQ needs a live domain and CQ; its CQ cannot be destroyed under it.
  EXPECT_EQ(e.create_xrc_srq(t.pd, empty, rcq, 4, 1, 0).status().code(), ENOENT);
  EXPECT_EQ(e.create_xrc_srq(t.pd, xrcd, 999, 4, 1, 0).status().code(), ENOENT);
  EXPECT_EQ(e.destroy_cq(rcq).code(), EBUSY);
  // An XRC_RECV QP needs a domain.
  QpInitAttr ia;
  ia.type = QpType::kXrcRecv;
  EXPECT_EQ(e.create_qp(ia).status().code(), ENOENT);
  // No receive queue on either XRC QP, no send queue on XRC_RECV, no FLUSH or ATOMIC WRITE
  // over XRC.
  Sge sg{t.va(0), 8, t.keys.lkey};
  RecvWr rw;
  rw.sg = &sg;
  rw.num_sge = 1;
  EXPECT_EQ(e.post_recv(recv_qpn, rw).code(), EINVAL);
  EXPECT_EQ(e.post_recv(send_qpn, rw).code(), EINVAL);
  SendWr w;
  w.sg = &sg;
  w.num_sge = 1;
  EXPECT_EQ(e.post_send(recv_qpn, w, t.now).code(), EINVAL);
  w.opcode = WrOpcode::kAtomicWrite;
  EXPECT_EQ(e.post_send(send_qpn, w, t.now).code(), EINVAL);
  w.opcode = WrOpcode::kFlush;
  w.flush_type = kFlushGlobal;
  EXPECT_EQ(e.post_send(send_qpn, w, t.now).code(), EINVAL);
  // XRC QPs stay go-back-N.
  EXPECT_EQ(e.set_selective_repeat(send_qpn, true).code(), EINVAL);
  // Once the QP and SRQs are gone the domain goes.
  ASSERT_TRUE(e.destroy_qp(recv_qpn));
  EXPECT_EQ(e.dealloc_xrcd(xrcd).code(), EBUSY);  // its SRQ
  ASSERT_TRUE(e.destroy_srq(srq));
  EXPECT_TRUE(e.dealloc_xrcd(xrcd));
  ASSERT_TRUE(e.destroy_srq(other_srq));
  EXPECT_TRUE(e.destroy_cq(rcq));
}

// ---- Two engines ----------------------------------------------------------------------------

TEST(XrcTwoEngines, SendsWritesAndReadsArriveOverALossyLink) {
  TwoEngines net(7);
  net.link(0).loss = 0.05;
  net.link(1).loss = 0.05;
  Engine& ea = *net.a().engine;
  Engine& eb = *net.b().engine;
  // A: an XRC_SEND QP. B: a domain, an XRC SRQ on its receive CQ, an XRC_RECV QP.
  QpInitAttr sa;
  sa.type = QpType::kXrcSend;
  sa.pd = net.a().pd;
  sa.send_cq = net.a().scq;
  sa.max_send_wr = 256;
  sa.max_send_sge = 1;
  const uint32_t sq = ea.create_qp(sa).value();
  const uint32_t xrcd = eb.alloc_xrcd().value();
  const uint32_t srq = eb.create_xrc_srq(net.b().pd, xrcd, net.b().rcq, 256, 1, 0).value();
  QpInitAttr ra;
  ra.type = QpType::kXrcRecv;
  ra.xrcd = xrcd;
  const uint32_t rq = eb.create_qp(ra).value();
  xrc_to_rts(ea, sq, QpType::kXrcSend, net.av_to_peer(0), rq, 0, 1000);
  xrc_to_rts(eb, rq, QpType::kXrcRecv, net.av_to_peer(1), sq, 1000, 0);

  constexpr uint32_t kMsgs = 40, kLen = 3000;
  std::vector<uint8_t> src(kMsgs * kLen), dst(kMsgs * kLen, 0), wdst(kLen, 0), rsrc(kLen);
  fill_pattern(src.data(), src.size(), 21);
  fill_pattern(rsrc.data(), rsrc.size(), 22);
  std::vector<uint8_t> rdst(kLen, 0);
  const MrKeys ka =
      ea.reg_mr(net.a().pd, reinterpret_cast<uint64_t>(src.data()), src.size(), 0xf).value();
  const MrKeys kr =
      ea.reg_mr(net.a().pd, reinterpret_cast<uint64_t>(rdst.data()), rdst.size(), 0xf).value();
  const MrKeys kb =
      eb.reg_mr(net.b().pd, reinterpret_cast<uint64_t>(dst.data()), dst.size(), 0xf).value();
  const MrKeys kw =
      eb.reg_mr(net.b().pd, reinterpret_cast<uint64_t>(wdst.data()), wdst.size(), 0xf).value();
  const MrKeys krs =
      eb.reg_mr(net.b().pd, reinterpret_cast<uint64_t>(rsrc.data()), rsrc.size(), 0xf).value();
  for (uint32_t i = 0; i < kMsgs; ++i) {
    Sge sg{reinterpret_cast<uint64_t>(dst.data()) + i * kLen, kLen, kb.lkey};
    RecvWr r;
    r.wr_id = i;
    r.sg = &sg;
    r.num_sge = 1;
    ASSERT_TRUE(eb.post_srq_recv(srq, r));
  }
  for (uint32_t i = 0; i < kMsgs; ++i) {
    Sge sg{reinterpret_cast<uint64_t>(src.data()) + i * kLen, kLen, ka.lkey};
    SendWr w;
    w.wr_id = i;
    w.opcode = WrOpcode::kSend;
    w.send_flags = kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    w.xrc_srqn = srq;
    ASSERT_TRUE(ea.post_send(sq, w, net.now()));
  }
  Sge wsg{reinterpret_cast<uint64_t>(src.data()), kLen, ka.lkey};
  SendWr w;
  w.wr_id = 100;
  w.opcode = WrOpcode::kRdmaWrite;
  w.send_flags = kSendSignaled;
  w.sg = &wsg;
  w.num_sge = 1;
  w.remote_addr = reinterpret_cast<uint64_t>(wdst.data());
  w.rkey = kw.rkey;
  w.xrc_srqn = srq;
  ASSERT_TRUE(ea.post_send(sq, w, net.now()));
  Sge rsg{reinterpret_cast<uint64_t>(rdst.data()), kLen, kr.lkey};
  w.wr_id = 101;
  w.opcode = WrOpcode::kRdmaRead;
  w.sg = &rsg;
  w.remote_addr = reinterpret_cast<uint64_t>(rsrc.data());
  w.rkey = krs.rkey;
  ASSERT_TRUE(ea.post_send(sq, w, net.now()));

  std::vector<Cqe> sent, got;
  ASSERT_TRUE(net.run_until([&] {
    Cqe c[64];
    size_t n = ea.poll_cq(net.a().scq, c);
    sent.insert(sent.end(), c, c + n);
    n = eb.poll_cq(net.b().rcq, c);
    got.insert(got.end(), c, c + n);
    return sent.size() == kMsgs + 2 && got.size() == kMsgs;
  }));
  for (uint32_t i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(sent[i].status, WcStatus::kSuccess);
    EXPECT_EQ(sent[i].wr_id, i);
    EXPECT_EQ(got[i].status, WcStatus::kSuccess);
    EXPECT_EQ(got[i].wr_id, i);
    EXPECT_EQ(got[i].byte_len, kLen);
    EXPECT_EQ(got[i].qp_num, rq);
  }
  EXPECT_EQ(sent[kMsgs].status, WcStatus::kSuccess);
  EXPECT_EQ(sent[kMsgs + 1].status, WcStatus::kSuccess);
  EXPECT_EQ(dst, src);
  EXPECT_EQ(std::memcmp(wdst.data(), src.data(), kLen), 0);
  EXPECT_EQ(rdst, rsrc);
  EXPECT_GT(net.stats().dropped[0] + net.stats().dropped[1], 0u);
}

}  // namespace
}  // namespace uroce::transport::testing
