/**
 * @file rc_transfer_test.cc
 * @brief Every RC operation over the simulated fabric running the real engine at 0 %, 1 % and
 * 5 % random loss (both directions), each with reordering and duplication (and corruption
 * when lossy): every byte compared, every work request completed exactly once, in order, with
 * success (issue #2, "Simulator").
 *
 * The amount moved is UROCE_SIM_BYTES (default 32 MiB; the `long` ctest variant sets 1 GiB);
 * atomics count operations: UROCE_SIM_BYTES / 4096. Link: 100 Gb/s, 1 us propagation, a
 * 256-frame host queue; path MTU 1024; local ACK timeout 4.096 us * 2^8. Deterministic:
 * every impairment is seeded. The same streams run with selective repeat on both hosts
 * (uroce's extension): the same checks, and the responder placed packets out of order.
 * Units: bytes, ns.
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <tuple>

#include "sim/rc_stream.h"
#include "sim/testbed.h"

namespace uroce::sim::test {
namespace {

using transport::QpType;

class RcTransferTest : public ::testing::TestWithParam<std::tuple<StreamOp, int>> {};

/// Runs one stream A -> B and returns the stream's error (empty on success).
std::string run_stream(StreamOp op, int loss_pct, uint64_t bytes, uint8_t mtu,
                       uint32_t psn_a = 0x100, uint32_t psn_b = 0x200, bool via_switch = false,
                       uint64_t* sim_ns = nullptr,
                       transport::LossRecovery rec = transport::LossRecovery::kGoBackN) {
  FabricOptions fo;
  fo.via_switch = via_switch;
  fo.loss_recovery = rec;
  TwoHostFabric f(fo);
  double loss = loss_pct / 100.0;
  for (int dir = 0; dir < 2; ++dir) {
    Impairments imp;
    imp.seed = 1000 + static_cast<uint64_t>(op) * 31 + static_cast<uint64_t>(loss_pct) * 7 +
               static_cast<uint64_t>(dir);
    imp.loss = loss;
    imp.reorder = 0.005;
    imp.reorder_delay = Duration::micros(3);
    imp.duplicate = 0.005;
    imp.corrupt = loss > 0 ? 0.001 : 0;
    f.impair(dir, imp);
  }
  Endpoint a = make_endpoint(*f.host[0], 0, QpType::kRc);
  Endpoint b = make_endpoint(*f.host[1], 1, QpType::kRc);
  if (!a.qpn || !b.qpn) return "create_qp failed";
  ConnParams c;
  c.path_mtu = mtu;
  c.psn_a = psn_a;
  c.psn_b = psn_b;
  if (Status s = connect(a, b, c); !s) return "modify_qp failed: errno " + std::to_string(s.code());
  StreamConfig sc;
  sc.op = op;
  sc.total_bytes = bytes;
  sc.atomic_ops = bytes / 4096;
  RcStream st(sc, *f.host[0], a.pd, a.qpn, a.scq, *f.host[1], b.pd, b.qpn, b.rcq);
  if (!st.error().empty()) return st.error();
  st.start();
  // Generous simulated-time bound: 100 s of simulated time.
  bool ok = f.sim.run_while([&] { return !st.done(); }, Timestamp{} + Duration::seconds(100));
  auto counters = [&] {
    std::string out = " [t=" + std::to_string(f.sim.now().ns) + " ns";
    for (int h = 0; h < 2; ++h) {
      CounterBlock& cb = f.host[h]->counters();
      out += h ? "; B:" : "; A:";
      for (Counter k :
           {Counter::local_ack_timeout_err, Counter::packet_seq_err, Counter::implied_nak_seq_err,
            Counter::roce_adp_retrans, Counter::out_of_sequence, Counter::duplicate_request,
            Counter::rnr_nak_retry_err, Counter::rx_icrc_encapsulated, Counter::sr_ooo_placed,
            Counter::sr_ooo_deferred, Counter::sr_ooo_dropped, Counter::sr_sacks_sent,
            Counter::sr_loss_events, Counter::sr_rto_low})
        if (cb.get(k)) out += " " + std::string(counter_name(k)) + "=" + std::to_string(cb.get(k));
    }
    return out + "]";
  };
  if (f.sim.stalled())
    return "simulator stalled (a node asks for polls without progress)" + counters();
  if (!st.error().empty()) return st.error() + counters();
  if (!ok)
    return "stream did not finish: " + std::to_string(st.completed()) + "/" +
           std::to_string(st.posted()) + " completed at t=" + std::to_string(f.sim.now().ns) +
           " ns";
  if (sim_ns)
    *sim_ns = static_cast<uint64_t>((st.last_completion_time() - st.first_post_time()).ns);
  // Run on for 20 ms of simulated time: no late or duplicate completion may appear.
  f.sim.run_until(f.sim.now() + Duration::millis(20));
  st.check_no_extra_completions();
  if (!st.error().empty()) return st.error();
  // The impairments really acted (both directions together).
  const LinkStats& s0 = f.wire_from(0).stats();
  const LinkStats& s1 = f.wire_from(1).stats();
  if (loss > 0 && s0.lost + s1.lost == 0) return "no frame was lost";
  if (s0.reordered + s1.reordered == 0 || s0.duplicated + s1.duplicated == 0)
    return "no frame was reordered or duplicated";
  if (is_atomic(op)) {
    if (st.completed() != bytes / 4096) return "wrong number of atomics completed";
  } else if (st.bytes_completed() != bytes) {
    return "moved " + std::to_string(st.bytes_completed()) + " bytes";
  }
  CounterBlock& ca = f.host[0]->counters();
  CounterBlock& cb = f.host[1]->counters();
  if (ca.get(Counter::sr_unnegotiated) + cb.get(Counter::sr_unnegotiated) +
          ca.get(Counter::sr_bad_sack) + cb.get(Counter::sr_bad_sack) !=
      0)
    return "an extension frame was refused or a SACK was out of range" + counters();
  const bool sr = rec == transport::LossRecovery::kSelective;
  // Selective repeat acted: SENDs and WRITEs were held out of order, ACKs carried SACKs; with
  // go-back-N no extension frame was sent at all.
  const uint64_t held = cb.get(Counter::sr_ooo_placed) + cb.get(Counter::sr_ooo_deferred);
  const bool placed = held > 0 && cb.get(Counter::sr_sacks_sent) > 0;
  if (sr && loss > 0 && op != StreamOp::kRead && !is_atomic(op) && !placed)
    return "no packet was held out of order" + counters();
  if (!sr && cb.get(Counter::sr_sacks_sent) + held != 0)
    return "go-back-N QPs used the extension" + counters();
  return "";
}

TEST_P(RcTransferTest, EveryByteEveryCompletionOnceInOrder) {
  auto [op, loss] = GetParam();
  uint64_t bytes = sim_bytes();
  uint64_t sim_ns = 0;
  EXPECT_EQ(run_stream(op, loss, bytes, /*mtu 1024*/ 3, 0x100, 0x200, false, &sim_ns), "");
  std::printf("%s: %llu %s in %.3f ms of simulated time\n", stream_op_name(op),
              static_cast<unsigned long long>(is_atomic(op) ? bytes / 4096 : bytes),
              is_atomic(op) ? "operations" : "bytes", static_cast<double>(sim_ns) / 1e6);
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<StreamOp, int>>& p) {
  return std::string(stream_op_name(std::get<0>(p.param))) + "_loss" +
         std::to_string(std::get<1>(p.param)) + "pct";
}

INSTANTIATE_TEST_SUITE_P(
    RcOps, RcTransferTest,
    ::testing::Combine(::testing::Values(StreamOp::kSend, StreamOp::kSendWithImm, StreamOp::kWrite,
                                         StreamOp::kWriteWithImm, StreamOp::kRead,
                                         StreamOp::kCmpSwap, StreamOp::kFetchAdd,
                                         StreamOp::kAtomicWrite, StreamOp::kFlush),
                       ::testing::Values(0, 1, 5)),
    case_name);

class RcSelectiveTest : public ::testing::TestWithParam<std::tuple<StreamOp, int>> {};

TEST_P(RcSelectiveTest, EveryByteEveryCompletionOnceInOrder) {
  auto [op, loss] = GetParam();
  EXPECT_EQ(run_stream(op, loss, sim_bytes(), /*mtu 1024*/ 3, 0x100, 0x200, false, nullptr,
                       transport::LossRecovery::kSelective),
            "");
}

INSTANTIATE_TEST_SUITE_P(
    Selective, RcSelectiveTest,
    ::testing::Combine(::testing::Values(StreamOp::kSend, StreamOp::kSendWithImm, StreamOp::kWrite,
                                         StreamOp::kWriteWithImm, StreamOp::kRead,
                                         StreamOp::kCmpSwap, StreamOp::kFetchAdd,
                                         StreamOp::kAtomicWrite, StreamOp::kFlush),
                       ::testing::Values(0, 1, 5)),
    case_name);

TEST(RcSelectiveWrapTest, StreamCrossesTwoTo24WithLoss) {
  for (StreamOp op : {StreamOp::kSend, StreamOp::kWrite, StreamOp::kRead}) {
    EXPECT_EQ(run_stream(op, 1, 4ull << 20, 3, 0xffffd8, 0xffffe0, /*via_switch=*/true, nullptr,
                         transport::LossRecovery::kSelective),
              "")
        << stream_op_name(op);
  }
}

// ---- PSN wrap and path MTU ---------------------------------------------------------------

class RcPsnWrapTest : public ::testing::TestWithParam<StreamOp> {};

TEST_P(RcPsnWrapTest, StreamCrossesTwoTo24WithLoss) {
  // Start 40 packets before 2^24 on both sides; 4 MiB at MTU 1024 is ~4100 packets, so every
  // stream wraps, and with 1 % loss retransmissions cross the wrap as well. Through a switch.
  EXPECT_EQ(run_stream(GetParam(), 1, 4ull << 20, 3, 0xffffd8, 0xffffe0, /*via_switch=*/true), "");
}

INSTANTIATE_TEST_SUITE_P(Wrap, RcPsnWrapTest,
                         ::testing::Values(StreamOp::kSend, StreamOp::kWrite, StreamOp::kRead,
                                           StreamOp::kFetchAdd),
                         [](const auto& p) { return std::string(stream_op_name(p.param)); });

class RcMtuTest : public ::testing::TestWithParam<std::tuple<uint8_t, StreamOp>> {};

TEST_P(RcMtuTest, SegmentsByPathMtu) {
  auto [mtu, op] = GetParam();
  FabricOptions fo;
  TwoHostFabric f(fo);
  Impairments imp{.seed = 77, .loss = 0.01, .reorder = 0.005, .duplicate = 0.005};
  f.impair(0, imp);
  imp.seed = 78;
  f.impair(1, imp);
  Endpoint a = make_endpoint(*f.host[0], 0, QpType::kRc);
  Endpoint b = make_endpoint(*f.host[1], 1, QpType::kRc);
  ConnParams c;
  c.path_mtu = mtu;
  ASSERT_TRUE(connect(a, b, c));
  StreamConfig sc;
  sc.op = op;
  sc.total_bytes = 2ull << 20;
  // Sizes around the MTU: 1, MTU-1, MTU, MTU+1, 3 MTU, 64 KiB.
  uint32_t m = transport::mtu_bytes(mtu);
  sc.sizes = {1, m - 1, m, m + 1, 3 * m, 65536};
  RcStream st(sc, *f.host[0], a.pd, a.qpn, a.scq, *f.host[1], b.pd, b.qpn, b.rcq);
  st.start();
  ASSERT_TRUE(f.sim.run_while([&] { return !st.done(); }, Timestamp{} + Duration::seconds(30)))
      << st.error() << " completed " << st.completed();
  EXPECT_EQ(st.error(), "");
  // Expect: no frame longer than the MTU plus headers (Eth 14 + IPv4 20 + UDP 8 + BTH 12 +
  // RETH 16 + ICRC 4), and full-MTU frames were used.
  uint64_t max_len = std::max(f.tx[0]->stats().max_frame_bytes, f.tx[1]->stats().max_frame_bytes);
  EXPECT_LE(max_len, m + 74u);
  EXPECT_GE(max_len, m + 58u);
}

INSTANTIATE_TEST_SUITE_P(Mtu, RcMtuTest,
                         ::testing::Combine(::testing::Values(uint8_t{1}, uint8_t{5}),
                                            ::testing::Values(StreamOp::kSend, StreamOp::kWrite,
                                                              StreamOp::kRead)),
                         [](const auto& p) {
                           return "Mtu" +
                                  std::to_string(transport::mtu_bytes(std::get<0>(p.param))) + "_" +
                                  stream_op_name(std::get<1>(p.param));
                         });

}  // namespace
}  // namespace uroce::sim::test
