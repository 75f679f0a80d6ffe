/**
 * @file pfc_tx.cc
 * @brief XOFF/XON generation from the RX backlog (docs/dcqcn-pfc.md §4.1). Units: bytes, ns; µs
 * counters.
 */
#include "dcqcn/pfc_tx.h"

namespace uroce::dcqcn {

PfcTx::PfcTx(uint64_t link_bps, const PfcTxConfig& cfg, PfcCounters* counters)
    : cfg_(cfg), refresh_(cfg.refresh), c_(counters) {
  if (refresh_.ns <= 0)
    refresh_ = Duration::nanos(wire::pause_quanta_ns(cfg.pause_quanta, link_bps) / 2);
  if (refresh_.ns <= 0) refresh_ = Duration::nanos(1);
}

void PfcTx::account(int p, Timestamp upto) {
  Prio& s = s_[p];
  if (upto > s.accounted) {
    s.duration_ns += (upto - s.accounted).ns;
    s.accounted = upto;
    c_->tx_prio_pause_duration[p] = static_cast<uint64_t>(s.duration_ns / 1000);
  }
}

void PfcTx::assert_xoff(int p, Timestamp now, wire::PauseFrame* f) {
  Prio& s = s_[p];
  if (!s.xoff) {
    s.xoff = true;
    s.since = s.accounted = now;
  } else {
    account(p, now);
  }
  s.next_refresh = now + refresh_;
  f->class_enable |= static_cast<uint8_t>(1u << p);
  f->quanta[p] = cfg_.pause_quanta;
  ++c_->tx_prio_pause[p];
}

void PfcTx::release(int p, Timestamp now, wire::PauseFrame* f) {
  Prio& s = s_[p];
  account(p, now);
  s.xoff = false;
  s.next_refresh = Timestamp::never();
  f->class_enable |= static_cast<uint8_t>(1u << p);
  f->quanta[p] = 0;
  ++c_->tx_prio_pause[p];
}

std::optional<wire::PauseFrame> PfcTx::on_backlog(uint8_t prio, uint64_t bytes, Timestamp now) {
  if (!(cfg_.enabled_mask & (1u << prio)) || cfg_.xoff_bytes == 0) return std::nullopt;
  Prio& s = s_[prio];
  wire::PauseFrame f;
  if (s.xoff) {
    account(prio, now);
    if (bytes <= cfg_.xon_bytes) release(prio, now, &f);
  } else if (s.gave_up) {
    if (bytes <= cfg_.xon_bytes) s.gave_up = false;
  } else if (bytes >= cfg_.xoff_bytes) {
    assert_xoff(prio, now, &f);
  }
  if (f.class_enable == 0) return std::nullopt;
  return f;
}

std::optional<wire::PauseFrame> PfcTx::reconfigure(const PfcTxConfig& cfg, Timestamp now) {
  wire::PauseFrame f;
  for (int p = 0; p < kNumPriorities; ++p) {
    const bool on = (cfg.enabled_mask & (1u << p)) && cfg.xoff_bytes != 0;
    if (s_[p].xoff && !on) release(p, now, &f);
    if (!on) s_[p].gave_up = false;
  }
  cfg_.enabled_mask = cfg.enabled_mask;
  cfg_.xoff_bytes = cfg.xoff_bytes;
  cfg_.xon_bytes = cfg.xon_bytes;
  cfg_.max_xoff = cfg.max_xoff;
  if (f.class_enable == 0) return std::nullopt;
  return f;
}

Timestamp PfcTx::next_deadline() const {
  Timestamp t = Timestamp::never();
  for (const Prio& s : s_) {
    if (!s.xoff) continue;
    t = earliest(t, s.next_refresh);
    if (cfg_.max_xoff.ns > 0) t = earliest(t, s.since + cfg_.max_xoff);
  }
  return t;
}

std::optional<wire::PauseFrame> PfcTx::on_timer(Timestamp now) {
  wire::PauseFrame f;
  for (int p = 0; p < kNumPriorities; ++p) {
    Prio& s = s_[p];
    if (!s.xoff) continue;
    if (cfg_.max_xoff.ns > 0 && s.since + cfg_.max_xoff <= now) {
      release(p, now, &f);
      s.gave_up = true;
    } else if (s.next_refresh <= now) {
      assert_xoff(p, now, &f);
    }
  }
  if (f.class_enable == 0) return std::nullopt;
  return f;
}

}  // namespace uroce::dcqcn
