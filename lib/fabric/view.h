/**
 * @file view.h
 * @brief One view of a fabric (docs/fabric.md "uroce fabric show roce"): every node's settings
 * and, per port (a switch's port, a host's running device), what it paused, marked, dropped
 * and resent, as rates between two samples of GET /v1/state, worst first.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/inventory.h"
#include "fabric/settings.h"

namespace uroce::fabric {

/// One port's counters, as read from a node's state (cumulative).
struct PortCounters {
  std::string port;          ///< "port 0 (net_memif0)", "uroce0 pid 1234"
  uint64_t pause_tx = 0;     ///< PFC frames sent (XOFF and XON; a host's tx_prio*_pause)
  uint64_t pause_rx = 0;     ///< PFC frames received
  uint64_t ecn_marked = 0;   ///< switch: frames it marked CE; host: CE-marked packets received
  uint64_t cnp_sent = 0;     ///< host: CNPs its notification point sent
  uint64_t cnp_handled = 0;  ///< host: CNPs its reaction point acted on
  uint64_t drops = 0;        ///< switch: buffer and MTU drops
  uint64_t retrans = 0;      ///< host: packets resent (roce_adp_retrans)
  uint64_t storms = 0;       ///< host: pause-storm watchdog events
  uint64_t queue_bytes = 0, queue_high_water = 0;  ///< switch
  std::vector<int> paused_prios;                   ///< switch: paused by its peer now
};

/// One node as sampled.
struct NodeSample {
  Node node;
  bool ok = false;
  std::string error;  ///< why it could not be read
  Settings settings;
  std::vector<PortCounters> ports;
  std::vector<std::string> drift;  ///< host: devices whose settings differ from the first's
  /// Zero-touch (desired.h): whether the node follows a desired state, and whether it has it.
  bool follows_desired = false;
  bool desired_in_sync = false;
  std::string desired_error;
};

/// A node from its GET /v1/state answer (status 0 = no answer).
NodeSample sample_node(const Node& node, int status, const std::string& body,
                       const std::string& error);

/// One port's rates between two samples (per second) and its latest levels.
struct PortRow {
  std::string node, port;
  Role role = Role::kHost;
  double pause_tx = 0, pause_rx = 0, ecn_marked = 0, cnp_sent = 0, cnp_handled = 0, drops = 0,
         retrans = 0;
  uint64_t storms = 0, queue_bytes = 0, queue_high_water = 0;
  std::vector<int> paused_prios;
};

/// Rows of the ports both samples have, rates over `seconds` (0: the second sample's
/// cumulative values), worst first: losses (drops, resends), then pauses, CNPs, ECN marks.
std::vector<PortRow> rows(const std::vector<NodeSample>& first,
                          const std::vector<NodeSample>& second, double seconds);

/// The table `uroce fabric show roce` prints.
std::string render_table(const std::vector<NodeSample>& nodes, const std::vector<PortRow>& rows);
/// The same as JSON.
std::string render_json(const std::vector<NodeSample>& nodes, const std::vector<PortRow>& rows);

}  // namespace uroce::fabric
