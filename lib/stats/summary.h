/**
 * @file summary.h
 * @brief The effective configuration of a device (config::Device with its profile applied,
 * DCQCN parameters resolved by lib/dcqcn) as the ConfigSummary a statistics segment carries.
 * Separate target uroce_stats_config: uroce_stats itself depends on uroce_common only.
 */
#pragma once

#include <string>

#include "config/config.h"
#include "stats/layout.h"

namespace uroce::stats {

/// Fills a ConfigSummary from a parsed device. `source` is the configuration file (or
/// "built-in"); num_tx_queues the port's TX queues (priority p uses queue p mod n).
ConfigSummary summarize(const config::Device& dev, const std::string& source,
                        uint32_t num_tx_queues = kNumPriorities);

}  // namespace uroce::stats
