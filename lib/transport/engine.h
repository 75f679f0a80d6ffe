/**
 * @file engine.h
 * @brief The sans-IO RoCEv2 transport engine of one device: QPs (RC/UC/UD), memory regions,
 * CQs, SRQs, and the packet interface. This is the contract lib/verbs and sim/ program against.
 *
 * Sans-IO (docs/design.md, "Principles"): frames come in through on_frame(), go out through a
 * TxSink in poll_transmit(), and time is always an argument. The engine never reads a clock,
 * sleeps, spawns threads or touches a socket or mbuf. Memory regions are addresses in the caller's
 * address space; the engine copies payload to and from them directly after checking bounds and
 * access rights.
 *
 * Thread-safety: none inside. The caller serialises every call on one Engine (lib/verbs holds
 * the device's engine lock; the simulator is single-threaded).
 *
 * Errors: control-path calls return Status (errno values as ibv_* document them); data-path
 * problems caused by the peer become NAKs, completion statuses and counters, never aborts.
 */
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "cc/congestion.h"
#include "common/counters.h"
#include "common/packet_io.h"
#include "common/status.h"
#include "common/time.h"
#include "common/types.h"
#include "transport/verbs_types.h"

namespace uroce::transport {

// The congestion-control seam lives in lib/cc; the engine uses its names.
using cc::CongestionFactory;
using cc::NoCongestion;
using cc::NotificationPoint;
using cc::QpCcState;
using cc::QpCongestion;

/// Device-wide settings the engine needs.
struct EngineConfig {
  MacAddr mac;            ///< source MAC of every frame
  std::vector<Gid> gids;  ///< GID table: index i = RoCEv2 GID of address i, then RoCE v1
  /// Entries of `gids` from this index on are RoCE v1 GIDs (gid_table(), [device] roce_v1):
  /// QPs and AHs with such a source GID send RoCE v1 frames.
  size_t gid_v1_base = SIZE_MAX;
  uint32_t max_mtu = 4096;  ///< largest path MTU the port carries (bytes)
  uint64_t link_speed_bps = 10'000'000'000ull;
  uint8_t roce_dscp = 26;  ///< DSCP of data packets when the AV's traffic class is 0
  uint8_t cnp_dscp = 48;   ///< DSCP of CNPs
  bool ecn = true;         ///< data packets carry ECT(0)
  /// RC FLUSH frames carry Linux rxe's ICRC (wire::icrc_compute_rxe_flush()), and a received
  /// FLUSH is taken with either that or the standard one ([device] rxe_flush_icrc).
  bool rxe_flush_icrc = false;
  /// 802.1Q VLAN id of every RoCE frame sent (0 = priority-tagged), with PCP = the frame's
  /// priority (dscp_to_prio of its DSCP); unset: untagged frames.
  std::optional<uint16_t> vlan;
  uint64_t key_seed = 0;  ///< seeds lkey/rkey generation (the caller picks randomness)
  /// DSCP -> priority (TxMeta::priority, PFC class); default: the class selector, DSCP >> 3.
  std::array<uint8_t, 64> dscp_to_prio = default_dscp_to_prio();
  /// RC go-back-N window: most PSNs sent and not yet acknowledged per QP (rxe uses 128).
  uint32_t max_unacked_psns = 128;
  /// Loss recovery of RC QPs created from now on (docs/loss-recovery.md). kSelective is
  /// uroce's extension: use it only when the peer agreed (both devices' configs, or ECE);
  /// set_selective_repeat() changes one QP before it leaves INIT.
  LossRecovery loss_recovery = LossRecovery::kGoBackN;
  /// Peer timestamps (wire/ts_ext.h) on RC QPs created from now on: uroce's extension, so only
  /// when every peer agreed (both devices' configs, or ECE); set_peer_timestamps() changes one
  /// QP before it leaves INIT.
  bool peer_timestamps = false;
  /// Selective repeat responders of RC QPs created from now on place each packet as it arrives,
  /// ahead of a gap too (opt-in: a program polling a message's last byte may then see it before
  /// earlier ones, and an earlier WRITE resent into the same bytes may land over a later one);
  /// off, a packet's bytes go in only after every earlier packet of the QP's
  /// (docs/loss-recovery.md, "In-order visibility"). set_ooo_placement() changes one QP.
  bool ooo_placement = false;
  /// Selective repeat: PSNs after the oldest unacknowledged one that the requester tracks and
  /// the responder holds out of order (a power of two, 16..512: a SACKETH's bitmap).
  uint32_t sr_window = 512;
  /// Selective repeat: request packets in flight (sent, neither acknowledged nor selectively
  /// acknowledged) per QP, near the path's bandwidth-delay product (IRN's BDP-FC). 0: the
  /// link's bytes in kSrDefaultBdpRtt, at least 16 packets.
  uint32_t sr_max_inflight = 0;
  /// Selective repeat: the short retransmission timeout, used while at most kSrFewInFlight
  /// packets are in flight (a lost tail or a lost retransmission), and the longer one used
  /// otherwise (IRN's RTO_low and RTO_high); each at least the RTT-based srtt + 4 rttvar, and
  /// doubled on each expiry without progress. The QP's local ACK timeout runs beside them and
  /// alone spends retry_cnt.
  Duration sr_rto_low = Duration::micros(100);
  Duration sr_rto_high = Duration::micros(320);
  /// Congestion control (lib/dcqcn's adapter); nullptr = no pacing, no CNPs sent.
  /// Not owned; must outlive the engine.
  CongestionFactory* cc = nullptr;
  /// Host-unique QPNs (several processes on one netdev through uroce-hostd): every QPN is
  /// qpn_block << qpn_block_bits | n, the block the daemon gave this process, so the daemon
  /// steers a frame to its process by the destination QPN's block. n is numbered cyclically
  /// over the block (the number after the last one given, skipping live QPs), so a number
  /// comes back only after every other free number of the block was given, as rxe's cyclic
  /// allocation: a late packet for a destroyed QP does not reach its successor. Bits in
  /// kMinQpnBlockBits..kMaxQpnBlockBits; block 0 starts at kFirstQpSlot (QP0, QP1). 0 bits:
  /// the engine's own numbering, QPN = generation << 16 | slot (exclusive mode).
  uint8_t qpn_block_bits = 0;
  uint32_t qpn_block = 0;

  static constexpr std::array<uint8_t, 64> default_dscp_to_prio() {
    std::array<uint8_t, 64> m{};
    for (int d = 0; d < 64; ++d) m[d] = static_cast<uint8_t>(d >> 3);
    return m;
  }
};

/// Selective repeat: the round trip the default in-flight cap assumes (a data-centre path).
inline constexpr Duration kSrDefaultBdpRtt = Duration::micros(8);
/// Selective repeat: at most this many packets in flight use the short timeout (IRN's N).
inline constexpr uint32_t kSrFewInFlight = 3;
/// Selective repeat: the retransmission timeouts double at most this many times.
inline constexpr uint32_t kSrMaxBackoff = 6;

/// Receives engine notifications (called from inside engine calls, engine lock held).
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  /// An armed CQ's event is due (ibv_req_notify_cq): at its first completion, or as its
  /// moderation says (modify_cq); the arm is consumed.
  virtual void on_cq_event(uint32_t cq_id) = 0;
  /// An asynchronous event (ibv_get_async_event).
  virtual void on_async_event(const AsyncEvent& ev) = 0;
  /// A MAD was queued for poll_gsi (QP1 enabled with enable_gsi).
  virtual void on_gsi_mad() {}
  /// A connected QP (RC, UC, XRC) is about to reach RTR towards (dgid, dqpn), or its path
  /// changes after, sending from UDP port sport (a port shared through uroce-hostd tells the
  /// daemon, as a NIC holds the path in the QP context). 0, or an errno that fails the modify.
  virtual int on_qp_connect(uint32_t qpn, const Gid& dgid, uint32_t dqpn, uint16_t sport) {
    (void)qpn;
    (void)dgid;
    (void)dqpn;
    (void)sport;
    return 0;
  }
  /// A connected QP left its connection (reset, destroyed).
  virtual void on_qp_disconnect(uint32_t qpn) { (void)qpn; }
};

/// ibv_qp_init_attr as the engine takes it.
struct QpInitAttr {
  QpType type = QpType::kRc;
  uint32_t pd = 0;       ///< 0 for kXrcRecv (its SRQs' PDs protect its memory)
  uint32_t xrcd = 0;     ///< kXrcRecv: its XRC domain
  uint32_t send_cq = 0;  ///< 0 for kXrcRecv
  uint32_t recv_cq = 0;  ///< 0 for kXrcSend and kXrcRecv (an XRC SRQ has its own CQ)
  uint32_t srq = 0;      ///< 0: none
  uint32_t max_send_wr = 0, max_recv_wr = 0, max_send_sge = 0, max_recv_sge = 0,
           max_inline_data = 0;
  bool sq_sig_all = false;
};

/// Keys of a registered memory region.
struct MrKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

/// A QP's own traffic and event counts since it was created, as `uroce show counters --qp`
/// shows them (lib/stats qp_stats.def names the same fields). Bytes are whole frames.
struct QpTraffic {
  uint64_t tx_packets = 0;  ///< requests, responses, ACKs and CNPs the QP sent
  uint64_t tx_bytes = 0;
  uint64_t rx_packets = 0;  ///< packets accepted for the QP (past the gate's checks)
  uint64_t rx_bytes = 0;
  uint64_t retransmits = 0;         ///< request packets sent again (go-back-N, timeouts)
  uint64_t local_ack_timeouts = 0;  ///< ACK timer expirations
  uint64_t rnr_naks = 0;            ///< RNR NAKs received
  uint64_t np_ecn_marked = 0;       ///< CE-marked packets received
  uint64_t np_cnp_sent = 0;         ///< CNPs its notification point sent
  uint64_t rp_cnp_handled = 0;      ///< CNPs its reaction point applied
};

/// A management datagram of QP1, the GSI (IBA Vol 1 §13.5.1; transport/gsi.h): a CM MAD as
/// received (poll_gsi) or to be sent (post_gsi).
struct GsiMad {
  static constexpr size_t kLen = 256;  ///< every MAD (IBA §13.4.1)
  Gid peer;               ///< received: the sender's GID (source IP); sent: the destination's
  Gid local;              ///< received: the GID it was sent to; sent: the source GID (ours)
  uint32_t peer_qpn = 1;  ///< received: the DETH source QP; sent: the destination QP
  std::array<uint8_t, kLen> mad{};
};

class Engine {
 public:
  /// counters must outlive the engine (it may live in shared memory); observer may be null.
  Engine(const EngineConfig& cfg, CounterBlock* counters, EngineObserver* observer);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // ---- Control path -------------------------------------------------------------------

  /// Protection domains. dealloc_pd: EBUSY while QPs, MRs, SRQs use it.
  Result<uint32_t> alloc_pd();
  Status dealloc_pd(uint32_t pd);

  /// Registers [addr, addr+len) with Access flags, reached through the addresses
  /// [iova, iova+len) (MemoryTable::reg). EINVAL: REMOTE_WRITE/ATOMIC without LOCAL_WRITE, a
  /// zero-length region, a range wrapping; EOPNOTSUPP: kAccessOnDemand where the process
  /// cannot serve it; ENOENT: unknown pd. Keys are unguessable.
  Result<MrKeys> reg_mr(uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova, uint32_t access);
  Result<MrKeys> reg_mr(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access) {
    return reg_mr(pd, addr, len, addr, access);
  }
  /// ibv_rereg_mr(3): gives the region lkey names a whole new description, keys kept; on an
  /// error nothing changes. ENOENT: unknown lkey or pd; EBUSY: a window is bound to it; EINVAL
  /// and EOPNOTSUPP as reg_mr.
  Status rereg_mr(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                  uint32_t access);
  /// Keys stop working at once. ENOENT: unknown lkey.
  Status dereg_mr(uint32_t lkey);
  /// Whether kAccessOnDemand registrations can be served here (MemoryTable::
  /// on_demand_available); false without a transport.
  static bool on_demand_supported();
  /// The checks of an ibv_advise_mr(3) prefetch of one SGE (MemoryTable::prefetch): the
  /// caller's address it names, or ENOENT, EFAULT, EPERM.
  Result<uint64_t> prefetch_mr(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len, bool write);
  /// Faults [host, host+len) in (MemoryTable::populate); EFAULT when not mapped so. Needs no
  /// engine lock.
  static Status populate(uint64_t host, uint64_t len, bool write);

  /// Memory windows (ibv_alloc_mw(3)): returns the unbound window's R_Key, which names it in
  /// binds (SendWr::mw_rkey) and dealloc_mw. ENOENT: unknown pd; ENOMEM: kMaxMws windows.
  /// Binding is a send WR (IBV_WR_BIND_MW, both types) executed in order on the send queue.
  Result<uint32_t> alloc_mw(uint32_t pd, MwType type);
  /// Frees a window, bound or not (as rxe), named by any of its R_Keys (the upper 24 bits).
  /// ENOENT: no such window.
  Status dealloc_mw(uint32_t rkey);

  /// Completion queues of at least `depth` entries. destroy: EBUSY while a QP uses it.
  Result<uint32_t> create_cq(uint32_t depth);
  Status resize_cq(uint32_t cq, uint32_t depth);
  Status destroy_cq(uint32_t cq);
  /// Pops up to out.size() completions; returns how many.
  size_t poll_cq(uint32_t cq, std::span<Cqe> out);
  /// Arms the CQ: the next completion (solicited only: the next solicited or error one) calls
  /// EngineObserver::on_cq_event once.
  Status req_notify_cq(uint32_t cq, bool solicited_only);
  /// Event moderation (ibv_modify_cq(3)): from now on an armed CQ signals at the count-th
  /// completion that would signal, or `period` after the first of them, whichever comes
  /// first (poll_transmit fires the period's end; next_deadline() includes it); 0 turns a
  /// bound off, both 0 signal at once (the default). An event already held back goes at once
  /// if the new bounds are met. EINVAL: count > kMaxCqModCount, period negative or over
  /// kMaxCqModPeriodUs; ENOENT: no such CQ.
  Status modify_cq(uint32_t cq, uint32_t count, Duration period);

  /// Shared receive queues. limit: an SRQ_LIMIT_REACHED event fires once when fewer than
  /// `limit` WQEs remain (0 disarms).
  Result<uint32_t> create_srq(uint32_t pd, uint32_t max_wr, uint32_t max_sge, uint32_t limit);
  Status modify_srq(uint32_t srq, uint32_t max_wr, uint32_t limit, uint32_t mask);
  Status query_srq(uint32_t srq, uint32_t* max_wr, uint32_t* max_sge, uint32_t* limit);
  Status destroy_srq(uint32_t srq);
  Status post_srq_recv(uint32_t srq, const RecvWr& wr);

  /// XRC domains (ibv_open_xrcd(3)): what XRC SRQs and XRC_RECV QPs belong to. dealloc_xrcd:
  /// EBUSY while an SRQ or a QP belongs to it; ENOENT: no such domain.
  Result<uint32_t> alloc_xrcd();
  Status dealloc_xrcd(uint32_t xrcd);
  /// An XRC SRQ (ibv_create_srq_ex(3), IBV_SRQT_XRC) of domain xrcd: its receives complete on
  /// cq, its pd protects every access of a request that names it. Returns its handle, which is
  /// also its XRC SRQ number (ibv_get_srq_num(3), the XRCETH's XRCSRQ field). ENOENT: unknown
  /// pd, xrcd or cq; EINVAL as create_srq.
  Result<uint32_t> create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, uint32_t max_wr,
                                  uint32_t max_sge, uint32_t limit);

  /// Queue pairs. create_qp returns the QPN; caps in attr are rounded up and written back.
  /// kXrcSend needs a pd and a send CQ (no receive queue); kXrcRecv an xrcd (no PD, CQs, send
  /// or receive queue: requests name one of the domain's XRC SRQs). ENOENT: unknown pd, CQ,
  /// SRQ or xrcd.
  Result<uint32_t> create_qp(QpInitAttr& attr);
  /// ibv_modify_qp: the transition table of IBA §10.3 with the masks ibv_modify_qp(3) requires
  /// per QP type. EINVAL: illegal transition, missing or extra attribute, bad value.
  Status modify_qp(uint32_t qpn, const QpAttr& attr, uint32_t mask);
  Status query_qp(uint32_t qpn, QpAttr* attr, QpInitAttr* init);
  /// Destroys the QP (any state).
  Status destroy_qp(uint32_t qpn);
  /// The longest retry budget of the QPs that wait for ACKs (RC, XRC send, in RTS, SQD or
  /// SQE): (retry_cnt + 1) local ACK timeouts, how long a peer (or the path to it) may be
  /// silent before the QP fails with retry exceeded; zero without such a QP, very long for
  /// timeout 0 (never).
  Duration longest_retry_budget() const;
  /// The device is gone (its port's service did not come back): every QP not in RESET goes
  /// to ERR, its outstanding and later WRs completing with WR_FLUSH_ERR (no QP event: the
  /// device's DEVICE_FATAL is the context's).
  void fail_all_qps();
  /// Selective repeat on (or off) for one RC QP in RESET or INIT, e.g. after ECE agreed it
  /// with the peer. EINVAL: not RC, or past INIT.
  Status set_selective_repeat(uint32_t qpn, bool on);
  /// Whether the QP recovers loss by selective repeat.
  bool selective_repeat(uint32_t qpn) const;
  /// Out-of-order placement on (or off) for one RC QP in RESET or INIT
  /// (EngineConfig::ooo_placement). EINVAL: not RC, or past INIT.
  Status set_ooo_placement(uint32_t qpn, bool on);
  /// Whether the QP places packets out of order.
  bool ooo_placement(uint32_t qpn) const;
  /// Peer timestamps on (or off) for one RC QP in RESET or INIT, e.g. after ECE agreed them
  /// with the peer. EINVAL: not RC, or past INIT.
  Status set_peer_timestamps(uint32_t qpn, bool on);
  /// Whether the QP carries peer timestamps.
  bool peer_timestamps(uint32_t qpn) const;
  /// The QP's current congestion-control rate in bit/s (0: unlimited, no CC, or unknown QPN),
  /// for tools (lib/stats QP records).
  uint64_t qp_rate_bps(uint32_t qpn) const;
  /// Rc, Rt and α of the QP's congestion control at now (for `uroce show qp`); false if none.
  bool qp_cc_state(uint32_t qpn, Timestamp now, QpCcState* out) const;
  /// The QP's traffic counts (for the stats segment's QP records); false for an unknown QPN.
  bool qp_traffic(uint32_t qpn, QpTraffic* out) const;

  // ---- Data path ----------------------------------------------------------------------

  /// ibv_post_send for one WR. EINVAL: bad opcode for the QP type, too many SGEs, inline too
  /// long, QP state does not allow posting; ENOMEM: send queue full.
  Status post_send(uint32_t qpn, const SendWr& wr, Timestamp now);
  /// ibv_post_recv for one WR. EINVAL: QP uses an SRQ or wrong state; ENOMEM: RQ full.
  Status post_recv(uint32_t qpn, const RecvWr& wr);

  // ---- Packet interface (sans-IO) ---------------------------------------------------------

  /// One received Ethernet frame. Malformed, unknown or unwanted frames are counted and
  /// dropped; the bytes are not kept after the call.
  void on_frame(std::span<const uint8_t> frame, Timestamp now);
  /// Writes ready frames (new requests, ACKs, read responses, retransmissions, CNPs) to sink
  /// until it refuses one or nothing is ready; returns how many frames were written. Fires
  /// timers that are due at `now` first.
  size_t poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now);
  /// Earliest time at which poll_transmit() has timer work (retransmit, RNR, pacing, ACK
  /// coalescing); Timestamp::never() when idle. Work ready now returns `now` or earlier.
  Timestamp next_deadline() const;
  /// True when poll_transmit() would write a frame right away.
  bool has_tx_work() const;
  /// Moves the engine's clock to now if it is later: the time given to completions that an
  /// API call generates outside a step (ibv_modify_qp's flush to ERR).
  void advance_clock(Timestamp now);
  /// Replaces the GID table (a netdev's addresses changed). Index i keeps its meaning for QPs
  /// already using it while the entry stays; a zero entry is a free slot that no new QP or AH
  /// may use (EINVAL). QPs whose source GID vanished keep sending from their old address.
  /// Entries from v1_base on are RoCE v1 GIDs (EngineConfig::gid_v1_base).
  void set_gids(std::vector<Gid> gids, size_t v1_base = SIZE_MAX);

  // ---- QP1 (GSI): management datagrams for a connection manager ----------------------------

  /// Off (the default): packets for QP 1 are dropped as for an unknown QP. On: UD SENDs to
  /// QP 1 with the GSI Q_Key are queued for poll_gsi (at most kGsiQueueDepth; more are
  /// counted in gsi_rx_dropped). Turning it off empties both queues.
  void enable_gsi(bool on);
  /// Pops up to out.size() received MADs, oldest first; returns how many.
  size_t poll_gsi(std::span<GsiMad> out);
  /// Queues one MAD; poll_transmit sends it from QP 1 (Q_Key 0x80010000) once the peer's MAC
  /// is known, or drops it (gsi_tx_dropped) after 1 s without one. EINVAL: m.local is not in
  /// the GID table or differs from m.peer in IP version; ENOMEM: send queue full; EAGAIN: GSI
  /// not enabled.
  Status post_gsi(const GsiMad& m, Timestamp now);

  const EngineConfig& config() const;
  CounterBlock& counters();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace uroce::transport
