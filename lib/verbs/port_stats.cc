/**
 * @file port_stats.cc
 * @brief The port block of the device's stats segment (lib/stats layout.h PortStats, read by
 * `uroce show` and the exporter): what the port counts below the engine (PMD frames and drops,
 * PFC received and sent, per-priority TX), copied from Port::read_counters() by the progress
 * thread every 100 ms and once at open. Single writer: runs under the engine lock. Without a
 * segment (or UROCE_STATS=0), or on a port that keeps no counters, it does nothing.
 */
#include <unistd.h>

#include <algorithm>

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
  stats::PortStats* s = rt->stats->port();
  using stats::load;
  using stats::store;
  for (int p = 0; p < PortCounters::kPriorities; ++p) {
    store(s->rx_prio_pause[p], c.rx_prio_pause[p]);
    store(s->rx_prio_pause_duration[p], c.rx_prio_pause_duration[p]);
    store(s->rx_prio_pause_transition[p], c.rx_prio_pause_transition[p]);
    store(s->tx_prio_pause[p], c.tx_prio_pause[p]);
    store(s->tx_prio_pause_duration[p], c.tx_prio_pause_duration[p]);
    store(s->tx_prio_packets[p], c.tx_prio_packets[p]);
    store(s->tx_prio_bytes[p], c.tx_prio_bytes[p]);
    store(s->rx_prio_packets[p], c.rx_prio_packets[p]);
    store(s->rx_prio_bytes[p], c.rx_prio_bytes[p]);
    store(s->rx_prio_marked[p], c.rx_prio_marked[p]);
    store(s->tx_prio_queue_depth[p], c.tx_prio_queue_depth[p]);
    store(s->tx_prio_queue_high_water[p],
          std::max(load(s->tx_prio_queue_high_water[p]), c.tx_prio_queue_depth[p]));
  }
  store(s->rx_global_pause, c.rx_global_pause);
  store(s->tx_pause_storm_warning_events, c.tx_pause_storm_warning_events);
  store(s->tx_pause_storm_error_events, c.tx_pause_storm_error_events);
  store(s->link_speed_mbps, c.link_speed_mbps);
  store(s->rx_packets_phy, c.rx_packets_phy);
  store(s->tx_packets_phy, c.tx_packets_phy);
  store(s->rx_discards_phy, c.rx_discards_phy);
  store(s->tx_errors_phy, c.tx_errors_phy);
}

#else

void stats_refresh_port(Runtime*) {}
void stats_refresh_capture(Runtime*) {}

#endif

}  // namespace uroce::verbs
