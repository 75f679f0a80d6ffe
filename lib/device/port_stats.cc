/**
 * @file port_stats.cc
 * @brief The port block of the device's stats segment (lib/stats layout.h PortStats, read by
 * `uroce show` and the exporter): what the port counts below the engine (PMD frames and drops,
 * PFC received and sent, per-priority TX), copied from Port::read_counters() by the progress
 * thread (stats::publish_port) every 100 ms and once at open; and the `uroce capture` ring the
 * tool created for this device and process (capture_tap.h). Single writer: runs under the
 * engine lock. Without a segment (or UROCE_STATS=0), or on a port that keeps no counters, it
 * does nothing.
 */
#include <unistd.h>

#include "device/runtime.h"
#ifdef UROCE_HAVE_STATS
#include "stats/port_publish.h"
#include "stats/proc.h"
#endif

namespace uroce::device {

#ifdef UROCE_HAVE_STATS

void Runtime::refresh_capture_locked() {
  if (!stats) return;
  if (capture) {
    if (!capture->wanted()) capture.reset();
    return;
  }
  static const pid_t pid = getpid();
  capture = stats::CaptureWriter::attach(stats::capture_path(stats::run_dir(""), cfg.name, pid));
}

void Runtime::refresh_port_stats_locked() {
  if (!stats || !port) return;
  PortCounters c;
  if (!port->read_counters(&c)) return;
  stats::publish_port(c, stats->port());
}

#else

void Runtime::refresh_port_stats_locked() {}
void Runtime::refresh_capture_locked() {}

#endif

}  // namespace uroce::device
