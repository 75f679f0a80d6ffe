/**
 * @file port_publish.h
 * @brief Copies what a port counts (common/port.h PortCounters: PMD frames and drops, PFC
 * received and sent, per-priority traffic, queue depths) into a segment's PortStats block. Used
 * by every owner of a port that keeps a segment: a device's progress thread (lib/device) and
 * uroce-hostd for the netdev it shares. Single writer per segment.
 */
#pragma once

#include "common/port.h"
#include "stats/layout.h"

namespace uroce::stats {

/// Stores every field of c into s (relaxed stores) and raises the queue high-water marks.
void publish_port(const PortCounters& c, PortStats* s);

}  // namespace uroce::stats
