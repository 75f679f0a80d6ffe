/**
 * @file congestion.cc
 * @brief DCQCN (lib/dcqcn) behind the engine's CongestionFactory seam (transport/congestion.h):
 * mode preset ("nvidia" firmware defaults or the SIGCOMM'15 "paper" values), then the
 * [device.dcqcn] overrides by NVIDIA parameter name. Units: bit/s, bytes, ns.
 */
#include "verbs/congestion.h"

#include "dcqcn/np_table.h"
#include "dcqcn/params.h"
#include "dcqcn/qp_congestion.h"

namespace uroce::verbs {

namespace {

/// One QP's reaction point + pacer.
class DcqcnQp final : public transport::QpCongestion {
 public:
  DcqcnQp(const dcqcn::DcqcnParams& p, double speed_bps) : c_(p, speed_bps) {}
  Timestamp next_send_time(uint32_t bytes, Timestamp now) const override {
    return c_.earliest_send_time(bytes, now);
  }
  void on_packet_sent(uint32_t bytes, Timestamp now) override { c_.on_data_sent(bytes, now); }
  void on_cnp(Timestamp now) override { c_.on_cnp(now); }
  Timestamp next_deadline() const override { return c_.next_deadline(); }
  // The per-QP NP inside c_ is not fed (the device-wide NP below is): its CNP flag is unused.
  void on_timer(Timestamp now) override { (void)c_.on_timer(now); }
  uint64_t rate_bps() const override { return static_cast<uint64_t>(c_.rate_bps()); }

 private:
  dcqcn::QpCongestion c_;
};

/// Device-wide notification point: at most one CNP per QP per min_time_between_cnps.
class DcqcnNp final : public transport::NotificationPoint {
 public:
  explicit DcqcnNp(Duration n) : t_(n) {}
  bool on_ce_marked(uint32_t qpn, Timestamp now) override { return t_.on_ce_marked(qpn, now); }

 private:
  dcqcn::NpTable t_;
};

class DcqcnFactory final : public transport::CongestionFactory {
 public:
  explicit DcqcnFactory(const dcqcn::DcqcnParams& p) : p_(p) {}
  std::unique_ptr<transport::QpCongestion> make_qp(uint32_t, uint64_t speed_bps) override {
    return std::make_unique<DcqcnQp>(p_, static_cast<double>(speed_bps));
  }
  std::unique_ptr<transport::NotificationPoint> make_np() override {
    return std::make_unique<DcqcnNp>(Duration::micros(p_.min_time_between_cnps));
  }

 private:
  dcqcn::DcqcnParams p_;
};

}  // namespace

std::unique_ptr<transport::CongestionFactory> make_congestion(const config::Device& dev,
                                                              std::string* err) {
  if (!dev.dcqcn.enabled) return nullptr;
  dcqcn::DcqcnParams p =
      dev.dcqcn.mode == "paper" ? dcqcn::paper_preset() : dcqcn::nvidia_firmware_preset();
  std::string why;
  if (!dcqcn::apply_overrides(&p, dev.dcqcn.params, &why) || !dcqcn::validate(p, &why)) {
    if (err) *err = "dcqcn: " + why;
    return nullptr;
  }
  return std::make_unique<DcqcnFactory>(p);
}

}  // namespace uroce::verbs
