/**
 * @file gsi_test.cc
 * @brief QP1 (GSI) of the engine: MADs as RoCEv2 UD SENDs to DestQP 1 with the GSI Q_Key
 * (IBA Vol 1 §13.5.1, §13.4.1; Annex 17), received into the engine's queue and sent from it;
 * refusals counted. Hand-built frames in, captured frames out (docs/testing.md, "Protocol tests"),
 * and two engines exchanging MADs over the in-memory link.
 */
#include "transport/gsi.h"

#include <gtest/gtest.h>

#include <numeric>

#include "support/packet_builder.h"
#include "support/two_engines.h"
#include "transport/wire/cm.h"

namespace uroce::transport::testing {
namespace {

constexpr uint32_t kGsiQkey = 0x80010000;

std::array<uint8_t, GsiMad::kLen> mad_bytes(uint8_t seed) {
  std::array<uint8_t, GsiMad::kLen> m;
  std::iota(m.begin(), m.end(), seed);
  return m;
}

/// An engine with GSI on, a peer 198.18.0.1 and a builder of frames from it to QP 1.
struct GsiUnderTest : EngineUnderTest {
  GsiUnderTest() {
    e->enable_gsi(true);
    gsi_pb = PacketBuilder(neigh.peer, e->config().mac, peer(), e->config().gids[0], 1);
  }
  static Gid peer() { return Gid::from_ipv4(0xc6120001u); }
  std::vector<uint8_t> mad_frame(std::span<const uint8_t> payload, uint32_t qkey = kGsiQkey,
                                 wire::Opcode op = wire::Opcode::kUdSendOnly) {
    wire::FrameSpec s = gsi_pb.spec(op, 7, false);
    s.deth.qkey = qkey;
    s.deth.src_qpn = Qpn(1);
    return gsi_pb.build(s, payload);
  }
  uint64_t ctr(Counter c) const { return counters.get(c); }
  PacketBuilder gsi_pb;
};

TEST(Gsi, ReceivedMadIsQueuedWithItsAddresses) {
  GsiUnderTest t;
  auto m = mad_bytes(3);
  // Receive a UD SEND_ONLY to QP 1, GSI Q_Key, 256 bytes (in-order)
  // Expect: one MAD queued with the sender's GID and QP, byte-identical
  t.rx(t.mad_frame(m));
  GsiMad out[4];
  ASSERT_EQ(t.e->poll_gsi(out), 1u);
  EXPECT_EQ(out[0].peer, GsiUnderTest::peer());
  EXPECT_EQ(out[0].local, t.e->config().gids[0]);
  EXPECT_EQ(out[0].peer_qpn, 1u);
  EXPECT_EQ(out[0].mad, m);
  EXPECT_EQ(t.ctr(Counter::gsi_rx_mads), 1u);
  EXPECT_EQ(t.e->poll_gsi(out), 0u);
}

TEST(Gsi, DisabledGsiDropsAsUnknownQp) {
  GsiUnderTest t;
  t.e->enable_gsi(false);
  t.rx(t.mad_frame(mad_bytes(1)));
  GsiMad out[1];
  EXPECT_EQ(t.e->poll_gsi(out), 0u);
  EXPECT_EQ(t.ctr(Counter::rx_unknown_qp), 1u);
  EXPECT_EQ(t.ctr(Counter::gsi_rx_mads), 0u);
}

TEST(Gsi, WrongQkeyLengthOrOpcodeAreCountedAndDropped) {
  GsiUnderTest t;
  auto m = mad_bytes(0);
  // Receive a MAD with a Q_Key other than the GSI's (IBA §13.5.1: QP1 checks it)
  t.rx(t.mad_frame(m, 0x1234));
  // Receive 255 bytes: not a MAD
  t.rx(t.mad_frame(std::span<const uint8_t>(m.data(), 255)));
  // Receive a UD SEND_ONLY with immediate
  t.rx(t.mad_frame(m, kGsiQkey, wire::Opcode::kUdSendOnlyWithImmediate));
  GsiMad out[4];
  EXPECT_EQ(t.e->poll_gsi(out), 0u);
  EXPECT_EQ(t.ctr(Counter::rx_qkey_violation), 1u);
  EXPECT_EQ(t.ctr(Counter::gsi_rx_dropped), 2u);
  // The engine keeps running: a good MAD still arrives.
  t.rx(t.mad_frame(m));
  EXPECT_EQ(t.e->poll_gsi(out), 1u);
}

TEST(Gsi, ReceiveQueueIsBoundedAndLosesOnlyTheOverflow) {
  GsiUnderTest t;
  for (size_t i = 0; i < kGsiQueueDepth + 5; ++i)
    t.rx(t.mad_frame(mad_bytes(static_cast<uint8_t>(i))));
  EXPECT_EQ(t.ctr(Counter::gsi_rx_dropped), 5u);
  std::vector<GsiMad> out(kGsiQueueDepth + 5);
  ASSERT_EQ(t.e->poll_gsi(out), kGsiQueueDepth);
  for (size_t i = 0; i < kGsiQueueDepth; ++i) EXPECT_EQ(out[i].mad[0], static_cast<uint8_t>(i));
}

TEST(Gsi, PostedMadLeavesAsUdSendToQp1WithGsiQkey) {
  GsiUnderTest t;
  GsiMad m;
  m.peer = GsiUnderTest::peer();
  m.local = t.e->config().gids[0];
  m.mad = mad_bytes(9);
  ASSERT_TRUE(t.e->post_gsi(m, t.now));
  EXPECT_TRUE(t.e->has_tx_work());
  EXPECT_LE(t.e->next_deadline(), t.now);
  // Expect: one frame, UD SEND_ONLY to QP 1, DETH Q_Key 0x80010000 from QP 1, P_Key 0xffff,
  // UDP 4791, IPv4 198.18.0.2 -> 198.18.0.1, payload = the MAD
  ASSERT_EQ(t.tx(), 1u);
  Captured c = t.sink.pop();
  EXPECT_EQ(c.p.opcode, wire::Opcode::kUdSendOnly);
  EXPECT_EQ(c.p.dest_qpn.value(), 1u);
  EXPECT_EQ(c.p.deth.qkey, kGsiQkey);
  EXPECT_EQ(c.p.deth.src_qpn.value(), 1u);
  EXPECT_EQ(c.p.pkey, 0xffff);
  EXPECT_EQ(c.p.udp_dport, 4791);
  EXPECT_EQ(c.p.src_ip, t.e->config().gids[0]);
  EXPECT_EQ(c.p.dst_ip, GsiUnderTest::peer());
  EXPECT_EQ(c.p.dst_mac, t.neigh.peer);
  ASSERT_EQ(c.p.payload.size(), GsiMad::kLen);
  EXPECT_TRUE(std::equal(m.mad.begin(), m.mad.end(), c.p.payload.begin()));
  EXPECT_EQ(t.counters.get(Counter::gsi_tx_mads), 1u);
  EXPECT_FALSE(t.e->has_tx_work());
}

TEST(Gsi, PostRefusesForeignSourceGidFullQueueAndDisabledGsi) {
  GsiUnderTest t;
  GsiMad m;
  m.peer = GsiUnderTest::peer();
  m.local = Gid::from_ipv4(0xc6120099u);  // not ours
  EXPECT_EQ(t.e->post_gsi(m, t.now).code(), EINVAL);
  m.local = t.e->config().gids[0];
  for (size_t i = 0; i < kGsiQueueDepth; ++i) ASSERT_TRUE(t.e->post_gsi(m, t.now));
  EXPECT_EQ(t.e->post_gsi(m, t.now).code(), ENOMEM);
  t.e->enable_gsi(false);
  EXPECT_EQ(t.e->post_gsi(m, t.now).code(), EAGAIN);
  EXPECT_EQ(t.tx(), 0u);  // disabling emptied the queue
}

TEST(Gsi, UnresolvedPeerWaitsThenIsDroppedAfterOneSecond) {
  GsiUnderTest t;
  t.neigh.known = false;
  GsiMad m;
  m.peer = GsiUnderTest::peer();
  m.local = t.e->config().gids[0];
  ASSERT_TRUE(t.e->post_gsi(m, t.now));
  EXPECT_EQ(t.tx(), 0u);
  // Expect: a retry deadline 1 ms out, not "now" (no busy loop on an unresolved peer)
  EXPECT_EQ(t.e->next_deadline(), t.now + kGsiResolveRetry);
  // The MAC becomes known: the MAD goes out at the retry.
  t.neigh.known = true;
  t.now = t.now + kGsiResolveRetry;
  EXPECT_EQ(t.tx(), 1u);
  // A peer that never resolves: dropped after kGsiResolveFor, counted.
  t.neigh.known = false;
  ASSERT_TRUE(t.e->post_gsi(m, t.now));
  for (int i = 0; i < 1100 && t.counters.get(Counter::gsi_tx_dropped) == 0; ++i) {
    t.now = t.now + kGsiResolveRetry;
    t.tx();
  }
  EXPECT_EQ(t.counters.get(Counter::gsi_tx_dropped), 1u);
  EXPECT_EQ(t.e->next_deadline(), Timestamp::never());
}

TEST(Gsi, TwoEnginesExchangeMadsBothWays) {
  TwoEngines h(5);
  Engine& a = *h.a().engine;
  Engine& b = *h.b().engine;
  a.enable_gsi(true);
  b.enable_gsi(true);
  GsiMad m;
  m.peer = h.b().gid;
  m.local = h.a().gid;
  m.mad = mad_bytes(42);
  ASSERT_TRUE(a.post_gsi(m, h.now()));
  GsiMad got[2];
  ASSERT_TRUE(
      h.run_until([&] { return b.poll_gsi(std::span(got, 1)) == 1; }, Duration::millis(10)));
  EXPECT_EQ(got[0].peer, h.a().gid);
  EXPECT_EQ(got[0].mad, m.mad);
  // The answer goes back to the sender's GID and QP.
  GsiMad r;
  r.peer = got[0].peer;
  r.local = got[0].local;
  r.peer_qpn = got[0].peer_qpn;
  r.mad = mad_bytes(7);
  ASSERT_TRUE(b.post_gsi(r, h.now()));
  ASSERT_TRUE(
      h.run_until([&] { return a.poll_gsi(std::span(got, 1)) == 1; }, Duration::millis(10)));
  EXPECT_EQ(got[0].mad, r.mad);
  EXPECT_EQ(got[0].peer, h.b().gid);
}

}  // namespace
}  // namespace uroce::transport::testing
