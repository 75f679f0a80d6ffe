/**
 * @file dpdk_port.cc
 * @brief DpdkPort: uroce::Port over rte_eth_rx_burst/rte_eth_tx_burst (see dpdk_port.h).
 *
 * TX: begin_frame() hands out the data area of a fresh mbuf; end_frame() appends it to its
 * priority's software queue; the scheduler moves frames into the pending burst of the TX
 * queue that carries the priority (priority % queues, as a NIC maps traffic classes to
 * queues); flush() calls rte_eth_tx_burst per queue and keeps what the PMD did not take for
 * the next flush (no frame is leaked, nothing blocks). A full software queue or an empty
 * pool makes begin_frame() return nullptr after one flush attempt.
 * RX: rte_eth_rx_burst of up to kBurst from each RX queue in turn (a NIC's RSS spreads flows
 * over them); multi-segment mbufs are copied into one buffer; the
 * destination MAC is filtered in software (our unicast, broadcast, our ND multicast groups,
 * the PFC group); ARP and ND go to Neighbors; the rest to the FrameHandler; mbufs are freed.
 * Loopback: a RoCEv2 frame sent to the port's own MAC (a QP addressing one of the device's own
 * GIDs, e.g. UCX or MPI connecting a process to itself) never goes on the wire: end_frame()
 * keeps its mbuf and the next rx_burst() hands it to the FrameHandler first, as a RoCE NIC loops
 * such traffic back internally (rxe: rxe_loopback()). It counts as received on its priority.
 * Other frames to our own MAC (tests looping a net_ring port to itself) go to the PMD.
 * Units: bytes; link speed in bit/s (DPDK reports Mb/s).
 */
#include "dpdk/dpdk_port.h"

#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "dcqcn/pfc_frame.h"
#include "dcqcn/pfc_rx.h"
#include "dcqcn/pfc_tx.h"
#include "dcqcn/tx_scheduler.h"
#include "dpdk/eal.h"
#include "dpdk/eal_args.h"
#include "dpdk/mbuf_pool.h"
#include "dpdk/memif_burst.h"
#include "dpdk/memif_guard.h"
#include "dpdk/neighbors.h"
#include "pipeline/rx_class.h"

namespace uroce::dpdk {

using pipeline::is_rocev2;
using pipeline::RxClass;
using pipeline::RxClassifier;

namespace {

constexpr uint16_t kRingSize = 512;         ///< descriptors per RX/TX queue
constexpr uint32_t kAfPacketFrames = 4096;  ///< net_af_packet ring frames (framecnt devarg)
constexpr unsigned kPoolSize =
    4095;  ///< mbufs per 1-queue port: net_af_xdp alone takes 2048 for its fill queue
constexpr uint16_t kMaxQueues = 16;   ///< RX/TX queue pairs at most (config `queues`)
constexpr unsigned kPoolCache = 128;  ///< per-lcore mbuf cache
constexpr uint64_t kDefaultSpeedBps = 10'000'000'000ull;  ///< when the PMD reports none
constexpr uint8_t kPfcGroup[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};

std::mutex g_open_mu;  ///< serialises ethdev set-up and tear-down; guards the two below

/// A closed port is parked, still started, not removed: net_memif (22.11) never closes a
/// server's listening socket when its device is removed, so the same server could not be
/// created again in this process, and stopping/restarting a memif pair inside one process
/// crashed EAL's interrupt thread here. Re-opening with the same port string and MTU reuses
/// the parked ethdev as it is (frames that arrived meanwhile are dropped).
struct Parked {
  std::string devargs;  ///< the port string it was created with
  rte_mempool* pool;    ///< its mbuf pool
  size_t max_frame;     ///< frame size it was set up for (0: set-up failed, stopped)
  MacAddr mac;          ///< its MAC
  uint16_t queues;      ///< RX/TX queue pairs
};
// Never destroyed: a Port held in another library's static may be closed during exit.
std::map<uint16_t, Parked>& g_parked = *new std::map<uint16_t, Parked>;
std::set<uint16_t>& g_open = *new std::set<uint16_t>;  ///< ethdev ports a DpdkPort owns now

/// Frees a pool no mbuf of which is out (an mbuf still in a PMD ring would dangle otherwise;
/// such a pool is left allocated: a bounded leak, one per re-open).
void free_pool_if_idle(rte_mempool* pool) {
  if (pool && rte_mempool_in_use_count(pool) == 0) rte_mempool_free(pool);
}
std::atomic<unsigned> g_pool_seq{0};

/// The log type of net_memif (-1 when the PMD registered none).
int memif_logtype() {
  static const int type = rte_log_register("pmd.net.memif");
  return type;
}

Timestamp monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
}

class DpdkPort final : public Port {
 public:
  DpdkPort(uint16_t port_id, rte_mempool* pool, MacAddr mac, size_t max_frame,
           const config::Device& dev)
      : port_id_(port_id),
        nq_(dev.queues),
        pool_(pool),
        devargs_(dev.port),
        mac_(mac),
        max_frame_(max_frame),
        neighbors_(mac, dev.addresses, dev.neighbors, dev.vlan),
        pfc_rx_(link_speed_bps(), watchdog_config(dev.pfc), &pfc_counters_),
        pfc_tx_(link_speed_bps(), pfc_tx_config(dev.pfc), &pfc_counters_),
        pfc_tx_on_(dev.pfc.xoff_bytes > 0 && pfc_tx_config(dev.pfc).enabled_mask != 0),
        rx_class_(RxClassifier::of(dev)),
        sched_(scheduler_config(dev)) {
    scratch_.resize(max_frame_);
    uint8_t honoured = 0;
    for (int p = 0; p < 8; ++p)
      if (dev.pfc.enabled[p]) honoured |= static_cast<uint8_t>(1u << p);
    pfc_rx_.set_honoured_mask(honoured);
  }

  ~DpdkPort() override {
    std::lock_guard<std::mutex> lock(g_open_mu);
    if (cur_) rte_pktmbuf_free(cur_);
    for (rte_mbuf* m : self_) rte_pktmbuf_free(m);
    for (uint16_t q = 0; q < nq_; ++q)
      rte_pktmbuf_free_bulk(txq_[q].pending, static_cast<unsigned>(txq_[q].n));
    for (auto& q : q_)
      for (rte_mbuf* m : q) rte_pktmbuf_free(m);
    g_open.erase(port_id_);
    // A port that never started is parked as "set-up failed": the next open configures it.
    g_parked[port_id_] = Parked{devargs_, pool_, started_ ? max_frame_ : 0, mac_, nq_};
  }

  Neighbors& neighbors() { return neighbors_; }

  /// Marks the port as not started yet: rx_burst()/flush() retry rte_eth_dev_start every
  /// kStartRetry (a memif client whose server is not listening yet cannot start).
  void start_later() { started_ = false; }

  /// Makes rx_burst() restart the port when its link stays down (a memif client whose
  /// server went away, or refused it while still starting, never reconnects by itself).
  void reconnect_when_down() { reconnect_ = true; }

  /// Marks the port as net_memif (link watched on every poll, regions guarded).
  void set_memif() {
    memif_ = true;
    link_up_ = false;
    memif_guard_refresh();
  }

  /// Drops every frame waiting in the RX queues.
  void drain() {
    rte_mbuf* bufs[kBurst];
    for (uint16_t q = 0; q < nq_; ++q)
      for (int i = 0; i < 1024; ++i) {
        uint16_t n = fenced_rx_burst(memif_, port_id_, q, bufs, kBurst);
        rte_pktmbuf_free_bulk(bufs, n);
        if (n < kBurst) break;
      }
  }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override {
    if (max_len > max_frame_) return nullptr;
    if (!cur_) {
      if (self_.size() >= kMaxQueued) return nullptr;  // until rx_burst() takes the loopback
      if (queued_ >= kMaxQueued) {
        flush();
        if (queued_ >= kMaxQueued) return nullptr;
      }
      cur_ = rte_pktmbuf_alloc(pool_);
      if (!cur_) {
        flush();  // frames the PMD has sent return their mbufs to the pool
        return nullptr;
      }
    }
    return rte_pktmbuf_mtod(cur_, uint8_t*);
  }

  void end_frame(size_t len, const TxMeta& meta) override {
    if (!cur_) return;
    const uint8_t prio = meta.priority & 7;
    rte_mbuf* m = cur_;
    cur_ = nullptr;
    ++ended_;
    m->data_len = static_cast<uint16_t>(std::min(len, max_frame_));
    m->pkt_len = m->data_len;
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    if (m->data_len >= 6 && std::memcmp(data, mac_.b.data(), 6) == 0 &&
        is_rocev2({data, m->data_len})) {
      self_.push_back(m);  // to ourselves: looped back by the next rx_burst() (file comment)
      return;
    }
    TxQueue& t = txq_[prio % nq_];
    if (queued_ == 0 && !pause_seen_ && t.n < kBurst) {
      // Nothing waits in any priority queue and nothing is paused: the scheduler would pick
      // this frame at once, so it goes straight into its TX queue's burst.
      t.pending[t.n++] = m;
      ++tx_prio_packets_[prio];
      tx_prio_bytes_[prio] += m->data_len;
      if (t.n == kBurst) flush();
      return;
    }
    q_[prio].push_back(m);
    queued_bytes_[prio] += m->data_len;
    ++queued_;
    if (queued_ >= kBurst) flush();
  }

  // Port
  void flush() override {
    if (!started_ && !ensure_started(monotonic_now())) return;
    for (int round = 0; round < 4; ++round) {
      schedule();
      bool full = false, any = false;
      for (uint16_t q = 0; q < nq_; ++q) {
        TxQueue& t = txq_[q];
        if (t.n == 0) continue;
        any = true;
        uint16_t sent = fenced_tx_burst(memif_, port_id_, q, t.pending, static_cast<uint16_t>(t.n));
        std::memmove(t.pending, t.pending + sent, (t.n - sent) * sizeof(rte_mbuf*));
        t.n -= sent;
        full |= t.n != 0;
      }
      if (!any || full || queued_ == 0) return;  // nothing to send, the PMD is full, or all is out
    }
  }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (now.ns == 0) now = monotonic_now();
    size_t total = self_.empty() ? 0 : loop_back(h);
    if (!ensure_started(now)) return total;
    bool replied = false;
    uint16_t idle = 0;  // queues in a row that had nothing
    while (total < max && idle < nq_) {
      rte_mbuf* bufs[kBurst];
      uint16_t want = static_cast<uint16_t>(std::min(max - total, kBurst));
      const uint16_t q = rxq_next_;
      rxq_next_ = static_cast<uint16_t>(q + 1 == nq_ ? 0 : q + 1);
      uint16_t n = fenced_rx_burst(memif_, port_id_, q, bufs, want);
      if (n == 0) {
        ++idle;
        continue;
      }
      idle = 0;
      for (uint16_t i = 0; i < n; ++i) {
        rte_mbuf* m = bufs[i];
        const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
        size_t len = m->pkt_len;
        if (m->nb_segs > 1) {
          if (len > scratch_.size()) scratch_.resize(len);
          data = static_cast<const uint8_t*>(
              rte_pktmbuf_read(m, 0, static_cast<uint32_t>(len), scratch_.data()));
        }
        if (!data || len < 14) continue;
        std::span<const uint8_t> frame(data, len);
        if (std::memcmp(data, kPfcGroup, 6) == 0) {
          // PFC / PAUSE: honoured here (lib/dcqcn PfcRx), never passed on.
          if (auto f = dcqcn::parse_pause_frame(frame)) {
            pfc_rx_.on_pause_frame(*f, now);
            pause_seen_ = true;
          }
          continue;
        }
        if (!neighbors_.accepts_dst(data)) continue;
        uint64_t before = ended_;
        if (neighbors_.on_frame(frame, now, *this)) {
          replied |= ended_ != before;
          continue;
        }
        const RxClass rc = rx_class_(frame);
        ++rx_prio_packets_[rc.prio];
        rx_prio_bytes_[rc.prio] += len;
        if (rc.ecn == 3) ++rx_prio_marked_[rc.prio];
        if (pfc_tx_on_) rx_backlog_[rc.prio] += len;
        h.on_frame(frame, RxMeta{});
      }
      rte_pktmbuf_free_bulk(bufs, n);
      total += n;
      if (n < want) ++idle;
    }
    if (total == 0 && !memif_) check_link(now);
    if (pfc_tx_on_) pfc_after_poll(now);
    // memif: look at the link on every poll (at most every kStartRetry), busy or not, so the
    // guard knows the regions of a new connection before traffic flows on it.
    if (memif_) check_link(now);
    // Frames the port queued itself (ARP/ND replies, announcements) go out without waiting
    // for the engine's next flush().
    if (replied || queued_ || tx_pending()) flush();
    return total;
  }

  /// Hands the RoCE frames sent to our own MAC to h (file comment); returns how many.
  size_t loop_back(FrameHandler& h) {
    std::vector<rte_mbuf*> frames;
    frames.swap(self_);  // h may make the engine send more to itself: those wait a burst
    for (rte_mbuf* m : frames) {
      std::span<const uint8_t> frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len);
      const RxClass rc = rx_class_(frame);
      ++rx_prio_packets_[rc.prio];
      rx_prio_bytes_[rc.prio] += m->data_len;
      h.on_frame(frame, RxMeta{});
    }
    rte_pktmbuf_free_bulk(frames.data(), static_cast<unsigned>(frames.size()));
    return frames.size();
  }

  uint16_t port_id() const { return port_id_; }
  uint16_t queues() const { return nq_; }
  MacAddr mac() const override { return mac_; }
  size_t max_frame_len() const override { return max_frame_; }

  uint64_t link_speed_bps() const override {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port_id_, &link) != 0 || link.link_speed == 0 ||
        link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
      return kDefaultSpeedBps;
    return uint64_t{link.link_speed} * 1'000'000ull;
  }

  bool resolve(const Gid& ip, MacAddr* mac) override {
    if (neighbors_.lookup(ip, mac)) return true;  // the per-packet path: no clock read
    uint64_t before = ended_;
    bool ok = neighbors_.resolve(ip, mac, monotonic_now(), *this);
    if (ended_ != before) flush();
    return ok;
  }

  bool read_counters(PortCounters* out) override {
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_id_, &st) == 0) {
      out->rx_packets_phy = st.ipackets;
      out->tx_packets_phy = st.opackets;
      out->rx_discards_phy = st.imissed + st.rx_nombuf;
      out->tx_errors_phy = st.oerrors;
    }
    out->link_speed_mbps = link_speed_bps() / 1'000'000;
    const dcqcn::PfcCounters& pfc = pfc_counters();
    for (int p = 0; p < 8; ++p) {
      out->rx_prio_pause[p] = pfc.rx_prio_pause[p];
      out->rx_prio_pause_duration[p] = pfc.rx_prio_pause_duration[p];
      out->rx_prio_pause_transition[p] = pfc.rx_prio_pause_transition[p];
      out->tx_prio_pause[p] = pfc.tx_prio_pause[p];
      out->tx_prio_pause_duration[p] = pfc.tx_prio_pause_duration[p];
      out->tx_prio_packets[p] = tx_prio_packets_[p];
      out->rx_prio_packets[p] = rx_prio_packets_[p];
      out->rx_prio_bytes[p] = rx_prio_bytes_[p];
      out->rx_prio_marked[p] = rx_prio_marked_[p];
      out->tx_prio_bytes[p] = tx_prio_bytes_[p];
      out->tx_prio_queue_depth[p] = queued_bytes_[p];
    }
    out->rx_global_pause = pfc.rx_global_pause;
    out->tx_pause_storm_warning_events = pfc.tx_pause_storm_warning_events;
    out->tx_pause_storm_error_events = pfc.tx_pause_storm_error_events;
    return true;
  }

  const dcqcn::PfcCounters& pfc_counters() {
    if (pause_seen_) pfc_rx_.on_timer(monotonic_now());
    return pfc_counters_;
  }

 private:
  /// Frames scheduled for one TX queue, not yet taken by the PMD.
  struct TxQueue {
    rte_mbuf* pending[kBurst] = {};
    size_t n = 0;
  };

  uint16_t port_id_;
  uint16_t nq_;            ///< RX/TX queue pairs
  uint16_t rxq_next_ = 0;  ///< RX queue polled first by the next rx_burst()
  std::array<TxQueue, kMaxQueues> txq_{};
  rte_mempool* pool_;
  std::string devargs_;
  MacAddr mac_;
  size_t max_frame_;
  Neighbors neighbors_;
  rte_mbuf* cur_ = nullptr;                 ///< the mbuf of the frame being built
  std::array<std::deque<rte_mbuf*>, 8> q_;  ///< per-priority software TX queues
  std::vector<rte_mbuf*> self_;             ///< RoCE frames to our own MAC, for the next rx_burst()
  size_t queued_ = 0;                       ///< frames in q_
  std::array<uint64_t, 8> queued_bytes_{};  ///< bytes in each q_
  std::array<uint64_t, 8> tx_prio_packets_{};  ///< frames scheduled per priority
  std::array<uint64_t, 8> rx_prio_packets_{};  ///< frames handed to the engine per priority
  std::array<uint64_t, 8> rx_prio_bytes_{};
  std::array<uint64_t, 8> rx_prio_marked_{};  ///< of those, CE-marked
  std::array<uint64_t, 8> tx_prio_bytes_{};
  uint64_t ended_ = 0;  ///< end_frame() calls (to see whether a call sent)
  dcqcn::PfcCounters pfc_counters_;
  dcqcn::PfcRx pfc_rx_;    ///< received PFC/PAUSE state per priority
  dcqcn::PfcTx pfc_tx_;    ///< XOFF/XON we send as a receiver
  bool pfc_tx_on_;         ///< [device.pfc] xoff_bytes set on an enabled priority
  RxClassifier rx_class_;  ///< received frame -> priority and ECN (trust dscp or pcp)
  std::array<uint64_t, 8> rx_backlog_{};  ///< bytes per priority drained by this rx_burst
  dcqcn::TxScheduler sched_;              ///< CNP class strict, DRR for the rest, skips paused
  bool pause_seen_ = false;               ///< a pause frame arrived once (then TX consults pfc_rx_)

  static constexpr size_t kMaxQueued = 512;  ///< frames in q_ before begin_frame() refuses

  static dcqcn::PfcWatchdogConfig watchdog_config(const config::Pfc& pfc) {
    dcqcn::PfcWatchdogConfig wd;
    wd.detect = Duration::millis(pfc.watchdog_detect_ms);
    wd.restore = Duration::millis(pfc.watchdog_restore_ms);
    wd.ignore_pause = pfc.watchdog_ignore_pause;
    return wd;
  }
  static dcqcn::PfcTxConfig pfc_tx_config(const config::Pfc& pfc) {
    dcqcn::PfcTxConfig c;
    c.enabled_mask = 0;
    for (int p = 0; p < 8; ++p)
      if (pfc.enabled[p]) c.enabled_mask |= static_cast<uint8_t>(1u << p);
    c.xoff_bytes = pfc.xoff_bytes;
    c.xon_bytes = pfc.xon_bytes;
    c.max_xoff = Duration::millis(pfc.watchdog_detect_ms);  // never hold a peer longer
    return c;
  }

  /// As a receiver: what this poll drained is what waited in the RX ring, per priority (a
  /// lower bound of the ring's fill at the poll; exact when the poll emptied it). It feeds
  /// lib/dcqcn PfcTx, which says when to send XOFF, refresh it, and send XON. The frame goes
  /// out ahead of every software queue (MAC control is not subject to pause).
  void pfc_after_poll(Timestamp now) {
    for (uint8_t p = 0; p < 8; ++p) {
      if (auto f = pfc_tx_.on_backlog(p, rx_backlog_[p], now)) send_pause(*f);
      rx_backlog_[p] = 0;
    }
    if (pfc_tx_.next_deadline() <= now)
      if (auto f = pfc_tx_.on_timer(now)) send_pause(*f);
  }

  void send_pause(const dcqcn::PauseFrame& f) {
    rte_mbuf* m = rte_pktmbuf_alloc(pool_);
    if (!m) return;
    uint8_t* b = rte_pktmbuf_mtod(m, uint8_t*);
    size_t len = dcqcn::build_pause_frame(
        f, mac_, std::span<uint8_t, dcqcn::kPfcFrameLen>(b, dcqcn::kPfcFrameLen));
    m->data_len = static_cast<uint16_t>(len);
    m->pkt_len = static_cast<uint32_t>(len);
    uint16_t sent = fenced_tx_burst(memif_, port_id_, 0, &m, 1);
    if (sent == 0) rte_pktmbuf_free(m);
  }

  static dcqcn::TxSchedulerConfig scheduler_config(const config::Device& dev) {
    dcqcn::TxSchedulerConfig c;
    c.strict_mask = static_cast<uint8_t>(1u << (dev.dscp_to_prio[dev.cnp_dscp & 63] & 7));
    return c;
  }

  bool tx_pending() const {
    for (uint16_t q = 0; q < nq_; ++q)
      if (txq_[q].n) return true;
    return false;
  }

  /// Moves frames from the priority queues into the TX queues' bursts, in the scheduler's
  /// order, until one burst is full; a priority the peer paused (PFC) starts no frame.
  void schedule() {
    if (queued_ == 0) return;
    Timestamp now = pause_seen_ ? monotonic_now() : Timestamp{};
    dcqcn::PfcRx* pfc = pause_seen_ ? &pfc_rx_ : nullptr;
    auto room = [this] {
      for (uint16_t q = 0; q < nq_; ++q)
        if (txq_[q].n == kBurst) return false;
      return true;
    };
    while (queued_ > 0 && room()) {
      std::array<uint32_t, dcqcn::kNumPriorities> heads{};
      for (int p = 0; p < 8; ++p) heads[p] = q_[p].empty() ? 0 : q_[p].front()->data_len;
      std::optional<uint8_t> p = sched_.pick(heads, pfc, now);
      if (!p) return;
      TxQueue& t = txq_[*p % nq_];
      rte_mbuf* m = q_[*p].front();
      t.pending[t.n++] = m;
      queued_bytes_[*p] -= m->data_len;
      ++tx_prio_packets_[*p];
      tx_prio_bytes_[*p] += m->data_len;
      q_[*p].pop_front();
      --queued_;
    }
  }
  std::vector<uint8_t> scratch_;  ///< linear copy of a multi-segment frame
  bool started_ = true;           ///< rte_eth_dev_start succeeded
  bool reconnect_ = false;        ///< restart when the link stays down (memif client)
  bool memif_ = false;            ///< net_memif (memif_guard.h)
  Timestamp next_link_check_{};   ///< when check_link() looks next
  Timestamp link_down_since_ = Timestamp::never();
  bool link_up_ = true;     ///< as of the last check_link() (true: announced at open)
  Timestamp next_start_{};  ///< when to retry it otherwise

  static constexpr Duration kStartRetry = Duration::millis(100);
  static constexpr Duration kLinkDownRestart = Duration::millis(300);

  /// On an idle poll, at most every kStartRetry: announces our addresses again when the link
  /// comes up (a memif peer that connects later missed the announcement at open), and, with
  /// reconnect_, restarts a port whose link has been down for kLinkDownRestart (memif: stop +
  /// start = reconnect to the server's socket).
  void check_link(Timestamp now) {
    if (now < next_link_check_) return;
    next_link_check_ = now + kStartRetry;
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port_id_, &link) != 0) return;
    bool up = link.link_status == RTE_ETH_LINK_UP;
    if (up && !link_up_) {
      if (memif_) memif_guard_refresh();
      neighbors_.announce(*this);
    }
    link_up_ = up;
    if (up || !reconnect_) {
      link_down_since_ = Timestamp::never();
      return;
    }
    if (link_down_since_.is_never()) {
      link_down_since_ = now;
      return;
    }
    if (now - link_down_since_ < kLinkDownRestart) return;
    link_down_since_ = Timestamp::never();
    rte_eth_dev_stop(port_id_);
    started_ = false;
    next_start_ = now;
    ensure_started(now);
  }

  bool ensure_started(Timestamp now) {
    if (started_) return true;
    if (now < next_start_) return false;
    next_start_ = now + kStartRetry;
    // Each failed memif connect logs an error; while waiting for the server that is noise.
    int level = rte_log_get_level(memif_logtype());
    if (level >= 0) rte_log_set_level(static_cast<uint32_t>(memif_logtype()), RTE_LOG_CRIT);
    int rc = rte_eth_dev_start(port_id_);
    if (level >= 0)
      rte_log_set_level(static_cast<uint32_t>(memif_logtype()), static_cast<uint32_t>(level));
    if (rc != 0) return false;
    started_ = true;
    neighbors_.announce(*this);
    return true;
  }
};

/// How a PMD is set up for a device's frame size (measured here, drivers/dpdk/PMDS.md).
struct PmdPlan {
  std::string devargs;          ///< the port string, with size devargs added where needed
  size_t min_data_room = 0;     ///< mbuf data room the PMD requires
  bool limit_advisory = false;  ///< the PMD's reported max frame is not enforced
};

/// The value of devarg `key` in a port string, or 0.
uint32_t devarg_u32(const std::string& port, const std::string& key) {
  size_t pos = port.find("," + key + "=");
  return pos == std::string::npos ? 0
                                  : static_cast<uint32_t>(std::strtoul(
                                        port.c_str() + pos + key.size() + 2, nullptr, 10));
}

uint32_t pow2_at_least(size_t n, uint32_t from) {
  while (from < n) from *= 2;
  return from;
}

/// net_memif: a buffer size (bsize) that holds a whole frame. With the default 2048-byte
/// buffers a 4224-byte frame spans three descriptors, and DPDK 22.11's memif then lost and
/// corrupted about 2 % of the frames between two processes; one buffer per frame fixed that.
/// memif reports a 1518-byte maximum frame but does not enforce it.
/// net_af_packet: reports 1518 whatever its devargs say, and drops larger frames with the
/// default framesz of 2048; with framesz = blocksz >= frame + 64 and mbufs that hold
/// framesz - 32 bytes, 4224-byte frames pass.
PmdPlan plan_pmd(const config::Device& dev) {
  PmdPlan plan{dev.port};
  const size_t frame = dev.mtu + kRoceOverhead;
  if (is_memif_port(dev.port)) {
    plan.limit_advisory = true;
    if (!devarg_u32(dev.port, "bsize") && frame > 2048)
      plan.devargs += ",bsize=" + std::to_string(pow2_at_least(frame, 2048));
  } else if (dev.port.rfind("net_af_packet", 0) == 0) {
    uint32_t framesz = devarg_u32(dev.port, "framesz");
    if (!framesz && frame > 1514) {
      framesz = pow2_at_least(frame + 64, 2048);
      plan.devargs += ",framesz=" + std::to_string(framesz);
      if (devarg_u32(dev.port, "blocksz") < framesz)
        plan.devargs += ",blocksz=" + std::to_string(framesz);
    }
    // The kernel drops what arrives while the RX ring is full: 512 frames (the PMD's default)
    // is 5 ms of traffic, less than a time slice on a loaded core, and UC and UD do not
    // retransmit. 4096 frames ride out a descheduled receiver (1 MiB at mtu 1024 is 1024 frames).
    if (dev.queues > 1 && !devarg_u32(dev.port, "qpairs"))
      plan.devargs += ",qpairs=" + std::to_string(dev.queues);
    if (!devarg_u32(dev.port, "framecnt"))
      plan.devargs += ",framecnt=" + std::to_string(kAfPacketFrames);
    if (framesz) {
      plan.min_data_room = framesz;
      plan.limit_advisory = framesz >= frame + 64;
    }
  }
  return plan;
}

/// PMDs whose default MAC is the same in every process (derived from the port number).
bool has_shared_default_mac(std::string_view driver) {
  return driver == "net_pcap" || driver == "net_ring" || driver == "net_null";
}

std::string fail(const config::Device& dev, const std::string& what, std::string* err) {
  *err = "device " + dev.name + " (port \"" + dev.port + "\"): " + what;
  return *err;
}

std::string dpdk_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

}  // namespace

bool port_info(const Port& p, PortInfo* out) {
  const auto* dp = dynamic_cast<const DpdkPort*>(&p);
  if (!dp) return false;
  uint16_t id = dp->port_id();
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(id, &info) != 0) return false;
  out->driver = info.driver_name ? info.driver_name : "";
  out->max_rx_pktlen = info.max_rx_pktlen;
  out->min_mtu = info.min_mtu;
  out->max_mtu = info.max_mtu;
  out->max_rx_queues = info.max_rx_queues;
  out->max_tx_queues = info.max_tx_queues;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(id, &link) == 0) {
    out->link_speed_mbps = link.link_speed;
    out->link_up = link.link_status == RTE_ETH_LINK_UP;
  }
  uint16_t mtu = 0;
  if (rte_eth_dev_get_mtu(id, &mtu) == 0) out->configured_mtu = mtu;
  PortCounters c;
  const_cast<DpdkPort*>(dp)->read_counters(&c);
  out->tx_frames = c.tx_packets_phy;
  out->rx_frames = c.rx_packets_phy;
  out->rx_missed = c.rx_discards_phy;
  out->tx_errors = c.tx_errors_phy;
  rte_eth_stats st{};
  if (rte_eth_stats_get(id, &st) == 0) {
    const uint16_t nq = std::min<uint16_t>(dp->queues(), RTE_ETHDEV_QUEUE_STAT_CNTRS);
    out->rx_queue_frames.assign(st.q_ipackets, st.q_ipackets + nq);
    out->tx_queue_frames.assign(st.q_opackets, st.q_opackets + nq);
  }
  out->pfc = const_cast<DpdkPort*>(dp)->pfc_counters();
  return true;
}

std::unique_ptr<Port> open_dpdk_port(const config::Device& dev, std::string* err) {
  std::string e;
  if (!ensure_eal(dev, &e)) {
    fail(dev, e, err);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_open_mu);
  uint16_t port_id;
  const std::string name = dev.port.substr(0, dev.port.find(','));
  rte_mempool* old_pool = nullptr;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) == 0) {
    if (g_open.count(port_id)) {
      fail(dev, "the DPDK port is already open in this process", err);
      return nullptr;
    }
    if (auto it = g_parked.find(port_id); it != g_parked.end()) {
      old_pool = it->second.pool;
      if (it->second.devargs == dev.port && it->second.max_frame == dev.mtu + kRoceOverhead &&
          it->second.queues == dev.queues && (!dev.mac || *dev.mac == it->second.mac)) {
        Parked p = it->second;
        g_parked.erase(it);
        g_open.insert(port_id);
        auto port = std::make_unique<DpdkPort>(port_id, p.pool, p.mac, p.max_frame, dev);
        if (is_memif_port(dev.port)) {
          port->set_memif();
          if (dev.port.find("role=client") != std::string::npos) port->reconnect_when_down();
        }
        port->drain();
        port->neighbors().announce(*port);
        port->flush();
        return port;
      }
      if (it->second.max_frame != 0 || it->second.devargs != dev.port ||
          it->second.queues != dev.queues) {
        // Another set-up of the same device: create it anew.
        rte_eth_dev_info old{};
        rte_eth_dev_info_get(port_id, &old);
        rte_eth_dev_stop(port_id);
        rte_eth_dev_close(port_id);
        if (old.device) rte_dev_remove(old.device);
        free_pool_if_idle(old_pool);
        old_pool = nullptr;
      }
      g_parked.erase(it);
    }
  }
  const PmdPlan plan = plan_pmd(dev);
  if (!probe_port(plan.devargs, &port_id, &e)) {
    fail(dev, e, err);
    return nullptr;
  }
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(port_id, &info);
  if (rc != 0) {
    fail(dev, "rte_eth_dev_info_get: " + dpdk_error(rc), err);
    return nullptr;
  }
  // On any failure below the port is parked (stopped), so a later open can set it up again.
  auto give_up = [&](const std::string& what) -> std::unique_ptr<Port> {
    fail(dev, what, err);
    rte_eth_dev_stop(port_id);
    g_parked[port_id] = Parked{dev.port, old_pool, 0, MacAddr{}};
    return nullptr;
  };

  const size_t max_frame = dev.mtu + kRoceOverhead;
  const uint32_t l3_mtu = static_cast<uint32_t>(max_frame - 14);
  // ethdev's rule: mtu + overhead <= max_rx_pktlen, overhead = max_rx_pktlen - max_mtu when
  // the PMD reports a max_mtu, else Ethernet header + CRC (18).
  const uint32_t overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
                                ? info.max_rx_pktlen - info.max_mtu
                                : 18u;
  const uint32_t dev_max_l3 = std::min<uint32_t>(
      info.max_mtu, info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0);
  const uint32_t port_max_frame = dev_max_l3 + 14;  // without FCS, untagged
  if (port_max_frame < max_frame && !plan.limit_advisory) {
    uint32_t fits = 256;
    while (fits * 2 + kRoceOverhead <= port_max_frame) fits *= 2;
    return give_up(
        "mtu " + std::to_string(dev.mtu) + " needs frames of " + std::to_string(max_frame) +
        " bytes but " + info.driver_name + " allows at most " + std::to_string(port_max_frame) +
        "; allowed: mtu <= " + std::to_string(port_max_frame >= 256 + kRoceOverhead ? fits : 0));
  }

  char pool_name[RTE_MEMPOOL_NAMESIZE];
  std::snprintf(pool_name, sizeof pool_name, "uroce_p%u_%u", port_id, g_pool_seq++);
  const size_t room =
      std::max({size_t{2048}, (max_frame + 127) & ~size_t{127}, plan.min_data_room});
  const uint16_t data_room = static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + room);
  const uint16_t nq = dev.queues;
  if (nq > info.max_rx_queues || nq > info.max_tx_queues || nq > kMaxQueues)
    return give_up(
        "queues " + std::to_string(nq) + " but " + info.driver_name + " has " +
        std::to_string(info.max_rx_queues) + " RX and " + std::to_string(info.max_tx_queues) +
        " TX queues; allowed: queues <= " +
        std::to_string(std::min<unsigned>({info.max_rx_queues, info.max_tx_queues, kMaxQueues})));
  // Every further queue pair keeps up to 2 x kRingSize more mbufs in its rings.
  const unsigned pool_size = kPoolSize + (nq - 1u) * 2u * kRingSize;
  const int pool_socket =
      rte_eth_dev_socket_id(port_id) < 0 ? SOCKET_ID_ANY : rte_eth_dev_socket_id(port_id);
  rte_mempool* pool =
      std::string_view(info.driver_name) == "net_af_xdp"
          ? page_per_mbuf_pool(pool_name, pool_size, kPoolCache, pool_socket)
          : rte_pktmbuf_pool_create(pool_name, pool_size, kPoolCache, 0, data_room, pool_socket);
  if (!pool) return give_up("cannot create the mbuf pool: " + dpdk_error(rte_errno));
  auto give_up_pool = [&](const std::string& what) {
    auto r = give_up(what);
    free_pool_if_idle(pool);
    return r;
  };

  rte_eth_conf conf{};
  conf.rxmode.mtu = std::min<uint32_t>(l3_mtu, dev_max_l3);
  const uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
  if (nq > 1 && rss) {
    // A NIC spreads received flows over the RX queues (RoCEv2: by UDP source port).
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss;
  }
  rc = rte_eth_dev_configure(port_id, nq, nq, &conf);
  if (rc != 0)
    return give_up_pool("rte_eth_dev_configure (mtu " + std::to_string(conf.rxmode.mtu) +
                        "): " + dpdk_error(rc));
  uint16_t nb_rxd = kRingSize, nb_txd = kRingSize;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
  int socket = rte_eth_dev_socket_id(port_id);
  if (socket < 0) socket = SOCKET_ID_ANY;
  for (uint16_t q = 0; q < nq; ++q) {
    rc = rte_eth_rx_queue_setup(port_id, q, nb_rxd, static_cast<unsigned>(socket), nullptr, pool);
    if (rc != 0) return give_up_pool("rte_eth_rx_queue_setup: " + dpdk_error(rc));
    rc = rte_eth_tx_queue_setup(port_id, q, nb_txd, static_cast<unsigned>(socket), nullptr);
    if (rc != 0) return give_up_pool("rte_eth_tx_queue_setup: " + dpdk_error(rc));
  }

  rte_ether_addr ea{};
  std::optional<MacAddr> want_mac = dev.mac;
  if (!want_mac && has_shared_default_mac(info.driver_name)) {
    // Two processes would otherwise both be 02:70:63:61:70:00 ("pcap" + port 0).
    rte_eth_random_addr(ea.addr_bytes);
    MacAddr m;
    std::memcpy(m.b.data(), ea.addr_bytes, 6);
    want_mac = m;
  }
  if (want_mac) {
    std::memcpy(ea.addr_bytes, want_mac->b.data(), 6);
    // Not every PMD can change its address; the software filter uses the configured one anyway.
    if (rte_eth_dev_default_mac_addr_set(port_id, &ea) != 0)
      rte_eth_promiscuous_enable(port_id);  // a NIC must then not filter it out
  }
  const bool memif_client = std::string_view(info.driver_name) == "net_memif" &&
                            dev.port.find("role=client") != std::string::npos;
  {
    // A memif client whose server is not up yet logs an error per attempt: not one here.
    int level = memif_client ? rte_log_get_level(memif_logtype()) : -1;
    if (level >= 0) rte_log_set_level(static_cast<uint32_t>(memif_logtype()), RTE_LOG_CRIT);
    rc = rte_eth_dev_start(port_id);
    if (level >= 0)
      rte_log_set_level(static_cast<uint32_t>(memif_logtype()), static_cast<uint32_t>(level));
  }
  // A memif client cannot start before its server listens: it is started on first use then.
  const bool start_later = rc != 0 && memif_client;
  if (rc != 0 && !start_later) return give_up_pool("rte_eth_dev_start: " + dpdk_error(rc));
  if (!want_mac) rte_eth_macaddr_get(port_id, &ea);
  if (!want_mac || rte_eth_promiscuous_get(port_id) != 1) rte_eth_promiscuous_disable(port_id);
  MacAddr mac;
  std::memcpy(mac.b.data(), ea.addr_bytes, 6);

  free_pool_if_idle(old_pool);  // the queues now take mbufs from the new pool
  g_open.insert(port_id);
  auto port = std::make_unique<DpdkPort>(port_id, pool, mac, max_frame, dev);
  if (start_later) port->start_later();
  if (std::string_view(info.driver_name) == "net_memif") {
    port->set_memif();
    if (dev.port.find("role=client") != std::string::npos) port->reconnect_when_down();
  }
  // ND needs the all-nodes and solicited-node groups; vdevs without a filter ignore this.
  std::vector<rte_ether_addr> mc;
  for (const MacAddr& m : port->neighbors().multicast_macs()) {
    rte_ether_addr a;
    std::memcpy(a.addr_bytes, m.b.data(), 6);
    mc.push_back(a);
  }
  if (rte_eth_dev_set_mc_addr_list(port_id, mc.data(), static_cast<uint32_t>(mc.size())) != 0)
    rte_eth_allmulticast_enable(port_id);
  port->neighbors().announce(*port);
  port->flush();
  return port;
}

}  // namespace uroce::dpdk
