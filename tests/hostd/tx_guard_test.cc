/**
 * @file tx_guard_test.cc
 * @brief TxGuard (lib/hostd/tx_guard.h): what uroce-hostd lets a client send. Frames are
 * built with the real wire builder: a client's connection frames pass; forged source MAC and
 * address, a datagram from another client's QPN, a frame into another client's connection or to
 * a QP it has no connection with, a foreign UDP source port, and garbage are refused, each with
 * its reason; a remote QP cannot be registered by two clients.
 */
#include "hostd/tx_guard.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "transport/wire/build.h"

namespace uroce::hostd {
namespace {

using V = TxGuard::Verdict;
const MacAddr kMac{{0x02, 0, 0, 0, 0, 0x01}};
const Gid kOurs = Gid::from_ipv4(0xc6120001u);
const Gid kPeer = Gid::from_ipv4(0xc6120102u);
constexpr uint32_t kBlock1 = 0x10000, kBlock2 = 0x20000, kBlockLen = 0x1000;

std::vector<uint8_t> frame(wire::Opcode op, uint32_t dqpn, uint16_t sport, uint32_t deth_src = 0,
                           const MacAddr& src_mac = kMac, const Gid& src = kOurs) {
  wire::FrameSpec s;
  s.src_mac = src_mac;
  s.dst_mac = MacAddr{{0x02, 0, 0, 0, 0, 0x99}};
  s.src_ip = src;
  s.dst_ip = kPeer;
  s.udp_sport = sport;
  s.opcode = op;
  s.dest_qpn = Qpn(dqpn);
  s.deth.src_qpn = Qpn(deth_src);
  s.deth.qkey = 0x11111111;
  std::vector<uint8_t> buf(256);
  if (op == wire::Opcode::kCnp) {
    buf.resize(wire::build_cnp(s, buf));
    return buf;
  }
  wire::FrameLayout l = wire::build_headers(s, buf);
  // A payload where the opcode carries one.
  const size_t n = wire::finalize(buf, l, op == wire::Opcode::kRcAcknowledge ? 0 : 8);
  buf.resize(n);
  return buf;
}

class TxGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g.set_host(kMac, {kOurs});
    ASSERT_TRUE(g.add_client(1, kBlock1, kBlockLen));
    ASSERT_TRUE(g.add_client(2, kBlock2, kBlockLen));
    ASSERT_EQ(g.connect(1, kBlock1 + 5, kPeer, 0x777, 0xc123), 0);
  }
  V check(uint32_t client, const std::vector<uint8_t>& f) {
    wire::ParsedPacket p;
    return g.check(client, f, &p);
  }
  TxGuard g;
};

TEST_F(TxGuardTest, AClientsOwnConnectionFramesPass) {
  EXPECT_EQ(check(1, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc123)), V::kOk);
  EXPECT_EQ(check(1, frame(wire::Opcode::kRcAcknowledge, 0x777, 0xc123)), V::kOk);
  EXPECT_EQ(check(1, frame(wire::Opcode::kCnp, 0x777, 0xc123)), V::kOk);
  EXPECT_EQ(check(1, frame(wire::Opcode::kUdSendOnly, 0x999, 0xc001, kBlock1 + 9)), V::kOk);
  EXPECT_EQ(check(2, frame(wire::Opcode::kUdSendOnly, 1, 0xc001, 1)), V::kOk);  // a CM MAD
}

TEST_F(TxGuardTest, ForgedFramesAreRefusedWithTheirReason) {
  // Another client's connection, sent by client 2.
  EXPECT_EQ(check(2, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc123)), V::kNotConnected);
  // A QP nobody connected to.
  EXPECT_EQ(check(1, frame(wire::Opcode::kRcSendOnly, 0x778, 0xc123)), V::kNotConnected);
  // The right connection from a foreign UDP source port.
  EXPECT_EQ(check(1, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc124)), V::kSport);
  // A datagram claiming another client's QPN, or QP1 to a QP other than 1.
  EXPECT_EQ(check(1, frame(wire::Opcode::kUdSendOnly, 0x999, 0xc001, kBlock2 + 9)), V::kSrcQpn);
  EXPECT_EQ(check(1, frame(wire::Opcode::kUdSendOnly, 0x999, 0xc001, 1)), V::kSrcQpn);
  // Another MAC, another host's address.
  EXPECT_EQ(
      check(1, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc123, 0, MacAddr{{2, 0, 0, 0, 0, 7}})),
      V::kSrcMac);
  EXPECT_EQ(check(1, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc123, 0, kMac,
                           Gid::from_ipv4(0xc6120003u))),
            V::kSrcAddr);
  // Garbage, and a frame cut short.
  std::vector<uint8_t> junk(60, 0xab);
  EXPECT_EQ(check(1, junk), V::kMalformed);
  std::vector<uint8_t> cut = frame(wire::Opcode::kRcSendOnly, 0x777, 0xc123);
  cut.resize(40);
  EXPECT_EQ(check(1, cut), V::kMalformed);
  EXPECT_EQ(TxGuard::name(V::kSport), "udp_sport");
}

TEST_F(TxGuardTest, ARemoteQpIsOneClientsConnection) {
  EXPECT_EQ(g.connect(2, kBlock2 + 1, kPeer, 0x777, 0xc555), EADDRINUSE);
  EXPECT_EQ(g.connect(2, kBlock1 + 6, kPeer, 0x778, 0xc555), EPERM);  // not its QPN
  EXPECT_EQ(g.connect(9, kBlock1 + 6, kPeer, 0x778, 0xc555), EPERM);  // no such client
  // The QP reconnects elsewhere: its old remote is free for others.
  ASSERT_EQ(g.connect(1, kBlock1 + 5, kPeer, 0x779, 0xc123), 0);
  EXPECT_EQ(g.connections(), 1u);
  EXPECT_EQ(g.connect(2, kBlock2 + 1, kPeer, 0x777, 0xc555), 0);
  EXPECT_EQ(check(2, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc555)), V::kOk);
  // A client that goes leaves nothing behind.
  g.drop_client(2);
  EXPECT_EQ(g.connections(), 1u);
  EXPECT_EQ(check(2, frame(wire::Opcode::kRcSendOnly, 0x777, 0xc555)), V::kNotConnected);
  g.disconnect(1, kBlock1 + 5);
  EXPECT_EQ(g.connections(), 0u);
}

}  // namespace
}  // namespace uroce::hostd
