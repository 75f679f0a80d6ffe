/**
 * @file dcqcn_congestion.h
 * @brief lib/dcqcn behind the engine's congestion-control seam (transport/congestion.h): a
 * CongestionFactory whose per-QP object is dcqcn::QpCongestion (DCQCN reaction point + pacer,
 * dcqcn.md) and whose device-wide notification point is a dcqcn::NpTable (at most one CNP per
 * QP per min_time_between_cnps). The one adapter lib/verbs and sim/ share.
 *
 * A CE packet inside the interval is coalesced: the engine sends one CNP when the interval
 * ends (NotificationPoint::next_deadline/on_timer, polled by Engine::poll_transmit). The
 * factory keeps a pointer to every live QP's DCQCN state so tools and
 * scenarios can sample rates. Units: bit/s, bytes, ns (µs for min_time_between_cnps).
 * Thread-safety: as the engine (the caller serialises).
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "dcqcn/params.h"
#include "dcqcn/qp_congestion.h"
#include "transport/congestion.h"

namespace uroce::transport {

class DcqcnCongestionFactory final : public CongestionFactory {
 public:
  /// burst_bytes: the pacer's bucket depth (0: every frame spaced at the rate).
  explicit DcqcnCongestionFactory(const dcqcn::DcqcnParams& p, uint64_t burst_bytes = 0)
      : p_(p), burst_(burst_bytes) {}

  std::unique_ptr<QpCongestion> make_qp(uint32_t qpn, uint64_t link_speed_bps) override;
  std::unique_ptr<NotificationPoint> make_np() override;

  /// The DCQCN state of live QP `qpn` made by this factory, or nullptr.
  const dcqcn::QpCongestion* qp(uint32_t qpn) const {
    auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
  }
  /// CNPs applied by all QPs of this factory.
  uint64_t cnps_received() const { return cnps_; }
  const dcqcn::DcqcnParams& params() const { return p_; }

 private:
  class Qp;
  class Np;
  dcqcn::DcqcnParams p_;
  uint64_t burst_;
  std::map<uint32_t, dcqcn::QpCongestion*> qps_;
  uint64_t cnps_ = 0;
};

}  // namespace uroce::transport
