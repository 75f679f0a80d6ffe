/**
 * @file port_pipeline.cc
 * @brief PortPipeline: priority queues, scheduler, PFC, counters, loopback (port_pipeline.h).
 */
#include "pipeline/port_pipeline.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

namespace uroce::pipeline {

namespace {

dcqcn::PfcWatchdogConfig watchdog_config(const config::Pfc& pfc) {
  dcqcn::PfcWatchdogConfig wd;
  wd.detect = Duration::millis(pfc.watchdog_detect_ms);
  wd.restore = Duration::millis(pfc.watchdog_restore_ms);
  wd.ignore_pause = pfc.watchdog_ignore_pause;
  return wd;
}

dcqcn::PfcTxConfig pfc_tx_config(const config::Pfc& pfc) {
  dcqcn::PfcTxConfig c;
  c.enabled_mask = 0;
  for (int p = 0; p < 8; ++p)
    if (pfc.enabled[p]) c.enabled_mask |= static_cast<uint8_t>(1u << p);
  c.xoff_bytes = pfc.xoff_bytes;
  c.xon_bytes = pfc.xon_bytes;
  c.max_xoff = Duration::millis(pfc.watchdog_detect_ms);  // never hold a peer longer
  return c;
}

dcqcn::TxSchedulerConfig scheduler_config(const config::Device& dev) {
  dcqcn::TxSchedulerConfig c;
  c.strict_mask = static_cast<uint8_t>(1u << (dev.dscp_to_prio[dev.cnp_dscp & 63] & 7));
  return c;
}

}  // namespace

PortPipeline::PortPipeline(FrameIo& io, const config::Device& dev, const PipelineParams& params,
                           Clock clock)
    : io_(io),
      clock_(std::move(clock)),
      mac_(params.mac),
      max_frame_(params.max_frame),
      nq_(std::clamp<uint16_t>(params.queues, 1, kMaxQueues)),
      pfc_rx_(params.link_bps, watchdog_config(dev.pfc), &pfc_counters_),
      pfc_tx_(params.link_bps, pfc_tx_config(dev.pfc), &pfc_counters_),
      pfc_tx_on_(dev.pfc.xoff_bytes > 0 && pfc_tx_config(dev.pfc).enabled_mask != 0),
      rx_class_(RxClassifier::of(dev)),
      sched_(scheduler_config(dev)) {
  self_loopback_ = params.self_loopback;
  uint8_t honoured = 0;
  for (int p = 0; p < 8; ++p)
    if (dev.pfc.enabled[p]) honoured |= static_cast<uint8_t>(1u << p);
  pfc_rx_.set_honoured_mask(honoured);
}

PortPipeline::~PortPipeline() {
  if (cur_.handle) io_.free(&cur_, 1);
  io_.free(self_.data(), self_.size());
  for (uint16_t q = 0; q < nq_; ++q) io_.free(txq_[q].pending, txq_[q].n);
  for (auto& q : q_)
    for (const Frame& f : q) io_.free(&f, 1);
}

uint8_t* PortPipeline::begin_frame(size_t max_len) {
  if (max_len > max_frame_) return nullptr;
  if (!cur_.handle) {
    if (self_.size() >= kMaxQueued) return nullptr;  // until loop_back() takes them
    if (queued_ >= kMaxQueued) {
      flush();
      if (queued_ >= kMaxQueued) return nullptr;
    }
    Frame f;
    if (!io_.alloc(&f)) {
      flush();  // frames the driver has sent return their buffers
      return nullptr;
    }
    cur_ = f;
  }
  return cur_.data;
}

void PortPipeline::end_frame(size_t len, const TxMeta& meta) {
  if (!cur_.handle) return;
  const uint8_t prio = meta.priority & 7;
  Frame f = cur_;
  cur_ = Frame{};
  f.len = static_cast<uint32_t>(std::min(len, max_frame_));
  if (self_loopback_ && f.len >= 6 && std::memcmp(f.data, mac_.b.data(), 6) == 0 &&
      is_roce({f.data, f.len})) {
    self_.push_back(f);  // to ourselves: looped back by the next poll (file comment)
    return;
  }
  TxQueue& t = txq_[prio % nq_];
  if (queued_ == 0 && !pause_seen_ && t.n < kBurst) {
    // Nothing waits in any priority queue and nothing is paused: the scheduler would pick
    // this frame at once, so it goes straight into its TX queue's burst.
    t.pending[t.n++] = f;
    ++tx_prio_packets_[prio];
    tx_prio_bytes_[prio] += f.len;
    if (t.n == kBurst) flush();
    return;
  }
  q_[prio].push_back(f);
  queued_bytes_[prio] += f.len;
  ++queued_;
  if (queued_ >= kBurst) flush();
}

void PortPipeline::flush() {
  if (!io_.tx_ready()) return;
  for (int round = 0; round < 4; ++round) {
    schedule();
    bool full = false, any = false;
    for (uint16_t q = 0; q < nq_; ++q) {
      TxQueue& t = txq_[q];
      if (t.n == 0) continue;
      any = true;
      const size_t sent = std::min(io_.tx_burst(q, t.pending, t.n), t.n);
      std::move(t.pending + sent, t.pending + t.n, t.pending);
      t.n -= sent;
      full |= t.n != 0;
    }
    if (!any || full || queued_ == 0) return;  // nothing to send, the driver is full, or all out
  }
}

bool PortPipeline::tx_pending() const {
  for (uint16_t q = 0; q < nq_; ++q)
    if (txq_[q].n) return true;
  return false;
}

/// Moves frames from the priority queues into the TX queues' bursts, in the scheduler's
/// order, until one burst is full; a priority the peer paused (PFC) starts no frame.
void PortPipeline::schedule() {
  if (queued_ == 0) return;
  const Timestamp now = pause_seen_ ? clock_() : Timestamp{};
  dcqcn::PfcRx* pfc = pause_seen_ ? &pfc_rx_ : nullptr;
  auto room = [this] {
    for (uint16_t q = 0; q < nq_; ++q)
      if (txq_[q].n == kBurst) return false;
    return true;
  };
  while (queued_ > 0 && room()) {
    std::array<uint32_t, dcqcn::kNumPriorities> heads{};
    for (int p = 0; p < 8; ++p) heads[p] = q_[p].empty() ? 0 : q_[p].front().len;
    std::optional<uint8_t> p = sched_.pick(heads, pfc, now);
    if (!p) return;
    TxQueue& t = txq_[*p % nq_];
    const Frame f = q_[*p].front();
    t.pending[t.n++] = f;
    queued_bytes_[*p] -= f.len;
    ++tx_prio_packets_[*p];
    tx_prio_bytes_[*p] += f.len;
    q_[*p].pop_front();
    --queued_;
  }
}

bool PortPipeline::on_control_frame(std::span<const uint8_t> frame, Timestamp now) {
  if (frame.size() < 6 || std::memcmp(frame.data(), wire::kMacControlDst.b.data(), 6) != 0)
    return false;
  // PFC / PAUSE: honoured here (lib/dcqcn PfcRx), never passed on.
  wire::MacControlFrame m;
  if (wire::parse_mac_control(frame, &m) == wire::MacControlParse::kOk) {
    pfc_rx_.on_pause_frame(m.pause, now, rx_seen_);
    pause_seen_ = true;
  }
  return true;
}

void PortPipeline::on_rx_frame(std::span<const uint8_t> frame) {
  const RxClass rc = rx_class_(frame);
  ++rx_prio_packets_[rc.prio];
  rx_prio_bytes_[rc.prio] += frame.size();
  if (rc.ecn == 3) ++rx_prio_marked_[rc.prio];
  if (pfc_tx_on_) rx_backlog_[rc.prio] += frame.size();
}

size_t PortPipeline::loop_back(FrameHandler& h) {
  std::vector<Frame> frames;
  frames.swap(self_);  // h may make the engine send more to itself: those wait a poll
  for (const Frame& f : frames) {
    std::span<const uint8_t> frame(f.data, f.len);
    const RxClass rc = rx_class_(frame);
    ++rx_prio_packets_[rc.prio];
    rx_prio_bytes_[rc.prio] += f.len;
    h.on_frame(frame, RxMeta{});
  }
  io_.free(frames.data(), frames.size());
  return frames.size();
}

/// As a receiver: what this poll drained is what waited in the RX ring, per priority (a lower
/// bound of the ring's fill at the poll; exact when the poll emptied it). It feeds lib/dcqcn
/// PfcTx, which says when to send XOFF, refresh it, and send XON.
void PortPipeline::after_poll(Timestamp now, bool drained) {
  if (drained) rx_seen_ = now;
  if (!pfc_tx_on_) return;
  for (uint8_t p = 0; p < 8; ++p) {
    if (auto f = pfc_tx_.on_backlog(p, rx_backlog_[p], now)) send_pause(*f);
    rx_backlog_[p] = 0;
  }
  if (pfc_tx_.next_deadline() <= now)
    if (auto f = pfc_tx_.on_timer(now)) send_pause(*f);
}

void PortPipeline::send_pause(const wire::PauseFrame& p) {
  Frame f;
  if (!io_.alloc(&f)) return;
  const size_t len = wire::build_pause_frame(std::span<uint8_t>(f.data, f.len), mac_, p);
  if (len == 0) {  // a buffer shorter than the 60-byte frame
    io_.free(&f, 1);
    return;
  }
  f.len = static_cast<uint32_t>(len);
  if (io_.tx_burst(0, &f, 1) == 0) io_.free(&f, 1);
}

void PortPipeline::fill_counters(PortCounters* out) {
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
}

const dcqcn::PfcCounters& PortPipeline::pfc_counters() {
  if (pause_seen_) pfc_rx_.on_timer(clock_());
  return pfc_counters_;
}

}  // namespace uroce::pipeline
