/**
 * @file profile.h
 * @brief The "one-click RoCE" profiles of docs/configuration.md ("Profiles"): defaults that a
 * `profile = "..."` key applies to a device before its explicit keys are read.
 *
 * Units: bytes for PFC thresholds, milliseconds for the PFC watchdog.
 */
#pragma once

#include <string_view>

#include "config/config.h"

namespace uroce::config {

/// The profile names a device may select, "" meaning none (the struct defaults).
inline constexpr std::string_view kProfileNames[] = {"", "lossless", "lossy", "hpc", "storage"};

/// The NVIDIA DCQCN parameter names accepted under [device.dcqcn] (docs/dcqcn-pfc.md §1.1,
/// firmware names in lower case) plus the ECN marking knobs of the NP model.
inline constexpr std::string_view kDcqcnParamNames[] = {"rpg_time_reset",
                                                        "rpg_byte_reset",
                                                        "rpg_threshold",
                                                        "rpg_ai_rate",
                                                        "rpg_hai_rate",
                                                        "rpg_min_rate",
                                                        "rpg_max_rate",
                                                        "rpg_gd",
                                                        "rpg_min_dec_fac",
                                                        "dce_tcp_g",
                                                        "dce_tcp_rtt",
                                                        "rate_reduce_monitor_period",
                                                        "initial_alpha_value",
                                                        "clamp_tgt_rate",
                                                        "clamp_tgt_rate_after_time_inc",
                                                        "rate_to_set_on_first_cnp",
                                                        "min_time_between_cnps",
                                                        "kmin",
                                                        "kmax",
                                                        "pmax"};

/// Applies profile `name` (one of kProfileNames) to *dev. Reads dev->roce_dscp and
/// dev->dscp_to_prio to pick the lossless priority, so call it after those are set.
///   lossless: PFC on the RoCE data priority, xoff 64 KiB / xon 32 KiB, ECN and DCQCN on.
///   lossy:    no PFC; ECN on; congestion control "dcqcn+delay" (DCQCN where switches mark
///             ECN, the delay-based control where they do not); selective repeat and peer
///             timestamps, so every RC peer must be a uroce with the same setting (QPs set up
///             through the RDMA CM agree per QP and fall back to go-back-N with a peer that does
///             not).
///   hpc:      lossless, plus faster DCQCN recovery (rpg_time_reset 100 µs, rpg_ai_rate 20,
///             min_time_between_cnps 0), the low-latency tuning of docs/dcqcn-pfc.md §1.1.
///   storage:  lossless with deeper buffers (xoff 256 KiB / xon 128 KiB) for large bursts.
void apply_profile(std::string_view name, Device* dev);

}  // namespace uroce::config
