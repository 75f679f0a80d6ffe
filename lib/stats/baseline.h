/**
 * @file baseline.h
 * @brief `uroce clear counters` without touching the owner's counters: the current values are
 * saved beside the segment as `<segment>.baseline` (text, written atomically), and readers
 * that show counters subtract it. The Prometheus exporter ignores baselines: it exports the
 * raw cumulative values, as Prometheus counters must only grow. TX queue high-water marks are
 * gauges, not baselined: clearing resets them in the segment to the current depth (when the
 * segment file is writable for the caller).
 *
 * A baseline names the owner's pid and start time, so one left by an earlier program with
 * the same pid is ignored. The owner removes it with the segment.
 */
#pragma once

#include <string>

#include "stats/reader.h"

namespace uroce::stats {

/// Saves s's cumulative values as the new zero point and resets the high-water marks.
/// @return false with *err = one line when the baseline cannot be written.
bool clear_counters(const Snapshot& s, std::string* err);

/// Subtracts the segment's baseline (if any, and if it is this owner's) from the cumulative
/// values of *s. A value below its baseline (should not happen) is left as is.
/// @return true when a baseline was applied.
bool apply_baseline(Snapshot* s);

}  // namespace uroce::stats
