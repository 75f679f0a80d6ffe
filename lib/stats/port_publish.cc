/**
 * @file port_publish.cc
 * @brief PortCounters -> PortStats (port_publish.h).
 */
#include "stats/port_publish.h"

#include <algorithm>

namespace uroce::stats {

void publish_port(const PortCounters& c, PortStats* s) {
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

}  // namespace uroce::stats
