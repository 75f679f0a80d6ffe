/**
 * @file engine_bench.cc
 * @brief Transport engine throughput in memory, one core, no payload copy: packets per
 * second between two engines (zero-length RC WRITEs: request build + ICRC, gate parse + ICRC,
 * responder, coalesced ACKs, completer), the requester alone (UC WRITEs: WQE-to-packet), the
 * responder alone (zero-length WRITEs; 4 KiB WRITEs with ICRC and payload placement), and ACK
 * processing with completion writes. Units: packets/s (items_per_second), payload bytes/s.
 *
 * Run: build-transport-only/bin/bench_transport (or build/bin/bench_transport)
 */
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/engine.h"
#include "transport/wire/build.h"

namespace uroce::transport {
namespace {

constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

/// A sink that keeps up to kSlots frames in preallocated buffers (no allocation per frame).
class RingSink final : public TxSink {
 public:
  static constexpr size_t kSlots = 512;
  static constexpr size_t kSlotLen = 4096 + 256;
  RingSink() : mem_(kSlots * kSlotLen) {}
  uint8_t* begin_frame(size_t max_len) override {
    if (n_ == kSlots || max_len > kSlotLen) return nullptr;
    return mem_.data() + n_ * kSlotLen;
  }
  void end_frame(size_t len, const TxMeta&) override { len_[n_++] = len; }
  size_t size() const { return n_; }
  std::span<const uint8_t> frame(size_t i) const { return {mem_.data() + i * kSlotLen, len_[i]}; }
  void clear() { n_ = 0; }

 private:
  std::vector<uint8_t> mem_;
  std::array<size_t, kSlots> len_{};
  size_t n_ = 0;
};

class StaticNeighbors final : public NeighborResolver {
 public:
  bool resolve(const Gid&, MacAddr* mac) override {
    *mac = MacAddr{{0x02, 0, 0, 0, 0, 0x99}};
    return true;
  }
};

struct Node {
  CounterBlock ctr;
  std::unique_ptr<Engine> e;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 16);
  MrKeys mr;
};

/// Node i's MAC and its GID (the IPv4 address 198.18.0.(i + 1)).
MacAddr node_mac(int i) { return MacAddr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)}}; }
Gid node_gid(int i) { return Gid::from_ipv4(0xc6120001u + static_cast<uint32_t>(i)); }

void make_node(Node& n, int i) {
  EngineConfig cfg;
  cfg.mac = node_mac(i);
  cfg.gids = {node_gid(i)};
  cfg.max_unacked_psns = 1024;
  n.e = std::make_unique<Engine>(cfg, &n.ctr, nullptr);
  n.pd = n.e->alloc_pd().value();
  n.cq = n.e->create_cq(4096).value();
  n.mr = n.e->reg_mr(n.pd, reinterpret_cast<uint64_t>(n.mem.data()), n.mem.size(), kAll).value();
}

void connect(Node& a, Node& b, QpType t) {
  Node* ns[2] = {&a, &b};
  for (Node* n : ns) {
    QpInitAttr ia;
    ia.type = t;
    ia.pd = n->pd;
    ia.send_cq = ia.recv_cq = n->cq;
    ia.max_send_wr = 1024;
    ia.max_recv_wr = 16;
    ia.max_send_sge = 1;
    ia.max_recv_sge = 1;
    n->qpn = n->e->create_qp(ia).value();
  }
  for (int i = 0; i < 2; ++i) {
    Node& n = *ns[i];
    QpAttr at;
    at.qp_state = QpState::kInit;
    at.qp_access_flags = kAll;
    n.e->modify_qp(n.qpn, at, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags);
    at.qp_state = QpState::kRtr;
    at.av.dgid = node_gid(1 - i);
    at.dest_qp_num = ns[1 - i]->qpn;
    at.path_mtu = 5;
    at.max_dest_rd_atomic = 16;
    uint32_t m = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
    if (t == QpType::kRc) m |= kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    n.e->modify_qp(n.qpn, at, m);
    at.qp_state = QpState::kRts;
    m = kAttrState | kAttrSqPsn;
    if (t == QpType::kRc) m |= kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
    n.e->modify_qp(n.qpn, at, m);
  }
}

/// A = node 0 and B = node 1, with one connected QP of type t each.
void make_pair(Node& a, Node& b, QpType t) {
  make_node(a, 0);
  make_node(b, 1);
  connect(a, b, t);
}

/// A frame spec from node `from` to node `to` (their MACs and GIDs); the rest is the caller's.
wire::FrameSpec spec_between(int from, int to) {
  wire::FrameSpec s;
  s.src_mac = node_mac(from);
  s.dst_mac = node_mac(to);
  s.src_ip = node_gid(from);
  s.dst_ip = node_gid(to);
  return s;
}

/// What `from` sends now (into `sink`) is received by `to`; returns how many frames.
size_t deliver(Node& from, RingSink& sink, Node& to, NeighborResolver& nb, Timestamp now) {
  sink.clear();
  from.e->poll_transmit(sink, nb, now);
  for (size_t i = 0; i < sink.size(); ++i) to.e->on_frame(sink.frame(i), now);
  return sink.size();
}

constexpr int kBatch = 64;

/// Posts kBatch zero-length WRITEs on a (the last one signaled).
void post_batch(Node& a, uint32_t len, Timestamp now) {
  Sge sg{reinterpret_cast<uint64_t>(a.mem.data()), len, a.mr.lkey};
  SendWr w;
  w.opcode = WrOpcode::kRdmaWrite;
  w.sg = &sg;
  w.num_sge = 1;
  w.rkey = 0;
  w.remote_addr = 0;
  for (int i = 0; i < kBatch; ++i) {
    w.send_flags = i + 1 == kBatch ? uint32_t{kSendSignaled} : 0u;
    a.e->post_send(a.qpn, w, now);
  }
}

// Two engines, RC, zero-length WRITEs: each iteration moves kBatch requests A->B and the
// coalesced ACK(s) B->A. Counts request packets.
void BM_RcPairZeroLengthWrite(benchmark::State& st) {
  Node a, b;
  make_pair(a, b, QpType::kRc);
  RingSink sa, sb;
  StaticNeighbors nb;
  Timestamp now{1000};
  Cqe c[16];
  uint64_t pkts = 0, acks = 0;
  for (auto _ : st) {
    post_batch(a, 0, now);
    pkts += deliver(a, sa, b, nb, now);
    acks += deliver(b, sb, a, nb, now);
    a.e->poll_cq(a.cq, c);
    now.ns += 1000;
  }
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
  st.counters["acks_per_batch"] = static_cast<double>(acks) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_RcPairZeroLengthWrite);

// The same with 64-byte WRITEs (payload copy and ICRC over 64 bytes included).
void BM_RcPair64ByteWrite(benchmark::State& st) {
  Node a, b;
  make_pair(a, b, QpType::kRc);
  RingSink sa, sb;
  StaticNeighbors nb;
  Timestamp now{1000};
  Cqe c[16];
  uint64_t pkts = 0;
  for (auto _ : st) {
    Sge sg{reinterpret_cast<uint64_t>(a.mem.data()), 64, a.mr.lkey};
    SendWr w;
    w.opcode = WrOpcode::kRdmaWrite;
    w.sg = &sg;
    w.num_sge = 1;
    w.rkey = b.mr.rkey;
    w.remote_addr = reinterpret_cast<uint64_t>(b.mem.data());
    for (int i = 0; i < kBatch; ++i) {
      w.send_flags = i + 1 == kBatch ? uint32_t{kSendSignaled} : 0u;
      a.e->post_send(a.qpn, w, now);
    }
    pkts += deliver(a, sa, b, nb, now);
    deliver(b, sb, a, nb, now);
    a.e->poll_cq(a.cq, c);
    now.ns += 1000;
  }
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
}
BENCHMARK(BM_RcPair64ByteWrite);

// WQE to packet: UC zero-length WRITEs (complete on send), A only, frames discarded.
void BM_UcWqeToPacket(benchmark::State& st) {
  Node a, b;
  make_pair(a, b, QpType::kUc);
  RingSink sa;
  StaticNeighbors nb;
  Timestamp now{1000};
  Cqe c[16];
  uint64_t pkts = 0;
  for (auto _ : st) {
    post_batch(a, 0, now);
    sa.clear();
    a.e->poll_transmit(sa, nb, now);
    pkts += sa.size();
    a.e->poll_cq(a.cq, c);
    now.ns += 1000;
  }
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
}
BENCHMARK(BM_UcWqeToPacket);

/// Request frames from B's peer to B for PSNs [first, first + n): RDMA WRITE_ONLY of
/// `payload` bytes into B's region, `stride` bytes apart (wrapping in the region), AckReq on
/// every `ack_every`-th. ICRC computed.
std::vector<std::vector<uint8_t>> write_frames(const Node& b, uint32_t first, int n,
                                               uint32_t payload, uint32_t stride,
                                               uint32_t ack_every) {
  wire::FrameSpec s = spec_between(0, 1);
  s.opcode = wire::Opcode::kRcRdmaWriteOnly;
  s.dest_qpn = Qpn(b.qpn);
  std::vector<std::vector<uint8_t>> frames(static_cast<size_t>(n));
  const uint32_t slots = stride ? static_cast<uint32_t>(b.mem.size()) / stride : 1;
  for (int i = 0; i < n; ++i) {
    auto& f = frames[static_cast<size_t>(i)];
    f.resize(wire::kMaxFrameOverhead + payload);
    const uint32_t k = first + static_cast<uint32_t>(i);
    s.psn = Psn(k & 0xffffff);
    s.ackreq = k % ack_every == ack_every - 1;
    s.reth = {reinterpret_cast<uint64_t>(b.mem.data()) + (k % slots) * stride, b.mr.rkey, payload};
    auto l = wire::build_headers(s, f);
    for (uint32_t j = 0; j < payload; ++j) f[l.payload_offset + j] = static_cast<uint8_t>(k + j);
    f.resize(wire::finalize(f, l, payload));
  }
  return frames;
}

// Receive side alone: B's gate + responder for pre-built zero-length WRITE_ONLY frames
// (PSNs in order), plus its coalesced ACK build.
void BM_RcResponderRx(benchmark::State& st) {
  Node a, b;
  make_pair(a, b, QpType::kRc);
  RingSink sb;
  StaticNeighbors nb;
  Timestamp now{1000};
  constexpr int kFrames = 1 << 14;
  auto frames = write_frames(b, 0, kFrames, 0, 0, 1);
  uint64_t pkts = 0;
  int next = 0;
  for (auto _ : st) {
    for (int i = 0; i < kBatch; ++i) {
      b.e->on_frame(frames[next], now);
      next = (next + 1) % kFrames;
      if (next == 0) {
        st.PauseTiming();
        // Wrap: reset B's expected PSN by cycling the QP back to RTS at PSN 0.
        QpAttr at;
        at.qp_state = QpState::kReset;
        b.e->modify_qp(b.qpn, at, kAttrState);
        connect(a, b, QpType::kRc);
        frames = write_frames(b, 0, kFrames, 0, 0, 1);
        st.ResumeTiming();
      }
    }
    sb.clear();
    b.e->poll_transmit(sb, nb, now);
    pkts += kBatch;
    now.ns += 1000;
  }
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
}
BENCHMARK(BM_RcResponderRx);

// Payload placement: B's gate (parse + ICRC over 4 KiB) and responder placing 4 KiB WRITEs
// into its region, plus the coalesced ACKs. bytes_per_second counts payload.
void BM_RcPlacement4K(benchmark::State& st) {
  constexpr uint32_t kPayload = 4096;
  constexpr int kFrames = 1024;
  Node a, b;
  make_pair(a, b, QpType::kRc);
  RingSink sb;
  StaticNeighbors nb;
  Timestamp now{1000};
  uint32_t first = 0;
  auto frames = write_frames(b, first, kFrames, kPayload, kPayload, 16);
  int next = 0;
  uint64_t pkts = 0;
  for (auto _ : st) {
    for (int i = 0; i < kBatch; ++i) {
      b.e->on_frame(frames[static_cast<size_t>(next)], now);
      if (++next == kFrames) {
        st.PauseTiming();
        next = 0;
        first += kFrames;
        frames = write_frames(b, first, kFrames, kPayload, kPayload, 16);
        st.ResumeTiming();
      }
    }
    sb.clear();
    b.e->poll_transmit(sb, nb, now);
    pkts += kBatch;
    now.ns += 1000;
  }
  // Every frame must have been placed: none out of sequence, refused or dropped by state.
  if (b.ctr.get(Counter::out_of_sequence) != 0 || b.ctr.get(Counter::resp_remote_access_errors) ||
      b.ctr.get(Counter::rx_bad_qp_state) || b.ctr.get(Counter::rx_malformed))
    st.SkipWithError("a frame was not placed");
  st.SetItemsProcessed(static_cast<int64_t>(pkts));
  st.SetBytesProcessed(static_cast<int64_t>(pkts) * kPayload);
}
BENCHMARK(BM_RcPlacement4K);

// ACK processing and completion writes: A has kBatch signaled zero-length WRITEs out (posted
// and sent outside the timed region); one cumulative ACK retires them all, and ibv_poll_cq's
// engine call takes the kBatch completions. Counts WQEs retired.
void BM_RcAckProcessing(benchmark::State& st) {
  Node a, b;
  make_pair(a, b, QpType::kRc);
  RingSink sa;
  StaticNeighbors nb;
  Timestamp now{1000};
  wire::FrameSpec s = spec_between(1, 0);
  s.opcode = wire::Opcode::kRcAcknowledge;
  s.dest_qpn = Qpn(a.qpn);
  s.aeth.syndrome = wire::aeth_syndrome(wire::kAethTypeAck, 0x1f);
  std::vector<uint8_t> ack(256);
  Cqe c[kBatch];
  uint32_t psn = 0;
  uint64_t retired = 0;
  Sge sg{reinterpret_cast<uint64_t>(a.mem.data()), 0, a.mr.lkey};
  SendWr w;
  w.opcode = WrOpcode::kRdmaWrite;
  w.sg = &sg;
  w.num_sge = 1;
  w.send_flags = kSendSignaled;
  for (auto _ : st) {
    st.PauseTiming();
    for (int i = 0; i < kBatch; ++i) a.e->post_send(a.qpn, w, now);
    sa.clear();
    a.e->poll_transmit(sa, nb, now);
    psn = (psn + kBatch) & 0xffffff;
    s.psn = Psn((psn - 1) & 0xffffff);
    s.aeth.msn = Msn(psn);
    ack.resize(256);
    auto l = wire::build_headers(s, ack);
    ack.resize(wire::finalize(ack, l, 0));
    st.ResumeTiming();
    a.e->on_frame(ack, now);
    const size_t n = a.e->poll_cq(a.cq, c);
    if (n != kBatch) st.SkipWithError("not every WQE completed");
    retired += n;
    now.ns += 1000;
  }
  st.SetItemsProcessed(static_cast<int64_t>(retired));
}
BENCHMARK(BM_RcAckProcessing);

}  // namespace
}  // namespace uroce::transport

BENCHMARK_MAIN();
