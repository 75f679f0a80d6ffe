/**
 * @file switch.cc
 * @brief Switch forwarding, buffer admission, ECN marking and PFC generation. Units: bytes, ns.
 */
#include "sim/switch.h"

#include <algorithm>
#include <utility>

#include "dcqcn/red.h"
#include "sim/frame_bytes.h"
#include "transport/wire/pfc.h"

namespace uroce::sim {

Switch::Switch(Simulator& sim, const SwitchConfig& cfg)
    : sim_(sim), cfg_(cfg), ecn_rng_(cfg.ecn.seed) {}

Switch::~Switch() = default;

uint32_t Switch::add_port(const LinkParams& egress, FrameReceiver* peer, uint32_t peer_port) {
  auto p = std::make_unique<Port>();
  p->sw = this;
  p->index = static_cast<uint32_t>(ports_.size());
  p->link = std::make_unique<Link>(sim_, egress, peer, peer_port, p.get());
  ports_.push_back(std::move(p));
  return ports_.back()->index;
}

void Switch::add_route(const MacAddr& mac, uint32_t port) { fdb_[mac] = port; }

int Switch::classify(const Frame& f) const {
  int pcp = vlan_pcp(f.bytes);
  if (pcp >= 0) return pcp;
  int tc = traffic_class(f.bytes);
  if (tc >= 0) return cfg_.dscp_to_priority[static_cast<size_t>(tc >> 2)];
  return 0;
}

void Switch::maybe_mark(Frame& f, uint64_t q) {
  const EcnConfig& e = cfg_.ecn;
  Ecn cur = ecn(f.bytes);
  if (cur == Ecn::kNotEct || cur == Ecn::kCe) return;
  const double p = dcqcn::red_mark_probability(
      {.kmin_bytes = e.kmin_bytes, .kmax_bytes = e.kmax_bytes, .pmax = e.pmax}, q);
  if (ecn_rng_.bernoulli(p)) {
    set_ecn(f.bytes, Ecn::kCe);
    ++stats_.ecn_marked;
  }
}

void Switch::send_pfc(uint32_t port, int priority, uint16_t quanta, Timestamp now) {
  wire::PauseFrame pfc;
  pfc.class_enable = static_cast<uint8_t>(1u << priority);
  pfc.quanta[priority] = quanta;
  Frame f = sim_.pool().get(wire::kMacControlFrameLen);
  f.bytes.resize(wire::kMacControlFrameLen);
  wire::build_pause_frame(f.bytes, cfg_.mac, pfc);
  f.is_control = true;
  ports_[port]->link->enqueue(std::move(f), now);
  if (quanta) {
    ++stats_.xoff_sent;
  } else {
    ++stats_.xon_sent;
  }
}

Duration Switch::half_pause(uint32_t port) const {
  Duration half =
      Duration::nanos(wire::pause_quanta_ns(0xffff, ports_[port]->link->params().rate_bps));
  half.ns /= 2;
  return half;
}

void Switch::arm_refresh(uint32_t port, int priority) {
  Port& p = *ports_[port];
  if (p.refresh_armed[priority]) return;
  p.refresh_armed[priority] = true;
  sim_.call_at(p.last_xoff[priority] + half_pause(port),
               [this, port, priority] { refresh(port, priority); });
}

void Switch::refresh(uint32_t port, int priority) {
  Port& p = *ports_[port];
  p.refresh_armed[priority] = false;
  if (!p.xoff[priority]) return;
  const Timestamp now = sim_.now();
  if (now - p.last_xoff[priority] >= half_pause(port)) {
    p.last_xoff[priority] = now;
    send_pfc(port, priority, 0xffff, now);
  }
  arm_refresh(port, priority);
}

void Switch::receive(uint32_t in, Frame&& f, Timestamp now) {
  ++stats_.received;
  if (ethertype(f.bytes) == kEtherTypeMacControl) {
    wire::MacControlFrame m;
    if (wire::parse_mac_control(f.bytes, &m) == wire::MacControlParse::kOk) {
      ++stats_.pfc_rx;
      Link& l = *ports_[in]->link;
      for (int p = 0; p < kPriorities; ++p)
        if (m.pause.class_enable & (1u << p))
          l.pause(p, Duration::nanos(wire::pause_quanta_ns(m.pause.quanta[p], l.params().rate_bps)),
                  now);
    }
    sim_.pool().put(std::move(f));
    return;
  }
  auto it = fdb_.find(dst_mac(f.bytes));
  if (it == fdb_.end()) {
    ++stats_.no_route;
    sim_.pool().put(std::move(f));
    return;
  }
  uint32_t out = it->second;
  int prio = classify(f);
  f.priority = static_cast<uint8_t>(prio);
  f.ingress_port = in;
  f.is_control = false;
  Port& ip = *ports_[in];
  bool lossless = cfg_.pfc.enabled && (cfg_.pfc.lossless_mask & (1u << prio));
  uint64_t limit = cfg_.buffer_bytes;
  if (lossless) limit += cfg_.pfc.headroom_bytes * ports_.size();
  Link& eg = *ports_[out]->link;
  if (used_ + f.size() > limit || !eg.can_accept(f.size())) {
    if (lossless) {
      ++stats_.headroom_drops;
    } else {
      ++stats_.buffer_drops;
    }
    sim_.pool().put(std::move(f));
    return;
  }
  if (cfg_.ecn.enabled && !cfg_.ecn.at_dequeue) maybe_mark(f, eg.queued_bytes(prio));
  used_ += f.size();
  stats_.max_buffer_bytes = std::max(stats_.max_buffer_bytes, used_);
  ip.ingress_bytes[prio] += f.size();
  if (lossless && ip.ingress_bytes[prio] >= cfg_.pfc.xoff_bytes) {
    if (!ip.xoff[prio] || now - ip.last_xoff[prio] >= half_pause(in)) {
      ip.xoff[prio] = true;
      ip.last_xoff[prio] = now;
      send_pfc(in, prio, 0xffff, now);
      arm_refresh(in, prio);
    }
  }
  ++stats_.forwarded;
  eg.enqueue(std::move(f), now);
}

void Switch::on_dequeue(uint32_t port, Frame& f, Timestamp now) {
  if (f.is_control) return;
  int prio = f.priority & 7;
  used_ -= f.size();
  Port& ip = *ports_[f.ingress_port];
  ip.ingress_bytes[prio] -= f.size();
  if (ip.xoff[prio] && ip.ingress_bytes[prio] <= cfg_.pfc.xon_bytes) {
    ip.xoff[prio] = false;
    send_pfc(f.ingress_port, prio, 0, now);
  }
  if (cfg_.ecn.enabled && cfg_.ecn.at_dequeue)
    maybe_mark(f, ports_[port]->link->queued_bytes(prio));
}

}  // namespace uroce::sim
