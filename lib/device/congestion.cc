/**
 * @file congestion.cc
 * @brief The device's congestion control from its configuration: the algorithm
 * (congestion_control; dcqcn.enabled = false takes DCQCN out), the DCQCN parameters (mode
 * preset, "nvidia" firmware defaults or the SIGCOMM'15 "paper" values, then the [device.dcqcn]
 * overrides by NVIDIA name) and the [device.delay] knobs, built by cc::Factory.
 * Units: bit/s, bytes, ns.
 */
#include "device/congestion.h"

#include "cc/factory.h"
#include "dcqcn/params.h"

namespace uroce::device {

std::unique_ptr<cc::CongestionFactory> make_congestion(const config::Device& dev,
                                                       std::string* err) {
  cc::Settings s;
  s.algorithm = config::cc_in_force(dev);
  if (s.algorithm == CcAlgorithm::kOff) return nullptr;
  s.dcqcn = dev.dcqcn.mode == "paper" ? dcqcn::paper_preset() : dcqcn::nvidia_firmware_preset();
  std::string why;
  if (!dcqcn::apply_overrides(&s.dcqcn, dev.dcqcn.params, &why) ||
      !dcqcn::validate(s.dcqcn, &why)) {
    if (err) *err = "dcqcn: " + why;
    return nullptr;
  }
  const config::Delay& d = dev.delay;
  s.delay.target_queue = Duration::nanos(static_cast<int64_t>(d.target_queue_us * 1e3));
  s.delay.base_rtt = Duration::nanos(static_cast<int64_t>(d.base_rtt_us * 1e3));
  s.delay.ai_bps = d.ai_mbps * 1e6;
  s.delay.beta = d.beta;
  s.delay.max_mdf = d.max_mdf;
  s.delay.min_rate_bps = d.min_rate_mbps * 1e6;
  if (!cc::validate(s.delay, &why)) {
    if (err) *err = "delay: " + why;
    return nullptr;
  }
  s.burst_bytes = dev.dcqcn.max_burst_bytes;
  return std::make_unique<cc::Factory>(s);
}

}  // namespace uroce::device
