/**
 * @file host_cm_test.cc
 * @brief HostCm (lib/cm/host_cm.h), the host's RDMA CM share in uroce-hostd: the port space
 * (EADDRINUSE between processes, wildcard against specific addresses), REQ/SIDR_REQ steering by
 * service ID and address, answers steered by the ID they echo, what the daemon answers itself
 * (REJ "invalid service ID", SIDR_REP "not supported", DREP for a process that is gone, DREQ for
 * the connections of one that died (an XRC one's to the REP's target QPN), REJ for a REQ it never
 * answered), and the refusal of MADs sent under another process' IDs. Real cm::Managers play the
 * clients and the remote peer, so the MADs are the ones our librdmacm sends.
 */
#include "cm/host_cm.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <deque>
#include <vector>

#include "cm/manager.h"
#include "transport/wire/cm_ip.h"

namespace uroce::cm {
namespace {

namespace w = wire::cm;

constexpr uint16_t kPort = 7471;
const Gid kHostA = Gid::from_ipv4(0xc6120001u);   // the daemon's netdev
const Gid kHostA2 = Gid::from_ipv4(0xc6120011u);  // a second address of it
const Gid kPeer = Gid::from_ipv4(0xc6120002u);    // the remote host

/// One MAD on its way.
struct Sent {
  Gid to;
  std::array<uint8_t, w::kMadLen> mad;
};

/// A CM (our Manager) with the MADs it sent queued.
struct Endpoint {
  explicit Endpoint(uint32_t first_id, bool shared)
      : mgr(Config{.ca_guid = 1, .first_comm_id = first_id, .shared = shared},
            [this](const Gid& dst, std::span<const uint8_t, w::kMadLen> m) {
              Sent s{dst, {}};
              std::copy(m.begin(), m.end(), s.mad.begin());
              out.push_back(s);
            }) {}
  Sent pop() {
    Sent s = out.front();
    out.pop_front();
    return s;
  }
  Manager mgr;
  std::deque<Sent> out;
};

w::Mad parse(const std::array<uint8_t, w::kMadLen>& mad) {
  auto m = w::parse_cm_mad(mad);
  EXPECT_TRUE(m.has_value());
  return m.value_or(w::Mad{});
}

ConnectParams req_to(uint16_t port, uint32_t qpn) {
  ConnectParams p;
  p.local = kPeer;
  p.remote = kHostA;
  p.service_id = w::ip_service_id(w::kPsTcp, port);
  p.qpn = qpn;
  return p;
}

class HostCmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cm.add_client(1));
    ASSERT_TRUE(cm.add_client(2));
  }
  HostCm cm;
  Timestamp now{1'000'000};
};

TEST_F(HostCmTest, APortHeldByOneProcessIsInUseForAnother) {
  EXPECT_EQ(cm.bind(1, w::kPsTcp, kPort, Gid{}), 0);
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort, Gid{}), EADDRINUSE);
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort, kHostA), EADDRINUSE);  // the wildcard covers it
  EXPECT_EQ(cm.bind(2, w::kPsUdp, kPort, Gid{}), 0);            // another port space
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort + 1, Gid{}), 0);
  cm.release(1, w::kPsTcp, kPort, Gid{});
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort, kHostA), 0);
  // Two specific addresses do not collide; the wildcard then collides with either.
  EXPECT_EQ(cm.bind(1, w::kPsTcp, kPort, kHostA2), 0);
  EXPECT_EQ(cm.bind(1, w::kPsTcp, kPort + 2, Gid{}), 0);
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort + 2, kHostA), EADDRINUSE);
  // Listening needs one's own binding; a client that is not there binds nothing.
  EXPECT_EQ(cm.listen(2, w::kPsTcp, kPort, kHostA2), EINVAL);
  EXPECT_EQ(cm.listen(1, w::kPsTcp, kPort, kHostA2), 0);
  EXPECT_EQ(cm.bind(7, w::kPsTcp, 9, Gid{}), EINVAL);
  EXPECT_FALSE(cm.add_client(1));
  EXPECT_FALSE(cm.add_client(0));
  EXPECT_FALSE(cm.add_client(HostCm::kMaxClient + 1));
}

TEST_F(HostCmTest, AReqGoesToTheListenerOfItsServiceAndAddressOnly) {
  ASSERT_EQ(cm.bind(1, w::kPsTcp, kPort, kHostA), 0);
  ASSERT_EQ(cm.listen(1, w::kPsTcp, kPort, kHostA), 0);
  ASSERT_EQ(cm.bind(2, w::kPsTcp, kPort, kHostA2), 0);
  ASSERT_EQ(cm.listen(2, w::kPsTcp, kPort, kHostA2), 0);
  Endpoint peer(0x1000, false);
  peer.mgr.connect(req_to(kPort, 0x42), now);
  Sent s = peer.pop();
  HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
  EXPECT_EQ(r.to, HostCm::To::kClient);
  EXPECT_EQ(r.client, 1u);
  r = cm.inbound(kPeer, kHostA2, s.mad, now);
  EXPECT_EQ(r.to, HostCm::To::kClient);
  EXPECT_EQ(r.client, 2u);
}

TEST_F(HostCmTest, AReqForAPortNobodyListensOnGetsTheKernelsRej) {
  ASSERT_EQ(cm.bind(1, w::kPsTcp, kPort, Gid{}), 0);  // bound, not listening
  Endpoint peer(0x1000, false);
  const uint32_t conn = peer.mgr.connect(req_to(kPort, 0x42), now);
  Sent s = peer.pop();
  const uint64_t tid = parse(s.mad).hdr.tid;
  HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
  ASSERT_EQ(r.to, HostCm::To::kAnswered);
  ASSERT_TRUE(r.reply.has_value());
  EXPECT_EQ(r.reply->peer, kPeer);
  EXPECT_EQ(r.reply->local, kHostA);
  w::Mad rej = parse(r.reply->mad);
  EXPECT_EQ(rej.hdr.tid, tid);
  ASSERT_TRUE(std::holds_alternative<w::Rej>(rej.msg));
  EXPECT_EQ(std::get<w::Rej>(rej.msg).reason,
            static_cast<uint16_t>(w::RejReason::kInvalidServiceId));
  EXPECT_EQ(std::get<w::Rej>(rej.msg).remote_comm_id, conn);
  // The peer's CM takes it as a rejection of its connection.
  peer.mgr.on_mad(kHostA, r.reply->mad, now);
  bool rejected = false;
  while (auto ev = peer.mgr.poll_event()) rejected |= ev->type == EventType::kRejected;
  EXPECT_TRUE(rejected);
  EXPECT_EQ(cm.counters().rejected_no_listener, 1u);
}

TEST_F(HostCmTest, ASidrReqForNobodyIsAnsweredNotSupported) {
  Endpoint peer(0x1000, false);
  peer.mgr.sidr_request(kHostA, w::ip_service_id(w::kPsUdp, kPort), {}, now);
  Sent s = peer.pop();
  HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
  ASSERT_EQ(r.to, HostCm::To::kAnswered);
  w::Mad rep = parse(r.reply->mad);
  ASSERT_TRUE(std::holds_alternative<w::SidrRep>(rep.msg));
  EXPECT_EQ(std::get<w::SidrRep>(rep.msg).status,
            static_cast<uint8_t>(w::SidrStatus::kServiceIdNotSupported));
}

/// A connection from the remote peer to client 1 (passive), carried through the daemon, and
/// one from client 2 to the peer (active). Returns the peer's events' connection IDs.
class HostCmConnTest : public HostCmTest {
 protected:
  void SetUp() override {
    HostCmTest::SetUp();
    ASSERT_EQ(cm.bind(1, w::kPsTcp, kPort, Gid{}), 0);
    ASSERT_EQ(cm.listen(1, w::kPsTcp, kPort, Gid{}), 0);
    c1.mgr.listen(w::ip_service_id(w::kPsTcp, kPort));
    // Peer -> client 1: REQ, REP, RTU.
    peer_conn = peer.mgr.connect(req_to(kPort, 0x42), now);
    deliver_in(peer.pop());
    auto ev = c1.mgr.poll_event();
    ASSERT_TRUE(ev && ev->type == EventType::kConnectRequest);
    AcceptParams ap;
    ap.qpn = HostCm::first_id(1) >> 8 | 0x17;
    c1.mgr.accept(ev->conn, ap, now);
    c1_conn = ev->conn;
    deliver_out(1, c1.pop());
    while (peer.mgr.poll_event()) {
    }
    peer.mgr.ready_to_use(peer_conn, now);
    deliver_in(peer.pop());
    while (c1.mgr.poll_event()) {
    }
    // Client 2 -> peer: REQ, REP, RTU.
    peer.mgr.listen(w::ip_service_id(w::kPsTcp, kPort + 1));
    ConnectParams cp = req_to(kPort + 1, 0x99);
    cp.local = kHostA;
    cp.remote = kPeer;
    c2_conn = c2.mgr.connect(cp, now);
    deliver_out(2, c2.pop());
    auto pev = peer.mgr.poll_event();
    ASSERT_TRUE(pev && pev->type == EventType::kConnectRequest);
    peer_conn2 = pev->conn;
    AcceptParams pap;
    pap.qpn = 0x55;
    peer.mgr.accept(pev->conn, pap, now);
    deliver_in(peer.pop());
    while (c2.mgr.poll_event()) {
    }
    c2.mgr.ready_to_use(c2_conn, now);
    deliver_out(2, c2.pop());
    while (peer.mgr.poll_event()) {
    }
  }
  /// A MAD from the peer through the daemon to the client it names (which must exist).
  void deliver_in(const Sent& s) {
    HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
    ASSERT_EQ(r.to, HostCm::To::kClient);
    (r.client == 1 ? c1 : c2).mgr.on_mad(kPeer, s.mad, now);
  }
  void deliver_out(uint32_t client, const Sent& s) {
    ASSERT_EQ(cm.outbound(client, kHostA, kPeer, s.mad, now), HostCm::Refusal::kNone);
    peer.mgr.on_mad(kHostA, s.mad, now);
  }
  Endpoint peer{0x1000, false};
  Endpoint c1{HostCm::first_id(1), true};
  Endpoint c2{HostCm::first_id(2), true};
  uint32_t peer_conn = 0, peer_conn2 = 0, c1_conn = 0, c2_conn = 0;
};

TEST_F(HostCmConnTest, AnswersFindTheirProcessByTheIdTheyEcho) {
  EXPECT_EQ(cm.connections(1), 1u);
  EXPECT_EQ(cm.connections(2), 1u);
  // The peer disconnects from client 1: its DREQ reaches client 1 only.
  peer.mgr.disconnect(peer_conn, now);
  Sent s = peer.pop();
  HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
  EXPECT_EQ(r.to, HostCm::To::kClient);
  EXPECT_EQ(r.client, 1u);
}

TEST_F(HostCmConnTest, AProcessThatDiesHasItsConnectionsDreqedAndItsPortFreed) {
  std::vector<HostCm::Outgoing> out = cm.drop_client(1, now);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].peer, kPeer);
  w::Mad d = parse(out[0].mad);
  ASSERT_TRUE(std::holds_alternative<w::Dreq>(d.msg));
  EXPECT_EQ(std::get<w::Dreq>(d.msg).remote_comm_id, peer_conn);
  EXPECT_EQ(std::get<w::Dreq>(d.msg).remote_qpn, 0x42u);
  EXPECT_EQ(cm.bind(2, w::kPsTcp, kPort, Gid{}), 0);  // the port is free again
  EXPECT_EQ(cm.connections(2), 1u);                   // the neighbour's stays
  // Unanswered, the DREQ goes again after the response timeout, and no more than retries.
  EXPECT_TRUE(cm.timers(now + Duration::millis(50)).empty());
  EXPECT_EQ(cm.timers(now + Duration::millis(100)).size(), 1u);
  // The peer's CM answers it with a DREP: the daemon takes it and resends no more.
  peer.mgr.on_mad(kHostA, out[0].mad, now);
  bool disconnected = false;
  while (auto ev = peer.mgr.poll_event()) disconnected |= ev->type == EventType::kDisconnected;
  EXPECT_TRUE(disconnected);
  Sent drep = peer.pop();
  EXPECT_EQ(cm.inbound(kPeer, kHostA, drep.mad, now).to, HostCm::To::kAnswered);
  EXPECT_TRUE(cm.timers(now + Duration::millis(300)).empty());
  EXPECT_EQ(cm.counters().dreq_for_dead, 1u);
}

TEST_F(HostCmConnTest, ADreqForAProcessThatIsGoneGetsADrep) {
  cm.drop_client(2, now);
  peer.mgr.disconnect(peer_conn2, now);
  Sent s = peer.pop();
  HostCm::Route r = cm.inbound(kPeer, kHostA, s.mad, now);
  ASSERT_EQ(r.to, HostCm::To::kAnswered);
  w::Mad drep = parse(r.reply->mad);
  ASSERT_TRUE(std::holds_alternative<w::Drep>(drep.msg));
  EXPECT_EQ(std::get<w::Drep>(drep.msg).local_comm_id, c2_conn);
  EXPECT_EQ(std::get<w::Drep>(drep.msg).remote_comm_id, peer_conn2);
  peer.mgr.on_mad(kHostA, r.reply->mad, now);
  bool disconnected = false;
  while (auto ev = peer.mgr.poll_event()) disconnected |= ev->type == EventType::kDisconnected;
  EXPECT_TRUE(disconnected);
}

TEST_F(HostCmTest, TheDreqForADeadClientsXrcConnectionNamesTheRepsTargetQpn) {
  // Client 1's XRC initiator connects to the peer, whose XRC target QP is 0x55 (the REP's
  // EECN; its QPN field is 0).
  Endpoint c1{HostCm::first_id(1), true};
  Endpoint peer{0x1000, false};
  peer.mgr.listen(w::ip_service_id(w::kPsTcp, kPort));
  ConnectParams cp = req_to(kPort, HostCm::first_id(1) >> 8 | 0x17);
  cp.local = kHostA;
  cp.remote = kPeer;
  cp.xrc = true;
  const uint32_t c1_conn = c1.mgr.connect(cp, now);
  Sent req = c1.pop();
  ASSERT_EQ(cm.outbound(1, kHostA, kPeer, req.mad, now), HostCm::Refusal::kNone);
  peer.mgr.on_mad(kHostA, req.mad, now);
  auto ev = peer.mgr.poll_event();
  ASSERT_TRUE(ev && ev->type == EventType::kConnectRequest);
  AcceptParams ap;
  ap.qpn = 0x55;
  ASSERT_TRUE(peer.mgr.accept(ev->conn, ap, now));
  Sent rep = peer.pop();
  ASSERT_EQ(cm.inbound(kPeer, kHostA, rep.mad, now).to, HostCm::To::kClient);
  c1.mgr.on_mad(kPeer, rep.mad, now);
  ASSERT_TRUE(c1.mgr.ready_to_use(c1_conn, now));
  ASSERT_EQ(cm.outbound(1, kHostA, kPeer, c1.pop().mad, now), HostCm::Refusal::kNone);
  std::vector<HostCm::Outgoing> out = cm.drop_client(1, now);
  ASSERT_EQ(out.size(), 1u);
  w::Mad d = parse(out[0].mad);
  ASSERT_TRUE(std::holds_alternative<w::Dreq>(d.msg));
  EXPECT_EQ(std::get<w::Dreq>(d.msg).remote_comm_id, ev->conn);
  EXPECT_EQ(std::get<w::Dreq>(d.msg).remote_qpn, 0x55u);
}

TEST_F(HostCmTest, AReqHandedToAProcessThatDiesBeforeAnsweringIsRejected) {
  ASSERT_EQ(cm.bind(1, w::kPsTcp, kPort, Gid{}), 0);
  ASSERT_EQ(cm.listen(1, w::kPsTcp, kPort, Gid{}), 0);
  Endpoint peer(0x1000, false);
  const uint32_t conn = peer.mgr.connect(req_to(kPort, 0x42), now);
  ASSERT_EQ(cm.inbound(kPeer, kHostA, peer.pop().mad, now).client, 1u);
  std::vector<HostCm::Outgoing> out = cm.drop_client(1, now);
  ASSERT_EQ(out.size(), 1u);
  w::Mad rej = parse(out[0].mad);
  ASSERT_TRUE(std::holds_alternative<w::Rej>(rej.msg));
  EXPECT_EQ(std::get<w::Rej>(rej.msg).remote_comm_id, conn);
}

TEST_F(HostCmTest, MadsUnderAnotherProcessIdsAreRefused) {
  Endpoint c1(HostCm::first_id(1), true);
  ConnectParams cp = req_to(kPort, 0x10);
  cp.local = kHostA;
  cp.remote = kPeer;
  c1.mgr.connect(cp, now);
  Sent s = c1.pop();
  EXPECT_EQ(cm.outbound(1, kHostA, kPeer, s.mad, now), HostCm::Refusal::kNone);
  EXPECT_EQ(cm.outbound(2, kHostA, kPeer, s.mad, now), HostCm::Refusal::kForeignId);
  std::array<uint8_t, w::kMadLen> junk{};
  EXPECT_EQ(cm.outbound(2, kHostA, kPeer, junk, now), HostCm::Refusal::kMalformed);
  EXPECT_EQ(cm.inbound(kPeer, kHostA, junk, now).to, HostCm::To::kDropped);
  EXPECT_EQ(cm.counters().refused_out, 2u);
}

TEST(CmManagerPrefix, EveryLocalIdCarriesTheClientsPrefixAndWrapsWithinIt) {
  std::vector<uint32_t> ids;
  Manager m(Config{.first_comm_id = HostCm::id_span() - 2,
                   .id_prefix_bits = HostCm::kClientBits,
                   .id_prefix = 5},
            [](const Gid&, std::span<const uint8_t, w::kMadLen>) {});
  Timestamp now{1};
  for (int i = 0; i < 4; ++i) ids.push_back(m.connect(req_to(kPort, 1), now));
  ids.push_back(m.sidr_request(kPeer, w::ip_service_id(w::kPsUdp, kPort), {}, now));
  for (uint32_t id : ids) EXPECT_EQ(HostCm::client_of(id), 5u) << std::hex << id;
  // Past the end of its span the count wraps to the first ID of the prefix.
  EXPECT_EQ(ids[0], HostCm::first_id(5) + HostCm::id_span() - 2);
  EXPECT_EQ(ids[1], HostCm::first_id(5) + HostCm::id_span() - 1);
  EXPECT_EQ(ids[2], HostCm::first_id(5));
  EXPECT_EQ(ids[3], HostCm::first_id(5) + 1);
}

TEST_F(HostCmTest, TheDaemonForgetsADeadConnectionAfterTimewait) {
  HostCm small({.response_timeout = Duration::millis(10),
                .max_retries = 2,
                .timewait = Duration::seconds(1)});
  ASSERT_TRUE(small.add_client(3));
  Endpoint c3(HostCm::first_id(3), true);
  Endpoint peer(0x1000, false);
  peer.mgr.listen(w::ip_service_id(w::kPsTcp, kPort));
  ConnectParams cp = req_to(kPort, 0x10);
  cp.local = kHostA;
  cp.remote = kPeer;
  c3.mgr.connect(cp, now);
  ASSERT_EQ(small.outbound(3, kHostA, kPeer, c3.pop().mad, now), HostCm::Refusal::kNone);
  EXPECT_EQ(small.connections(3), 1u);
  // Died before any REP: the peer holds no QP for it, so no DREQ.
  EXPECT_TRUE(small.drop_client(3, now).empty());
  EXPECT_EQ(small.next_deadline(), now + Duration::seconds(1));
  EXPECT_TRUE(small.timers(now + Duration::seconds(2)).empty());
  EXPECT_EQ(small.next_deadline(), Timestamp::never());
}

}  // namespace
}  // namespace uroce::cm
