/**
 * @file profile.cc
 * @brief The profile presets (see profile.h). Units: bytes, milliseconds.
 */
#include "config/profile.h"

namespace uroce::config {

namespace {

void make_lossless(Device* dev, uint32_t xoff_bytes, uint32_t xon_bytes) {
  dev->pfc.enabled = {};
  dev->pfc.enabled[dev->dscp_to_prio[dev->roce_dscp & 63] & 7] = true;
  dev->pfc.xoff_bytes = xoff_bytes;
  dev->pfc.xon_bytes = xon_bytes;
  dev->ecn = true;
  dev->dcqcn.enabled = true;
}

}  // namespace

void apply_profile(std::string_view name, Device* dev) {
  if (name == "lossless") {
    make_lossless(dev, 64 * 1024, 32 * 1024);
  } else if (name == "lossy") {
    dev->pfc.enabled = {};
    dev->pfc.xoff_bytes = 0;
    dev->pfc.xon_bytes = 0;
    dev->ecn = true;
    dev->dcqcn.enabled = true;
    dev->congestion_control = CcAlgorithm::kDcqcnDelay;
    dev->loss_recovery = Device::LossRecovery::kSelective;
    dev->peer_timestamps = true;
  } else if (name == "hpc") {
    make_lossless(dev, 64 * 1024, 32 * 1024);
    dev->dcqcn.params["rpg_time_reset"] = 100;
    dev->dcqcn.params["rpg_ai_rate"] = 20;
    dev->dcqcn.params["min_time_between_cnps"] = 0;
  } else if (name == "storage") {
    make_lossless(dev, 256 * 1024, 128 * 1024);
  }
}

}  // namespace uroce::config
