/**
 * @file factory.cc
 * @brief cc::Factory's per-QP object (reaction points in front of one pacer) and its
 * notification point (dcqcn::NpTable). Units: bit/s, bytes, ns.
 */
#include "cc/factory.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "dcqcn/np_table.h"
#include "dcqcn/pacer.h"
#include "dcqcn/reaction_point.h"

namespace uroce::cc {

namespace {
/// A rate as the seam reports it: whole bit/s, 0 for unlimited (no limit, or infinity).
uint64_t to_bps(double r) { return std::isfinite(r) && r > 0 ? static_cast<uint64_t>(r) : 0; }
}  // namespace

class Factory::Qp final : public QpCongestion {
 public:
  Qp(Factory& f, uint32_t qpn, double speed) : f_(f), qpn_(qpn), pacer_(f.s_.burst_bytes) {
    const CcAlgorithm a = f.s_.algorithm;
    if (a == CcAlgorithm::kDcqcn || a == CcAlgorithm::kDcqcnDelay)
      rp_ = dcqcn::make_congestion_control(f.s_.dcqcn, speed);
    if (a == CcAlgorithm::kDelay || a == CcAlgorithm::kDcqcnDelay)
      delay_.emplace(f.s_.delay, speed);
    f_.qps_[qpn_] = this;
    sync();
  }
  ~Qp() override { f_.qps_.erase(qpn_); }

  Timestamp next_send_time(uint32_t bytes, Timestamp now) const override {
    return pacer_.earliest_send_time(bytes, now);
  }
  void on_packet_sent(uint32_t bytes, Timestamp now) override {
    pacer_.on_sent(bytes, now);
    if (rp_) {
      rp_->on_packet_sent(bytes, now);
      sync();
    }
  }
  void on_cnp(Timestamp now) override {
    ++f_.cnps_;
    if (!rp_) return;
    rp_->on_cnp(now);
    sync();
  }
  void on_rtt(Duration rtt, Timestamp now) override {
    if (!delay_) return;
    delay_->on_rtt(rtt, now);
    sync();
  }
  void on_loss(Timestamp now) override {
    if (!delay_) return;
    delay_->on_loss(now);
    sync();
  }
  Timestamp next_deadline() const override {
    return rp_ ? rp_->next_deadline() : Timestamp::never();
  }
  void on_timer(Timestamp now) override {
    if (!rp_) return;
    rp_->on_timer(now);
    sync();
  }
  uint64_t rate_bps() const override { return to_bps(pacer_.rate_bps()); }
  QpCcState state(Timestamp now) const override {
    QpCcState s;
    s.algorithm = f_.s_.algorithm;
    s.rate_bps = rate_bps();
    if (rp_) {
      s.target_rate_bps = to_bps(rp_->target_rate_bps());
      s.alpha = rp_->alpha_at(now);
    }
    if (delay_) {
      s.delay_rate_bps = delay_limits() ? to_bps(delay_->rate_bps()) : 0;
      s.rtt_ns = delay_->last_rtt().ns;
      s.base_rtt_ns = delay_->base_rtt().ns;
      s.target_delay_ns = delay_->target_delay().ns;
      s.delay_in_force = delay_limits() && (!rp_ || delay_->rate_bps() < rp_->rate_bps());
    }
    return s;
  }

 private:
  bool delay_limits() const { return delay_ && delay_->rate_bps() < delay_->line_bps(); }
  /// The pacer runs at the lower of the reaction points' rates (unlimited when none limits).
  void sync() {
    double r = dcqcn::kUnlimitedRate;
    if (rp_) r = rp_->rate_bps();
    if (delay_limits()) r = std::min(r, delay_->rate_bps());
    pacer_.set_rate(r);
  }

  Factory& f_;
  uint32_t qpn_;
  std::unique_ptr<dcqcn::CongestionControl> rp_;
  std::optional<DelayControl> delay_;
  dcqcn::Pacer pacer_;
};

/// At most one CNP per QP per min_time_between_cnps (dcqcn::NpTable).
class Factory::Np final : public NotificationPoint {
 public:
  explicit Np(Duration min_gap) : t_(min_gap) {}
  bool on_ce_marked(uint32_t qpn, Timestamp now) override { return t_.on_ce_marked(qpn, now); }
  Timestamp next_deadline() const override { return t_.next_deadline(); }
  void on_timer(Timestamp now, std::vector<uint32_t>* due) override { t_.on_timer(now, due); }
  void forget(uint32_t qpn) override { t_.forget(qpn); }

 private:
  dcqcn::NpTable t_;
};

std::unique_ptr<QpCongestion> Factory::make_qp(uint32_t qpn, uint64_t link_speed_bps) {
  return std::make_unique<Qp>(*this, qpn, static_cast<double>(link_speed_bps));
}

std::unique_ptr<NotificationPoint> Factory::make_np() {
  return std::make_unique<Np>(Duration::micros(s_.dcqcn.min_time_between_cnps));
}

}  // namespace uroce::cc
