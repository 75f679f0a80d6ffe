/**
 * @file dcqcn_congestion.cc
 * @brief DcqcnCongestionFactory's per-QP and notification-point adapters over lib/dcqcn.
 * Units: bit/s, bytes, ns.
 */
#include "transport/dcqcn_congestion.h"

#include <cmath>

#include "dcqcn/np_table.h"

namespace uroce::transport {

namespace {
/// A DCQCN rate as the seam reports it: whole bit/s, 0 for unlimited (no limit, or infinity).
uint64_t to_bps(double r) { return std::isfinite(r) && r > 0 ? static_cast<uint64_t>(r) : 0; }
}  // namespace

class DcqcnCongestionFactory::Qp final : public QpCongestion {
 public:
  Qp(DcqcnCongestionFactory& f, uint32_t qpn, const dcqcn::DcqcnParams& p, double speed,
     uint64_t burst)
      : f_(f), qpn_(qpn), c_(p, speed, burst) {
    f_.qps_[qpn_] = &c_;
  }
  ~Qp() override { f_.qps_.erase(qpn_); }
  Timestamp next_send_time(uint32_t bytes, Timestamp now) const override {
    return c_.earliest_send_time(bytes, now);
  }
  void on_packet_sent(uint32_t bytes, Timestamp now) override { c_.on_data_sent(bytes, now); }
  void on_cnp(Timestamp now) override {
    ++f_.cnps_;
    c_.on_cnp(now);
  }
  Timestamp next_deadline() const override { return c_.next_deadline(); }
  // The per-QP NP inside c_ is never fed (the device-wide NP below is), so on_timer's CNP
  // flag is always false.
  void on_timer(Timestamp now) override { (void)c_.on_timer(now); }
  uint64_t rate_bps() const override { return to_bps(c_.rate_bps()); }
  uint64_t target_rate_bps() const override { return to_bps(c_.rp().target_rate_bps()); }
  double alpha(Timestamp now) const override { return c_.rp().alpha_at(now); }

 private:
  DcqcnCongestionFactory& f_;
  uint32_t qpn_;
  dcqcn::QpCongestion c_;
};

/// At most one CNP per QP per min_time_between_cnps (dcqcn::NpTable).
class DcqcnCongestionFactory::Np final : public NotificationPoint {
 public:
  explicit Np(Duration min_gap) : t_(min_gap) {}
  bool on_ce_marked(uint32_t qpn, Timestamp now) override { return t_.on_ce_marked(qpn, now); }
  Timestamp next_deadline() const override { return t_.next_deadline(); }
  void on_timer(Timestamp now, std::vector<uint32_t>* due) override { t_.on_timer(now, due); }
  void forget(uint32_t qpn) override { t_.forget(qpn); }

 private:
  dcqcn::NpTable t_;
};

std::unique_ptr<QpCongestion> DcqcnCongestionFactory::make_qp(uint32_t qpn,
                                                              uint64_t link_speed_bps) {
  return std::make_unique<Qp>(*this, qpn, p_, static_cast<double>(link_speed_bps), burst_);
}

std::unique_ptr<NotificationPoint> DcqcnCongestionFactory::make_np() {
  return std::make_unique<Np>(Duration::micros(p_.min_time_between_cnps));
}

}  // namespace uroce::transport
