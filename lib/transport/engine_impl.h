/**
 * @file engine_impl.h
 * @brief Internal state of the engine: PDs, CQs, SRQs, QPs with their send/receive queues,
 * requester, responder and completer state. Shared by engine.cc (control path), requester.cc,
 * responder.cc, completer.cc, rx.cc and tx.cc; not part of the contract.
 *
 * Units: PSNs are 24-bit serial numbers (IBA Vol 1 §9.7.1), lengths in bytes, times in ns.
 * Data-path structures are fixed-size rings allocated by create_*; nothing on the data path
 * allocates, locks or makes a syscall.
 */
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "common/counters.h"
#include "common/packet_io.h"
#include "common/time.h"
#include "common/types.h"
#include "transport/congestion.h"
#include "transport/engine.h"
#include "transport/gsi.h"
#include "transport/memory_table.h"
#include "transport/ring.h"
#include "transport/verbs_types.h"
#include "transport/wire/build.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/parse.h"

namespace uroce::transport {

// ---- Device limits ------------------------------------------------------------------------
inline constexpr uint32_t kMaxMsgSize = 1u << 31;  ///< bytes per message (IBA 2^31)
inline constexpr uint32_t kQpSlotBits = 16;        ///< QPN = [tag |] generation << 16 | slot
inline constexpr uint32_t kFirstQpSlot = 17;       ///< QPNs 0 and 1 are special (IBA SMI/GSI)
/// Responder's ordered response queue: at least this many entries, and 2 x max_dest_rd_atomic
/// + 4 (READ/atomic items plus the ACKs between them), sized when max_dest_rd_atomic is set.
inline constexpr uint32_t kRespQueueDepth = 64;
inline constexpr uint32_t kAckReqInterval = 16;  ///< AckReq at least every n packets
/// and at least every local ACK timeout / kAckReqTimeDivisor: a sender paced slowly (DCQCN near
/// rpg_min_rate) then still draws ACKs well inside its timer instead of timing out spuriously.
inline constexpr int64_t kAckReqTimeDivisor = 4;
/// A stream of unsignaled messages draws fewer ACKs (one ACK covers every PSN before it, IBA
/// 9.7.5.1.1). The last packet of a message asks for one when its WR is signaled, when the
/// rules above say so, or when the send queue runs empty after it and the QP is not in a
/// stream: fewer than kAckReqInterval packets since the last gap of kAckReqStreamGap (sparse
/// traffic and short bursts ask on every message, as without the rule). A stream that stops with
/// packets nobody asked to ACK is covered twice: a uroce responder ACKs them kDelayedAck after the
/// first of them, and the requester, kAckProbeDelay after its last packet, resends that packet with
/// AckReq (a responder that ACKs only on AckReq, like Linux rxe, re-ACKs a duplicate: C9-105). A
/// local ACK timeout within 4 x kAckProbeDelay leaves no room for the probe: such a QP asks on
/// every message's last packet.
inline constexpr Duration kAckReqStreamGap = Duration::micros(5);
inline constexpr Duration kDelayedAck = Duration::micros(20);
inline constexpr Duration kAckProbeDelay = Duration::micros(200);
inline constexpr uint8_t kAethCreditInvalid = 0x1f;  ///< ACK credit code "not used" (9.7.5.1)
/// AETH syndrome of a plain ACK (credits not used).
inline constexpr uint8_t kSynAck = wire::aeth_syndrome(wire::kAethTypeAck, kAethCreditInvalid);
inline constexpr uint32_t resp_queue_depth(uint32_t max_dest_rd_atomic) {
  return kRespQueueDepth > 2 * max_dest_rd_atomic + 4 ? kRespQueueDepth
                                                      : 2 * max_dest_rd_atomic + 4;
}

/// ImmDt as a number (wire::ParsedPacket/FrameSpec) <-> the network-order value ibv_wc and
/// ibv_send_wr carry (its bytes in memory are the wire bytes).
inline uint32_t imm_to_net(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}
inline uint32_t imm_from_net(uint32_t v) { return imm_to_net(v); }

/// IBA Table 45: RNR NAK timer field -> delay.
Duration rnr_timer_delay(uint8_t code);
/// Local ACK timeout 4.096 us * 2^timeout (IBA 9.7.6.1.3); 0 means infinite (never()).
Duration local_ack_timeout(uint8_t timeout);

struct Pd {
  bool live = false;
  uint32_t users = 0;  ///< QPs + SRQs (MRs are counted by the MemoryTable)
};

struct Cq {
  bool live = false;
  Ring<Cqe> ring;
  uint32_t depth = 0;
  uint32_t users = 0;  ///< QPs using it
  bool armed = false;
  bool solicited_only = false;
  bool overflowed = false;  ///< a CQE was lost; kCqErr was raised
};

/// A posted receive: SGEs live in the owning queue's side array at the same slot.
struct RecvWqe {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
};

struct Srq {
  bool live = false;
  uint32_t id = 0;  ///< its handle (index + 1), for events
  uint32_t pd = 0;
  uint32_t max_sge = 0;
  uint32_t limit = 0;
  uint32_t users = 0;
  Ring<RecvWqe> ring;
  std::vector<Sge> sges;  ///< ring capacity * max_sge
};

/// A posted send. SGEs (or inline bytes) live in the QP's side arrays at the same ring slot.
struct SendWqe {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t compare_add = 0;
  uint64_t swap = 0;
  uint32_t length = 0;  ///< total payload bytes (READ: bytes to read; atomic: 8)
  uint32_t rkey = 0;
  uint32_t imm = 0;          ///< immediate data (network order as given) or invalidate rkey
  uint32_t remote_qpn = 0;   ///< UD
  uint32_t remote_qkey = 0;  ///< UD
  uint32_t num_sge = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t flags = 0;  ///< SendFlags
  bool inline_data = false;
  bool signaled = false;
  // Progress (set when the first packet is built).
  bool started = false;
  Psn first_psn;
  Psn last_psn;
  uint32_t npkts = 0;      ///< PSNs the WQE occupies
  uint32_t resp_pkts = 0;  ///< READ: response packets received in order; atomic: 0/1
  WcStatus local_error = WcStatus::kSuccess;  ///< detected locally; reported when at head
  AddressVector av;                           ///< UD only
};

/// READ and atomic WRs: answered by responses, limited by max_rd_atomic.
inline bool is_rd_atomic(const SendWqe& w) {
  return w.opcode == WrOpcode::kRdmaRead || w.opcode == WrOpcode::kAtomicCmpAndSwp ||
         w.opcode == WrOpcode::kAtomicFetchAndAdd;
}

/// One entry of the responder's ordered response queue (IBA 9.7.5: responses in PSN order).
struct RespItem {
  enum class Kind : uint8_t { kAck, kNak, kRead, kAtomic };
  Kind kind = Kind::kAck;
  uint8_t syndrome = 0;  ///< AETH syndrome (ACK, RNR NAK, NAK)
  Psn psn;               ///< AETH PSN / first response PSN
  Msn msn;
  bool fatal = false;  ///< NAK that takes the QP to ERR once sent
  // READ
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t len = 0;    ///< bytes still to send
  uint32_t npkts = 0;  ///< total response packets of this stream
  uint32_t sent = 0;   ///< response packets already sent
  // Atomic
  uint64_t orig = 0;
};

/// Atomic replay cache entry (IBA 9.4.5: duplicate atomics are answered, not re-executed).
struct AtomicReplay {
  bool valid = false;
  Psn psn;
  uint64_t orig = 0;
};

struct Qp {
  // ---- Identity and attributes ----
  uint32_t qpn = 0;
  QpType type = QpType::kRc;
  QpState state = QpState::kReset;
  QpInitAttr init;
  QpAttr attr;
  uint32_t mtu = 1024;  ///< path MTU in bytes
  uint16_t udp_sport = 0xc000;
  std::unique_ptr<QpCongestion> cc;

  // ---- Send queue ----
  Ring<SendWqe> sq;
  std::vector<Sge> sq_sges;        ///< capacity * max_send_sge
  std::vector<uint8_t> sq_inline;  ///< capacity * max_inline_data
  uint32_t send_pos = 0;           ///< absolute SQ position of the WQE being segmented
  uint32_t send_off = 0;           ///< bytes (SEND/WRITE) or packets (READ) of it already sent
  uint32_t started_end = 0;        ///< position after the last started WQE
  Psn next_psn;                    ///< PSN of the next packet built
  Psn max_psn;                     ///< one past the highest PSN ever sent (retransmission counter)
  Psn una;                         ///< oldest unacknowledged PSN
  Psn acked_psn;                   ///< highest PSN covered by an ACK (valid when any_ack)
  bool any_ack = false;
  uint32_t rd_atomic_out = 0;  ///< READ/atomic WQEs started and not completed
  uint32_t pkts_since_ackreq = 0;
  Timestamp last_ackreq{};    ///< when the last packet with AckReq went out
  Timestamp last_sent{};      ///< when the last request packet went out
  uint32_t burst_pkts = 0;    ///< request packets since a gap of kAckReqStreamGap
  bool force_ackreq = false;  ///< the next request packet asks (a probe)
  /// ACK probe (kAckProbeDelay): set while the last request packet is a SEND/WRITE packet
  /// without AckReq.
  Timestamp probe_at = Timestamp::never();
  uint8_t retry_left = 7;
  uint8_t rnr_left = 7;
  Timestamp retrans_at = Timestamp::never();      ///< local ACK timer
  Timestamp rnr_until = Timestamp::never();       ///< RNR wait: no request before
  Timestamp neigh_retry_at = Timestamp::never();  ///< unresolved neighbour: retry then
  bool rewind_guard = false;  ///< a rewind to rewind_psn happened with una == rewind_una
  Psn rewind_psn, rewind_una;
  bool sqd_notified = false;
  bool fatal_raised = false;  ///< an affiliated QP error event was raised since RESET

  // ---- Receive queue ----
  Srq* srq = nullptr;
  Ring<RecvWqe> rq;
  std::vector<Sge> rq_sges;  ///< capacity * max_recv_sge

  // ---- Responder ----
  Psn epsn;  ///< expected request PSN
  Msn msn;
  bool nak_sent = false;  ///< PSN sequence NAK outstanding (IBA 9.7.5.2.2: one per episode)
  Timestamp dack_at = Timestamp::never();  ///< delayed ACK of packets without AckReq
  Psn dack_psn;                            ///< the newest of them
  enum class RxMsg : uint8_t { kNone, kSend, kWrite };
  RxMsg rx_msg = RxMsg::kNone;
  bool uc_drop = false;  ///< UC: dropping until the next FIRST/ONLY
  uint64_t wr_va = 0;    ///< WRITE in progress: next address
  uint32_t wr_rkey = 0;
  uint32_t wr_resid = 0;  ///< bytes still expected
  uint32_t wr_len = 0;    ///< DMA length of the WRITE in progress
  bool cur_recv = false;  ///< a receive WQE is being filled
  RecvWqe cur_rwqe;
  std::array<Sge, kMaxSge> cur_sg{};
  uint32_t cur_off = 0;  ///< bytes placed into it
  Ring<RespItem> resp_q;
  uint32_t resp_rd_atomic = 0;       ///< READ/atomic items queued
  std::vector<AtomicReplay> replay;  ///< max(max_dest_rd_atomic, 1) entries
  uint32_t replay_next = 0;
  bool comm_est = false;  ///< kCommEst already raised

  // ---- Congestion notification point ----
  bool cnp_pending = false;
  bool cnp_target = false;  ///< cnp_dqpn/dip/dmac are set (a CE packet arrived)
  uint32_t cnp_dqpn = 0;
  Gid cnp_dip;
  MacAddr cnp_dmac;

  // ---- Counts for tools ----
  QpTraffic traffic;

  // ---- Scheduling ----
  bool in_active = false;
  MacAddr dmac;
  bool dmac_valid = false;
  wire::FrameSpec tmpl;  ///< L2..BTH fields fixed per QP (RC/UC)
};

struct Engine::Impl {
  Impl(const EngineConfig& c, CounterBlock* k, EngineObserver* o);

  EngineConfig cfg;
  CounterBlock* ctr;
  EngineObserver* obs;
  MemoryTable mrs;
  std::unique_ptr<NotificationPoint> np;
  std::vector<uint32_t> np_due;  ///< scratch: QPNs whose coalesced CNP is due
  std::vector<Pd> pds;
  std::vector<Cq> cqs;
  /// A deque: QPs keep a Srq* (Qp::srq), so creating an SRQ must not move the others.
  std::deque<Srq> srqs;
  std::vector<std::unique_ptr<Qp>> qps;  ///< by slot
  std::vector<uint8_t> qp_gen;           ///< generation per slot
  std::vector<Qp*> active;               ///< QPs with work or timers
  uint32_t rr = 0;                       ///< round-robin start in active
  Timestamp last_now{0};
  Gsi gsi;  ///< QP1 (gsi.h)

  void inc(Counter c, uint64_t n = 1) { ctr->inc(c, n); }

  // engine.cc
  Qp* find_qp(uint32_t qpn) const;
  Cq* find_cq(uint32_t id);
  Srq* find_srq(uint32_t id);
  void activate(Qp& qp);
  void async_event(AsyncEventType t, uint32_t id);

  // completion.cc
  /// Appends a completion; handles overflow and notification. Returns false on overflow.
  bool push_cqe(uint32_t cq_id, const Cqe& e, bool solicited);
  void complete_send(Qp& qp, const SendWqe& w, WcStatus st);
  void complete_recv(Qp& qp, uint64_t wr_id, WcStatus st, WcOpcode op, uint32_t byte_len,
                     uint32_t imm, uint32_t wc_flags, bool solicited);
  /// Moves the QP to ERR and flushes both queues (IBA 10.3.1, "Error" state).
  void qp_error(Qp& qp);
  /// Raises the QP's affiliated error event (default kQpFatal) once per trip to ERR; later
  /// errors before the next RESET raise nothing (ibv_get_async_event(3) IBV_EVENT_QP_FATAL).
  void raise_qp_error_event(Qp& qp, AsyncEventType t = AsyncEventType::kQpFatal);
  /// UC/UD: send queue error state; flushes the send queue.
  void qp_sq_error(Qp& qp);
  void flush_sq(Qp& qp);
  void flush_rq(Qp& qp);

  // Memory helpers (memory copies with checks before any byte moves).
  /// Copies len bytes starting at byte offset off of the SGE list into dst. Checks every
  /// touched SGE first. Returns kOk or the failed check.
  AccessCheck gather(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off, uint8_t* dst,
                     uint32_t len) const;
  /// Copies src into the SGE list at byte offset off, with LOCAL_WRITE checks first.
  AccessCheck scatter(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off, const uint8_t* src,
                      uint32_t len) const;
  /// The checks of scatter() over [off, off+len) without copying.
  AccessCheck check_scatter(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off,
                            uint32_t len) const;
  const Sge* sq_sg(const Qp& qp, uint32_t pos) const;
  const uint8_t* sq_inl(const Qp& qp, uint32_t pos) const;

  // rx.cc
  void on_frame(std::span<const uint8_t> frame, Timestamp now);

  // responder.cc
  void responder_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  void rc_responder(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  void uc_responder(Qp& qp, const wire::ParsedPacket& p);
  void ud_responder(Qp& qp, const wire::ParsedPacket& p);
  bool pop_recv(Qp& qp);
  void queue_ack(Qp& qp, uint8_t syndrome, Psn psn, bool fatal = false);
  /// Responder-detected error (IBA 9.9.3.1 class B/C/D): NAK + async event + QP ERR.
  void responder_fatal(Qp& qp, uint8_t nak_code, AsyncEventType ev, WcStatus recv_status);

  // completer.cc
  void completer_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  /// Retires WQEs covered by an ACK through psn; returns true on progress.
  bool ack_through(Qp& qp, Psn psn, Timestamp now);
  void on_progress(Qp& qp, Timestamp now);
  /// Go-back-N: the next packet built is psn (IBA 9.7.5.1.2 / 9.7.6.1.3).
  void rewind(Qp& qp, Psn psn);
  /// Rewind requested by a NAK/implied NAK/out-of-order response; applies retry_cnt.
  void retry_from(Qp& qp, Psn psn, Counter why, Timestamp now);
  void retire_head(Qp& qp, WcStatus st);
  /// Completes the head with an error and takes the QP to ERR.
  void requester_fatal(Qp& qp, WcStatus st);
  void check_head_error(Qp& qp);
  void on_timers(Qp& qp, Timestamp now);

  // requester.cc / tx.cc
  size_t poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now);
  Timestamp next_deadline() const;
  /// Earliest time the QP can transmit (last_now when now); never() when it has nothing.
  Timestamp qp_tx_time(const Qp& qp) const;
  Timestamp qp_timer_time(const Qp& qp) const;
  bool requester_has_packet(const Qp& qp) const;
  /// Whether a SEND/WRITE packet asks for an ACK (kAckReqInterval, kAckReqStreamGap).
  bool wants_ackreq(const Qp& qp, const SendWqe& w, bool last, uint32_t pos, Timestamp now) const;
  /// Builds and sends at most one frame for the QP; returns 1 sent, 0 nothing to send,
  /// -1 sink full.
  int service_responder(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  int service_requester(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  int send_cnp(Qp& qp, TxSink& sink);
  bool resolve(Qp& qp, NeighborResolver& neigh);
  void fill_template(Qp& qp);
  uint8_t prio_of(uint8_t dscp) const { return cfg.dscp_to_prio[dscp & 63] & 7; }
  /// Adds the configured 802.1Q tag (cfg.vlan) to a frame whose DSCP is set: PCP = priority.
  void tag(wire::FrameSpec& s) const {
    if (!cfg.vlan) return;
    s.vlan = true;
    s.vid = *cfg.vlan;
    s.pcp = prio_of(s.dscp);
  }
  /// Counts one frame of `qp` handed to the sink: the device's counters and the QP's own.
  void count_tx(Qp& qp, size_t len) {
    inc(Counter::tx_vport_rdma_unicast_packets);
    inc(Counter::tx_vport_rdma_unicast_bytes, len);
    qp.traffic.tx_packets++;
    qp.traffic.tx_bytes += len;
  }
  /// Emits one frame of `qp`: headers from spec, payload via fill(dst) (payload_len bytes).
  /// Returns the frame length, 0 when nothing was sent (fill refused, bad spec), -1 when the
  /// sink is full.
  template <typename Fill>
  int emit(TxSink& sink, Qp& qp, const wire::FrameSpec& spec, uint32_t payload_len, uint8_t prio,
           bool cnp, Fill&& fill);
};

template <typename Fill>
int Engine::Impl::emit(TxSink& sink, Qp& qp, const wire::FrameSpec& spec, uint32_t payload_len,
                       uint8_t prio, bool cnp, Fill&& fill) {
  size_t max_len = wire::kMaxFrameOverhead + payload_len;
  uint8_t* buf = sink.begin_frame(max_len);
  if (!buf) return -1;
  std::span<uint8_t> b(buf, max_len);
  wire::FrameLayout l = wire::build_headers(spec, b);
  if (l.payload_offset == 0) return 0;
  if (!fill(buf + l.payload_offset)) return 0;
  size_t len = wire::finalize(b, l, payload_len);
  if (len == 0) return 0;
  TxMeta meta;
  meta.priority = prio;
  meta.is_cnp = cnp;
  sink.end_frame(len, meta);
  count_tx(qp, len);
  return static_cast<int>(len);
}

}  // namespace uroce::transport
