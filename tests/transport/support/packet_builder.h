/**
 * @file packet_builder.h
 * @brief Test helpers for handler-level protocol tests (docs/testing.md, "Protocol tests"): a
 * PacketBuilder that makes any RoCEv2 frame for a given QP with the wire builder (ngtcp2_tpe-like),
 * a capturing TxSink that re-parses what the engine sent, a fixed neighbour table, and an engine
 * with one QP in RTS talking to a fake peer.
 */
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cc/congestion.h"
#include "common/counters.h"
#include "common/packet_io.h"
#include "transport/engine.h"
#include "transport/wire/build.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/parse.h"
#include "two_engines.h"

namespace uroce::transport::testing {

/// Builds frames from the fake peer to the engine under test.
class PacketBuilder {
 public:
  PacketBuilder() = default;
  PacketBuilder(MacAddr src_mac, MacAddr dst_mac, Gid src_ip, Gid dst_ip, uint32_t dest_qpn) {
    base_.src_mac = src_mac;
    base_.dst_mac = dst_mac;
    base_.src_ip = src_ip;
    base_.dst_ip = dst_ip;
    base_.dest_qpn = Qpn(dest_qpn);
    base_.udp_sport = 0xc123;
  }
  /// A spec with the addressing filled in.
  wire::FrameSpec spec(wire::Opcode op, uint32_t psn, bool ackreq = true) const {
    wire::FrameSpec s = base_;
    s.opcode = op;
    s.psn = Psn(psn);
    s.ackreq = ackreq;
    return s;
  }
  std::vector<uint8_t> build(const wire::FrameSpec& s,
                             std::span<const uint8_t> payload = {}) const {
    std::vector<uint8_t> f(wire::kMaxFrameOverhead + wire::ext_len(s) + payload.size());
    wire::FrameLayout l = wire::build_headers(s, f);
    EXPECT_NE(l.payload_offset, 0);
    if (!payload.empty()) std::memcpy(f.data() + l.payload_offset, payload.data(), payload.size());
    f.resize(wire::finalize(f, l, payload.size()));
    return f;
  }
  std::vector<uint8_t> write(wire::Opcode op, uint32_t psn, uint64_t va, uint32_t rkey,
                             uint32_t dma_len, std::span<const uint8_t> payload,
                             bool ackreq = true) const {
    wire::FrameSpec s = spec(op, psn, ackreq);
    s.reth = {va, rkey, dma_len};
    return build(s, payload);
  }
  std::vector<uint8_t> read(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len) const {
    wire::FrameSpec s = spec(wire::Opcode::kRcRdmaReadRequest, psn, false);
    s.reth = {va, rkey, len};
    return build(s);
  }
  std::vector<uint8_t> atomic(wire::Opcode op, uint32_t psn, uint64_t va, uint32_t rkey,
                              uint64_t swap_add, uint64_t compare = 0) const {
    wire::FrameSpec s = spec(op, psn, false);
    s.atomic_eth = {va, rkey, swap_add, compare};
    return build(s);
  }
  /// ACK / NAK / RNR NAK (syndrome as in AETH) for psn with msn.
  std::vector<uint8_t> ack(uint32_t psn, uint8_t syndrome = 0x1f, uint32_t msn = 0) const {
    wire::FrameSpec s = spec(wire::Opcode::kRcAcknowledge, psn, false);
    s.aeth.syndrome = syndrome;
    s.aeth.msn = Msn(msn);
    return build(s);
  }
  std::vector<uint8_t> read_response(wire::Opcode op, uint32_t psn,
                                     std::span<const uint8_t> payload, uint32_t msn = 0) const {
    wire::FrameSpec s = spec(op, psn, false);
    s.aeth.syndrome = 0x1f;
    s.aeth.msn = Msn(msn);
    return build(s, payload);
  }

 private:
  wire::FrameSpec base_;
};

/// A frame the engine sent, parsed.
struct Captured {
  std::vector<uint8_t> bytes;
  wire::ParsedPacket p;
};

/// Keeps every frame; pop() returns them in order, parsed by the real gate.
class CaptureSink final : public TxSink {
 public:
  uint8_t* begin_frame(size_t max_len) override {
    buf_.assign(max_len, 0);
    return buf_.data();
  }
  void end_frame(size_t len, const TxMeta& meta) override {
    buf_.resize(len);
    frames_.push_back(std::move(buf_));
    metas_.push_back(meta);
    buf_ = {};
  }
  size_t size() const { return frames_.size(); }
  bool empty() const { return frames_.empty(); }
  Captured pop() {
    Captured c;
    EXPECT_FALSE(frames_.empty());
    if (frames_.empty()) return c;
    c.bytes = std::move(frames_.front());
    frames_.pop_front();
    metas_.pop_front();
    EXPECT_EQ(wire::parse(c.bytes, &c.p), wire::DropReason::kOk);
    return c;
  }
  /// The next frame as sent, not parsed (for frames the gate is meant to refuse).
  std::vector<uint8_t> pop_raw() {
    EXPECT_FALSE(frames_.empty());
    if (frames_.empty()) return {};
    std::vector<uint8_t> f = std::move(frames_.front());
    frames_.pop_front();
    metas_.pop_front();
    return f;
  }
  const TxMeta& front_meta() const { return metas_.front(); }

 private:
  std::vector<uint8_t> buf_;
  std::deque<std::vector<uint8_t>> frames_;
  std::deque<TxMeta> metas_;
};

class FixedNeighbors final : public NeighborResolver {
 public:
  bool resolve(const Gid&, MacAddr* mac) override {
    if (!known) return false;
    *mac = peer;
    return true;
  }
  MacAddr peer{{0x02, 0, 0, 0, 0, 0x01}};
  bool known = true;
};

/// An engine with one RC (or UC) QP in RTS whose peer is a PacketBuilder.
/// Post-conditions of the constructor: QP in RTS, rq_psn 100, sq_psn 500, path MTU 1024,
/// dest QPN 0x123, every remote access enabled, max_rd_atomic = max_dest_rd_atomic = 4,
/// min_rnr_timer 5 (0.06 ms), timeout 12 (16.8 ms), retry_cnt 3, rnr_retry 3; a 64 KiB region
/// `mem` registered with every access, surrounded by 4 KiB canaries (0xa5) that are not.
struct EngineUnderTest {
  static constexpr uint32_t kPeerQpn = 0x123;
  static constexpr uint32_t kRqPsn = 100;
  static constexpr uint32_t kSqPsn = 500;
  static constexpr size_t kCanary = 4096;
  static constexpr size_t kRegion = 65536;

  /// vlan: EngineConfig::vlan (802.1Q tag on every frame sent).
  /// rec: EngineConfig::loss_recovery (selective repeat on the QP).
  /// sr_window: EngineConfig::sr_window (0: its default).
  /// timestamps: EngineConfig::peer_timestamps (uroce's timestamp extension on the QP).
  /// rxe_flush_icrc: EngineConfig::rxe_flush_icrc (Linux rxe's ICRC on RC FLUSH).
  /// ooo_placement: EngineConfig::ooo_placement (a message's last packet placed out of order).
  explicit EngineUnderTest(QpType type = QpType::kRc, CongestionFactory* cc = nullptr,
                           std::optional<uint16_t> vlan = std::nullopt,
                           LossRecovery rec = LossRecovery::kGoBackN, uint32_t sr_window = 0,
                           bool timestamps = false, bool rxe_flush_icrc = false,
                           bool ooo_placement = false) {
    EngineConfig cfg;
    cfg.ooo_placement = ooo_placement;
    cfg.peer_timestamps = timestamps;
    cfg.rxe_flush_icrc = rxe_flush_icrc;
    if (sr_window) cfg.sr_window = sr_window;
    cfg.cc = cc;
    cfg.vlan = vlan;
    cfg.loss_recovery = rec;
    cfg.mac = MacAddr{{0x02, 0, 0, 0, 0, 0x02}};
    cfg.gids = {Gid::from_ipv4(0xc6120002u)};
    cfg.key_seed = 77;
    e = std::make_unique<Engine>(cfg, &counters, &observer);
    pd = e->alloc_pd().value();
    cq = e->create_cq(1024).value();
    QpInitAttr ia;
    ia.type = type;
    ia.pd = pd;
    ia.send_cq = ia.recv_cq = cq;
    ia.max_send_wr = ia.max_recv_wr = 64;
    ia.max_send_sge = ia.max_recv_sge = 2;
    ia.max_inline_data = 64;
    qpn = e->create_qp(ia).value();
    QpAttr a;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = 0xf;
    EXPECT_TRUE(e->modify_qp(qpn, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags));
    a.qp_state = QpState::kRtr;
    a.av.dgid = Gid::from_ipv4(0xc6120001u);
    a.path_mtu = 3;
    a.dest_qp_num = kPeerQpn;
    a.rq_psn = kRqPsn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 5;
    uint32_t m = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
    if (type == QpType::kRc) m |= kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    EXPECT_TRUE(e->modify_qp(qpn, a, m));
    a.qp_state = QpState::kRts;
    a.sq_psn = kSqPsn;
    a.timeout = 12;
    a.retry_cnt = 3;
    a.rnr_retry = 3;
    a.max_rd_atomic = 4;
    m = kAttrState | kAttrSqPsn;
    if (type == QpType::kRc) m |= kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
    EXPECT_TRUE(e->modify_qp(qpn, a, m));
    backing.assign(kCanary + kRegion + kCanary, 0xa5);
    fill_pattern(mem(), kRegion, 9);
    keys = e->reg_mr(pd, va(), kRegion, 0xf).value();
    pb = PacketBuilder(neigh.peer, cfg.mac, Gid::from_ipv4(0xc6120001u), cfg.gids[0], qpn);
  }
  uint8_t* mem() { return backing.data() + kCanary; }
  uint64_t va(size_t off = 0) { return reinterpret_cast<uint64_t>(mem()) + off; }
  bool canaries_intact() const {
    for (size_t i = 0; i < kCanary; ++i)
      if (backing[i] != 0xa5 || backing[kCanary + kRegion + i] != 0xa5) return false;
    return true;
  }
  void rx(const std::vector<uint8_t>& f) { e->on_frame(f, now); }
  size_t tx() { return e->poll_transmit(sink, neigh, now); }
  void post_recv(uint64_t id, size_t off, uint32_t len) {
    Sge sg{va(off), len, keys.lkey};
    RecvWr r;
    r.wr_id = id;
    r.sg = &sg;
    r.num_sge = 1;
    EXPECT_TRUE(e->post_recv(qpn, r));
  }
  Status post_send(WrOpcode op, uint64_t id, size_t off, uint32_t len, uint64_t raddr = 0x1000,
                   uint32_t rkey = 0xabc, uint32_t flags = kSendSignaled) {
    Sge sg{va(off), len, keys.lkey};
    SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.send_flags = flags;
    w.sg = &sg;
    w.num_sge = 1;
    w.remote_addr = raddr;
    w.rkey = rkey;
    return e->post_send(qpn, w, now);
  }
  std::vector<Cqe> cqes() {
    Cqe c[64];
    size_t n = e->poll_cq(cq, c);
    return {c, c + n};
  }
  QpState state() {
    QpAttr a;
    e->query_qp(qpn, &a, nullptr);
    return a.qp_state;
  }

  CounterBlock counters;
  RecordingObserver observer;
  std::unique_ptr<Engine> e;
  uint32_t pd = 0, cq = 0, qpn = 0;
  std::vector<uint8_t> backing;
  MrKeys keys;
  PacketBuilder pb;
  CaptureSink sink;
  FixedNeighbors neigh;
  Timestamp now{1'000'000};
};

}  // namespace uroce::transport::testing
