/**
 * @file main.cc
 * @brief uroce-switch: a learning L2 switch between N DPDK ports (memif, af_xdp, ...) with the
 * simulator's congestion-point model: per-egress-port, per-priority queues (strict priority),
 * RED/ECN marking of ECT frames on the instantaneous queue (docs/dcqcn-pfc.md §1.2), an
 * egress token-bucket shaper, PFC XOFF/XON per ingress port and priority (§3.3, §4) and
 * honouring received PFC on egress. Options: options.h. Counters, one `key=value` line per
 * port, every --stats-every and at exit (prefix "final"). Busy-polls, sleeping a little when
 * idle; SIGINT/SIGTERM stop it. Units: bytes, bit/s, ns.
 */
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "dcqcn/pfc_rx.h"
#include "dpdk/eal_args.h"
#include "dpdk/memif_burst.h"
#include "dpdk/memif_guard.h"
#include "fabric/desired.h"
#include "mgmt/http_server.h"
#include "transport/wire/pfc.h"
#include "uroce-switch/control.h"
#include "uroce-switch/egress_queues.h"
#include "uroce-switch/frame_edit.h"
#include "uroce-switch/impair.h"
#include "uroce-switch/options.h"
#include "uroce-switch/pfc_ingress.h"
#include "uroce-switch/red.h"
#include "uroce-switch/shaper.h"

namespace uroce::uswitch {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

Timestamp now_mono() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
}

constexpr uint16_t kBurst = 32;
constexpr uint32_t kPoolSize = 32767;

struct PortCounters {
  uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  uint64_t flooded = 0;        ///< frames this port received that were flooded
  uint64_t pfc_xoff_sent = 0;  ///< XOFF/refresh frames sent to this port's peer
  uint64_t pfc_xon_sent = 0;   ///< XON frames sent to this port's peer
  uint64_t pfc_rx = 0;         ///< PAUSE/PFC frames received from the peer
  uint64_t tx_ring_full = 0;   ///< TX attempts the PMD refused (peer slow or not connected)
  uint64_t mtu_drops = 0;      ///< frames received with an IP packet above the MTU
};

/// One egress link: its queues, shaper and the pause its far end asked for. A port, or the
/// ports of a --share group (one host behind one link).
struct EgressLink {
  EgressQueues queues;
  TokenBucket shaper;
  dcqcn::PfcCounters rx_pfc_counters{};
  dcqcn::PfcRx pfc_rx;
  std::vector<uint32_t> members;  ///< port indices
  uint64_t ecn_marked = 0;        ///< frames marked CE
  uint64_t drops = 0;             ///< buffer full
  uint64_t q_samples = 0;         ///< dequeues (queue-depth samples)
  uint64_t q_over_kmax = 0;       ///< of them with the frame's priority queue >= kmax

  EgressLink(const Options& o, uint64_t shape_bps, Timestamp now)
      : queues(o.buffer_bytes),
        shaper(shape_bps, o.burst_bytes, now),
        pfc_rx(shape_bps ? shape_bps : o.link_bps, dcqcn::PfcWatchdogConfig{.enabled = false},
               &rx_pfc_counters) {}
};

struct SwitchPort {
  uint16_t id = 0;
  std::string devargs;
  uint32_t link = 0;  ///< index of its EgressLink
  PfcIngress pfc_in;
  std::deque<rte_mbuf*> control;  ///< PFC frames to send: bypass queues, shaper and pause
  PortCounters c;
  bool link_up = false;  ///< as last seen by watch_links()
  bool memif = false;    ///< net_memif: bursts run fenced (drivers/dpdk/memif_burst.h)

  Impairment impair;  ///< on the frames this port receives

  SwitchPort(uint16_t port_id, std::string args, const Options& o, const dcqcn::PfcTxConfig& pfc,
             uint32_t index)
      : id(port_id),
        devargs(std::move(args)),
        pfc_in(o.link_bps, pfc),
        memif(dpdk::is_memif_port(devargs)),
        impair([&] {
          ImpairConfig ic = o.impair;
          ic.seed += index;
          return ic;
        }()) {}
};

/// A received frame the impairment stage holds back (delay, reorder) until `at`.
struct HeldFrame {
  Timestamp at;
  uint64_t seq;  ///< arrival order among frames due at the same time
  uint32_t in;
  rte_mbuf* m;
  bool operator>(const HeldFrame& o) const { return at != o.at ? at > o.at : seq > o.seq; }
};

class Switch {
 public:
  /// control: the node API's hand-over (nullptr: settings fixed at start).
  Switch(const Options& o, rte_mempool* pool, Control* control)
      : o_(o), pool_(pool), rng_(0x5eed), control_(control) {
    use(settings_of(o));
  }

  bool add_port(const std::string& devargs, std::string* err);
  /// After every add_port: builds the egress links (--share groups, --shape rates).
  void make_links();
  void run();
  void print_stats(const char* tag);

 private:
  /// A frame from port `in`: through the impairment stage, then receive() (now or later).
  void ingress(uint32_t in, rte_mbuf* m, Timestamp now);
  /// Frames whose hold time has passed go to receive(); true if any did.
  bool release_held(Timestamp now);
  void receive(uint32_t in, rte_mbuf* m, Timestamp now);
  void enqueue(uint32_t out, uint32_t in, rte_mbuf* m, const FrameInfo& info, Timestamp now);
  void send_pfc(uint32_t port, const std::optional<wire::PauseFrame>& f);
  bool send_control(uint32_t port);
  bool transmit(EgressLink& l, Timestamp now);
  void timers(Timestamp now);
  /// Settings in force from now on: classification, RED/ECN, MTU (PFC: reconfigure()).
  void use(const fabric::Settings& s);
  dcqcn::PfcTxConfig pfc_config() const;
  /// Settings the node API posted: taken, applied (PFC released or asserted per the new
  /// thresholds at once), acknowledged.
  void reconfigure(Timestamp now);
  /// The counters as the node API's state document.
  std::string state_json(Timestamp now) const;
  /// A memif port whose link came up has new shared regions: the guard learns them
  /// (drivers/dpdk/memif_guard.h: a host that exits while the switch transmits to it must not
  /// crash the switch in DPDK's disconnect race).
  void watch_links();
  static uint64_t mac_key(const uint8_t* p) {
    uint64_t v = 0;
    for (int i = 0; i < 6; ++i) v = (v << 8) | p[i];
    return v;
  }

  const Options& o_;
  rte_mempool* pool_;
  MarkRng rng_;
  Control* control_;
  fabric::Settings settings_;
  Classifier cls_;
  RedParams red_;
  Timestamp started_;
  MacAddr mac_{{0x02, 0x75, 0x73, 0x77, 0x00, 0x00}};  ///< source of our PFC frames
  std::vector<std::unique_ptr<SwitchPort>> ports_;
  std::vector<std::unique_ptr<EgressLink>> links_;
  std::unordered_map<uint64_t, uint32_t> fdb_;  ///< MAC -> port index
  Duration max_busy_gap_{};  ///< longest gap between two polling rounds while frames queued
  std::priority_queue<HeldFrame, std::vector<HeldFrame>, std::greater<>> held_;
  uint64_t held_seq_ = 0;
};

bool Switch::add_port(const std::string& devargs, std::string* err) {
  std::string name = devargs.substr(0, devargs.find(','));
  uint16_t id = 0;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &id) != 0) {
    *err = "no ethdev " + name + " (is the --port string a valid vdev?)";
    return false;
  }
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(id, &info) != 0) {
    *err = "rte_eth_dev_info_get " + name;
    return false;
  }
  rte_eth_conf conf{};
  // ethdev: mtu + overhead <= max_rx_pktlen. memif reports 1518 but carries larger frames
  // (its limit is advisory; drivers/dpdk/PMDS.md), so the largest allowed MTU is enough.
  const uint32_t overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
                                ? info.max_rx_pktlen - info.max_mtu
                                : 18u;
  conf.rxmode.mtu = std::min<uint32_t>(
      {9000u, info.max_mtu, info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 1500u});
  if (rte_eth_dev_configure(id, 1, 1, &conf) != 0 ||
      rte_eth_rx_queue_setup(id, 0, 1024, SOCKET_ID_ANY, nullptr, pool_) != 0 ||
      rte_eth_tx_queue_setup(id, 0, 1024, SOCKET_ID_ANY, nullptr) != 0 ||
      rte_eth_dev_start(id) != 0) {
    *err = "cannot configure/start " + name;
    return false;
  }
  rte_eth_promiscuous_enable(id);
  ports_.push_back(std::make_unique<SwitchPort>(id, devargs, o_, pfc_config(),
                                                static_cast<uint32_t>(ports_.size())));
  return true;
}

void Switch::make_links() {
  std::vector<std::vector<uint32_t>> groups = o_.shared;
  std::vector<bool> grouped(ports_.size(), false);
  for (const auto& g : groups)
    for (uint32_t p : g) grouped[p] = true;
  for (uint32_t p = 0; p < ports_.size(); ++p)
    if (!grouped[p]) groups.push_back({p});
  for (const auto& g : groups) {
    uint64_t shape = 0;
    for (uint32_t p : g)
      if (auto it = o_.shape_bps.find(p); it != o_.shape_bps.end()) shape = it->second;
    auto l = std::make_unique<EgressLink>(o_, shape, now_mono());
    l->members = g;
    for (uint32_t p : g) ports_[p]->link = static_cast<uint32_t>(links_.size());
    links_.push_back(std::move(l));
  }
}

void Switch::send_pfc(uint32_t port, const std::optional<wire::PauseFrame>& f) {
  if (!f) return;
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return;
  auto* p = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, wire::kMacControlFrameLen));
  wire::build_pause_frame(std::span<uint8_t>(p, wire::kMacControlFrameLen), mac_, *f);
  bool xon = true;
  for (int q = 0; q < kPrios; ++q)
    if ((f->class_enable & (1u << q)) && f->quanta[q] != 0) xon = false;
  (xon ? ports_[port]->c.pfc_xon_sent : ports_[port]->c.pfc_xoff_sent)++;
  ports_[port]->control.push_back(m);
}

void Switch::enqueue(uint32_t out, uint32_t in, rte_mbuf* m, const FrameInfo& info, Timestamp now) {
  EgressLink& e = *links_[ports_[out]->link];
  if (!red_.at_dequeue && info.ect && rng_.should_mark(red_, e.queues.bytes(info.prio))) {
    mark_ce(std::span<uint8_t>(rte_pktmbuf_mtod(m, uint8_t*), m->data_len), info);
    e.ecn_marked++;
  }
  QueuedFrame qf{
      m,         m->pkt_len,          static_cast<uint16_t>(in), static_cast<uint16_t>(out),
      info.prio, info.ect && !info.ce};
  if (!e.queues.push(qf)) {
    e.drops++;
    rte_pktmbuf_free(m);
    return;
  }
  send_pfc(in, ports_[in]->pfc_in.add(info.prio, qf.len, now));
}

void Switch::ingress(uint32_t in, rte_mbuf* m, Timestamp now) {
  SwitchPort& p = *ports_[in];
  if (!p.impair.config().any()) return receive(in, m, now);
  ImpairVerdict v = p.impair.decide(
      std::span<const uint8_t>(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len), now);
  if (v.drop) {
    p.c.rx_packets++;
    p.c.rx_bytes += m->pkt_len;
    rte_pktmbuf_free(m);
    return;
  }
  // The duplicate is copied before the corruption: each corrupted count is one bad frame.
  rte_mbuf* copy = v.duplicate ? rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX) : nullptr;
  if (v.corrupt_at >= 0) rte_pktmbuf_mtod(m, uint8_t*)[v.corrupt_at] ^= 0xff;
  for (rte_mbuf* f : {m, copy}) {
    if (!f) continue;
    if (v.hold.ns > 0)
      held_.push(HeldFrame{now + v.hold, held_seq_++, in, f});
    else
      receive(in, f, now);
  }
}

bool Switch::release_held(Timestamp now) {
  bool any = false;
  while (!held_.empty() && held_.top().at <= now) {
    HeldFrame h = held_.top();
    held_.pop();
    receive(h.in, h.m, now);
    any = true;
  }
  return any;
}

void Switch::receive(uint32_t in, rte_mbuf* m, Timestamp now) {
  SwitchPort& p = *ports_[in];
  p.c.rx_packets++;
  p.c.rx_bytes += m->pkt_len;
  const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
  FrameInfo info = classify(std::span<const uint8_t>(data, m->data_len), cls_);
  if (!info.valid) {
    rte_pktmbuf_free(m);
    return;
  }
  if (info.ip_len > settings_.mtu) {
    p.c.mtu_drops++;
    rte_pktmbuf_free(m);
    return;
  }
  if (info.mac_control) {
    // Honoured whatever its destination address (802.3 lets PAUSE go to the station's own).
    wire::MacControlFrame f;
    const wire::MacControlParse r =
        wire::parse_mac_control(std::span<const uint8_t>(data, m->data_len), &f);
    if (r == wire::MacControlParse::kOk || r == wire::MacControlParse::kBadDestination) {
      p.c.pfc_rx++;
      links_[p.link]->pfc_rx.on_pause_frame(f.pause, now);
    }
    rte_pktmbuf_free(m);
    return;
  }
  if (!(data[6] & 1)) fdb_[mac_key(data + 6)] = in;
  auto it = (data[0] & 1) ? fdb_.end() : fdb_.find(mac_key(data));
  if (it != fdb_.end()) {
    if (it->second == in) {
      rte_pktmbuf_free(m);
    } else {
      enqueue(it->second, in, m, info, now);
    }
    return;
  }
  p.c.flooded++;
  for (uint32_t out = 0; out < ports_.size(); ++out) {
    if (out == in) continue;
    if (rte_mbuf* c = rte_pktmbuf_copy(m, pool_, 0, UINT32_MAX)) enqueue(out, in, c, info, now);
  }
  rte_pktmbuf_free(m);
}

bool Switch::send_control(uint32_t port) {
  SwitchPort& p = *ports_[port];
  bool work = false;
  while (!p.control.empty()) {
    if (dpdk::fenced_tx_burst(p.memif, p.id, 0, &p.control.front(), 1) == 0) break;
    p.control.pop_front();
    work = true;
  }
  return work;
}

bool Switch::transmit(EgressLink& l, Timestamp now) {
  bool work = false;
  for (int n = 0; n < kBurst; ++n) {
    uint8_t paused = 0;
    for (uint8_t q = 0; q < kPrios; ++q)
      if (!l.pfc_rx.can_start_frame(q, now)) paused = static_cast<uint8_t>(paused | (1u << q));
    int prio = l.queues.next_prio(paused);
    if (prio < 0) break;
    QueuedFrame& head = l.queues.front(prio);
    if (!l.shaper.conforms(head.len, now)) break;
    auto* m = static_cast<rte_mbuf*>(head.pkt);
    // Dequeue marking sees the queue this frame leaves behind.
    if (red_.at_dequeue && head.ect && rng_.should_mark(red_, l.queues.bytes(prio) - head.len)) {
      std::span<uint8_t> bytes(rte_pktmbuf_mtod(m, uint8_t*), m->data_len);
      mark_ce(bytes, classify(bytes, cls_));
      head.ect = false;  // marked once, even if the PMD refuses it now
      l.ecn_marked++;
    }
    SwitchPort& out = *ports_[head.egress];
    if (dpdk::fenced_tx_burst(out.memif, out.id, 0, &m, 1) == 0) {  // ring full / no peer
      out.c.tx_ring_full++;
      break;
    }
    l.q_samples++;
    if (l.queues.bytes(prio) >= red_.kmax_bytes) l.q_over_kmax++;
    QueuedFrame f = l.queues.pop(prio);
    l.shaper.consume(f.len);
    out.c.tx_packets++;
    out.c.tx_bytes += f.len;
    send_pfc(f.ingress, ports_[f.ingress]->pfc_in.remove(f.prio, f.len, now));
    work = true;
  }
  return work;
}

void Switch::timers(Timestamp now) {
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    SwitchPort& p = *ports_[i];
    if (p.pfc_in.next_deadline() <= now) send_pfc(i, p.pfc_in.on_timer(now));
  }
  for (auto& l : links_)
    if (l->pfc_rx.next_deadline() <= now) l->pfc_rx.on_timer(now);
}

void Switch::use(const fabric::Settings& s) {
  settings_ = s;
  cls_.trust_pcp = s.trust == fabric::Trust::kPcp;
  cls_.dscp_to_prio = s.dscp_to_prio;
  cls_.pcp_to_prio = s.pcp_to_prio;
  red_.enabled = s.ecn;
  red_.kmin_bytes = s.ecn_kmin_bytes;
  red_.kmax_bytes = s.ecn_kmax_bytes;
  red_.pmax = s.ecn_pmax;
  red_.at_dequeue = o_.red.at_dequeue;
}

dcqcn::PfcTxConfig Switch::pfc_config() const {
  dcqcn::PfcTxConfig pfc;
  pfc.enabled_mask = settings_.pfc_priorities;
  pfc.xoff_bytes = settings_.pfc_xoff_bytes;
  pfc.xon_bytes = settings_.pfc_xon_bytes;
  return pfc;
}

void Switch::reconfigure(Timestamp now) {
  std::optional<fabric::Settings> next = control_->take();
  if (!next) return;
  use(*next);
  const dcqcn::PfcTxConfig pfc = pfc_config();
  for (uint32_t i = 0; i < ports_.size(); ++i)
    for (const wire::PauseFrame& f : ports_[i]->pfc_in.reconfigure(pfc, now)) send_pfc(i, f);
  control_->applied();
  control_->publish(state_json(now));
}

std::string Switch::state_json(Timestamp now) const {
  nlohmann::json ports = nlohmann::json::array();
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    const SwitchPort& p = *ports_[i];
    const EgressLink& l = *links_[p.link];
    nlohmann::json queue = nlohmann::json::array();
    nlohmann::json paused = nlohmann::json::array();
    nlohmann::json xoff = nlohmann::json::array();
    for (uint8_t q = 0; q < kPrios; ++q) {
      queue.push_back(l.queues.bytes(q));
      if (l.pfc_rx.paused_until(q) > now) paused.push_back(q);
      if (p.pfc_in.asserted(q)) xoff.push_back(q);
    }
    ports.push_back({{"port", i},
                     {"name", p.devargs.substr(0, p.devargs.find(','))},
                     {"link", p.link},
                     {"link_up", p.link_up},
                     {"rx_packets", p.c.rx_packets},
                     {"rx_bytes", p.c.rx_bytes},
                     {"tx_packets", p.c.tx_packets},
                     {"tx_bytes", p.c.tx_bytes},
                     {"pfc_xoff_sent", p.c.pfc_xoff_sent},
                     {"pfc_xon_sent", p.c.pfc_xon_sent},
                     {"pfc_rx", p.c.pfc_rx},
                     {"queue_bytes", l.queues.total_bytes()},
                     {"queue_bytes_by_prio", queue},
                     {"queue_high_water", l.queues.high_water()},
                     {"ecn_marked", l.ecn_marked},
                     {"drops", l.drops},
                     {"mtu_drops", p.c.mtu_drops},
                     {"tx_ring_full", p.c.tx_ring_full},
                     {"paused_prios", paused},
                     {"xoff_prios", xoff}});
  }
  return nlohmann::json{{"uptime_s", static_cast<double>((now - started_).ns) / 1e9},
                        {"max_busy_gap_us", max_busy_gap_.ns / 1000},
                        {"ports", ports}}
      .dump();
}

void Switch::print_stats(const char* tag) {
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    const SwitchPort& p = *ports_[i];
    const PortCounters& c = p.c;
    const EgressLink& l = *links_[p.link];
    std::printf(
        "%s port=%u link=%u rx_packets=%lu rx_bytes=%lu tx_packets=%lu tx_bytes=%lu "
        "flooded=%lu pfc_xoff_sent=%lu pfc_xon_sent=%lu pfc_rx=%lu queue_bytes=%lu "
        "queue_high_water=%lu ecn_marked=%lu drops=%lu q_samples=%lu q_over_kmax=%lu "
        "tx_ring_full=%lu mtu_drops=%lu impaired=%lu imp_dropped=%lu imp_duplicated=%lu "
        "imp_corrupted=%lu imp_reordered=%lu imp_cut=%lu\n",
        tag, i, p.link, c.rx_packets, c.rx_bytes, c.tx_packets, c.tx_bytes, c.flooded,
        c.pfc_xoff_sent, c.pfc_xon_sent, c.pfc_rx, l.queues.total_bytes(), l.queues.high_water(),
        l.ecn_marked, l.drops, l.q_samples, l.q_over_kmax, c.tx_ring_full, c.mtu_drops,
        p.impair.counters().seen, p.impair.counters().dropped, p.impair.counters().duplicated,
        p.impair.counters().corrupted, p.impair.counters().reordered, p.impair.counters().cut);
  }
  // Not a port line (no "port="): how long the switch went unscheduled with frames queued.
  // A gap longer than a peer's pause time lets that pause lapse before the refresh.
  // memif_faults/memif_fenced: a departing host's disconnect race, absorbed (memif_guard.h).
  std::printf("%s-switch max_busy_gap_us=%ld memif_faults=%llu memif_fenced=%llu\n", tag,
              static_cast<long>(max_busy_gap_.ns / 1000),
              static_cast<unsigned long long>(dpdk::memif_guard_faults()),
              static_cast<unsigned long long>(dpdk::memif_guard_fenced()));
  std::fflush(stdout);
}

void Switch::watch_links() {
  bool refresh = false;
  for (auto& p : ports_) {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(p->id, &link) != 0) continue;
    const bool up = link.link_status == RTE_ETH_LINK_UP;
    refresh |= up && !p->link_up;
    p->link_up = up;
  }
  if (refresh) dpdk::memif_guard_refresh();
}

void Switch::run() {
  const Timestamp start = now_mono();
  started_ = start;
  Timestamp next_publish = start;
  Timestamp next_stats = o_.stats_every.ns > 0 ? start + o_.stats_every : Timestamp::never();
  uint32_t idle = 0;
  rte_mbuf* bufs[kBurst];
  Timestamp prev = start;
  Timestamp next_link_check = start;
  bool was_queued = false;
  while (!g_stop.load(std::memory_order_relaxed)) {
    Timestamp now = now_mono();
    if (was_queued) max_busy_gap_ = std::max(max_busy_gap_, now - prev);
    prev = now;
    bool work = false;
    for (uint32_t i = 0; i < ports_.size(); ++i) {
      const SwitchPort& p = *ports_[i];
      uint16_t n = dpdk::fenced_rx_burst(p.memif, p.id, 0, bufs, kBurst);
      for (uint16_t k = 0; k < n; ++k) ingress(i, bufs[k], now);
      work |= n > 0;
    }
    work |= release_held(now);
    timers(now);
    if (now >= next_link_check) {
      watch_links();
      next_link_check = now + Duration::millis(1);
    }
    for (uint32_t i = 0; i < ports_.size(); ++i) work |= send_control(i);
    for (auto& l : links_) work |= transmit(*l, now);
    if (now >= next_stats) {
      print_stats("stats");
      next_stats = now + o_.stats_every;
    }
    if (control_) {
      if (control_->pending()) reconfigure(now);
      if (now >= next_publish) {
        control_->publish(state_json(now));
        next_publish = now + Duration::millis(200);
      }
    }
    if (o_.max_time.ns > 0 && now - start >= o_.max_time) break;
    // Idle backoff: spin briefly, then sleep 20 µs at a time, but only with every queue
    // empty. A queue waiting for shaper credit keeps spinning: a sleep (or a lost time slice)
    // longer than burst/rate would forfeit credit and shape below the configured rate.
    bool queued = false;
    for (const auto& l : links_) queued |= !l->queues.empty();
    queued |= !held_.empty();  // held frames are due soon: keep polling the clock
    was_queued = queued;
    idle = work || queued ? 0 : idle + 1;
    if (idle > 64) {
      timespec ts{0, 20'000};
      nanosleep(&ts, nullptr);
    }
  }
  for (; !held_.empty(); held_.pop()) rte_pktmbuf_free(held_.top().m);
}

bool init_eal(const Options& o, std::string* err) {
  dpdk::EalPlan plan;
  plan.file_prefix =
      o.file_prefix.empty() ? "uroce-switch-" + std::to_string(getpid()) : o.file_prefix;
  plan.vdevs = o.ports;
  auto slurp = [](const char* path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  plan.hugepages = dpdk::free_hugepage_bytes(slurp("/proc/meminfo")) >= 512ull << 20 &&
                   dpdk::hugetlbfs_mounted(slurp("/proc/mounts"));
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  plan.cpus = dpdk::cpu_list(cpus);
  if (const char* lvl = std::getenv("UROCE_DPDK_LOG")) plan.log_level = lvl;
  std::vector<std::string> args = dpdk::build_eal_args(plan);
  args[0] = "uroce-switch";
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) {
    *err = std::string("rte_eal_init: ") + rte_strerror(rte_errno);
    return false;
  }
  return true;
}

int run_main(int argc, char** argv) {
  Options o;
  std::string err;
  if (!parse_options(std::vector<std::string>(argv + 1, argv + argc), &o, &err)) {
    std::fprintf(stderr, "uroce-switch: %s\n", err.c_str());
    return 2;
  }
  std::string token;
  if (!o.api_token_file.empty() && !mgmt::read_token_file(o.api_token_file, &token, &err)) {
    std::fprintf(stderr, "uroce-switch: --api-token-file %s\n", err.c_str());
    return 2;
  }
  if (!init_eal(o, &err)) {
    std::fprintf(stderr, "uroce-switch: %s\n", err.c_str());
    return 1;
  }
  std::string runtime_dir = rte_eal_get_runtime_dir();
  int rc = 0;
  {
    rte_mempool* pool = rte_pktmbuf_pool_create("uswitch", kPoolSize, 256, 0,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (!pool) {
      std::fprintf(stderr, "uroce-switch: mbuf pool: %s\n", rte_strerror(rte_errno));
      rc = 1;
    }
    Control control(o.name, settings_of(o));
    const bool managed = !o.api_listen.empty() || !o.desired.empty();
    Switch sw(o, pool, managed ? &control : nullptr);
    for (const auto& p : o.ports) {
      if (rc == 0 && !sw.add_port(p, &err)) {
        std::fprintf(stderr, "uroce-switch: %s\n", err.c_str());
        rc = 1;
      }
    }
    std::unique_ptr<fabric::DesiredFollower> follower;
    std::unique_ptr<fabric::NodeApi> api;
    std::unique_ptr<mgmt::Server> server;
    if (rc == 0 && !o.api_listen.empty()) {
      api = std::make_unique<fabric::NodeApi>(&control, [&follower]() {
        return follower ? follower->status_json() : std::string("null");
      });
      server = mgmt::Server::start(
          mgmt::ServerOptions{.listen = o.api_listen, .token = token},
          [&api](const mgmt::Request& r) { return api->handle(r); }, &err);
      if (!server) {
        std::fprintf(stderr, "uroce-switch: --api: %s\n", err.c_str());
        rc = 1;
      } else {
        std::printf("uroce-switch: node API on %s (port %u)%s\n", o.api_listen.c_str(),
                    server->port(), token.empty() ? ", read-only (no --api-token-file)" : "");
      }
    }
    if (rc == 0 && !o.desired.empty()) {
      const std::string api_addr = server ? o.api_listen.substr(0, o.api_listen.rfind(':') + 1) +
                                                std::to_string(server->port())
                                          : "";
      follower = std::make_unique<fabric::DesiredFollower>(
          &control, o.desired, fabric::report_url_for(o.desired), api_addr,
          static_cast<uint32_t>(o.desired_every.ns / 1'000'000), token);
      std::printf("uroce-switch: following the desired state at %s\n", o.desired.c_str());
    }
    if (rc == 0) {
      sw.make_links();
      std::signal(SIGINT, on_signal);
      std::signal(SIGTERM, on_signal);
      std::printf("uroce-switch: %zu ports up\n", o.ports.size());
      std::fflush(stdout);
      sw.run();
      sw.print_stats("final");
    }
  }
  uint16_t pid = 0;
  RTE_ETH_FOREACH_DEV(pid) {
    rte_eth_dev_stop(pid);
    rte_eth_dev_close(pid);
  }
  rte_eal_cleanup();
  std::error_code ec;
  std::filesystem::remove_all(runtime_dir, ec);
  return rc;
}

}  // namespace
}  // namespace uroce::uswitch

int main(int argc, char** argv) { return uroce::uswitch::run_main(argc, argv); }
