/**
 * @file engine_host.cc
 * @brief EngineHost: glue between the simulator and the real engine. Units: ns.
 */
#include "sim/engine_host.h"

#include <utility>

#include "sim/frame_bytes.h"
#include "transport/wire/pfc.h"

namespace uroce::sim {

EngineHost::EngineHost(Simulator& sim, const transport::EngineConfig& cfg, std::string name)
    : sim_(sim),
      name_(std::move(name)),
      engine_(std::make_unique<transport::Engine>(cfg, &counters_, nullptr)) {
  sim.add_node(this);
}

EngineHost::~EngineHost() = default;

void EngineHost::attach(Link* tx) {
  tx_ = tx;
  tx->set_observer(this);
}

Timestamp EngineHost::next_wake() const {
  if (frozen_) return Timestamp::never();
  if (dirty_) return sim_.now();
  if (blocked_) return Timestamp::never();
  return engine_->next_deadline();
}

void EngineHost::poll(Timestamp now) {
  dirty_ = false;
  poll_now_ = now;
  engine_->poll_transmit(*this, neigh_, now);
  for (int i = 0; i < 64; ++i) {
    bool posted = false;
    for (auto& app : apps_) posted |= app(*this, now);
    if (!posted) break;
    engine_->poll_transmit(*this, neigh_, now);
  }
}

void EngineHost::receive(uint32_t, Frame&& f, Timestamp now) {
  if (frozen_) {
    sim_.pool().put(std::move(f));
    return;
  }
  if (ethertype(f.bytes) == kEtherTypeMacControl) {
    wire::MacControlFrame m;
    if (wire::parse_mac_control(f.bytes, &m) == wire::MacControlParse::kOk && tx_) {
      ++pfc_rx_;
      const uint64_t rate = tx_->params().rate_bps;
      for (int p = 0; p < kPriorities; ++p)
        if (m.pause.class_enable & (1u << p))
          tx_->pause(p, Duration::nanos(wire::pause_quanta_ns(m.pause.quanta[p], rate)), now);
    }
    sim_.pool().put(std::move(f));
    return;
  }
  ++rx_frames_;
  engine_->on_frame(f.bytes, now);
  sim_.pool().put(std::move(f));
  dirty_ = true;
  if (watch_) watch_(now);
}

void EngineHost::on_space(Timestamp) { blocked_ = false; }

uint8_t* EngineHost::begin_frame(size_t max_len) {
  if (!tx_) return nullptr;
  if (!tx_->can_accept(max_len)) {
    blocked_ = true;
    tx_->notify_when_space();
    return nullptr;
  }
  if (!have_cur_) {
    cur_ = sim_.pool().get(max_len);
    have_cur_ = true;
  }
  cur_.bytes.resize(max_len);
  return cur_.bytes.data();
}

void EngineHost::end_frame(size_t len, const TxMeta& meta) {
  if (!have_cur_) return;
  have_cur_ = false;
  cur_.bytes.resize(len);
  cur_.priority = meta.priority & 7;
  cur_.is_cnp = meta.is_cnp;
  cur_.is_control = false;
  ++tx_frames_;
  tx_->enqueue(std::move(cur_), poll_now_);
  cur_ = Frame{};
}

}  // namespace uroce::sim
