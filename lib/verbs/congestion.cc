/**
 * @file congestion.cc
 * @brief DCQCN parameters for the engine's CongestionFactory seam (the adapter itself is
 * transport/dcqcn_congestion.h): mode preset ("nvidia" firmware defaults or the SIGCOMM'15
 * "paper" values), then the [device.dcqcn] overrides by NVIDIA parameter name.
 * Units: bit/s, bytes, ns.
 */
#include "verbs/congestion.h"

#include "dcqcn/params.h"
#include "transport/dcqcn_congestion.h"

namespace uroce::verbs {

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
  return std::make_unique<transport::DcqcnCongestionFactory>(p, dev.dcqcn.max_burst_bytes);
}

}  // namespace uroce::verbs
