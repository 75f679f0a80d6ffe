/**
 * @file uc_ud_test.cc
 * @brief UC and UD between two engines under loss (IBA Vol 1 §9.7.5 UC message drop and resync
 * on FIRST/ONLY; §9.6.2/§10.2.5 UD Q_Key; rdma-core/rxe 40-byte GRH layout for RoCEv2).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "support/two_engines.h"
#include "transport/wire/ipv4.h"

namespace uroce::transport::testing {
namespace {

constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

// UC SEND at 5 % loss: every delivered message is whole and correct, lost ones leave no partial
// completion; the sender completes every WR with SUCCESS.
TEST(Uc, SendUnderLossDeliversWholeMessagesOnly) {
  TwoEngines h(21);
  h.link(0).loss = 0.05;
  QpAttr at;
  at.path_mtu = 1;  // 256: multi-packet messages
  auto [qa, qb] = h.connect(QpType::kUc, at, 1024, 1, 0, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;
  constexpr int kN = 400;
  constexpr uint32_t kSlot = 4096;
  std::vector<uint8_t> am(kN * kSlot), bm(kN * kSlot, 0);
  for (int i = 0; i < kN; ++i) fill_pattern(am.data() + i * kSlot, kSlot, static_cast<uint64_t>(i));
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
  MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bm.data()), bm.size(), kAll).value();
  for (int i = 0; i < kN; ++i) {
    Sge rs{reinterpret_cast<uint64_t>(bm.data()) + i * kSlot, kSlot, kb.lkey};
    RecvWr r;
    r.wr_id = static_cast<uint64_t>(i);
    r.sg = &rs;
    r.num_sge = 1;
    ASSERT_TRUE(eb.post_recv(qb, r));
  }
  int sends_done = 0;
  std::vector<Cqe> recvs;
  for (int i = 0; i < kN; ++i) {
    uint32_t len = 256 * (1 + static_cast<uint32_t>(i % 12)) + static_cast<uint32_t>(i % 7);
    Sge sg{reinterpret_cast<uint64_t>(am.data()) + i * kSlot, len, ka.lkey};
    SendWr w;
    w.wr_id = static_cast<uint64_t>(i);
    w.opcode = (i % 3) ? WrOpcode::kSend : WrOpcode::kSendWithImm;
    w.imm_data = static_cast<uint32_t>(i);
    w.send_flags = kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));
    h.run_until(
        [&] {
          Cqe c[8];
          size_t n = ea.poll_cq(h.a().scq, c);
          for (size_t k = 0; k < n; ++k) {
            EXPECT_EQ(c[k].status, WcStatus::kSuccess);
            EXPECT_EQ(c[k].wr_id, static_cast<uint64_t>(sends_done));
            ++sends_done;
          }
          n = eb.poll_cq(h.b().rcq, c);
          recvs.insert(recvs.end(), c, c + n);
          return false;
        },
        Duration::micros(50));
  }
  EXPECT_EQ(sends_done, kN);
  ASSERT_GT(recvs.size(), kN / 2u);
  ASSERT_LT(recvs.size(), static_cast<size_t>(kN));  // some were lost
  // Receive WQEs are consumed in order; a WQE whose message was cut short is reused for the
  // next message, so a completion's content is that of the message with the matching length.
  uint64_t last = 0;
  for (const Cqe& c : recvs) {
    ASSERT_EQ(c.status, WcStatus::kSuccess);
    EXPECT_GE(c.wr_id, last);
    last = c.wr_id;
    const uint8_t* got = bm.data() + c.wr_id * kSlot;
    // Find the message it carries: search around wr_id for a source with this length/content.
    bool found = false;
    for (int i = static_cast<int>(c.wr_id); i < kN && !found; ++i) {
      uint32_t len = 256 * (1 + static_cast<uint32_t>(i % 12)) + static_cast<uint32_t>(i % 7);
      if (len == c.byte_len && std::memcmp(got, am.data() + i * kSlot, len) == 0) found = true;
    }
    EXPECT_TRUE(found) << "receive " << c.wr_id << " holds no whole message";
  }
  EXPECT_GT(h.b().counters.get(Counter::out_of_sequence), 0u);
}

TEST(Uc, WriteUnderLossWritesWholeOrDropsRest) {
  TwoEngines h(22);
  h.link(0).loss = 0.05;
  QpAttr at;
  at.path_mtu = 1;
  auto [qa, qb] = h.connect(QpType::kUc, at, 256, 1, 0, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;
  std::vector<uint8_t> am(1 << 16), bm(1 << 16, 0);
  fill_pattern(am.data(), am.size(), 3);
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
  MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bm.data()), bm.size(), kAll).value();
  int imm_expected = 0;
  for (int i = 0; i < 200; ++i) {
    Sge sg{reinterpret_cast<uint64_t>(am.data()), 2048, ka.lkey};
    SendWr w;
    w.wr_id = static_cast<uint64_t>(i);
    w.opcode = WrOpcode::kRdmaWriteWithImm;
    w.imm_data = static_cast<uint32_t>(i);
    w.sg = &sg;
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(bm.data()) + static_cast<uint64_t>(i % 16) * 4096;
    w.rkey = kb.rkey;
    RecvWr r;
    r.wr_id = static_cast<uint64_t>(i);
    ASSERT_TRUE(eb.post_recv(qb, r));
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));
    ++imm_expected;
  }
  h.run_until([] { return false; }, Duration::millis(5));
  Cqe c[256];
  size_t n = eb.poll_cq(h.b().rcq, c);
  ASSERT_GT(n, 100u);
  ASSERT_LT(n, 200u);
  for (size_t k = 0; k < n; ++k) {
    EXPECT_EQ(c[k].status, WcStatus::kSuccess);
    EXPECT_EQ(c[k].opcode, WcOpcode::kRecvRdmaWithImm);
    EXPECT_EQ(c[k].byte_len, 2048u);
    uint32_t i = c[k].imm_data;
    // A completion means its whole message landed at its slot.
    EXPECT_EQ(0, std::memcmp(bm.data() + (i % 16) * 4096, am.data(), 2048)) << i;
  }
}

class UdTest : public ::testing::TestWithParam<bool> {};

TEST_P(UdTest, DatagramsUnderLossCarryGrhSourceAndQkey) {
  const bool ipv6 = GetParam();
  TwoEngines h(23, ipv6);
  h.link(0).loss = 0.05;
  h.link(0).duplicate = 0.02;
  QpAttr at;
  at.qkey = 0x11111111;
  auto [qa, qb] = h.connect(QpType::kUd, at, 512, 1, 0, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;
  constexpr int kN = 300;
  constexpr uint32_t kSlot = 40 + 1024;
  std::vector<uint8_t> am(kN * 1024), bm(kN * kSlot + kSlot, 0);
  fill_pattern(am.data(), am.size(), 4);
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
  MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bm.data()), bm.size(), kAll).value();
  for (int i = 0; i < kN + 1; ++i) {
    Sge rs{reinterpret_cast<uint64_t>(bm.data()) + static_cast<uint64_t>(i) * kSlot, kSlot,
           kb.lkey};
    RecvWr r;
    r.wr_id = static_cast<uint64_t>(i);
    r.sg = &rs;
    r.num_sge = 1;
    ASSERT_TRUE(eb.post_recv(qb, r));
  }
  AddressVector av = h.av_to_peer(0);
  for (int i = 0; i < kN; ++i) {
    uint32_t len = 1 + static_cast<uint32_t>(i * 7 % 1024);
    Sge sg{reinterpret_cast<uint64_t>(am.data()) + static_cast<uint64_t>(i) * 1024, len, ka.lkey};
    SendWr w;
    w.wr_id = static_cast<uint64_t>(i);
    w.opcode = WrOpcode::kSendWithImm;
    w.imm_data = static_cast<uint32_t>(i);  // identifies the datagram
    w.send_flags = kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    w.ah = &av;
    w.remote_qpn = qb;
    // Every other datagram uses the high-bit rule: the QP's own Q_Key (equal to B's).
    w.remote_qkey = (i % 2) ? 0x80000000u : 0x11111111u;
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));
  }
  // One datagram with a wrong Q_Key: dropped.
  {
    Sge sg{reinterpret_cast<uint64_t>(am.data()), 8, ka.lkey};
    SendWr w;
    w.opcode = WrOpcode::kSend;
    w.sg = &sg;
    w.num_sge = 1;
    w.ah = &av;
    w.remote_qpn = qb;
    w.remote_qkey = 0x22222222;
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));
  }
  h.run_until([] { return false; }, Duration::millis(2));
  Cqe c[1024];
  EXPECT_EQ(ea.poll_cq(h.a().scq, c), static_cast<size_t>(kN));  // unsignaled one: no CQE
  size_t n = eb.poll_cq(h.b().rcq, c);
  ASSERT_GT(n, kN * 8u / 10);
  for (size_t k = 0; k < n; ++k) {
    ASSERT_EQ(c[k].status, WcStatus::kSuccess);
    uint32_t i = c[k].imm_data;
    uint32_t len = 1 + i * 7 % 1024;
    EXPECT_EQ(c[k].byte_len, 40 + len);
    EXPECT_TRUE(c[k].wc_flags & kWcGrh);
    EXPECT_EQ(c[k].src_qp, qa);
    EXPECT_EQ(c[k].sgid, h.a().gid);
    EXPECT_EQ(c[k].dgid, h.b().gid);
    EXPECT_EQ(c[k].ipv4, !ipv6);
    const uint8_t* buf = bm.data() + c[k].wr_id * kSlot;
    if (!ipv6) {
      // IPv4: 20 zero bytes, then the IPv4 header (version 4, IHL 5, source = A's address).
      for (int b = 0; b < 20; ++b) EXPECT_EQ(buf[b], 0) << b;
      EXPECT_EQ(buf[20], 0x45);
      EXPECT_EQ(0, std::memcmp(buf + 20 + 12, h.a().gid.raw.data() + 12, 4));
    } else {
      EXPECT_EQ(buf[0] >> 4, 6);
      EXPECT_EQ(0, std::memcmp(buf + 8, h.a().gid.raw.data(), 16));
    }
    EXPECT_EQ(0, std::memcmp(buf + 40, am.data() + static_cast<size_t>(i) * 1024, len)) << i;
  }
  EXPECT_EQ(h.b().counters.get(Counter::rx_qkey_violation), 1u);
}

INSTANTIATE_TEST_SUITE_P(Ipv4Ipv6, UdTest, ::testing::Values(false, true));

TEST(Ud, TooLargeForMtuIsLocLenErrAndNoReceiveDrops) {
  TwoEngines h(24, false, 1024);
  QpAttr at;
  at.qkey = 7;
  auto [qa, qb] = h.connect(QpType::kUd, at, 16, 1, 0, kAll);
  Engine& ea = *h.a().engine;
  std::vector<uint8_t> am(4096);
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
  AddressVector av = h.av_to_peer(0);
  Sge sg{reinterpret_cast<uint64_t>(am.data()), 2000, ka.lkey};
  SendWr w;
  w.opcode = WrOpcode::kSend;
  w.send_flags = kSendSignaled;
  w.sg = &sg;
  w.num_sge = 1;
  w.ah = &av;
  w.remote_qpn = qb;
  w.remote_qkey = 7;
  ASSERT_TRUE(ea.post_send(qa, w, h.now()));
  sg.length = 100;
  w.wr_id = 1;
  ASSERT_TRUE(ea.post_send(qa, w, h.now()));
  h.run_until([] { return false; }, Duration::millis(1));
  Cqe c[4];
  ASSERT_EQ(ea.poll_cq(h.a().scq, c), 2u);
  EXPECT_EQ(c[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(c[1].status, WcStatus::kWrFlushErr);  // UD send queue error flushes the rest
  EXPECT_EQ(h.b().counters.get(Counter::out_of_buffer), 0u);
}

}  // namespace
}  // namespace uroce::transport::testing
