/**
 * @file engine_impl.h
 * @brief Internal state of the engine: PDs, CQs, SRQs, the QP table (a QP's state by role is
 * in qp.h) and the functions of each role. Shared by engine.cc (control path), rx.cc,
 * requester.cc, completer.cc, responder.cc, responder_tx.cc, notification.cc and tx.cc; not
 * part of the contract.
 *
 * Units: PSNs are 24-bit serial numbers (IBA Vol 1 §9.7.1), lengths in bytes, times in ns.
 * Data-path structures are fixed-size rings allocated by create_*; nothing on the data path
 * allocates, locks or makes a syscall.
 */
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "common/counters.h"
#include "common/packet_io.h"
#include "common/time.h"
#include "common/types.h"
#include "transport/engine.h"
#include "transport/gsi.h"
#include "transport/memory_table.h"
#include "transport/qp.h"
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

/// Packets a message of len bytes takes at path MTU mtu (a zero-length message takes one).
constexpr uint32_t packets_for(uint32_t len, uint32_t mtu) {
  return len == 0 ? 1 : (len + mtu - 1) / mtu;
}

/// Bytes an SGE list holds (capped at the largest message): a receive WQE's length.
inline uint32_t sge_list_len(const Sge* sg, uint32_t n) {
  uint64_t len = 0;
  for (uint32_t i = 0; i < n; ++i) len += sg[i].length;
  return static_cast<uint32_t>(std::min<uint64_t>(len, kMaxMsgSize));
}

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
  // Event moderation (Engine::modify_cq): an armed CQ signals at the mod_count-th completion
  // that would signal, or mod_period after the first of them, whichever comes first; a bound
  // of 0 is off, both 0 signal at once.
  uint16_t mod_count = 0;
  Duration mod_period{};
  uint32_t mod_seen = 0;  ///< completions that would have signalled since the arm
  Timestamp mod_first = Timestamp::never();  ///< the first of them
};

struct Srq {
  bool live = false;
  uint32_t id = 0;  ///< its handle (index + 1), for events; an XRC SRQ's number
  uint32_t pd = 0;
  uint32_t xrcd = 0;  ///< XRC SRQ: its domain (0: a basic SRQ)
  uint32_t cq = 0;    ///< XRC SRQ: the CQ its receives complete on
  uint32_t max_sge = 0;
  uint32_t limit = 0;
  uint32_t users = 0;
  Ring<RecvWqe> ring;
  std::vector<Sge> sges;  ///< ring capacity * max_sge
};

/// An XRC domain (ibv_open_xrcd(3)).
struct Xrcd {
  bool live = false;
  uint32_t users = 0;  ///< XRC SRQs and XRC_RECV QPs in it
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
  std::vector<Xrcd> xrcds;
  std::vector<std::unique_ptr<Qp>> qps;  ///< by slot
  std::vector<uint8_t> qp_gen;           ///< generation per slot
  uint32_t block_next = 0;               ///< QPN blocks: the slot tried first by the next QP
  std::vector<Qp*> active;               ///< QPs with work or timers
  uint32_t rr = 0;                       ///< round-robin start in active
  Timestamp last_now{0};
  std::vector<uint32_t> cq_mod_waiting;  ///< CQs holding back a moderated event (mod_seen > 0)
  Gsi gsi;                               ///< QP1 (gsi.h)

  void inc(Counter c, uint64_t n = 1) { ctr->inc(c, n); }

  // engine.cc
  Qp* find_qp(uint32_t qpn) const;
  /// The table slot of a QPN: its low qpn_block_bits (QPN blocks), else its low kQpSlotBits.
  uint32_t qp_slot(uint32_t qpn) const {
    const uint32_t bits = cfg.qpn_block_bits ? cfg.qpn_block_bits : kQpSlotBits;
    return qpn & ((1u << bits) - 1);
  }
  /// QPN blocks: the next free slot of the block after block_next (cyclic), or none.
  std::optional<uint32_t> next_block_slot();
  Cq* find_cq(uint32_t id);
  Srq* find_srq(uint32_t id);
  void activate(Qp& qp);
  void async_event(AsyncEventType t, uint32_t id);

  // completion.cc
  /// Appends a completion; handles overflow and notification. Returns false on overflow.
  bool push_cqe(uint32_t cq_id, const Cqe& e, bool solicited);
  /// Whether an armed CQ holding mod_seen completions signals at now (its moderation).
  static bool cq_event_due(const Cq& cq, Timestamp now);
  /// Signals the CQ's event (EngineObserver::on_cq_event) and disarms it.
  void signal_cq(uint32_t cq_id, Cq& cq);
  /// Signals the moderated events whose period ended by now (poll_transmit).
  void cq_mod_timers(Timestamp now);
  /// Earliest end of a moderation period; never() when none runs.
  Timestamp cq_mod_deadline() const;
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

  // Memory helpers (memory copies with checks before any byte of the caller's memory moves).
  /// Copies len bytes starting at byte offset off of the SGE list into dst, checking each SGE
  /// chunk as it is read (dst may be partly written on an error). Returns kOk, the failed
  /// check, or kFault (an on-demand region's page is not mapped: the copy stopped there).
  AccessCheck gather(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off, uint8_t* dst,
                     uint32_t len) const;
  /// Copies src into the SGE list at byte offset off, with LOCAL_WRITE checks first; kFault
  /// as gather().
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
  /// An RC request at the expected PSN: checks, execution, ePSN, ACK. held: a packet that
  /// selective repeat held (its bytes are in place and only the bookkeeping runs, unless it was
  /// deferred: then p.payload carries them and they are placed here).
  void rc_execute(Qp& qp, const wire::ParsedPacket& p, Timestamp now, const HeldPacket* held);
  /// An XRC_RECV QP's request: its XRCETH names the XRC SRQ (of the QP's domain) whose PD,
  /// receive WQEs and CQ the request uses; otherwise as rc_responder. A bad XRCETH is an
  /// invalid request (NAK, QP to ERR).
  void xrc_responder(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  void uc_responder(Qp& qp, const wire::ParsedPacket& p);
  void ud_responder(Qp& qp, const wire::ParsedPacket& p);
  bool pop_recv(Qp& qp);
  void queue_ack(Qp& qp, uint8_t syndrome, Psn psn, bool fatal = false);
  /// Queues the zero-length RDMA READ Response Only that answers an ATOMIC_WRITE or a FLUSH at
  /// psn (a READ/atomic item: the caller checked max_dest_rd_atomic and room in resp_q).
  void queue_read_zero(Qp& qp, Psn psn);
  /// Responder-detected error (IBA 9.9.3.1 class B/C/D): NAK + async event + QP ERR.
  void responder_fatal(Qp& qp, uint8_t nak_code, AsyncEventType ev, WcStatus recv_status);
  /// The delayed ACK (kDelayedAck).
  void responder_timers(Qp& qp, Timestamp now);

  // sr_responder.cc (selective repeat)
  /// Selective repeat on or off for qp, its windows sized and emptied.
  void sr_setup(Qp& qp, bool on);
  /// Peer timestamps: the fabric round trip an ACK's TSETH gives, to the QP's congestion control.
  void peer_rtt(Qp& qp, const wire::TsethValue& t, Timestamp now);
  /// Places a request ahead of the expected PSN where its SRETH says; false: not taken.
  bool sr_place(Qp& qp, const wire::ParsedPacket& p, bool write);
  /// A request ahead of the expected PSN: placed and held, or dropped; an ACK with SACK follows.
  void sr_hold(Qp& qp, const wire::ParsedPacket& p);
  /// Retires the held packets the expected PSN (which was `before`) has reached.
  void sr_drain(Qp& qp, Psn before, Timestamp now);
  /// The SACKETH of an ACK of qp: a bitmap of the held PSNs (nothing when none is held).
  void sr_fill_sack(const Qp& qp, wire::FrameSpec& s);

  // sr_requester.cc (selective repeat)
  /// Packets in flight a selective-repeat QP may have (EngineConfig::sr_max_inflight).
  uint32_t sr_cap(const Qp& qp) const;
  /// psn arrived: its send time is evidence against everything sent before it.
  void sr_delivered(Qp& qp, Psn psn);
  /// Clears the SACK board below una (what una passed counts as delivered).
  void sack_forget_below(Qp& qp);
  /// Whether the peer holds psn (a SACKETH said so); psn >= una.
  bool sack_held(const Qp& qp, Psn psn) const;
  /// Marks psn (inside the window) held on the board; false when it already was. A newly held
  /// PSN restarts the retransmission timer (sr_alive).
  bool sack_hold(Qp& qp, Psn psn, Timestamp now);
  /// Sent, neither acknowledged nor held by the peer.
  uint32_t sr_in_flight(const Qp& qp) const;
  /// The lowest lost PSN from `from` on into req.sr.hole (has_hole false: none).
  void sr_find_hole(Qp& qp, Psn from);
  /// A timeout: everything outstanding from `from` that the peer does not hold is lost.
  void sr_declare_lost(Qp& qp, Psn from);
  /// An ACK of a selective-repeat QP, after ack_through(): its SACKETH onto the board.
  void sr_on_ack(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  /// una moved: the board follows, the lost PSN is looked for again if it was passed.
  void sr_after_progress(Qp& qp);
  /// Records the transmission order of PSNs [first, after): one step each, as a READ's
  /// responses leave in PSN order.
  void sr_note_sent(Qp& qp, Psn first, Psn after);
  /// Whether the READ request whose last response PSN is `last` is done at the responder: that
  /// response received or held, or sent before a transmission known to have arrived.
  bool sr_read_done(const Qp& qp, Psn last) const;
  /// READ requests that may still be at the responder.
  uint32_t sr_reads_in_flight(const Qp& qp) const;
  /// sr_reads_in_flight() has reached the QP's max_rd_atomic: no more READ request may go.
  bool sr_reads_full(const Qp& qp) const;
  /// A READ request ending at PSN `last` went out: it counts against max_rd_atomic until done.
  void sr_note_read(Qp& qp, Psn last);
  /// A response for psn arrived: its request's transmission did (loss by transmission order).
  void sr_response_arrived(Qp& qp, Psn psn);
  /// READ response psn arrived ahead of a missing one; true when it is now held (inside the
  /// window, not held before): it is placed and never asked again.
  bool sr_hold_response(Qp& qp, Psn psn);
  /// A response to a READ after the head one: placed in its WQE and held; false after a fatal
  /// error (see place_read_response).
  bool sr_place_later_read(Qp& qp, const wire::ParsedPacket& p);
  /// The head READs' held responses count as received (una follows); READs whose responses
  /// are all in complete, in order.
  void sr_read_catch_up(Qp& qp);
  /// psn must go again (a READ response or an atomic ACK went missing).
  void sr_force_resend(Qp& qp, Psn psn);
  /// Resends the lost PSN req.sr.hole (a READ/atomic: its request from there); returns as
  /// service_requester().
  int sr_resend(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  /// The retransmission timeouts (sr_rto_low, sr_rto_high).
  void sr_timers(Qp& qp, Timestamp now);
  /// A packet newly held by the peer, or a READ response placed ahead: the path delivers, so
  /// the retransmission timer starts again, not backed off (a hole alone is left to the
  /// transmission order).
  void sr_alive(Qp& qp, Timestamp now) {
    qp.req.sr.rto_backoff = 0;
    sr_arm_rto(qp, now);
  }
  /// Starts the retransmission timer at now (a send, progress).
  void sr_arm_rto(Qp& qp, Timestamp now) {
    qp.req.sr.rto_armed = now;
    qp.req.sr.rto_at = now + sr_rto(qp, true);
  }
  /// The timeout of qp with few (or many) packets in flight: cfg.sr_rto_low (sr_rto_high),
  /// but at least the RTT-based one (RFC 6298: srtt + 4 rttvar; a path with a deep queue or a
  /// slow bottleneck would otherwise see every tail as lost), doubled per expiry without
  /// progress (RFC 6298 §5.5) up to kSrMaxBackoff times.
  Duration sr_rto(const Qp& qp, bool few) const {
    const Duration rtt_based = qp.req.srtt + qp.req.rttvar * 4;
    const Duration d = std::max(few ? cfg.sr_rto_low : cfg.sr_rto_high, rtt_based);
    return Duration::nanos(d.ns << std::min<uint32_t>(qp.req.sr.rto_backoff, kSrMaxBackoff));
  }

  // completer.cc
  void completer_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  /// Places READ response q of w (SQ position pos) at its offset; false after a fatal error
  /// (wrong length: BAD_RESP_ERR; the local buffer refused it: LOC_PROT_ERR).
  bool place_read_response(Qp& qp, SendWqe& w, uint32_t pos, const wire::ParsedPacket& p, Psn q);
  /// Retires WQEs covered by an ACK through psn; returns true on progress.
  bool ack_through(Qp& qp, Psn psn, Timestamp now);
  void on_progress(Qp& qp, Timestamp now);
  /// A request packet [psn] of WQE w went out at now: times it when it is a first
  /// transmission that draws a prompt answer and none is timed; a resend at or before the
  /// timed PSN voids it.
  void rtt_on_sent(Qp& qp, const SendWqe& w, Psn psn, bool first, bool prompt, Timestamp now);
  /// The peer has psn (acknowledged, or held): the timed PSN's round trip goes to the
  /// retransmission timer's estimate and, unless it timed a READ, to the QP's congestion
  /// control (which paces this side's requests, not the responses coming back).
  void rtt_on_arrived(Qp& qp, Psn psn, Timestamp now);
  /// Go-back-N: the next packet built is psn (IBA 9.7.5.1.2 / 9.7.6.1.3).
  void rewind(Qp& qp, Psn psn);
  /// Rewind requested by a NAK/implied NAK/out-of-order response; applies retry_cnt.
  /// `ours`: the loss may be of this side's packets (told to the congestion control); a READ
  /// response lost on the way back is not.
  void retry_from(Qp& qp, Psn psn, Counter why, bool ours, Timestamp now);
  void retire_head(Qp& qp, WcStatus st);
  /// Completes the head with an error and takes the QP to ERR.
  void requester_fatal(Qp& qp, WcStatus st);
  void check_head_error(Qp& qp);
  /// The local ACK timer (retry_cnt).
  void completer_timers(Qp& qp, Timestamp now);

  // notification.cc
  /// A CE-marked packet for qp: counts it and schedules (or coalesces) a CNP to its sender.
  void note_ce(Qp& qp, const wire::ParsedPacket& p, Timestamp now);
  int send_cnp(Qp& qp, TxSink& sink);

  // tx.cc (scheduler) / requester.cc / responder_tx.cc
  size_t poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now);
  Timestamp next_deadline() const;
  /// Earliest time the QP can transmit (last_now when now); never() when it has nothing.
  Timestamp qp_tx_time(const Qp& qp) const;
  Timestamp qp_timer_time(const Qp& qp) const;
  /// The head of the (non-empty) response queue is READ response data, which the QP's
  /// congestion control paces as it paces requests.
  bool responder_paced(const Qp& qp) const;
  bool requester_has_packet(const Qp& qp) const;
  /// requester_has_packet() or, selective repeat, a PSN to resend.
  bool requester_ready(const Qp& qp) const;
  /// service_requester(), or first a selective-repeat resend.
  int service_requester_any(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  /// The ACK probe (kAckProbeDelay), the end of an RNR wait, a neighbour retry.
  void requester_timers(Qp& qp, Timestamp now);
  /// Every timer of the QP's roles and of its congestion control.
  void on_timers(Qp& qp, Timestamp now);
  /// Whether a SEND/WRITE packet asks for an ACK (kAckReqInterval, kAckReqStreamGap).
  bool wants_ackreq(const Qp& qp, const SendWqe& w, bool last, uint32_t pos, Timestamp now) const;
  /// Builds and sends at most one frame for the QP; returns 1 sent, 0 nothing to send,
  /// -1 sink full.
  int service_responder(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  int service_requester(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now);
  /// Executes the BIND_MW or LOCAL_INV WQE w of qp (requester.cc); its completion status.
  WcStatus run_local_op(Qp& qp, const SendWqe& w);
  bool resolve(Qp& qp, NeighborResolver& neigh);
  void fill_template(Qp& qp);
  /// Whether GID index i is a RoCE v1 GID: a frame from it is RoCE v1.
  bool roce_v1_gid(size_t i) const { return gid_type_at(i, cfg.gid_v1_base) == GidType::kRoceV1; }
  uint8_t prio_of(uint8_t dscp) const { return cfg.dscp_to_prio[dscp & 63] & 7; }
  /// DSCP of a flow: the AV's traffic class, else the device's roce_dscp.
  uint8_t dscp_of(const AddressVector& av) const {
    return av.traffic_class ? static_cast<uint8_t>(av.traffic_class >> 2) : cfg.roce_dscp;
  }
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
  // Exactly the frame's length: a port refuses a request beyond its largest frame.
  const size_t max_len = wire::frame_len_for(spec, payload_len);
  uint8_t* buf = sink.begin_frame(max_len);
  if (!buf) return -1;
  std::span<uint8_t> b(buf, max_len);
  wire::FrameLayout l = wire::build_headers(spec, b);
  if (l.payload_offset == 0) return 0;
  if (!fill(buf + l.payload_offset)) return 0;
  size_t len = wire::finalize(b, l, payload_len);
  if (len == 0) return 0;
  if (cfg.rxe_flush_icrc && spec.opcode == wire::Opcode::kRcFlush)
    wire::write_icrc_rxe_flush(b, l, len);
  TxMeta meta;
  meta.priority = prio;
  meta.is_cnp = cnp;
  sink.end_frame(len, meta);
  count_tx(qp, len);
  return static_cast<int>(len);
}

}  // namespace uroce::transport
