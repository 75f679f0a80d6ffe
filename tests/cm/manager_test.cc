/**
 * @file manager_test.cc
 * @brief cm::Manager (lib/cm/manager.h): an active and a passive manager joined by an
 * in-memory MAD queue that can lose chosen MADs, time injected. Connect / accept / RTU,
 * rejects (by the application, for a service nobody listens on), every lost message of the
 * three-way handshake, retries running out, MRA, disconnect both ways, a DREQ for a
 * connection that is gone, an XRC connection (the target QPN as the REP's EECN), malformed MADs, a
 * port shared by several processes (silent on MADs for another process).
 */
#include "cm/manager.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>

namespace uroce::cm {
namespace {

namespace w = wire::cm;

constexpr uint64_t kService = 0x0000000001064321ull;

Gid gid_of(uint8_t last) {
  Gid g{};
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = 198;
  g.raw[13] = 18;
  g.raw[15] = last;
  return g;
}

/// Two managers (A active at .1, B passive at .2) and the MADs in flight between them.
struct Link {
  struct Mad {
    Gid src, dst;
    std::array<uint8_t, w::kMadLen> bytes;
  };
  std::deque<Mad> wire;
  std::function<bool(const Mad&)> drop = [](const Mad&) { return false; };
  std::vector<w::AttrId> sent;  ///< every MAD sent, in order
  Timestamp now{1'000'000};
  Config cfg_a{.ca_guid = 0xa, .first_comm_id = 100}, cfg_b{.ca_guid = 0xb, .first_comm_id = 900};
  Manager a{cfg_a, sender(gid_of(1))};
  Manager b{cfg_b, sender(gid_of(2))};

  Manager::Send sender(Gid src) {
    return [this, src](const Gid& dst, std::span<const uint8_t, w::kMadLen> m) {
      Mad mad{src, dst, {}};
      std::copy(m.begin(), m.end(), mad.bytes.begin());
      auto parsed = w::parse_cm_mad(mad.bytes);
      EXPECT_TRUE(parsed) << "a manager sent a MAD its own parser refuses";
      if (parsed) sent.push_back(w::attr_of(parsed->msg));
      wire.push_back(mad);
    };
  }
  /// Delivers everything in flight (and what the answers send), minus what `drop` takes.
  void deliver() {
    while (!wire.empty()) {
      Mad m = wire.front();
      wire.pop_front();
      if (drop(m)) continue;
      (m.dst == gid_of(1) ? a : b).on_mad(m.src, m.bytes, now);
    }
  }
  void advance(Duration d) {
    now = now + d;
    a.on_timer(now);
    b.on_timer(now);
    deliver();
  }
  static w::AttrId attr(const Mad& m) { return w::attr_of(w::parse_cm_mad(m.bytes)->msg); }

  ConnectParams req() const {
    ConnectParams p;
    p.local = gid_of(1);
    p.remote = gid_of(2);
    p.service_id = kService;
    p.qpn = 0x11;
    p.starting_psn = 0x1234;
    p.responder_resources = 4;
    p.initiator_depth = 4;
    p.private_data[0] = 0x5a;
    return p;
  }
  AcceptParams rep() const {
    AcceptParams p;
    p.qpn = 0x22;
    p.starting_psn = 0x4321;
    p.private_data[0] = 0xa5;
    return p;
  }
};

Event next(Manager& m) {
  auto e = m.poll_event();
  EXPECT_TRUE(e);
  return e ? *e : Event{};
}

/// Runs connect -> accept -> RTU; returns (A's, B's) connection IDs.
std::pair<uint32_t, uint32_t> establish(Link& l) {
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  EXPECT_EQ(req.type, EventType::kConnectRequest);
  EXPECT_TRUE(l.b.accept(req.conn, l.rep(), l.now));
  l.deliver();
  Event rep = next(l.a);
  EXPECT_EQ(rep.type, EventType::kConnectResponse);
  EXPECT_TRUE(l.a.ready_to_use(ca, l.now));
  l.deliver();
  Event est = next(l.b);
  EXPECT_EQ(est.type, EventType::kEstablished);
  return {ca, req.conn};
}

TEST(CmManager, ConnectAcceptRtuCarriesQpsPsnsAndPrivateData) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  EXPECT_EQ(l.b.listen(kService).code(), EADDRINUSE);
  uint32_t ca = l.a.connect(l.req(), l.now);
  EXPECT_EQ(ca, 100u);
  l.deliver();
  Event req = next(l.b);
  ASSERT_EQ(req.type, EventType::kConnectRequest);
  ASSERT_TRUE(req.req);
  EXPECT_EQ(req.peer, gid_of(1));
  EXPECT_EQ(req.req->local_qpn, 0x11u);
  EXPECT_EQ(req.req->starting_psn, 0x1234u);
  EXPECT_EQ(req.req->local_comm_id, ca);
  EXPECT_EQ(req.req->primary.remote_gid, gid_of(2));
  EXPECT_EQ(req.req->private_data[0], 0x5a);
  ASSERT_TRUE(l.b.accept(req.conn, l.rep(), l.now));
  EXPECT_FALSE(l.b.accept(req.conn, l.rep(), l.now)) << "a second accept";
  l.deliver();
  Event rep = next(l.a);
  ASSERT_EQ(rep.type, EventType::kConnectResponse);
  EXPECT_EQ(rep.conn, ca);
  EXPECT_EQ(rep.rep->local_qpn, 0x22u);
  EXPECT_EQ(rep.rep->starting_psn, 0x4321u);
  EXPECT_EQ(rep.rep->remote_comm_id, ca);
  EXPECT_EQ(rep.rep->local_ca_guid, 0xbu);
  EXPECT_EQ(rep.rep->private_data[0], 0xa5);
  ASSERT_TRUE(l.a.ready_to_use(ca, l.now));
  l.deliver();
  Event est = next(l.b);
  EXPECT_EQ(est.type, EventType::kEstablished);
  EXPECT_EQ(est.conn, req.conn);
  EXPECT_EQ(l.sent, (std::vector{w::AttrId::kReq, w::AttrId::kRep, w::AttrId::kRtu}));
  EXPECT_FALSE(l.a.poll_event());
  EXPECT_FALSE(l.b.poll_event());
  EXPECT_TRUE(l.a.next_deadline().is_never()) << "nothing left to resend";
  EXPECT_TRUE(l.b.next_deadline().is_never());
}

/// The DREQ in flight (the last MAD sent).
w::Dreq dreq_in_flight(const Link& l) {
  auto m = w::parse_cm_mad(l.wire.back().bytes);
  EXPECT_TRUE(m && std::holds_alternative<w::Dreq>(m->msg));
  return m && std::holds_alternative<w::Dreq>(m->msg) ? std::get<w::Dreq>(m->msg) : w::Dreq{};
}

TEST(CmManager, XrcConnectionCarriesTheTargetQpnAsTheEecn) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  ConnectParams cp = l.req();
  cp.xrc = true;
  cp.srq = true;
  uint32_t ca = l.a.connect(cp, l.now);
  l.deliver();
  Event req = next(l.b);
  ASSERT_EQ(req.type, EventType::kConnectRequest);
  // An initiator's REQ, as Linux's cm_format_req writes it for IB_QPT_XRC_INI.
  EXPECT_TRUE(w::is_xrc(*req.req));
  EXPECT_EQ(req.req->local_qpn, 0x11u);
  EXPECT_EQ(req.req->initiator_depth, 4);
  EXPECT_EQ(req.req->responder_resources, 0);
  EXPECT_EQ(req.req->retry_count, 0);
  EXPECT_EQ(req.req->rnr_retry_count, 0);
  EXPECT_FALSE(req.req->srq);
  AcceptParams ap = l.rep();
  ap.initiator_depth = 3;
  ap.responder_resources = 4;
  ap.flow_control = true;
  ASSERT_TRUE(l.b.accept(req.conn, ap, l.now));
  l.deliver();
  Event rep = next(l.a);
  ASSERT_EQ(rep.type, EventType::kConnectResponse);
  // The target's answer, as cm_format_rep writes it for IB_QPT_XRC_TGT.
  EXPECT_EQ(rep.rep->local_qpn, 0u);
  EXPECT_EQ(rep.rep->local_eecn, 0x22u);
  EXPECT_TRUE(rep.rep->srq);
  EXPECT_EQ(rep.rep->initiator_depth, 0);
  EXPECT_FALSE(rep.rep->end_to_end_flow_control);
  EXPECT_EQ(rep.rep->responder_resources, 4);
  EXPECT_EQ(rep.rep->starting_psn, 0x4321u);
  ASSERT_TRUE(l.a.ready_to_use(ca, l.now));
  l.deliver();
  EXPECT_EQ(next(l.b).type, EventType::kEstablished);
  // Each side's DREQ names the other's QP: the target's (the EECN) and the initiator's.
  ASSERT_TRUE(l.a.disconnect(ca, l.now));
  EXPECT_EQ(dreq_in_flight(l).remote_qpn, 0x22u);
  ASSERT_TRUE(l.b.disconnect(req.conn, l.now));
  EXPECT_EQ(dreq_in_flight(l).remote_qpn, 0x11u);
}

TEST(CmManager, NoListenerAnswersInvalidServiceId) {
  Link l;
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  EXPECT_FALSE(l.b.poll_event());
  EXPECT_EQ(l.b.counters().rejected_no_listener, 1u);
  EXPECT_EQ(l.b.connections(), 0u);
  Event e = next(l.a);
  EXPECT_EQ(e.type, EventType::kRejected);
  EXPECT_EQ(e.conn, ca);
  EXPECT_EQ(e.reason, static_cast<uint16_t>(w::RejReason::kInvalidServiceId));
}

TEST(CmManager, ApplicationRejectCarriesItsPrivateData) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  const uint8_t why[] = {'n', 'o', 'p', 'e'};
  ASSERT_TRUE(l.b.reject(req.conn, why, l.now));
  l.deliver();
  Event e = next(l.a);
  EXPECT_EQ(e.type, EventType::kRejected);
  EXPECT_EQ(e.reason, static_cast<uint16_t>(w::RejReason::kConsumerDefined));
  ASSERT_EQ(e.private_data.size(), w::kRejPrivateLen);
  EXPECT_EQ(e.private_data[3], 'e');
  EXPECT_FALSE(l.a.ready_to_use(e.conn, l.now)) << "a rejected connection";
  std::array<uint8_t, w::kRejPrivateLen + 1> too_long{};
  l.a.connect(l.req(), l.now);
  l.deliver();
  EXPECT_FALSE(l.b.reject(next(l.b).conn, too_long, l.now));
}

TEST(CmManager, LostReqIsSentAgainAfterTheResponseTimeout) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  int reqs = 0;
  l.drop = [&](const Link::Mad& m) { return Link::attr(m) == w::AttrId::kReq && reqs++ == 0; };
  l.a.connect(l.req(), l.now);
  l.deliver();
  EXPECT_FALSE(l.b.poll_event());
  EXPECT_EQ(l.a.next_deadline(), l.now + l.cfg_a.response_timeout);
  l.advance(l.cfg_a.response_timeout - Duration::nanos(1));
  EXPECT_EQ(l.a.counters().resent, 0u) << "not before the timeout";
  l.advance(Duration::nanos(1));
  EXPECT_EQ(l.a.counters().resent, 1u);
  EXPECT_EQ(next(l.b).type, EventType::kConnectRequest);
}

TEST(CmManager, UnansweredReqEndsInTimeoutAndARejToThePeer) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  l.drop = [](const Link::Mad& m) { return Link::attr(m) == w::AttrId::kReq; };
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  for (int i = 0; i < l.cfg_a.max_retries; ++i) {
    l.advance(l.cfg_a.response_timeout);
    EXPECT_FALSE(l.a.poll_event()) << "retry " << i;
  }
  EXPECT_EQ(l.a.counters().resent, static_cast<uint64_t>(l.cfg_a.max_retries));
  l.advance(l.cfg_a.response_timeout);
  Event e = next(l.a);
  EXPECT_EQ(e.type, EventType::kTimeout);
  EXPECT_EQ(e.conn, ca);
  EXPECT_EQ(l.sent.back(), w::AttrId::kRej);
  EXPECT_EQ(l.b.counters().unknown_conn, 1u) << "B never saw the REQ the REJ refers to";
  l.advance(l.cfg_a.timewait);
  EXPECT_EQ(l.a.connections(), 0u) << "freed after timewait";
}

TEST(CmManager, LostRepIsResentOnTheRepeatedReq) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  int reps = 0;
  l.drop = [&](const Link::Mad& m) { return Link::attr(m) == w::AttrId::kRep && reps++ == 0; };
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  ASSERT_TRUE(l.b.accept(req.conn, l.rep(), l.now));
  l.deliver();  // the REP is lost
  EXPECT_FALSE(l.a.poll_event());
  l.b.on_timer(l.now);  // B's own REP timer is later than A's REQ timer here
  l.now = l.now + l.cfg_a.response_timeout;
  l.a.on_timer(l.now);  // A repeats its REQ; B answers it with the REP again
  l.deliver();
  EXPECT_EQ(l.b.counters().duplicate_req, 1u);
  EXPECT_FALSE(l.b.poll_event()) << "a duplicate REQ is no new connection";
  Event rep = next(l.a);
  ASSERT_EQ(rep.type, EventType::kConnectResponse);
  ASSERT_TRUE(l.a.ready_to_use(ca, l.now));
  l.deliver();
  EXPECT_EQ(next(l.b).type, EventType::kEstablished);
}

TEST(CmManager, LostRtuIsResentOnTheRepeatedRep) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  int rtus = 0;
  l.drop = [&](const Link::Mad& m) { return Link::attr(m) == w::AttrId::kRtu && rtus++ == 0; };
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  ASSERT_TRUE(l.b.accept(req.conn, l.rep(), l.now));
  l.deliver();
  ASSERT_EQ(next(l.a).type, EventType::kConnectResponse);
  ASSERT_TRUE(l.a.ready_to_use(ca, l.now));
  l.deliver();  // the RTU is lost
  EXPECT_FALSE(l.b.poll_event());
  l.advance(l.cfg_b.response_timeout);  // B repeats its REP, A answers with the RTU again
  EXPECT_EQ(next(l.b).type, EventType::kEstablished);
  EXPECT_FALSE(l.a.poll_event()) << "A was established already";
  EXPECT_EQ(l.a.counters().resent, 1u);
}

TEST(CmManager, MraStretchesTheWaitForTheRep) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  // B's application needs time: B sends an MRA by hand (service timeout 2^20 * 4.096 us).
  w::Mra mra;
  mra.local_comm_id = req.conn;
  mra.remote_comm_id = ca;
  mra.message_mraed = w::MsgRef::kReq;
  mra.service_timeout = 20;
  std::array<uint8_t, w::kMadLen> b{};
  w::build_cm_mad(w::Mad{{}, mra}, b);
  l.a.on_mad(gid_of(2), b, l.now);
  const Duration service = Duration::nanos(int64_t{4096} << 20);
  EXPECT_EQ(l.a.next_deadline(), l.now + service + l.cfg_a.response_timeout);
  l.advance(l.cfg_a.response_timeout * 3);
  EXPECT_EQ(l.a.counters().resent, 0u) << "no REQ repeated inside the MRA's time";
  ASSERT_TRUE(l.b.accept(req.conn, l.rep(), l.now));
  l.deliver();
  EXPECT_EQ(next(l.a).type, EventType::kConnectResponse);
}

TEST(CmManager, DisconnectFromEitherSideEndsBothAndTimewaitFreesThem) {
  for (bool active_first : {true, false}) {
    Link l;
    ASSERT_TRUE(l.b.listen(kService));
    auto [ca, cb] = establish(l);
    Manager& first = active_first ? l.a : l.b;
    Manager& other = active_first ? l.b : l.a;
    ASSERT_TRUE(first.disconnect(active_first ? ca : cb, l.now));
    EXPECT_FALSE(first.disconnect(active_first ? ca : cb, l.now)) << "twice";
    l.deliver();
    EXPECT_EQ(next(other).type, EventType::kDisconnected);
    EXPECT_EQ(next(first).type, EventType::kDisconnected);
    EXPECT_EQ(l.sent.back(), w::AttrId::kDrep);
    EXPECT_EQ(l.a.connections(), 1u) << "in timewait";
    l.advance(l.cfg_a.timewait);
    EXPECT_EQ(l.a.connections(), 0u);
    EXPECT_EQ(l.b.connections(), 0u);
  }
}

TEST(CmManager, UnansweredDreqStillDisconnects) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  auto [ca, cb] = establish(l);
  l.drop = [](const Link::Mad&) { return true; };  // the peer is gone
  ASSERT_TRUE(l.a.disconnect(ca, l.now));
  for (int i = 0; i <= l.cfg_a.max_retries; ++i) l.advance(l.cfg_a.response_timeout);
  EXPECT_EQ(next(l.a).type, EventType::kDisconnected);
  (void)cb;
}

TEST(CmManager, DreqForAConnectionThatIsGoneIsAnsweredWithDrep) {
  Link l;
  w::Dreq d;
  d.local_comm_id = 7;
  d.remote_comm_id = 12345;  // no such connection at B
  std::array<uint8_t, w::kMadLen> b{};
  w::build_cm_mad(w::Mad{{}, d}, b);
  l.b.on_mad(gid_of(1), b, l.now);
  ASSERT_EQ(l.wire.size(), 1u);
  EXPECT_EQ(Link::attr(l.wire.front()), w::AttrId::kDrep);
  auto rep = w::parse_cm_mad(l.wire.front().bytes);
  EXPECT_EQ(std::get<w::Drep>(rep->msg).remote_comm_id, 7u);
  EXPECT_EQ(l.b.counters().unknown_conn, 1u);
  EXPECT_FALSE(l.b.poll_event());
}

// A port shared through uroce-hostd: every process sees every MAD, so only the one it is for
// answers it.
TEST(CmManager, SharedPortStaysSilentOnOtherProcessesMads) {
  Link l;
  l.cfg_b.shared = true;
  Manager shared_b{l.cfg_b, l.sender(gid_of(2))};
  l.a.connect(l.req(), l.now);
  ASSERT_EQ(l.wire.size(), 1u);
  Link::Mad req = l.wire.front();
  l.wire.clear();
  shared_b.on_mad(req.src, req.bytes, l.now);
  EXPECT_TRUE(l.wire.empty()) << "no REJ for a service another process may listen on";
  EXPECT_EQ(shared_b.counters().rejected_no_listener, 1u);

  w::Dreq d;
  d.local_comm_id = 7;
  d.remote_comm_id = 12345;  // another process' connection
  std::array<uint8_t, w::kMadLen> b{};
  w::build_cm_mad(w::Mad{{}, d}, b);
  shared_b.on_mad(gid_of(1), b, l.now);
  EXPECT_TRUE(l.wire.empty()) << "no DREP for another process' connection";
  EXPECT_EQ(shared_b.counters().unknown_conn, 1u);

  ASSERT_TRUE(shared_b.listen(kService));  // the process that listens still answers
  shared_b.on_mad(req.src, req.bytes, l.now);
  EXPECT_EQ(next(shared_b).type, EventType::kConnectRequest);
}

TEST(CmManager, MalformedAndStrayMadsAreCountedAndChangeNothing) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  auto [ca, cb] = establish(l);
  std::array<uint8_t, w::kMadLen> junk{};
  junk[0] = 1;
  junk[1] = 0x07;
  junk[2] = 9;  // class version 9
  l.a.on_mad(gid_of(2), junk, l.now);
  l.a.on_mad(gid_of(2), std::span<const uint8_t>(junk).first(10), l.now);
  EXPECT_EQ(l.a.counters().malformed, 2u);
  w::Rtu stray;
  stray.remote_comm_id = 4242;
  std::array<uint8_t, w::kMadLen> b{};
  w::build_cm_mad(w::Mad{{}, stray}, b);
  l.b.on_mad(gid_of(1), b, l.now);
  EXPECT_EQ(l.b.counters().unknown_conn, 1u);
  EXPECT_FALSE(l.a.poll_event());
  EXPECT_FALSE(l.b.poll_event());
  ASSERT_TRUE(l.a.disconnect(ca, l.now)) << "the connection is still established";
  l.deliver();
  EXPECT_EQ(next(l.b).conn, cb);
}

constexpr uint64_t kUdService = 0x0000000001114321ull;

// SIDR (IBA 12.11): the UD service resolution RDMA_PS_UDP uses. Request, reply with the UD QP
// and Q_Key, private data both ways.
TEST(CmManager, SidrRequestIsAnsweredWithQpAndQkey) {
  Link l;
  ASSERT_TRUE(l.b.listen(kUdService));
  std::array<uint8_t, 3> pd{1, 2, 3};
  uint32_t ca = l.a.sidr_request(gid_of(2), kUdService, pd, l.now);
  l.deliver();
  Event req = next(l.b);
  ASSERT_EQ(req.type, EventType::kSidrRequest);
  ASSERT_TRUE(req.sidr_req);
  EXPECT_EQ(req.sidr_req->service_id, kUdService);
  EXPECT_EQ(req.sidr_req->private_data[2], 3);
  EXPECT_EQ(req.peer, gid_of(1));
  std::array<uint8_t, 1> rpd{9};
  ASSERT_TRUE(l.b.sidr_reply(req.conn, 0, 0x77, 0x01234567, rpd, l.now));
  EXPECT_FALSE(l.b.sidr_reply(req.conn, 0, 0x77, 0x01234567, rpd, l.now)) << "answered twice";
  l.deliver();
  Event rep = next(l.a);
  ASSERT_EQ(rep.type, EventType::kSidrReply);
  EXPECT_EQ(rep.conn, ca);
  EXPECT_EQ(rep.sidr_rep->status, 0);
  EXPECT_EQ(rep.sidr_rep->qpn, 0x77u);
  EXPECT_EQ(rep.sidr_rep->qkey, 0x01234567u);
  EXPECT_EQ(rep.sidr_rep->private_data[0], 9);
  EXPECT_EQ(l.sent, (std::vector{w::AttrId::kSidrReq, w::AttrId::kSidrRep}));
}

// A lost SIDR_REP: the requester resends, the responder answers again with the same reply
// and no second kSidrRequest.
TEST(CmManager, LostSidrReplyIsResentOnTheRepeatedRequest) {
  Link l;
  ASSERT_TRUE(l.b.listen(kUdService));
  l.a.sidr_request(gid_of(2), kUdService, {}, l.now);
  l.deliver();
  Event req = next(l.b);
  l.drop = [](const Link::Mad& m) { return Link::attr(m) == w::AttrId::kSidrRep; };
  ASSERT_TRUE(l.b.sidr_reply(req.conn, 0, 0x77, 1, {}, l.now));
  l.deliver();
  EXPECT_FALSE(l.a.poll_event());
  l.drop = [](const Link::Mad&) { return false; };
  l.advance(l.cfg_a.response_timeout);
  EXPECT_FALSE(l.b.poll_event()) << "a duplicate is not a new request";
  Event rep = next(l.a);
  EXPECT_EQ(rep.type, EventType::kSidrReply);
  EXPECT_EQ(rep.sidr_rep->qpn, 0x77u);
  EXPECT_EQ(l.b.counters().duplicate_req, 1u);
}

// SIDR for a service nobody listens on: status "service ID not supported"; unanswered SIDR:
// kTimeout after the retries, no REJ sent.
TEST(CmManager, SidrWithoutListenerOrPeer) {
  Link l;
  l.a.sidr_request(gid_of(2), kUdService, {}, l.now);
  l.deliver();
  Event rep = next(l.a);
  ASSERT_EQ(rep.type, EventType::kSidrReply);
  EXPECT_EQ(rep.sidr_rep->status, static_cast<uint8_t>(w::SidrStatus::kServiceIdNotSupported));
  l.drop = [](const Link::Mad&) { return true; };
  uint32_t c2 = l.a.sidr_request(gid_of(2), kUdService, {}, l.now);
  for (int i = 0; i <= l.cfg_a.max_retries; ++i) l.advance(l.cfg_a.response_timeout);
  Event to = next(l.a);
  EXPECT_EQ(to.type, EventType::kTimeout);
  EXPECT_EQ(to.conn, c2);
  EXPECT_EQ(std::count(l.sent.begin(), l.sent.end(), w::AttrId::kRej), 0);
}

// cancel(): the peer hears of it in each state (REJ while connecting, DREQ when established).
TEST(CmManager, CancelTellsThePeer) {
  Link l;
  ASSERT_TRUE(l.b.listen(kService));
  uint32_t ca = l.a.connect(l.req(), l.now);
  l.deliver();
  Event req = next(l.b);
  ASSERT_TRUE(l.a.cancel(ca, l.now));
  l.deliver();
  Event rej = next(l.b);
  EXPECT_EQ(rej.type, EventType::kRejected);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(w::RejReason::kTimeout));
  EXPECT_TRUE(l.a.next_deadline() > l.now) << "no REQ resend after cancel";
  auto [a2, b2] = establish(l);
  ASSERT_TRUE(l.b.cancel(b2, l.now));
  l.deliver();
  Event d = next(l.a);
  EXPECT_EQ(d.type, EventType::kDisconnected);
  EXPECT_EQ(d.conn, a2);
  EXPECT_EQ(l.b.cancel(12345, l.now).code(), EINVAL);
}

}  // namespace
}  // namespace uroce::cm
