/**
 * @file dcqcn_cc.h
 * @brief Plugs lib/dcqcn into the engine's congestion-control seam for simulated hosts:
 * a transport::CongestionFactory whose per-QP object is dcqcn::QpCongestion (reaction point +
 * pacer) and whose notification point is a dcqcn::NpTable (at most one CNP per
 * min_time_between_cnps per QP). Coalesced CNPs that the NP table would send later are not
 * sent: the engine's NotificationPoint seam has no timer (documented gap). Keeps a pointer to
 * every QP's state so scenarios can sample rates. Units: bit/s, bytes, ns.
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "dcqcn/params.h"
#include "dcqcn/qp_congestion.h"
#include "transport/congestion.h"

namespace uroce::sim {

class DcqcnFactory final : public transport::CongestionFactory {
 public:
  explicit DcqcnFactory(const dcqcn::DcqcnParams& p, uint64_t burst_bytes = 0)
      : p_(p), burst_(burst_bytes) {}

  std::unique_ptr<transport::QpCongestion> make_qp(uint32_t qpn, uint64_t link_speed_bps) override;
  std::unique_ptr<transport::NotificationPoint> make_np() override;

  /// The DCQCN state of QP `qpn` made by this factory, or nullptr.
  const dcqcn::QpCongestion* qp(uint32_t qpn) const {
    auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
  }
  uint64_t cnps_received() const { return cnps_; }

 private:
  class Qp;
  class Np;
  dcqcn::DcqcnParams p_;
  uint64_t burst_;
  std::map<uint32_t, dcqcn::QpCongestion*> qps_;
  uint64_t cnps_ = 0;
};

}  // namespace uroce::sim
