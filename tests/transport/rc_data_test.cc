/**
 * @file rc_data_test.cc
 * @brief RC data movement between two engines over an impaired in-memory link: every RC
 * operation at 0 %, 1 % and 5 % loss (with reordering, duplication and corruption), every
 * byte compared, every WR completed exactly once, in order, with SUCCESS. Also PSN wrap
 * across 2^24, MTU 256 and 4096, IPv6, multiple SGEs and inline data.
 *
 * Fake time; volumes of 8-16 MiB per case (the 1 GiB runs are sim's).
 */
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <random>
#include <vector>

#include "support/two_engines.h"

namespace uroce::transport::testing {
namespace {

constexpr uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                          kAccessRemoteAtomic | kAccessFlushGlobal;

struct MoveSpec {
  WrOpcode op = WrOpcode::kRdmaWrite;
  double loss = 0;
  size_t total = 8 << 20;        ///< bytes to move
  uint32_t max_msg = 256 << 10;  ///< message sizes uniform in [0, max_msg]
  uint8_t path_mtu = 3;          ///< ibv_mtu enum
  uint32_t start_psn = 0;
  uint64_t seed = 1;
  bool ipv6 = false;
  uint32_t sges = 1;          ///< split each message over this many SGEs
  bool inline_small = false;  ///< messages <= 128 bytes go inline
  uint32_t window = 64;       ///< WRs in flight
};

QpAttr rc_attr(const MoveSpec& m) {
  QpAttr a;
  a.path_mtu = m.path_mtu;
  a.timeout = 8;  // 1.05 ms
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.min_rnr_timer = 1;
  a.max_rd_atomic = 8;
  a.max_dest_rd_atomic = 8;
  a.sq_psn = a.rq_psn = m.start_psn;
  return a;
}

/// Moves m.total bytes with op from A to B (READ: from B to A) and checks everything.
/// ATOMIC_WRITE: every message is 8 bytes, taken from A's region into the WR. FLUSH: every
/// message is an unsignaled WRITE followed by a signaled FLUSH of its range (alternately of the
/// whole region), and the bytes must be at B when the FLUSH completes.
void move_data(const MoveSpec& m) {
  TwoEngines h(m.seed, m.ipv6);
  for (int d = 0; d < 2; ++d) {
    h.link(d).loss = m.loss;
    if (m.loss > 0) {
      h.link(d).reorder = 0.01;
      h.link(d).duplicate = 0.005;
      h.link(d).corrupt = 0.002;
    }
  }
  auto [qa, qb] = h.connect(QpType::kRc, rc_attr(m), 1024, 4, 256, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;

  constexpr size_t kRegion = 4 << 20;
  std::vector<uint8_t> amem(kRegion), bmem(kRegion);
  const bool read = m.op == WrOpcode::kRdmaRead;
  const bool send = m.op == WrOpcode::kSend || m.op == WrOpcode::kSendWithImm;
  const bool imm = m.op == WrOpcode::kSendWithImm || m.op == WrOpcode::kRdmaWriteWithImm;
  const bool atomic_write = m.op == WrOpcode::kAtomicWrite;
  const bool flush = m.op == WrOpcode::kFlush;
  const WcOpcode want_wc = atomic_write ? WcOpcode::kAtomicWrite
                           : flush      ? WcOpcode::kFlush
                           : read       ? WcOpcode::kRdmaRead
                           : send       ? WcOpcode::kSend
                                        : WcOpcode::kRdmaWrite;
  std::vector<uint8_t>& src = read ? bmem : amem;
  std::vector<uint8_t>& dst = read ? amem : bmem;
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(amem.data()), kRegion, kAll).value();
  MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bmem.data()), kRegion, kAll).value();

  struct Msg {
    uint64_t id;
    uint32_t len, src_off, dst_off;
    uint32_t imm;
  };
  std::mt19937_64 rng(m.seed * 77 + 5);
  std::deque<Msg> posted;     // posted, send completion pending
  std::deque<Msg> recv_wait;  // receive completion pending (SEND / WITH_IMM)
  uint64_t next_id = 0, done_bytes = 0, moved = 0;
  uint32_t cursor = 0;  // allocation cursor in both regions
  uint64_t round = 1;
  fill_pattern(src.data(), kRegion, round);
  std::memset(dst.data(), 0xee, kRegion);

  auto post_one = [&]() -> bool {
    uint32_t len = static_cast<uint32_t>(rng() % (m.max_msg + 1));
    if (rng() % 8 == 0) len = static_cast<uint32_t>(rng() % 64);  // many small ones too
    if (atomic_write) len = 8;
    if (cursor + len > kRegion) return false;  // region full: wrap later
    Msg g{next_id++, len, cursor, cursor, static_cast<uint32_t>(rng())};
    cursor += (len + 63) & ~63u;
    Sge sg[4];
    uint32_t n = std::max<uint32_t>(1, std::min<uint32_t>(m.sges, len ? len : 1));
    uint32_t piece = len / n;
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t l = i + 1 == n ? len - piece * (n - 1) : piece;
      // A's side of the transfer: the source (SEND/WRITE) or destination (READ); offsets match.
      sg[i] = {reinterpret_cast<uint64_t>(amem.data()) + g.src_off + piece * i, l, ka.lkey};
    }
    if (send) {
      Sge rs{reinterpret_cast<uint64_t>(bmem.data()) + g.dst_off, len, kb.lkey};
      RecvWr rw;
      rw.wr_id = g.id;
      rw.sg = &rs;
      rw.num_sge = 1;
      EXPECT_TRUE(eb.post_recv(qb, rw));
    } else if (m.op == WrOpcode::kRdmaWriteWithImm) {
      RecvWr rw;
      rw.wr_id = g.id;
      EXPECT_TRUE(eb.post_recv(qb, rw));
    }
    if (flush) {
      // The data first, unsignaled: the FLUSH's completion stands for both.
      SendWr wd;
      wd.wr_id = ~g.id;
      wd.opcode = WrOpcode::kRdmaWrite;
      wd.sg = sg;
      wd.num_sge = n;
      wd.remote_addr = reinterpret_cast<uint64_t>(bmem.data()) + g.dst_off;
      wd.rkey = kb.rkey;
      Status s = ea.post_send(qa, wd, h.now());
      EXPECT_TRUE(s) << s.code();
    }
    SendWr w;
    w.wr_id = g.id;
    w.opcode = m.op;
    w.send_flags = kSendSignaled;
    if (atomic_write) std::memcpy(&w.compare_add, amem.data() + g.src_off, 8);
    if (flush) {
      w.flush_type = kFlushGlobal;
      w.flush_level = g.id % 2 ? kFlushMr : kFlushRange;
      w.flush_len = len;
    }
    if (m.inline_small && len <= 128 && !read) w.send_flags |= kSendInline;
    w.sg = sg;
    w.num_sge = n;
    w.imm_data = g.imm;
    w.remote_addr = reinterpret_cast<uint64_t>(bmem.data()) + g.dst_off;
    w.rkey = kb.rkey;
    Status s = ea.post_send(qa, w, h.now());
    EXPECT_TRUE(s) << s.code();
    posted.push_back(g);
    if (send || m.op == WrOpcode::kRdmaWriteWithImm) recv_wait.push_back(g);
    return true;
  };

  auto verify = [&](const Msg& g) {
    ASSERT_EQ(0, std::memcmp(dst.data() + g.dst_off, src.data() + g.src_off, g.len))
        << "message " << g.id << " len " << g.len;
    // Bytes just past the message are untouched (0xee), unless the next message starts there.
    done_bytes += g.len;
  };

  Cqe cqes[64];
  auto drain = [&] {
    size_t n = ea.poll_cq(h.a().scq, cqes);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_FALSE(posted.empty()) << "extra send completion " << cqes[i].wr_id;
      ASSERT_EQ(cqes[i].status, WcStatus::kSuccess) << "wr " << cqes[i].wr_id;
      ASSERT_EQ(cqes[i].wr_id, posted.front().id) << "send completions out of order";
      ASSERT_EQ(cqes[i].opcode, want_wc) << "wr " << cqes[i].wr_id;
      if (!send && m.op != WrOpcode::kRdmaWriteWithImm) verify(posted.front());
      moved += posted.front().len;
      posted.pop_front();
    }
    n = eb.poll_cq(h.b().rcq, cqes);
    for (size_t i = 0; i < n; ++i) {
      ASSERT_FALSE(recv_wait.empty()) << "extra receive completion";
      const Msg& g = recv_wait.front();
      ASSERT_EQ(cqes[i].status, WcStatus::kSuccess);
      ASSERT_EQ(cqes[i].wr_id, g.id) << "receive completions out of order";
      ASSERT_EQ(cqes[i].byte_len, g.len);
      if (imm) {
        ASSERT_TRUE(cqes[i].wc_flags & kWcWithImm);
        ASSERT_EQ(cqes[i].imm_data, g.imm);
        ASSERT_EQ(cqes[i].opcode, send ? WcOpcode::kRecv : WcOpcode::kRecvRdmaWithImm);
      }
      verify(g);
      recv_wait.pop_front();
    }
  };

  uint64_t posted_bytes = 0;
  while (posted_bytes < m.total || !posted.empty() || !recv_wait.empty()) {
    while (posted_bytes < m.total && posted.size() < m.window) {
      if (!post_one()) break;
      posted_bytes += posted.back().len;
    }
    if (posted.empty() && recv_wait.empty() && posted_bytes < m.total) {
      // Region exhausted and everything verified: new round with a new pattern.
      cursor = 0;
      ++round;
      fill_pattern(src.data(), kRegion, round);
      std::memset(dst.data(), 0xee, kRegion);
      continue;
    }
    // Step until at least one completion arrives.
    Timestamp limit = h.now() + Duration::seconds(60);
    size_t before_p = posted.size(), before_r = recv_wait.size();
    while (posted.size() == before_p && recv_wait.size() == before_r) {
      ASSERT_LT(h.now(), limit) << "no progress; posted " << posted.size();
      ASSERT_TRUE(h.step()) << "engines idle with work outstanding";
      drain();
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
  EXPECT_GE(moved, m.total);
  // Nothing else completes afterwards.
  for (int i = 0; i < 50 && h.step(); ++i) {
  }
  EXPECT_EQ(ea.poll_cq(h.a().scq, cqes), 0u);
  EXPECT_EQ(eb.poll_cq(h.b().rcq, cqes), 0u);
  if (m.loss > 0) {
    EXPECT_GT(h.stats().dropped[0] + h.stats().dropped[1], 0u);
    EXPECT_GT(h.a().counters.get(Counter::roce_adp_retrans), 0u);
  } else {
    EXPECT_EQ(h.a().counters.get(Counter::roce_adp_retrans), 0u);
  }
  EXPECT_EQ(h.a().counters.get(Counter::req_cqe_error), 0u);
  // One QP per engine: its own counts (for `uroce show counters --qp`) are the device's.
  for (int s = 0; s < 2; ++s) {
    const Side& side = h.side(s);
    QpTraffic t;
    ASSERT_TRUE(side.engine->qp_traffic(s == 0 ? qa : qb, &t));
    EXPECT_EQ(t.tx_packets, side.counters.get(Counter::tx_vport_rdma_unicast_packets));
    EXPECT_EQ(t.tx_bytes, side.counters.get(Counter::tx_vport_rdma_unicast_bytes));
    EXPECT_EQ(t.retransmits, side.counters.get(Counter::roce_adp_retrans));
    EXPECT_EQ(t.local_ack_timeouts, side.counters.get(Counter::local_ack_timeout_err));
    EXPECT_GT(t.rx_packets, 0u);
    if (m.loss == 0) {
      EXPECT_EQ(t.rx_packets, side.counters.get(Counter::rx_vport_rdma_unicast_packets));
      EXPECT_EQ(t.rx_bytes, side.counters.get(Counter::rx_vport_rdma_unicast_bytes));
    } else {
      EXPECT_LE(t.rx_packets, side.counters.get(Counter::rx_vport_rdma_unicast_packets));
    }
  }
  QpTraffic none;
  EXPECT_FALSE(ea.qp_traffic(0xabcdef, &none));
}

class RcOpLoss : public ::testing::TestWithParam<std::tuple<WrOpcode, double>> {};

TEST_P(RcOpLoss, MovesEveryByteOnceInOrder) {
  MoveSpec m;
  m.op = std::get<0>(GetParam());
  m.loss = std::get<1>(GetParam());
  m.total = m.loss >= 0.05 ? (8u << 20) : (16u << 20);
  if (m.op == WrOpcode::kAtomicWrite) m.total = 64u << 10;  // 8 KiB operations of 8 bytes
  m.seed = static_cast<uint64_t>(m.op) * 10 + static_cast<uint64_t>(m.loss * 100);
  move_data(m);
}

INSTANTIATE_TEST_SUITE_P(
    AllOps, RcOpLoss,
    ::testing::Combine(::testing::Values(WrOpcode::kSend, WrOpcode::kSendWithImm,
                                         WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm,
                                         WrOpcode::kRdmaRead, WrOpcode::kAtomicWrite,
                                         WrOpcode::kFlush),
                       ::testing::Values(0.0, 0.01, 0.05)));

TEST(RcData, PsnWrapsAcross2To24) {
  for (WrOpcode op : {WrOpcode::kRdmaWrite, WrOpcode::kRdmaRead, WrOpcode::kSend}) {
    MoveSpec m;
    m.op = op;
    m.start_psn = (1u << 24) - 300;  // wraps after 300 packets
    m.total = 4 << 20;
    m.loss = 0.01;
    m.seed = 9;
    move_data(m);
  }
}

TEST(RcData, Mtu256And4096) {
  for (uint8_t mtu : {uint8_t{1}, uint8_t{5}}) {
    for (WrOpcode op : {WrOpcode::kRdmaWrite, WrOpcode::kRdmaRead, WrOpcode::kSend}) {
      MoveSpec m;
      m.op = op;
      m.path_mtu = mtu;
      m.total = mtu == 1 ? (2 << 20) : (8 << 20);
      m.max_msg = mtu == 1 ? (32 << 10) : (256 << 10);
      m.loss = 0.01;
      m.seed = 100 + mtu;
      move_data(m);
    }
  }
}

TEST(RcData, Ipv6MultiSgeAndInline) {
  MoveSpec m;
  m.op = WrOpcode::kSend;
  m.ipv6 = true;
  m.sges = 3;
  m.inline_small = true;
  m.total = 4 << 20;
  m.loss = 0.01;
  move_data(m);
  m.op = WrOpcode::kRdmaWrite;
  move_data(m);
  m.op = WrOpcode::kRdmaRead;
  m.inline_small = false;
  move_data(m);
}

// Atomics: FETCH_ADD and CMP_SWAP under loss execute exactly once each, in order: the values
// returned are exactly the prefix sums, the CAS chain never breaks.
TEST(RcData, AtomicsExactlyOnceUnderLoss) {
  for (double loss : {0.0, 0.01, 0.05, 0.10}) {
    for (uint8_t depth : {uint8_t{1}, uint8_t{8}, uint8_t{16}}) {
      SCOPED_TRACE(::testing::Message() << "loss " << loss << " max_rd_atomic " << int{depth});
      TwoEngines h(3 + static_cast<uint64_t>(loss * 100) + depth);
      for (int d = 0; d < 2; ++d) {
        h.link(d).loss = loss;
        h.link(d).duplicate = loss > 0 ? 0.02 : 0;
        h.link(d).reorder = loss > 0 ? 0.05 : 0;
      }
      MoveSpec ms;
      QpAttr at = rc_attr(ms);
      at.max_rd_atomic = at.max_dest_rd_atomic = depth;
      auto [qa, qb] = h.connect(QpType::kRc, at, 1024, 4, 0, kAll);
      Engine& ea = *h.a().engine;
      Engine& eb = *h.b().engine;
      alignas(8) static uint64_t target[2];
      target[0] = 1000;
      target[1] = 0;
      constexpr int kN = 3000;
      std::vector<uint64_t> res(2 * kN, 0);
      MrKeys ka =
          ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(res.data()), res.size() * 8, kAll).value();
      MrKeys kb =
          eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(target), sizeof target, kAll).value();
      int posted = 0, completed = 0;
      Cqe c[64];
      while (completed < 2 * kN) {
        while (posted < 2 * kN && posted - completed < 32) {
          bool faa = posted < kN;
          int i = faa ? posted : posted - kN;
          Sge sg{reinterpret_cast<uint64_t>(&res[static_cast<size_t>(posted)]), 8, ka.lkey};
          SendWr w;
          w.wr_id = static_cast<uint64_t>(posted);
          w.opcode = faa ? WrOpcode::kAtomicFetchAndAdd : WrOpcode::kAtomicCmpAndSwp;
          w.send_flags = kSendSignaled;
          w.sg = &sg;
          w.num_sge = 1;
          w.remote_addr = reinterpret_cast<uint64_t>(&target[faa ? 0 : 1]);
          w.rkey = kb.rkey;
          w.compare_add = faa ? static_cast<uint64_t>(i + 1) : static_cast<uint64_t>(i);
          w.swap = static_cast<uint64_t>(i + 1);
          ASSERT_TRUE(ea.post_send(qa, w, h.now()));
          ++posted;
        }
        ASSERT_TRUE(h.step());
        size_t n = ea.poll_cq(h.a().scq, c);
        for (size_t k = 0; k < n; ++k) {
          ASSERT_EQ(c[k].status, WcStatus::kSuccess)
              << "wr " << c[k].wr_id << " timeouts "
              << h.a().counters.get(Counter::local_ack_timeout_err) << " implied "
              << h.a().counters.get(Counter::implied_nak_seq_err) << " seq "
              << h.a().counters.get(Counter::packet_seq_err);
          ASSERT_EQ(c[k].wr_id, static_cast<uint64_t>(completed));
          ++completed;
        }
      }
      uint64_t sum = 1000;
      for (int i = 0; i < kN; ++i) {
        ASSERT_EQ(res[static_cast<size_t>(i)], sum) << "FETCH_ADD " << i << " loss " << loss;
        sum += static_cast<uint64_t>(i + 1);
      }
      EXPECT_EQ(target[0], sum);
      for (int i = 0; i < kN; ++i)
        ASSERT_EQ(res[static_cast<size_t>(kN + i)], static_cast<uint64_t>(i)) << "CAS " << i;
      EXPECT_EQ(target[1], static_cast<uint64_t>(kN));
      if (loss > 0) {
        EXPECT_GT(h.b().counters.get(Counter::duplicate_request), 0u);
      }
    }
  }
}

// ATOMIC_WRITE under loss, duplication and reordering executes once each, in order: every
// ATOMIC_WRITE sets the target, and the FETCH_ADD after it must return exactly that value (an
// older ATOMIC_WRITE written again in between, or a lost one, would show), the last value
// stays; between them a WRITE then a FLUSH of a second region completes with the bytes there.
TEST(RcData, AtomicWritesExactlyOnceUnderLoss) {
  for (double loss : {0.0, 0.01, 0.05, 0.10}) {
    for (uint8_t depth : {uint8_t{1}, uint8_t{8}}) {
      SCOPED_TRACE(::testing::Message() << "loss " << loss << " max_rd_atomic " << int{depth});
      TwoEngines h(5 + static_cast<uint64_t>(loss * 100) + depth);
      for (int d = 0; d < 2; ++d) {
        h.link(d).loss = loss;
        h.link(d).duplicate = loss > 0 ? 0.02 : 0;
        h.link(d).reorder = loss > 0 ? 0.05 : 0;
      }
      MoveSpec ms;
      QpAttr at = rc_attr(ms);
      at.max_rd_atomic = at.max_dest_rd_atomic = depth;
      auto [qa, qb] = h.connect(QpType::kRc, at, 1024, 4, 0, kAll);
      Engine& ea = *h.a().engine;
      Engine& eb = *h.b().engine;
      alignas(8) static uint64_t target;
      target = 0;
      std::vector<uint8_t> data(64 << 10), sink(64 << 10);
      constexpr int kN = 1500;  // rounds of ATOMIC_WRITE, FETCH_ADD, WRITE + FLUSH
      std::vector<uint64_t> res(kN, 0);
      MrKeys ka =
          ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(res.data()), res.size() * 8, kAll).value();
      MrKeys kd =
          ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(data.data()), data.size(), kAll).value();
      MrKeys kb =
          eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(&target), sizeof target, kAll).value();
      MrKeys ks =
          eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(sink.data()), sink.size(), kAll).value();
      auto value = [](int i) { return 0x5100000000000000ull + static_cast<uint64_t>(i) * 7919; };
      int posted = 0, completed = 0;  // WRs: 4 per round, the WRITE unsignaled
      Cqe c[64];
      while (completed < 3 * kN) {
        while (posted < kN && 3 * posted - completed < 24) {
          const int i = posted;
          SendWr w;
          w.wr_id = static_cast<uint64_t>(3 * i);
          w.opcode = WrOpcode::kAtomicWrite;
          w.send_flags = kSendSignaled;
          w.remote_addr = reinterpret_cast<uint64_t>(&target);
          w.rkey = kb.rkey;
          w.compare_add = value(i);
          ASSERT_TRUE(ea.post_send(qa, w, h.now()));
          Sge sg{reinterpret_cast<uint64_t>(&res[static_cast<size_t>(i)]), 8, ka.lkey};
          w = SendWr{};
          w.wr_id = static_cast<uint64_t>(3 * i + 1);
          w.opcode = WrOpcode::kAtomicFetchAndAdd;
          w.send_flags = kSendSignaled;
          w.sg = &sg;
          w.num_sge = 1;
          w.remote_addr = reinterpret_cast<uint64_t>(&target);
          w.rkey = kb.rkey;
          w.compare_add = 1;
          ASSERT_TRUE(ea.post_send(qa, w, h.now()));
          const uint32_t off = static_cast<uint32_t>(i % 16) * 4096;
          fill_pattern(data.data() + off, 4096, static_cast<uint64_t>(i) + 1);
          Sge ds{reinterpret_cast<uint64_t>(data.data()) + off, 4096, kd.lkey};
          w = SendWr{};
          w.opcode = WrOpcode::kRdmaWrite;
          w.sg = &ds;
          w.num_sge = 1;
          w.remote_addr = reinterpret_cast<uint64_t>(sink.data()) + off;
          w.rkey = ks.rkey;
          ASSERT_TRUE(ea.post_send(qa, w, h.now()));
          w = SendWr{};
          w.wr_id = static_cast<uint64_t>(3 * i + 2);
          w.opcode = WrOpcode::kFlush;
          w.send_flags = kSendSignaled;
          w.remote_addr = reinterpret_cast<uint64_t>(sink.data()) + off;
          w.rkey = ks.rkey;
          w.flush_len = 4096;
          w.flush_type = kFlushGlobal;
          w.flush_level = kFlushRange;
          ASSERT_TRUE(ea.post_send(qa, w, h.now()));
          ++posted;
        }
        ASSERT_TRUE(h.step());
        size_t n = ea.poll_cq(h.a().scq, c);
        for (size_t k = 0; k < n; ++k) {
          ASSERT_EQ(c[k].status, WcStatus::kSuccess) << "wr " << c[k].wr_id;
          ASSERT_EQ(c[k].wr_id, static_cast<uint64_t>(completed));
          const int i = completed / 3;
          const WcOpcode want = completed % 3 == 0   ? WcOpcode::kAtomicWrite
                                : completed % 3 == 1 ? WcOpcode::kFetchAdd
                                                     : WcOpcode::kFlush;
          ASSERT_EQ(c[k].opcode, want) << "wr " << c[k].wr_id;
          if (completed % 3 == 1) {
            ASSERT_EQ(res[static_cast<size_t>(i)], value(i)) << "read-back " << i;
          }
          if (completed % 3 == 2) {
            // The WRITE before the FLUSH is in place (its slot is not rewritten before then: at
            // most 8 rounds are outstanding, 16 slots).
            const uint32_t off = static_cast<uint32_t>(i % 16) * 4096;
            ASSERT_EQ(0, std::memcmp(sink.data() + off, data.data() + off, 4096)) << "round " << i;
          }
          ++completed;
        }
      }
      EXPECT_EQ(target, value(kN - 1) + 1);
      if (loss > 0) {
        EXPECT_GT(h.b().counters.get(Counter::duplicate_request), 0u);
      }
    }
  }
}

// Mixed operations on one QP with fences and max_rd_atomic: completions stay in order.
TEST(RcData, MixedOpsWithFenceInOrder) {
  TwoEngines h(11);
  for (int d = 0; d < 2; ++d) h.link(d).loss = 0.02;
  MoveSpec ms;
  QpAttr at = rc_attr(ms);
  at.max_rd_atomic = 2;
  at.max_dest_rd_atomic = 2;
  auto [qa, qb] = h.connect(QpType::kRc, at, 1024, 4, 64, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;
  std::vector<uint8_t> am(1 << 20), bm(1 << 20);
  fill_pattern(am.data(), am.size(), 1);
  fill_pattern(bm.data(), bm.size(), 2);
  MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
  MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bm.data()), bm.size(), kAll).value();
  // WRITE A[0..64K) -> B[0..64K), then a fenced READ of B[0..64K) into A[128K..): it must see the
  // written data. Repeat with a SEND in between.
  std::vector<uint8_t> expect(am.begin(), am.begin() + 65536);
  int id = 0;
  for (int rep = 0; rep < 20; ++rep) {
    Sge s1{reinterpret_cast<uint64_t>(am.data()), 65536, ka.lkey};
    SendWr w;
    w.wr_id = static_cast<uint64_t>(id++);
    w.opcode = WrOpcode::kRdmaWrite;
    w.sg = &s1;
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(bm.data());
    w.rkey = kb.rkey;
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));  // unsignaled
    Sge s2{reinterpret_cast<uint64_t>(am.data()) + 131072, 65536, ka.lkey};
    SendWr r = w;
    r.wr_id = static_cast<uint64_t>(id++);
    r.opcode = WrOpcode::kRdmaRead;
    r.sg = &s2;
    r.send_flags = kSendSignaled | kSendFence;
    ASSERT_TRUE(ea.post_send(qa, r, h.now()));
  }
  std::vector<uint64_t> ids;
  ASSERT_TRUE(h.run_until([&] {
    Cqe c[16];
    size_t n = ea.poll_cq(h.a().scq, c);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(c[i].status, WcStatus::kSuccess);
      ids.push_back(c[i].wr_id);
    }
    return ids.size() == 20;
  }));
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], 2 * i + 1);  // only READs signaled
  EXPECT_EQ(0, std::memcmp(am.data() + 131072, expect.data(), 65536));
}

// A random mix of SEND, SEND_WITH_IMM, WRITE, WRITE_WITH_IMM, READ, FETCH_ADD and CMP_SWAP on
// one QP with small MTU, heavy reordering, duplication and loss: every byte, every result and
// the order of every completion on both sides.
TEST(RcData, RandomMixUnderHeavyImpairment) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(::testing::Message() << "seed " << seed);
    TwoEngines h(seed * 1000);
    for (int d = 0; d < 2; ++d) {
      h.link(d).loss = 0.04;
      h.link(d).reorder = 0.10;
      h.link(d).reorder_delay = Duration::micros(20);
      h.link(d).duplicate = 0.03;
      h.link(d).corrupt = 0.01;
    }
    MoveSpec ms;
    ms.path_mtu = 2;  // 512
    QpAttr at = rc_attr(ms);
    at.max_rd_atomic = at.max_dest_rd_atomic = 4;
    at.timeout = 6;
    auto [qa, qb] = h.connect(QpType::kRc, at, 256, 4, 64, kAll);
    Engine& ea = *h.a().engine;
    Engine& eb = *h.b().engine;
    constexpr int kOps = 1500;
    constexpr uint32_t kSlot = 8192;
    std::vector<uint8_t> am(size_t{kOps} * kSlot), bm(size_t{kOps} * kSlot, 0);
    fill_pattern(am.data(), am.size(), seed);
    fill_pattern(bm.data(), bm.size(), seed + 100);
    std::vector<uint8_t> b_orig = bm, a_orig = am;
    alignas(8) static uint64_t counters[4];
    for (int i = 0; i < 4; ++i) counters[i] = static_cast<uint64_t>(i) * 1000;
    std::vector<uint64_t> results(kOps, 0);
    MrKeys ka = ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(am.data()), am.size(), kAll).value();
    MrKeys kb = eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bm.data()), bm.size(), kAll).value();
    MrKeys kr =
        ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(results.data()), results.size() * 8, kAll)
            .value();
    MrKeys kc =
        eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(counters), sizeof counters, kAll).value();
    std::mt19937_64 rng(seed);
    const WrOpcode kOpsList[] = {WrOpcode::kSend,           WrOpcode::kSendWithImm,
                                 WrOpcode::kRdmaWrite,      WrOpcode::kRdmaWriteWithImm,
                                 WrOpcode::kRdmaRead,       WrOpcode::kAtomicFetchAndAdd,
                                 WrOpcode::kAtomicCmpAndSwp};
    struct Op {
      WrOpcode op;
      uint32_t len;
      uint64_t add;
      uint64_t cmp;
      int ctr;
    };
    std::vector<Op> ops(kOps);
    std::vector<uint64_t> expect_recv;  // wr_ids that make a receive completion, in order
    int posted = 0, completed = 0;
    size_t recv_done = 0;
    uint64_t model[4] = {0, 1000, 2000, 3000};
    std::vector<uint64_t> expect_result(kOps, 0);
    Cqe c[64];
    while (completed < kOps) {
      while (posted < kOps && posted - completed < 48) {
        int i = posted;
        Op& o = ops[static_cast<size_t>(i)];
        o.op = kOpsList[rng() % 7];
        o.len = static_cast<uint32_t>(rng() % (kSlot + 1));
        o.ctr = static_cast<int>(rng() % 4);
        o.add = rng() % 100;
        bool atomic = o.op == WrOpcode::kAtomicFetchAndAdd || o.op == WrOpcode::kAtomicCmpAndSwp;
        // CMP_SWAP: compare against the modelled value half of the time (then it swaps).
        o.cmp = (rng() % 2) ? model[o.ctr] : model[o.ctr] + 1;
        if (atomic) {
          expect_result[static_cast<size_t>(i)] = model[o.ctr];
          if (o.op == WrOpcode::kAtomicFetchAndAdd)
            model[o.ctr] += o.add;
          else if (o.cmp == model[o.ctr])
            model[o.ctr] = o.add;
        }
        uint64_t slot = static_cast<uint64_t>(i) * kSlot;
        Sge sg{reinterpret_cast<uint64_t>(am.data()) + slot, o.len, ka.lkey};
        if (atomic) sg = {reinterpret_cast<uint64_t>(&results[static_cast<size_t>(i)]), 8, kr.lkey};
        bool recv = o.op == WrOpcode::kSend || o.op == WrOpcode::kSendWithImm ||
                    o.op == WrOpcode::kRdmaWriteWithImm;
        if (recv) {
          Sge rs{reinterpret_cast<uint64_t>(bm.data()) + slot, kSlot, kb.lkey};
          RecvWr rw;
          rw.wr_id = static_cast<uint64_t>(i);
          rw.sg = &rs;
          rw.num_sge = 1;
          ASSERT_TRUE(eb.post_recv(qb, rw));
          expect_recv.push_back(static_cast<uint64_t>(i));
        }
        SendWr w;
        w.wr_id = static_cast<uint64_t>(i);
        w.opcode = o.op;
        w.send_flags = kSendSignaled | ((rng() % 8 == 0) ? uint32_t{kSendFence} : 0u);
        w.sg = &sg;
        w.num_sge = 1;
        w.imm_data = static_cast<uint32_t>(i);
        w.remote_addr = atomic ? reinterpret_cast<uint64_t>(&counters[o.ctr])
                               : reinterpret_cast<uint64_t>(bm.data()) + slot;
        w.rkey = atomic ? kc.rkey : kb.rkey;
        w.compare_add = o.op == WrOpcode::kAtomicCmpAndSwp ? o.cmp : o.add;
        w.swap = o.add;
        ASSERT_TRUE(ea.post_send(qa, w, h.now()));
        ++posted;
      }
      ASSERT_TRUE(h.step()) << "idle with " << posted - completed << " outstanding";
      ASSERT_LT(h.now().ns, int64_t{1'000'000'000'000}) << "no progress";
      size_t n = ea.poll_cq(h.a().scq, c);
      for (size_t k = 0; k < n; ++k) {
        ASSERT_EQ(c[k].status, WcStatus::kSuccess) << "wr " << c[k].wr_id;
        ASSERT_EQ(c[k].wr_id, static_cast<uint64_t>(completed)) << "out of order";
        ++completed;
      }
      n = eb.poll_cq(h.b().rcq, c);
      for (size_t k = 0; k < n; ++k) {
        ASSERT_EQ(c[k].status, WcStatus::kSuccess);
        ASSERT_LT(recv_done, expect_recv.size());
        ASSERT_EQ(c[k].wr_id, expect_recv[recv_done]) << "receive out of order";
        const Op& o = ops[c[k].wr_id];
        ASSERT_EQ(c[k].byte_len, o.len);
        if (o.op != WrOpcode::kSend) {
          ASSERT_EQ(c[k].imm_data, static_cast<uint32_t>(c[k].wr_id));
        }
        ++recv_done;
      }
    }
    EXPECT_EQ(recv_done, expect_recv.size());
    for (int i = 0; i < kOps; ++i) {
      const Op& o = ops[static_cast<size_t>(i)];
      size_t slot = static_cast<size_t>(i) * kSlot;
      switch (o.op) {
        case WrOpcode::kRdmaRead:
          ASSERT_EQ(0, std::memcmp(am.data() + slot, b_orig.data() + slot, o.len)) << i;
          ASSERT_EQ(
              0, std::memcmp(am.data() + slot + o.len, a_orig.data() + slot + o.len, kSlot - o.len))
              << i;
          break;
        case WrOpcode::kAtomicFetchAndAdd:
        case WrOpcode::kAtomicCmpAndSwp:
          ASSERT_EQ(results[static_cast<size_t>(i)], expect_result[static_cast<size_t>(i)]) << i;
          break;
        default:
          ASSERT_EQ(0, std::memcmp(bm.data() + slot, a_orig.data() + slot, o.len)) << i;
          ASSERT_EQ(
              0, std::memcmp(bm.data() + slot + o.len, b_orig.data() + slot + o.len, kSlot - o.len))
              << i;
          break;
      }
    }
    for (int k = 0; k < 4; ++k) EXPECT_EQ(counters[k], model[k]);
  }
}

}  // namespace
}  // namespace uroce::transport::testing

namespace uroce::transport::testing {
namespace {

// max_rd_atomic / max_dest_rd_atomic up to 128 (rxe's value, which perftest copies from the
// peer): 129 is refused; 128 READs are all in flight at once and all complete with the bytes.
TEST(RcData, ReadDepth128AllInFlightAtOnce) {
  TwoEngines h(11);
  const Duration lat = Duration::millis(1);
  h.link(0).latency = h.link(1).latency = lat;
  MoveSpec ms;
  QpAttr at = rc_attr(ms);
  at.timeout = 14;  // 67 ms: far above the round trip
  {
    // 129: EINVAL at INIT->RTR (max_dest_rd_atomic) and at RTR->RTS (max_rd_atomic).
    Engine& e = *h.a().engine;
    uint32_t q = h.create_qp(0, QpType::kRc, 16, 1, 0);
    QpAttr a = at;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = kAll;
    ASSERT_TRUE(e.modify_qp(q, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags));
    a.qp_state = QpState::kRtr;
    a.av = h.av_to_peer(0);
    a.dest_qp_num = 99;
    const uint32_t rtr = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                         kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    a.max_dest_rd_atomic = 129;
    EXPECT_EQ(e.modify_qp(q, a, rtr), Status::invalid());
    a.max_dest_rd_atomic = 128;
    ASSERT_TRUE(e.modify_qp(q, a, rtr));
    a.qp_state = QpState::kRts;
    const uint32_t rts =
        kAttrState | kAttrSqPsn | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
    a.max_rd_atomic = 129;
    EXPECT_EQ(e.modify_qp(q, a, rts), Status::invalid());
    a.max_rd_atomic = 128;
    EXPECT_TRUE(e.modify_qp(q, a, rts));
    QpAttr got;
    ASSERT_TRUE(e.query_qp(q, &got, nullptr));
    EXPECT_EQ(got.max_rd_atomic, 128u);
    EXPECT_EQ(got.max_dest_rd_atomic, 128u);
    ASSERT_TRUE(e.destroy_qp(q));
  }
  at.max_rd_atomic = at.max_dest_rd_atomic = 128;
  auto [qa, qb] = h.connect(QpType::kRc, at, 256, 1, 0, kAll);
  Engine& ea = *h.a().engine;
  Engine& eb = *h.b().engine;
  constexpr uint32_t kN = 128, kLen = 64;
  std::vector<uint8_t> amem(kN * kLen, 0), bmem(kN * kLen);
  fill_pattern(bmem.data(), bmem.size(), 7);
  MrKeys ka =
      ea.reg_mr(h.a().pd, reinterpret_cast<uint64_t>(amem.data()), amem.size(), kAll).value();
  MrKeys kb =
      eb.reg_mr(h.b().pd, reinterpret_cast<uint64_t>(bmem.data()), bmem.size(), kAll).value();
  for (uint32_t i = 0; i < kN; ++i) {
    Sge sg{reinterpret_cast<uint64_t>(amem.data()) + i * kLen, kLen, ka.lkey};
    SendWr w;
    w.wr_id = i;
    w.opcode = WrOpcode::kRdmaRead;
    w.send_flags = kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(bmem.data()) + i * kLen;
    w.rkey = kb.rkey;
    ASSERT_TRUE(ea.post_send(qa, w, h.now()));
  }
  const Timestamp t0 = h.now();
  std::vector<Cqe> got;
  ASSERT_TRUE(h.run_until(
      [&] {
        Cqe c[64];
        size_t k = ea.poll_cq(h.a().scq, c);
        got.insert(got.end(), c, c + k);
        return got.size() >= kN;
      },
      Duration::seconds(5)));
  // One round trip (2 x 1 ms) plus serialisation: with a depth of 16 it would take 8.
  EXPECT_LT(h.now() - t0, lat * 3);
  for (uint32_t i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].wr_id, i);
    EXPECT_EQ(got[i].status, WcStatus::kSuccess);
  }
  EXPECT_EQ(amem, bmem);
  EXPECT_EQ(h.a().counters.get(Counter::local_ack_timeout_err), 0u);
  (void)qb;
}

}  // namespace
}  // namespace uroce::transport::testing
