/**
 * @file port_stats.cc
 * @brief The port block of the device's stats segment (lib/stats layout.h PortStats, read by
 * `uroce show` and the exporter): what the port counts below the engine (PMD frames and drops,
 * PFC received and sent, per-priority TX), copied from Port::read_counters() by the progress
 * thread (stats::publish_port) every 100 ms and once at open. Single writer: runs under the engine
 * lock. Without a segment (or UROCE_STATS=0), or on a port that keeps no counters, it does nothing.
 */
#include <unistd.h>

#include "stats/port_publish.h"
#include "stats/proc.h"
#include "verbs/objects.h"

namespace uroce::verbs {

#ifdef UROCE_HAVE_STATS

void stats_refresh_capture(Runtime* rt) {
  if (!rt->stats) return;
  if (rt->capture) {
    if (!rt->capture->wanted()) rt->capture.reset();
    return;
  }
  static const pid_t pid = getpid();
  rt->capture =
      stats::CaptureWriter::attach(stats::capture_path(stats::run_dir(""), rt->dev->cfg.name, pid));
}

void stats_refresh_port(Runtime* rt) {
  if (!rt->stats || !rt->port) return;
  PortCounters c;
  if (!rt->port->read_counters(&c)) return;
  stats::publish_port(c, rt->stats->port());
}

#else

void stats_refresh_port(Runtime*) {}
void stats_refresh_capture(Runtime*) {}

#endif

}  // namespace uroce::verbs
