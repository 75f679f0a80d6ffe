/**
 * @file scenario_test.cc
 * @brief Scenarios on the real engine over the simulated fabric: UC and UD under loss, a peer
 * that stops answering (RETRY_EXC_ERR after timeout x (retry_cnt + 1) of simulated time, then
 * WR_FLUSH_ERR), RNR with rnr_retry 7 (waits, then succeeds once a receive is posted) and with
 * a finite rnr_retry (RNR_RETRY_EXC_ERR). References: IBA Vol 1 §9.7.5.2 (UC: a message with a
 * missing packet is dropped, never completed), §9.8 (UD), §9.7.6.1 (local ACK timeout,
 * retry count), §9.7.5.2.8 (RNR NAK, rnr_retry 7 = infinite), ibv_poll_cq(3), ibv_post_send(3).
 * Units: ns, bytes.
 */
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "sim/frame_bytes.h"
#include "sim/rc_stream.h"
#include "sim/testbed.h"

namespace uroce::sim::test {
namespace {

using transport::Cqe;
using transport::QpAttr;
using transport::QpInitAttr;
using transport::QpState;
using transport::QpType;
using transport::RecvWr;
using transport::SendWr;
using transport::Sge;
using transport::WcOpcode;
using transport::WcStatus;
using transport::WrOpcode;

constexpr uint32_t kAll = transport::kAccessLocalWrite | transport::kAccessRemoteWrite |
                          transport::kAccessRemoteRead | transport::kAccessRemoteAtomic;

/// Writes a self-describing message: 8-byte index, then pattern(index, k).
void write_message(uint8_t* p, uint32_t len, uint64_t idx) {
  for (uint32_t k = 0; k < len; ++k) p[k] = pattern(idx, k);
  if (len >= 8) std::memcpy(p, &idx, 8);
}

/// Checks a self-describing message of `len` bytes; returns its index or -1 if inconsistent.
int64_t read_message(const uint8_t* p, uint32_t len) {
  if (len < 8) return -1;
  uint64_t idx;
  std::memcpy(&idx, p, 8);
  for (uint32_t k = 8; k < len; ++k)
    if (p[k] != pattern(idx, k)) return -1;
  return static_cast<int64_t>(idx);
}

size_t poll_all(EngineHost& h, uint32_t cq, std::vector<Cqe>* out) {
  std::array<Cqe, 32> b;
  size_t total = 0;
  for (;;) {
    size_t n = h.engine().poll_cq(cq, b);
    out->insert(out->end(), b.begin(), b.begin() + static_cast<long>(n));
    total += n;
    if (n < b.size()) return total;
  }
}

// ---- Determinism -------------------------------------------------------------------------

/// Runs a lossy, reordering, duplicating WRITE stream and hashes every frame delivered on
/// both wires: arrival time, length and BTH (opcode, QPN, PSN). The rest of the bytes hold
/// buffer addresses (RETH) and hence the ICRC, which differ between runs in one process.
uint64_t trace_hash(uint64_t seed, uint64_t* frames) {
  TwoHostFabric f;
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  auto tap = [&](const Frame& fr, Timestamp t) {
    ++*frames;
    auto mix = [&](uint8_t b) { h = (h ^ b) * 1099511628211ull; };
    for (int k = 0; k < 8; ++k) mix(static_cast<uint8_t>(t.ns >> (8 * k)));
    for (int k = 0; k < 8; ++k) mix(static_cast<uint8_t>(fr.size() >> (8 * k)));
    size_t bth = bth_offset(fr.bytes);
    for (size_t k = 0; bth && k < kBthBytes; ++k) mix(fr.bytes[bth + k]);
  };
  for (int d = 0; d < 2; ++d) {
    f.impair(d, Impairments{.seed = seed + static_cast<uint64_t>(d),
                            .loss = 0.02,
                            .reorder = 0.01,
                            .duplicate = 0.01,
                            .corrupt = 0.002});
    f.wire_from(d).set_tap(tap);
  }
  Endpoint a = make_endpoint(*f.host[0], 0, QpType::kRc);
  Endpoint b = make_endpoint(*f.host[1], 1, QpType::kRc);
  if (!connect(a, b, ConnParams{})) return 0;
  StreamConfig sc;
  sc.op = StreamOp::kWrite;
  sc.total_bytes = 2ull << 20;
  RcStream st(sc, *f.host[0], a.pd, a.qpn, a.scq, *f.host[1], b.pd, b.qpn, b.rcq);
  st.start();
  f.sim.run_while([&] { return !st.done(); }, Timestamp{} + Duration::seconds(10));
  return st.error().empty() && st.done() ? h : 0;
}

TEST(DeterminismTest, SameSeedSameFramesAtTheSameNanoseconds) {
  uint64_t n1 = 0, n2 = 0, n3 = 0;
  uint64_t h1 = trace_hash(11, &n1);
  uint64_t h2 = trace_hash(11, &n2);
  uint64_t h3 = trace_hash(12, &n3);
  ASSERT_NE(h1, 0u) << "stream failed";
  EXPECT_EQ(h1, h2);
  EXPECT_EQ(n1, n2);
  EXPECT_NE(h1, h3);
}

// ---- UC --------------------------------------------------------------------------------

class UcLossTest : public ::testing::TestWithParam<WrOpcode> {};

TEST_P(UcLossTest, LossDropsWholeMessagesNeverPartial) {
  const WrOpcode op = GetParam();
  TwoHostFabric f;
  f.impair(0, Impairments{.seed = 31,
                          .loss = 0.05,
                          .reorder = 0.01,
                          .reorder_delay = Duration::micros(2),
                          .duplicate = 0.01});
  Endpoint a = make_endpoint(*f.host[0], 0, QpType::kUc);
  Endpoint b = make_endpoint(*f.host[1], 1, QpType::kUc);
  ConnParams c;
  c.path_mtu = 3;  // 1024: each 8 KiB message is 8 packets
  ASSERT_TRUE(connect(a, b, c));
  constexpr uint32_t kMsg = 8192, kSlots = 64, kN = 400, kWindow = 32;
  Region src = make_region(a, kSlots * kMsg, transport::kAccessLocalWrite);
  Region dst =
      make_region(b, kSlots * kMsg, transport::kAccessLocalWrite | transport::kAccessRemoteWrite);
  ASSERT_NE(src.keys.lkey, 0u);

  uint64_t posted = 0, send_done = 0, recv_posted = 0;
  std::vector<Cqe> rx;
  std::vector<int64_t> got;
  std::string err;
  auto post_recv = [&] {
    RecvWr r;
    Sge sg{dst.addr() + (recv_posted % kSlots) * kMsg, kMsg, dst.keys.lkey};
    r.wr_id = recv_posted;
    if (op == WrOpcode::kSend) {
      r.sg = &sg;
      r.num_sge = 1;
    }
    ASSERT_TRUE(f.host[1]->engine().post_recv(b.qpn, r));
    ++recv_posted;
  };
  for (uint32_t i = 0; i < kSlots; ++i) post_recv();

  f.host[0]->set_app([&](EngineHost& h, Timestamp now) {
    std::vector<Cqe> cq;
    poll_all(h, a.scq, &cq);
    for (auto& e : cq) {
      if (e.wr_id != send_done || e.status != WcStatus::kSuccess) err = "UC send completion";
      ++send_done;
    }
    bool any = false;
    while (posted < kN && posted - send_done < kWindow) {
      uint8_t* p = src.data() + (posted % kSlots) * kMsg;
      write_message(p, kMsg, posted);
      Sge sg{reinterpret_cast<uint64_t>(p), kMsg, src.keys.lkey};
      SendWr w;
      w.wr_id = posted;
      w.opcode = op;
      w.send_flags = transport::kSendSignaled;
      w.sg = &sg;
      w.num_sge = 1;
      w.imm_data = static_cast<uint32_t>(posted);
      w.remote_addr = dst.addr() + (posted % kSlots) * kMsg;
      w.rkey = dst.keys.rkey;
      if (!h.engine().post_send(a.qpn, w, now)) {
        err = "UC post_send";
        break;
      }
      ++posted;
      any = true;
    }
    return any;
  });
  f.host[1]->set_app([&](EngineHost& h, Timestamp) {
    std::vector<Cqe> cq;
    poll_all(h, b.rcq, &cq);
    for (auto& e : cq) {
      // Expect: only whole messages complete, with success and the full length.
      if (e.status != WcStatus::kSuccess)
        err = "UC receive status " + std::to_string(int(e.status));
      const uint8_t* p;
      int64_t idx;
      if (op == WrOpcode::kSend) {
        if (e.byte_len != kMsg) err = "UC receive byte_len " + std::to_string(e.byte_len);
        p = dst.data() + (e.wr_id % kSlots) * kMsg;
        idx = read_message(p, kMsg);
      } else {
        if (!(e.wc_flags & transport::kWcWithImm)) err = "UC WRITE_WITH_IMM without imm";
        if (e.byte_len != kMsg) err = "UC write-imm byte_len " + std::to_string(e.byte_len);
        idx = e.imm_data;
        p = dst.data() + (static_cast<uint64_t>(idx) % kSlots) * kMsg;
        if (read_message(p, kMsg) != idx) idx = -1;
      }
      if (idx < 0) err = "UC delivered a partial or mixed message";
      if (!got.empty() && idx <= got.back()) err = "UC delivered out of order or twice";
      got.push_back(idx);
    }
    for (size_t k = 0; k < cq.size(); ++k) post_recv();
    return false;
  });
  f.host[0]->wake();
  ASSERT_TRUE(f.sim.run_while([&] { return send_done < kN && err.empty(); },
                              Timestamp{} + Duration::seconds(5)));
  f.sim.run_until(f.sim.now() + Duration::millis(5));
  EXPECT_EQ(err, "");
  // Expect: every send completed; about 0.95^8 = 66 % of messages delivered (4 sd margin),
  // some lost, none invented.
  EXPECT_EQ(send_done, kN);
  EXPECT_LT(got.size(), kN);
  EXPECT_GT(got.size(), kN * 50 / 100);
  for (int64_t i : got) EXPECT_LT(i, int64_t{kN});
  EXPECT_GT(f.wire_from(0).stats().lost, 0u);
}

INSTANTIATE_TEST_SUITE_P(Uc, UcLossTest,
                         ::testing::Values(WrOpcode::kSend, WrOpcode::kRdmaWriteWithImm),
                         [](const auto& p) {
                           return p.param == WrOpcode::kSend ? std::string("Send")
                                                             : std::string("WriteWithImm");
                         });

// ---- UD --------------------------------------------------------------------------------

struct UdRun {
  std::vector<Cqe> rx;
  std::vector<std::vector<uint8_t>> payloads;
  std::vector<std::vector<uint8_t>> grhs;  ///< the 40-byte GRH slot of each receive
  uint64_t sent = 0;
  std::string err;
};

UdRun run_ud(TwoHostFabric& f, const Impairments& imp, uint32_t n, uint32_t bad_qkey_every) {
  UdRun r;
  f.impair(0, imp);
  Endpoint a = make_endpoint(*f.host[0], 0, QpType::kUd);
  Endpoint b = make_endpoint(*f.host[1], 1, QpType::kUd);
  ConnParams c;
  if (!connect(a, b, c)) {
    r.err = "UD modify_qp";
    return r;
  }
  constexpr uint32_t kGrh = 40, kMax = 1024, kSlot = kGrh + kMax, kSlots = 256;
  Region src = make_region(a, kSlots * kMax, transport::kAccessLocalWrite);
  Region dst = make_region(b, kSlots * kSlot, transport::kAccessLocalWrite);
  transport::AddressVector av;
  av.dgid = host_gid(1);
  uint64_t recv_posted = 0, send_done = 0;
  auto post_recv = [&] {
    RecvWr w;
    Sge sg{dst.addr() + (recv_posted % kSlots) * kSlot, kSlot, dst.keys.lkey};
    w.wr_id = recv_posted;
    w.sg = &sg;
    w.num_sge = 1;
    if (!f.host[1]->engine().post_recv(b.qpn, w)) r.err = "UD post_recv";
    ++recv_posted;
  };
  for (uint32_t i = 0; i < kSlots; ++i) post_recv();
  auto size_of = [](uint64_t i) { return static_cast<uint32_t>(8 + (i * 37) % (kMax - 8 + 1)); };
  f.host[0]->set_app([&](EngineHost& h, Timestamp now) {
    std::vector<Cqe> cq;
    poll_all(h, a.scq, &cq);
    for (auto& e : cq) {
      if (e.wr_id != send_done || e.status != WcStatus::kSuccess) r.err = "UD send completion";
      ++send_done;
    }
    bool any = false;
    while (r.sent < n && r.sent - send_done < 64) {
      uint32_t len = size_of(r.sent);
      uint8_t* p = src.data() + (r.sent % kSlots) * kMax;
      write_message(p, len, r.sent);
      Sge sg{reinterpret_cast<uint64_t>(p), len, src.keys.lkey};
      SendWr w;
      w.wr_id = r.sent;
      w.opcode = WrOpcode::kSend;
      w.send_flags = transport::kSendSignaled;
      w.sg = &sg;
      w.num_sge = 1;
      w.ah = &av;
      w.remote_qpn = b.qpn;
      w.remote_qkey = bad_qkey_every && r.sent % bad_qkey_every == 1 ? c.qkey ^ 1 : c.qkey;
      if (!h.engine().post_send(a.qpn, w, now)) {
        r.err = "UD post_send";
        break;
      }
      ++r.sent;
      any = true;
    }
    return any;
  });
  f.host[1]->set_app([&](EngineHost& h, Timestamp) {
    std::vector<Cqe> cq;
    poll_all(h, b.rcq, &cq);
    for (auto& e : cq) {
      r.rx.push_back(e);
      const uint8_t* p = dst.data() + (e.wr_id % kSlots) * kSlot;
      uint32_t len = e.byte_len >= kGrh ? e.byte_len - kGrh : 0;
      r.payloads.emplace_back(p + kGrh, p + kGrh + std::min(len, kMax));
      r.grhs.emplace_back(p, p + kGrh);
    }
    for (size_t k = 0; k < cq.size(); ++k) post_recv();
    return false;
  });
  f.host[0]->wake();
  if (!f.sim.run_while([&] { return send_done < n && r.err.empty(); },
                       Timestamp{} + Duration::seconds(5)))
    r.err = "UD sends did not complete";
  f.sim.run_until(f.sim.now() + Duration::millis(1));
  (void)size_of;
  return r;
}

TEST(UdTest, LossDropsDatagramsAndNothingElseIsCorrupted) {
  TwoHostFabric f;
  constexpr uint32_t kN = 3000;
  UdRun r = run_ud(f,
                   Impairments{.seed = 5,
                               .loss = 0.05,
                               .reorder = 0.02,
                               .reorder_delay = Duration::micros(2),
                               .duplicate = 0.02},
                   kN, 0);
  ASSERT_EQ(r.err, "");
  const LinkStats& ls = f.wire_from(0).stats();
  // Expect: every frame that arrived became exactly one completion (duplicates included: UD
  // does not detect them), each intact, with the GRH flag, source QPN and GID.
  EXPECT_EQ(r.rx.size(), ls.delivered);
  EXPECT_EQ(ls.delivered, kN - ls.lost + ls.duplicated);
  EXPECT_GT(ls.lost, 0u);
  for (size_t i = 0; i < r.rx.size(); ++i) {
    const Cqe& e = r.rx[i];
    ASSERT_EQ(e.status, WcStatus::kSuccess);
    EXPECT_EQ(e.opcode, WcOpcode::kRecv);
    EXPECT_TRUE(e.wc_flags & transport::kWcGrh);
    EXPECT_EQ(e.sgid, host_gid(0));
    int64_t idx = read_message(r.payloads[i].data(), static_cast<uint32_t>(r.payloads[i].size()));
    ASSERT_GE(idx, 0) << "datagram " << i << " corrupted";
    EXPECT_EQ(r.payloads[i].size(), 8 + (static_cast<uint64_t>(idx) * 37) % (1024 - 8 + 1));
    // GRH slot over IPv4 (rdma-core/rxe layout): 20 undefined bytes, then the IPv4 header
    // with the sender's source address 198.18.0.1 and ours as destination.
    const auto& g = r.grhs[i];
    EXPECT_EQ(g[20] >> 4, 4);
    EXPECT_EQ(g[20 + 9], 17);  // UDP
    EXPECT_EQ(std::vector<uint8_t>(g.begin() + 32, g.begin() + 36),
              (std::vector<uint8_t>{198, 18, 0, 1}));
    EXPECT_EQ(std::vector<uint8_t>(g.begin() + 36, g.begin() + 40),
              (std::vector<uint8_t>{198, 18, 0, 2}));
  }
  EXPECT_EQ(r.rx.front().src_qp, r.rx.back().src_qp);
}

TEST(UdTest, CorruptedDatagramsFailIcrcAndBadQkeysAreDropped) {
  TwoHostFabric f;
  constexpr uint32_t kN = 2000;
  UdRun r = run_ud(f, Impairments{.seed = 6, .corrupt = 0.05}, kN, 10);
  ASSERT_EQ(r.err, "");
  const LinkStats& ls = f.wire_from(0).stats();
  uint64_t bad_qkey = 0;
  for (uint64_t i = 0; i < kN; ++i) bad_qkey += i % 10 == 1;
  // Expect: each corrupted frame counted as an ICRC error; each wrong Q_Key counted; the rest
  // delivered intact (a corrupted datagram with a bad Q_Key counts as an ICRC error only).
  CounterBlock& cb = f.host[1]->counters();
  EXPECT_GT(ls.corrupted, 50u);
  EXPECT_EQ(cb.get(Counter::rx_icrc_encapsulated), ls.corrupted);
  EXPECT_GT(cb.get(Counter::rx_qkey_violation), bad_qkey * 8 / 10);
  EXPECT_EQ(
      r.rx.size() + cb.get(Counter::rx_icrc_encapsulated) + cb.get(Counter::rx_qkey_violation),
      uint64_t{kN});
  for (size_t i = 0; i < r.rx.size(); ++i) {
    ASSERT_EQ(r.rx[i].status, WcStatus::kSuccess);
    int64_t idx = read_message(r.payloads[i].data(), static_cast<uint32_t>(r.payloads[i].size()));
    ASSERT_GE(idx, 0);
    EXPECT_NE(idx % 10, 1) << "datagram with a wrong Q_Key delivered";
  }
}

// ---- RC: a peer that stops answering ------------------------------------------------------

/// Posts a signaled single-SGE WR; returns its status.
Status post(EngineHost& h, uint32_t qpn, WrOpcode op, uint64_t id, Region& src, uint32_t len,
            uint64_t raddr, uint32_t rkey) {
  Sge sg{src.addr(), len, src.keys.lkey};
  SendWr w;
  w.wr_id = id;
  w.opcode = op;
  w.send_flags = transport::kSendSignaled;
  w.sg = &sg;
  w.num_sge = 1;
  w.remote_addr = raddr;
  w.rkey = rkey;
  return h.engine().post_send(qpn, w, h.sim().now());
}

Status post_recv(EngineHost& h, uint32_t qpn, uint64_t id, Region& dst, uint32_t len) {
  Sge sg{dst.addr(), len, dst.keys.lkey};
  RecvWr w;
  w.wr_id = id;
  w.sg = &sg;
  w.num_sge = 1;
  Status s = h.engine().post_recv(qpn, w);
  h.wake();
  return s;
}

struct RcPair {
  TwoHostFabric f;
  Endpoint a, b;
  Region a_buf, b_buf;
  std::vector<std::pair<Timestamp, Cqe>> a_cqes, b_cqes;

  explicit RcPair(const ConnParams& c) {
    a = make_endpoint(*f.host[0], 0, QpType::kRc);
    b = make_endpoint(*f.host[1], 1, QpType::kRc);
    ok = connect(a, b, c).is_ok();
    a_buf = make_region(a, 1 << 16, kAll);
    b_buf = make_region(b, 1 << 16, kAll);
    // Record every completion with the simulated time it was polled (right after it was
    // generated: hosts run the app after every poll_transmit and every received frame).
    f.host[0]->set_app([this](EngineHost& h, Timestamp now) {
      std::vector<Cqe> v;
      poll_all(h, a.scq, &v);
      for (auto& e : v) a_cqes.emplace_back(now, e);
      return false;
    });
    f.host[1]->set_app([this](EngineHost& h, Timestamp now) {
      std::vector<Cqe> v;
      poll_all(h, b.rcq, &v);
      for (auto& e : v) b_cqes.emplace_back(now, e);
      return false;
    });
  }
  bool ok = false;
};

TEST(RcRetryTest, SilentPeerGivesRetryExcErrAfterTimeoutTimesRetriesThenFlush) {
  ConnParams c;
  c.timeout = 10;  // 4.096 us * 2^10 = 4.194304 ms
  c.retry_cnt = 3;
  RcPair p(c);
  ASSERT_TRUE(p.ok);
  // Warm up: one SEND that succeeds, so the path works.
  ASSERT_TRUE(post_recv(*p.f.host[1], p.b.qpn, 100, p.b_buf, 4096));
  ASSERT_TRUE(post(*p.f.host[0], p.a.qpn, WrOpcode::kSend, 0, p.a_buf, 512, 0, 0));
  p.f.host[0]->wake();
  ASSERT_TRUE(
      p.f.sim.run_while([&] { return p.a_cqes.empty(); }, Timestamp{} + Duration::millis(10)));
  ASSERT_EQ(p.a_cqes[0].second.status, WcStatus::kSuccess);
  p.f.sim.run_until(p.f.sim.now() + Duration::millis(1));

  // The peer stops answering. Post 5 WRITEs at T0.
  p.f.host[1]->set_frozen(true);
  Timestamp t0 = p.f.sim.now();
  for (uint64_t i = 1; i <= 5; ++i)
    ASSERT_TRUE(post(*p.f.host[0], p.a.qpn, WrOpcode::kRdmaWrite, i, p.a_buf, 2048, p.b_buf.addr(),
                     p.b_buf.keys.rkey));
  p.f.host[0]->wake();
  ASSERT_TRUE(p.f.sim.run_while([&] { return p.a_cqes.size() < 6; }, t0 + Duration::seconds(1)));
  const Duration t_ack = Duration::nanos(4096 * 1024);
  const Duration expect = t_ack * (c.retry_cnt + 1);  // 16.777216 ms
  // Expect: WR 1 fails with RETRY_EXC_ERR once the first transmission and retry_cnt
  // retransmissions each timed out (IBA §9.7.6.1.3), measured in simulated time; allow
  // 1 % + 20 us for serialisation of the retransmitted frames.
  auto [t_err, e1] = p.a_cqes[1];
  EXPECT_EQ(e1.wr_id, 1u);
  EXPECT_EQ(e1.status, WcStatus::kRetryExcErr);
  EXPECT_GE((t_err - t0).ns, expect.ns);
  EXPECT_LE((t_err - t0).ns, expect.ns + expect.ns / 100 + 20'000);
  // Expect: the rest flushed, in order, and the QP in ERR.
  for (uint64_t i = 2; i <= 5; ++i) {
    EXPECT_EQ(p.a_cqes[i].second.wr_id, i);
    EXPECT_EQ(p.a_cqes[i].second.status, WcStatus::kWrFlushErr);
  }
  QpAttr qa;
  QpInitAttr qi;
  ASSERT_TRUE(p.f.host[0]->engine().query_qp(p.a.qpn, &qa, &qi));
  EXPECT_EQ(qa.qp_state, QpState::kErr);
  EXPECT_EQ(p.f.host[0]->counters().get(Counter::req_transport_retries_exceeded), 1u);
  // A WR posted in ERR is flushed too (ibv_post_send(3) on a QP in the error state).
  Status s = post(*p.f.host[0], p.a.qpn, WrOpcode::kRdmaWrite, 6, p.a_buf, 8, p.b_buf.addr(),
                  p.b_buf.keys.rkey);
  p.f.host[0]->wake();
  p.f.sim.run_until(p.f.sim.now() + Duration::millis(1));
  if (s) {
    ASSERT_EQ(p.a_cqes.size(), 7u);
    EXPECT_EQ(p.a_cqes[6].second.status, WcStatus::kWrFlushErr);
  }
  EXPECT_EQ(p.a_cqes.size(), s ? 7u : 6u);
}

// ---- RNR ---------------------------------------------------------------------------------

TEST(RcRnrTest, RnrRetrySevenWaitsUntilAReceiveIsPosted) {
  ConnParams c;
  c.rnr_retry = 7;      // infinite
  c.min_rnr_timer = 1;  // 0.01 ms (IBA Table 45)
  RcPair p(c);
  ASSERT_TRUE(p.ok);
  for (uint32_t k = 0; k < 1000; ++k) p.a_buf.data()[k] = pattern(7, k);
  Timestamp t0 = p.f.sim.now();
  ASSERT_TRUE(post(*p.f.host[0], p.a.qpn, WrOpcode::kSend, 1, p.a_buf, 1000, 0, 0));
  p.f.host[0]->wake();
  // No receive for 5 ms: about 500 RNR NAK rounds, far beyond any finite count.
  const Timestamp t_post = t0 + Duration::millis(5);
  p.f.sim.call_at(t_post, [&] { ASSERT_TRUE(post_recv(*p.f.host[1], p.b.qpn, 9, p.b_buf, 4096)); });
  ASSERT_TRUE(p.f.sim.run_while([&] { return p.a_cqes.empty(); }, t0 + Duration::seconds(1)));
  auto [t_done, e] = p.a_cqes[0];
  EXPECT_EQ(e.status, WcStatus::kSuccess);
  EXPECT_GE(t_done, t_post);
  // Expect: done within one RNR timer (10 us) + a round trip (~2.2 us) + slack of the post.
  EXPECT_LE((t_done - t_post).ns, 10'000 + 10'000);
  ASSERT_EQ(p.b_cqes.size(), 1u);
  EXPECT_EQ(p.b_cqes[0].second.status, WcStatus::kSuccess);
  EXPECT_EQ(p.b_cqes[0].second.byte_len, 1000u);
  for (uint32_t k = 0; k < 1000; ++k) ASSERT_EQ(p.b_buf.data()[k], pattern(7, k)) << k;
  EXPECT_GT(p.f.host[0]->counters().get(Counter::rnr_nak_retry_err), 100u);
  EXPECT_GT(p.f.host[1]->counters().get(Counter::out_of_buffer), 100u);
}

TEST(RcRnrTest, FiniteRnrRetryGivesRnrRetryExcErr) {
  ConnParams c;
  c.rnr_retry = 2;
  c.min_rnr_timer = 1;
  RcPair p(c);
  ASSERT_TRUE(p.ok);
  ASSERT_TRUE(post(*p.f.host[0], p.a.qpn, WrOpcode::kSend, 1, p.a_buf, 100, 0, 0));
  ASSERT_TRUE(post(*p.f.host[0], p.a.qpn, WrOpcode::kSend, 2, p.a_buf, 100, 0, 0));
  p.f.host[0]->wake();
  ASSERT_TRUE(
      p.f.sim.run_while([&] { return p.a_cqes.size() < 2; }, p.f.sim.now() + Duration::seconds(1)));
  EXPECT_EQ(p.a_cqes[0].second.wr_id, 1u);
  EXPECT_EQ(p.a_cqes[0].second.status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(p.a_cqes[1].second.status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.f.host[0]->counters().get(Counter::req_rnr_retries_exceeded), 1u);
  // Expect: after the first RNR NAK, rnr_retry = 2 further tries of >= 10 us each.
  EXPECT_GE(p.a_cqes[0].first.ns, 2 * 10'000);
}

}  // namespace
}  // namespace uroce::sim::test
