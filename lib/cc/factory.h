/**
 * @file factory.h
 * @brief The congestion control a device runs, behind the engine's seam (congestion.h): per QP
 * the DCQCN reaction point (lib/dcqcn), the delay-based control (delay.h), or both, in front of
 * one pacer; device-wide the DCQCN notification point (at most one CNP per QP per
 * min_time_between_cnps, coalesced CEs sent when the interval ends), which every algorithm keeps
 * so that a peer running DCQCN is answered.
 *
 * With both, the QP sends at the lower of the two rates: DCQCN acts where switches mark ECN,
 * the delay control where they do not. The factory keeps a pointer to every live QP's state so
 * tests and scenarios can look at it. Units: bit/s, bytes, ns.
 * Thread-safety: as the engine (the caller serialises).
 */
#pragma once

#include <cstdint>
#include <map>
#include <memory>

#include "cc/congestion.h"
#include "cc/delay.h"
#include "dcqcn/params.h"

namespace uroce::cc {

/// What a Factory builds.
struct Settings {
  CcAlgorithm algorithm = CcAlgorithm::kDcqcn;
  dcqcn::DcqcnParams dcqcn;  ///< the reaction point (kDcqcn, kDcqcnDelay) and the NP interval
  DelayParams delay;         ///< kDelay, kDcqcnDelay
  uint64_t burst_bytes = 0;  ///< the pacer's bucket depth (0: every frame spaced at the rate)
};

class Factory final : public CongestionFactory {
 public:
  explicit Factory(const Settings& s) : s_(s) {}
  /// DCQCN only.
  explicit Factory(const dcqcn::DcqcnParams& p, uint64_t burst_bytes = 0)
      : s_{CcAlgorithm::kDcqcn, p, {}, burst_bytes} {}

  std::unique_ptr<QpCongestion> make_qp(uint32_t qpn, uint64_t link_speed_bps) override;
  std::unique_ptr<NotificationPoint> make_np() override;

  /// The state of live QP `qpn` made by this factory, or nullptr.
  const QpCongestion* qp(uint32_t qpn) const {
    auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
  }
  /// CNPs applied by all QPs of this factory.
  uint64_t cnps_received() const { return cnps_; }
  const Settings& settings() const { return s_; }

 private:
  class Qp;
  class Np;
  Settings s_;
  std::map<uint32_t, const QpCongestion*> qps_;
  uint64_t cnps_ = 0;
};

}  // namespace uroce::cc
