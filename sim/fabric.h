/**
 * @file fabric.h
 * @brief Builds topologies: switches, hosts attached to switches, switch-to-switch links,
 * and static shortest-path forwarding tables (BFS over the switch graph, ties broken by the
 * lower port number, so routes are deterministic), which explicit next hops may then
 * override one (switch, destination host) at a time, for routes that are not shortest (a ring
 * taken the long way round, an up-down violation). Every connection is a pair of Links, one per
 * direction. Units: as LinkParams.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/types.h"
#include "sim/link.h"
#include "sim/simulator.h"
#include "sim/switch.h"

namespace uroce::sim {

class Fabric {
 public:
  explicit Fabric(Simulator& sim) : sim_(sim) {}

  /// Adds a switch; returns its index.
  uint32_t add_switch(const SwitchConfig& cfg = {});
  /// Attaches `host` (not owned) with address `mac` to switch `sw` by a link pair with `p`
  /// (the host-side queue limit applies to the host's uplink only). Returns the host index.
  uint32_t add_host(HostPort* host, const MacAddr& mac, uint32_t sw, const LinkParams& p);
  /// Joins two switches by a link pair.
  void connect_switches(uint32_t a, uint32_t b, const LinkParams& p);
  /// Fills every switch's forwarding table; call after the topology is complete.
  void build_routes();
  /// Switch `sw` forwards frames for host `host` to its neighbour `next` (after build_routes(),
  /// which would overwrite it). Nothing checks that the routes stay loop-free. False when `next`
  /// is not joined to `sw` or an index is out of range.
  bool set_next_hop(uint32_t sw, uint32_t host, uint32_t next);
  /// The port of switch `a` facing switch `b`, or -1 when they are not joined.
  int64_t port_to(uint32_t a, uint32_t b) const;

  Switch& sw(uint32_t i) { return *switches_[i]; }
  /// The link from switch `a` to switch `b` (joined by connect_switches()).
  Link& link(uint32_t a, uint32_t b) {
    return switches_[a]->egress(static_cast<uint32_t>(port_to(a, b)));
  }
  /// The link host `h` transmits on.
  Link& uplink(uint32_t h) { return *hosts_[h].uplink; }
  /// The link that delivers to host `h` (its switch's egress port).
  Link& downlink(uint32_t h) { return switches_[hosts_[h].sw]->egress(hosts_[h].sw_port); }
  size_t host_count() const { return hosts_.size(); }
  size_t switch_count() const { return switches_.size(); }

 private:
  struct HostEntry {
    HostPort* port;
    MacAddr mac;
    uint32_t sw;
    uint32_t sw_port;
    std::unique_ptr<Link> uplink;
  };
  struct Adjacent {
    uint32_t port;      ///< local port
    uint32_t neighbor;  ///< switch index on the other end
  };

  Simulator& sim_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<std::vector<Adjacent>> adj_;
  std::vector<HostEntry> hosts_;
};

}  // namespace uroce::sim
