/**
 * @file fabric.cc
 * @brief Topology construction, BFS routing and explicit next hops. Units: none.
 */
#include "sim/fabric.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace uroce::sim {

uint32_t Fabric::add_switch(const SwitchConfig& cfg) {
  SwitchConfig c = cfg;
  c.mac.b[5] = static_cast<uint8_t>(switches_.size());
  c.mac.b[4] = 0xff;
  switches_.push_back(std::make_unique<Switch>(sim_, c));
  adj_.emplace_back();
  return static_cast<uint32_t>(switches_.size() - 1);
}

uint32_t Fabric::add_host(HostPort* host, const MacAddr& mac, uint32_t sw, const LinkParams& p) {
  LinkParams down = p;
  down.max_frames = 0;
  down.max_bytes = 0;
  HostEntry e{host, mac, sw, 0, nullptr};
  e.sw_port = switches_[sw]->add_port(down, host, 0);
  e.uplink = std::make_unique<Link>(sim_, p, switches_[sw].get(), e.sw_port);
  host->attach(e.uplink.get());
  hosts_.push_back(std::move(e));
  return static_cast<uint32_t>(hosts_.size() - 1);
}

void Fabric::connect_switches(uint32_t a, uint32_t b, const LinkParams& p) {
  LinkParams q = p;
  q.max_frames = 0;
  q.max_bytes = 0;
  // Port numbers are assigned before the links exist, so reserve both first.
  uint32_t pa = static_cast<uint32_t>(switches_[a]->port_count());
  uint32_t pb = static_cast<uint32_t>(switches_[b]->port_count());
  switches_[a]->add_port(q, switches_[b].get(), pb);
  switches_[b]->add_port(q, switches_[a].get(), pa);
  adj_[a].push_back({pa, b});
  adj_[b].push_back({pb, a});
}

void Fabric::build_routes() {
  const uint32_t n = static_cast<uint32_t>(switches_.size());
  constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  for (const HostEntry& h : hosts_) {
    // BFS from the host's switch; each switch routes towards its BFS parent.
    std::vector<uint32_t> dist(n, kNone), via_port(n, kNone);
    std::deque<uint32_t> q{h.sw};
    dist[h.sw] = 0;
    switches_[h.sw]->add_route(h.mac, h.sw_port);
    while (!q.empty()) {
      uint32_t s = q.front();
      q.pop_front();
      for (const Adjacent& a : adj_[s]) {
        if (dist[a.neighbor] != kNone) continue;
        dist[a.neighbor] = dist[s] + 1;
        // The neighbour reaches s through its own port facing s.
        for (const Adjacent& back : adj_[a.neighbor])
          if (back.neighbor == s) {
            via_port[a.neighbor] = back.port;
            break;
          }
        switches_[a.neighbor]->add_route(h.mac, via_port[a.neighbor]);
        q.push_back(a.neighbor);
      }
    }
  }
}

int64_t Fabric::port_to(uint32_t a, uint32_t b) const {
  if (a >= adj_.size()) return -1;
  for (const Adjacent& x : adj_[a])
    if (x.neighbor == b) return x.port;
  return -1;
}

bool Fabric::set_next_hop(uint32_t sw, uint32_t host, uint32_t next) {
  if (host >= hosts_.size()) return false;
  const int64_t port = port_to(sw, next);
  if (port < 0) return false;
  switches_[sw]->add_route(hosts_[host].mac, static_cast<uint32_t>(port));
  return true;
}

}  // namespace uroce::sim
