/**
 * @file fuzz_engine.h
 * @brief What the engine fuzz targets share: a discarding TX sink, a resolver that knows every
 * neighbour, a byte reader that yields zeros once the input is spent, an engine with a PD and a
 * CQ facing one fixed peer, and an RC QP brought to RTS against that peer.
 */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/counters.h"
#include "common/packet_io.h"
#include "transport/engine.h"
#include "transport/wire/build.h"

namespace uroce::fuzz {

/// Takes every frame the engine transmits and drops it.
class NullSink final : public TxSink {
 public:
  uint8_t* begin_frame(size_t max_len) override {
    buf_.resize(max_len);
    return buf_.data();
  }
  void end_frame(size_t, const TxMeta&) override {}

 private:
  std::vector<uint8_t> buf_;
};

/// Resolves every GID to one MAC.
class AnyNeighbor final : public NeighborResolver {
 public:
  bool resolve(const Gid&, MacAddr* mac) override {
    *mac = MacAddr{{0x02, 0, 0, 0, 0, 1}};
    return true;
  }
};

/// Reads big-endian fields from the fuzz input; past its end every read is 0.
struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t u8() {
    if (!n) return 0;
    --n;
    return *p++;
  }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  uint32_t u32() { return uint32_t{u16()} << 16 | u16(); }
};

/// A failed invariant: stops the fuzzer with the input that caused it.
inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

/// An engine at 198.18.0.2 (MAC 02:00:00:00:00:02) facing a peer at 198.18.0.1
/// (02:00:00:00:00:01), with one PD and one 256-entry CQ.
struct Fixture {
  static transport::EngineConfig config(const Gid& me) {
    transport::EngineConfig cfg;
    cfg.mac = MacAddr{{0x02, 0, 0, 0, 0, 2}};
    cfg.gids = {me};
    return cfg;
  }

  CounterBlock counters;
  const Gid me = Gid::from_ipv4(0xc6120002u);
  const Gid peer = Gid::from_ipv4(0xc6120001u);
  transport::Engine e{config(me), &counters, nullptr};
  const uint32_t pd = e.alloc_pd().value();
  const uint32_t cq = e.create_cq(256).value();

  /// A QP of `type` on the PD and CQ: 16 WRs and 2 SGEs each way.
  uint32_t create_qp(transport::QpType type) {
    transport::QpInitAttr ia;
    ia.type = type;
    ia.pd = pd;
    ia.send_cq = ia.recv_cq = cq;
    ia.max_send_wr = ia.max_recv_wr = 16;
    ia.max_send_sge = ia.max_recv_sge = 2;
    return e.create_qp(ia).value();
  }

  /// Posts a signaled request of `op` on `qpn` from one local buffer, to remote address
  /// 0x10000 with rkey 0x99 (the forged peer answers for whatever is there).
  void post(uint32_t qpn, transport::WrOpcode op, uint64_t wr_id, uint64_t addr, uint32_t len,
            uint32_t lkey) {
    transport::Sge sg{addr, len, lkey};
    transport::SendWr w;
    w.wr_id = wr_id;
    w.opcode = op;
    w.send_flags = transport::kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    w.remote_addr = 0x10000;
    w.rkey = 0x99;
    e.post_send(qpn, w, Timestamp{0});
  }

  /// Builds a well-formed frame (valid ICRC) from s with the next plen input bytes (fewer if
  /// the input ends; at most 4096) as its payload, and hands it to the engine.
  void deliver(const wire::FrameSpec& s, Reader& in, size_t plen, Timestamp now) {
    plen = std::min({plen, in.n, size_t{4096}});
    wire::FrameLayout l = wire::build_headers(s, frame_);
    if (l.payload_offset != 0) {
      std::memcpy(frame_.data() + l.payload_offset, in.p, plen);
      if (size_t len = wire::finalize(frame_, l, plen)) e.on_frame({frame_.data(), len}, now);
    }
    in.p += plen;
    in.n -= plen;
  }

  /// Hands the next len input bytes (fewer if the input ends) to the engine as they are.
  void deliver_raw(Reader& in, size_t len, Timestamp now) {
    len = std::min(len, in.n);
    e.on_frame({in.p, len}, now);
    in.p += len;
    in.n -= len;
  }

  /// A frame template from the peer to this engine: MACs and addresses set.
  wire::FrameSpec from_peer() const {
    wire::FrameSpec s;
    s.src_mac = MacAddr{{0x02, 0, 0, 0, 0, 1}};
    s.dst_mac = MacAddr{{0x02, 0, 0, 0, 0, 2}};
    s.src_ip = peer;
    s.dst_ip = me;
    return s;
  }

 private:
  std::vector<uint8_t> frame_ =
      std::vector<uint8_t>(wire::kMaxFrameOverhead + 4 + 4 * wire::kSackMaxWords + 4096);
};

/// Moves RC QP `qpn` to RTS: path MTU 256 (many packets per message), peer QPN 0x55, expected
/// receive PSN 0, first send PSN `sq_psn`, the shortest timeout, 7 retries, read/atomic depth 4;
/// every remote access and FLUSH of both placement types allowed.
/// INIT and RTR of a connected QP: `access`, path MTU 256, peer QPN `peer_qpn`, expected receive
/// PSN 0, read/atomic depth 4. Returns the attributes for the RTS step.
inline transport::QpAttr connected_to_rtr(transport::Engine& e, uint32_t qpn, const Gid& peer,
                                          uint32_t access, uint32_t peer_qpn) {
  using namespace transport;
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qp_access_flags = access;
  e.modify_qp(qpn, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags);
  a.qp_state = QpState::kRtr;
  a.av.dgid = peer;
  a.path_mtu = 1;
  a.dest_qp_num = peer_qpn;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 4;
  e.modify_qp(qpn, a,
              kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                  kAttrMaxDestRdAtomic | kAttrMinRnrTimer);
  return a;
}

inline void rc_to_rts(transport::Engine& e, uint32_t qpn, const Gid& peer, uint32_t sq_psn) {
  using namespace transport;
  QpAttr a =
      connected_to_rtr(e, qpn, peer, 0xf | kAccessFlushGlobal | kAccessFlushPersistent, 0x55);
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  a.timeout = 1;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  e.modify_qp(
      qpn, a,
      kAttrState | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrSqPsn | kAttrMaxQpRdAtomic);
}

/// Moves XRC_RECV QP `qpn` to RTS as rc_to_rts moves an RC QP (the XRC_TGT masks).
inline void xrc_recv_to_rts(transport::Engine& e, uint32_t qpn, const Gid& peer) {
  using namespace transport;
  QpAttr a = connected_to_rtr(e, qpn, peer, 0xf, 0x56);
  a.qp_state = QpState::kRts;
  a.timeout = 1;
  e.modify_qp(qpn, a, kAttrState | kAttrTimeout | kAttrSqPsn);
}

}  // namespace uroce::fuzz
