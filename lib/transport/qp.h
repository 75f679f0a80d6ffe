/**
 * @file qp.h
 * @brief The state of one QP, by role (IBA Vol 1 §9.7; Linux rxe's req/comp/resp split):
 *   RequesterState  the send queue and its segmentation into request packets (requester.cc)
 *   CompleterState  what the peer acknowledged, retries and the local ACK timer (completer.cc)
 *   ResponderState  the receive queue, request execution and the ordered responses
 *                   (responder.cc receives, responder_tx.cc sends)
 *   CnpState        the notification point: where a CNP for this QP goes (notification.cc)
 * plus what every role reads: identity, attributes, the congestion control and the frame
 * template. Internal to lib/transport.
 *
 * Units: PSNs are 24-bit serial numbers (IBA Vol 1 §9.7.1), lengths in bytes, times in ns.
 */
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/time.h"
#include "common/types.h"
#include "transport/engine.h"
#include "transport/ring.h"
#include "transport/verbs_types.h"
#include "transport/wire/build.h"
#include "transport/wire/ext_headers.h"

namespace uroce::transport {

struct Srq;

/// A posted receive: SGEs live in the owning queue's side array at the same slot.
struct RecvWqe {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
};

/// A posted send. SGEs (or inline bytes) live in the QP's side arrays at the same ring slot.
struct SendWqe {
  uint64_t wr_id = 0;
  uint64_t remote_addr = 0;
  uint64_t compare_add = 0;  ///< ATOMIC_WRITE: the 8 bytes to write
  uint64_t swap = 0;
  /// total payload bytes (READ: bytes to read; atomic and ATOMIC_WRITE: 8; FLUSH: the range)
  uint32_t length = 0;
  uint32_t rkey = 0;
  /// immediate data (network order as given), the rkey to invalidate, or a bind's window rkey
  /// (a bind also keeps its range in remote_addr/compare_add, its lkey<<32|access in swap);
  /// FLUSH: its FETH (selectivity level << 4 | placement type)
  uint32_t imm = 0;
  uint32_t remote_qpn = 0;   ///< UD; XRC_SEND: the remote XRC SRQ number
  uint32_t remote_qkey = 0;  ///< UD
  uint32_t num_sge = 0;
  uint32_t recv_seq = 0;  ///< selective repeat: index among receive-consuming messages
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

/// BIND_MW and LOCAL_INV: executed by the requester in order, nothing on the wire.
inline bool is_local_op(const SendWqe& w) {
  return w.opcode == WrOpcode::kBindMw || w.opcode == WrOpcode::kLocalInv;
}

/// READ, atomic, ATOMIC_WRITE and FLUSH WRs: answered by responses (READ responses, atomic
/// ACKs; a zero-length READ response for ATOMIC_WRITE and FLUSH, IBA 1.5 Annex A19 as Linux rxe
/// sends it), limited by max_rd_atomic, one PSN each but READ.
inline bool is_rd_atomic(const SendWqe& w) {
  return w.opcode == WrOpcode::kRdmaRead || w.opcode == WrOpcode::kAtomicCmpAndSwp ||
         w.opcode == WrOpcode::kAtomicFetchAndAdd || w.opcode == WrOpcode::kAtomicWrite ||
         w.opcode == WrOpcode::kFlush;
}

/// READ and atomic WRs: their response lands in the WR's local SGEs.
inline bool scatters_response(const SendWqe& w) {
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
  uint32_t pd = 0;     ///< the PD the READ was checked against (XRC: its SRQ's)
  uint32_t len = 0;    ///< bytes still to send
  uint32_t npkts = 0;  ///< total response packets of this stream
  uint32_t sent = 0;   ///< response packets already sent
  // Atomic
  uint64_t orig = 0;
};

/// Atomic replay cache entry (IBA 9.4.5: duplicate atomics are answered, not re-executed; so
/// are duplicate ATOMIC_WRITEs, whose write a later request may have overwritten since).
struct AtomicReplay {
  bool valid = false;
  bool write = false;  ///< an ATOMIC_WRITE (answered by a zero-length READ response)
  Psn psn;
  uint64_t orig = 0;
};

/// Selective repeat, requester side (sr_requester.cc): the transmission order of each PSN's
/// last send, and the latest transmission known to have arrived; an unacknowledged PSN the
/// peer does not hold that went out before that one is lost (no reordering on a path: one UDP
/// flow). Order, not time: a burst leaves within one clock reading.
struct SrSendState {
  uint32_t recv_seq = 0;       ///< next receive-consuming message's index (SRETH recv_seq)
  uint64_t tx_seq = 0;         ///< transmissions so far
  std::vector<uint64_t> sent;  ///< by PSN modulo the window: tx_seq of its last send
  uint64_t delivered = 0;      ///< the latest transmission known to have arrived
  bool has_hole = false;       ///< `hole` is the lowest lost PSN
  bool hole_read = false;      ///< `hole` is a READ response (lost on the way back)
  Psn hole;
  /// The last PSN of every READ request that may still be at the responder (first parts,
  /// later parts, re-requests), for the QP's max_rd_atomic (sr_reads_in_flight).
  std::vector<Psn> read_ends;
  Timestamp rto_at = Timestamp::never();  ///< the retransmission timer's next check
  Timestamp rto_armed{};                  ///< when it was last started (a send, progress)
  uint32_t rto_backoff = 0;               ///< expiries since the last progress (doublings)
};

/// Selective repeat, completer side: which PSNs in [una, una + window) the peer holds
/// (SACKETH bitmaps), by PSN modulo the window.
struct SackBoard {
  std::vector<uint8_t> held;
  uint32_t count = 0;  ///< entries set
  Psn base;            ///< entries below it are cleared (it follows una)
  bool based = false;  ///< base is set
};

/// One request packet a selective-repeat responder placed ahead of the expected PSN, kept
/// until the PSNs before it arrive (then retired in order: completions, MSN, receive WQEs).
struct HeldPacket {
  bool valid = false;
  uint8_t opcode = 0;
  bool se = false;
  uint32_t len = 0;       ///< payload bytes
  uint32_t imm = 0;       ///< ImmDt or IETH
  wire::RethValue reth;   ///< WRITE FIRST/ONLY
  uint32_t recv_seq = 0;  ///< SEND: the message whose receive WQE took the bytes
  uint64_t place = 0;     ///< where the bytes go: WRITE the VA, SEND the offset in the message
  /// The bytes are not placed yet but kept in SrRecvState::stash until the packet is retired
  /// (in-order placement, Qp::ooo_placement off); false: placed when it arrived (the opt-in).
  bool deferred = false;
};

/// Selective repeat, responder side.
struct SrRecvState {
  std::vector<HeldPacket> win;  ///< by PSN modulo the window
  uint32_t held = 0;            ///< valid entries
  uint32_t recv_popped = 0;     ///< receive WQEs taken in order (the next message's index)
  /// The payloads of deferred held packets, by PSN modulo the window (allocated at the first
  /// deferral; each keeps its capacity: at most the window's MTUs), and the one being retired.
  std::vector<std::vector<uint8_t>> stash;
  std::vector<uint8_t> retiring;
};

struct RequesterState {
  Ring<SendWqe> sq;
  std::vector<Sge> sq_sges;        ///< capacity * max_send_sge
  std::vector<uint8_t> sq_inline;  ///< capacity * max_inline_data
  uint32_t send_pos = 0;           ///< absolute SQ position of the WQE being segmented
  uint32_t send_off = 0;           ///< bytes (SEND/WRITE) or packets (READ) of it already sent
  uint32_t started_end = 0;        ///< position after the last started WQE
  Psn next_psn;                    ///< PSN of the next packet built
  Psn max_psn;                     ///< one past the highest PSN ever sent (retransmission counter)
  uint32_t rd_atomic_out = 0;      ///< READ/atomic WQEs started and not completed
  uint32_t pkts_since_ackreq = 0;
  Timestamp last_ackreq{};    ///< when the last packet with AckReq went out
  Timestamp last_sent{};      ///< when the last request packet went out
  uint32_t burst_pkts = 0;    ///< request packets since a gap of kAckReqStreamGap
  bool force_ackreq = false;  ///< the next request packet asks (a probe)
  /// ACK probe (kAckProbeDelay): set while the last request packet is a SEND/WRITE packet
  /// without AckReq.
  Timestamp probe_at = Timestamp::never();
  Timestamp rnr_until = Timestamp::never();       ///< RNR wait: no request before
  Timestamp neigh_retry_at = Timestamp::never();  ///< unresolved neighbour: retry then
  bool sqd_notified = false;
  /// Round-trip timing for congestion control (completer.cc rtt_*): one first transmission at a
  /// time, rtt_psn sent at rtt_sent (never: none timed). Resending it voids it (Karn's rule: the
  /// ACK could answer either copy). A READ's round trip ends with its first response, so it
  /// measures the path back (rtt_read): it feeds the retransmission timer, not the QP's rate.
  Psn rtt_psn;
  Timestamp rtt_sent = Timestamp::never();
  bool rtt_read = false;
  Duration srtt{};    ///< smoothed round trip (0: none measured)
  Duration rttvar{};  ///< its mean deviation
  SrSendState sr;
};

struct CompleterState {
  Psn una;        ///< oldest unacknowledged PSN
  Psn acked_psn;  ///< highest PSN covered by an ACK (valid when any_ack)
  bool any_ack = false;
  uint8_t retry_left = 7;
  uint8_t rnr_left = 7;
  Timestamp retrans_at = Timestamp::never();  ///< local ACK timer
  bool rewind_guard = false;  ///< a rewind to rewind_psn happened with una == rewind_una
  Psn rewind_psn, rewind_una;
  SackBoard sack;
};

struct ResponderState {
  /// The SRQ receives come from; XRC_RECV: the one the request being handled names (set per
  /// packet from its XRCETH, nullptr between packets).
  Srq* srq = nullptr;
  Ring<RecvWqe> rq;
  std::vector<Sge> rq_sges;  ///< capacity * max_recv_sge
  Psn epsn;                  ///< expected request PSN
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
  uint32_t cur_cq = 0;    ///< XRC_RECV: the CQ of the XRC SRQ the current WQE came from
  uint32_t cur_srqn = 0;  ///< XRC_RECV: and that SRQ's number
  RecvWqe cur_rwqe;
  std::array<Sge, kMaxSge> cur_sg{};
  uint32_t cur_off = 0;  ///< bytes placed into it
  Ring<RespItem> resp_q;
  uint32_t resp_rd_atomic = 0;       ///< READ/atomic items queued
  std::vector<AtomicReplay> replay;  ///< max(max_dest_rd_atomic, 1) entries
  uint32_t replay_next = 0;
  bool comm_est = false;  ///< kCommEst already raised
  SrRecvState sr;
  /// Peer timestamps: the stamp of the newest request with a TSETH and when it arrived
  /// (never: none yet), echoed with the time held on every ACK/NAK.
  uint32_t ts_echo = 0;
  Timestamp ts_arrived = Timestamp::never();
};

/// Notification point (DCQCN NP, Annex 17 §A17.9.3): the CNP target of a CE-marked flow.
struct CnpState {
  bool cnp_pending = false;
  bool cnp_target = false;  ///< cnp_dqpn/dip/dmac are set (a CE packet arrived)
  uint32_t cnp_dqpn = 0;
  Gid cnp_dip;
  MacAddr cnp_dmac;
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
  bool fatal_raised = false;  ///< an affiliated QP error event was raised since RESET
  bool selective = false;     ///< RC loss recovery by selective repeat (uroce's extension)
  uint32_t sr_mask = 0;       ///< selective repeat: window - 1
  /// Selective repeat places each packet as it arrives, ahead of a gap too, so a message's last
  /// byte may appear before earlier ones and an earlier WRITE resent into the same bytes may
  /// land over a later one (opt-in; off: every packet is placed when it is retired, in order).
  bool ooo_placement = false;
  /// Peer timestamps (uroce's extension, wire/ts_ext.h): requests with AckReq carry a TSETH,
  /// ACKs echo it with the responder's hold time, and the delay control's round trips come
  /// from them.
  bool timestamps = false;

  RequesterState req;
  CompleterState comp;
  ResponderState resp;
  CnpState cnp;

  // ---- Counts for tools ----
  QpTraffic traffic;

  // ---- Scheduling ----
  bool in_active = false;
  MacAddr dmac;
  bool dmac_valid = false;
  wire::FrameSpec tmpl;  ///< L2..BTH fields fixed per QP (RC/UC)
};

/// Request packets sent and not yet acknowledged.
inline bool outstanding(const Qp& qp) { return diff(qp.req.max_psn, qp.comp.una) > 0; }

}  // namespace uroce::transport
