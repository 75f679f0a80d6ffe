/**
 * @file view.cc
 * @brief Samples, rates and the fabric's table (see view.h).
 */
#include "fabric/view.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

namespace uroce::fabric {

using nlohmann::json;

namespace {

uint64_t u64(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

PortCounters switch_port(const json& p) {
  PortCounters c;
  c.port = fmt::format("port {} ({})", u64(p, "port"), p.value("name", std::string()));
  c.pause_tx = u64(p, "pfc_xoff_sent") + u64(p, "pfc_xon_sent");
  c.pause_rx = u64(p, "pfc_rx");
  c.ecn_marked = u64(p, "ecn_marked");
  c.drops = u64(p, "drops") + u64(p, "mtu_drops");
  c.queue_bytes = u64(p, "queue_bytes");
  c.queue_high_water = u64(p, "queue_high_water");
  if (auto it = p.find("paused_prios"); it != p.end() && it->is_array())
    for (const json& q : *it)
      if (q.is_number_integer()) c.paused_prios.push_back(q.get<int>());
  return c;
}

PortCounters host_device(const json& d) {
  PortCounters c;
  c.port = fmt::format("{} pid {}", d.value("device", std::string("?")), u64(d, "pid"));
  if (auto it = d.find("priorities"); it != d.end() && it->is_array())
    for (const json& p : *it) {
      c.pause_tx += u64(p, "tx_prio_pause");
      c.pause_rx += u64(p, "rx_prio_pause");
    }
  const json cong = d.value("congestion", json::object());
  c.ecn_marked = u64(cong, "np_ecn_marked_roce_packets");
  c.cnp_sent = u64(cong, "np_cnp_sent");
  c.cnp_handled = u64(cong, "rp_cnp_handled");
  c.retrans = u64(d.value("reliability", json::object()), "roce_adp_retrans");
  const json pfc = d.value("pfc", json::object());
  c.storms = u64(pfc, "tx_pause_storm_warning_events") + u64(pfc, "tx_pause_storm_error_events");
  return c;
}

std::string list(const std::vector<int>& v) {
  std::string s;
  for (int p : v) s += (s.empty() ? "" : ",") + std::to_string(p);
  return s.empty() ? "-" : s;
}

}  // namespace

NodeSample sample_node(const Node& node, int status, const std::string& body,
                       const std::string& error) {
  NodeSample s;
  s.node = node;
  s.settings = defaults(node.role);
  if (status != 200) {
    s.error = status == 0 ? "no answer: " + error : "HTTP " + std::to_string(status);
    return s;
  }
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("settings") || !j.contains("state")) {
    s.error = "not a node API state document";
    return s;
  }
  if (j.value("role", std::string()) != to_string(node.role)) {
    s.error = "the inventory says " + std::string(to_string(node.role)) + ", the node says " +
              j.value("role", std::string("?"));
    return s;
  }
  std::string err;
  if (!apply_json(j["settings"].dump(), node.role, &s.settings, &err)) {
    s.error = "its settings do not parse: " + err;
    return s;
  }
  if (auto d = j.find("desired"); d != j.end() && d->is_object()) {
    s.follows_desired = true;
    s.desired_in_sync = d->value("in_sync", false);
    s.desired_error = d->value("error", std::string());
  }
  const json& st = j["state"];
  if (node.role == Role::kSwitch) {
    for (const json& p : st.value("ports", json::array())) s.ports.push_back(switch_port(p));
  } else {
    for (const json& d : st.value("drift", json::array()))
      if (d.is_string()) s.drift.push_back(d.get<std::string>());
    for (const json& d : st.value("running", json::object()).value("devices", json::array()))
      if (d.value("state", std::string()) == "running") s.ports.push_back(host_device(d));
  }
  s.ok = true;
  return s;
}

std::vector<PortRow> rows(const std::vector<NodeSample>& first,
                          const std::vector<NodeSample>& second, double seconds) {
  std::map<std::pair<std::string, std::string>, const PortCounters*> before;
  for (const NodeSample& n : first)
    for (const PortCounters& p : n.ports) before[{n.node.name, p.port}] = &p;
  std::vector<PortRow> out;
  for (const NodeSample& n : second) {
    for (const PortCounters& p : n.ports) {
      auto it = before.find({n.node.name, p.port});
      if (seconds > 0 && it == before.end()) continue;
      const PortCounters zero;
      const PortCounters& a = seconds > 0 ? *it->second : zero;
      const double div = seconds > 0 ? seconds : 1.0;
      auto rate = [&](uint64_t x, uint64_t y) {
        return y >= x ? static_cast<double>(y - x) / div : 0.0;  // a restart resets counters
      };
      PortRow r;
      r.node = n.node.name;
      r.port = p.port;
      r.role = n.node.role;
      r.pause_tx = rate(a.pause_tx, p.pause_tx);
      r.pause_rx = rate(a.pause_rx, p.pause_rx);
      r.ecn_marked = rate(a.ecn_marked, p.ecn_marked);
      r.cnp_sent = rate(a.cnp_sent, p.cnp_sent);
      r.cnp_handled = rate(a.cnp_handled, p.cnp_handled);
      r.drops = rate(a.drops, p.drops);
      r.retrans = rate(a.retrans, p.retrans);
      r.storms = p.storms;
      r.queue_bytes = p.queue_bytes;
      r.queue_high_water = p.queue_high_water;
      r.paused_prios = p.paused_prios;
      out.push_back(std::move(r));
    }
  }
  auto key = [](const PortRow& r) {
    return std::make_tuple(r.drops + r.retrans, static_cast<double>(r.storms),
                           r.pause_tx + r.pause_rx, r.cnp_sent + r.cnp_handled, r.ecn_marked);
  };
  std::stable_sort(out.begin(), out.end(),
                   [&](const PortRow& x, const PortRow& y) { return key(x) > key(y); });
  return out;
}

std::string render_table(const std::vector<NodeSample>& nodes, const std::vector<PortRow>& rows) {
  std::string out = fmt::format("{:<12} {:<6} {:<9} {:<5} {:<4} {:<5} {:>5}  {}\n", "NODE", "ROLE",
                                "PROFILE", "PFC", "ECN", "TRUST", "MTU", "API");
  for (const NodeSample& n : nodes) {
    if (!n.ok) {
      out += fmt::format("{:<12} {:<6} UNREACHABLE: {}\n", n.node.name, to_string(n.node.role),
                         n.error);
      continue;
    }
    const Settings& s = n.settings;
    out += fmt::format(
        "{:<12} {:<6} {:<9} {:<5} {:<4} {:<5} {:>5}  {}{}{}\n", n.node.name, to_string(n.node.role),
        s.profile.empty() ? "-" : s.profile, list(priorities(s.pfc_priorities)),
        s.ecn ? "on" : "off", s.trust == Trust::kDscp ? "dscp" : "pcp", s.mtu, n.node.api,
        n.drift.empty() ? "" : "  DRIFT: " + fmt::format("{}", fmt::join(n.drift, ",")),
        n.follows_desired && !n.desired_in_sync ? "  NOT AS DESIRED" : "");
  }
  out += fmt::format("\n{:<12} {:<26} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6}\n",
                     "NODE", "PORT (per second)", "DROPS", "RESENT", "PAUSE_TX", "PAUSE_RX",
                     "ECN_MARK", "CNP_TX", "CNP_RX", "QUEUE_HWM", "PAUSED");
  for (const PortRow& r : rows)
    out += fmt::format(
        "{:<12} {:<26} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} {:>9.0f} "
        "{:>9.0f} {:>10} {:>6}{}\n",
        r.node, r.port, r.drops, r.retrans, r.pause_tx, r.pause_rx, r.ecn_marked, r.cnp_sent,
        r.cnp_handled, r.queue_high_water, list(r.paused_prios),
        r.storms ? fmt::format("  STORMS {}", r.storms) : "");
  return out;
}

std::string render_json(const std::vector<NodeSample>& nodes, const std::vector<PortRow>& rows) {
  json jn = json::array();
  for (const NodeSample& n : nodes) {
    json e = {{"node", n.node.name},
              {"role", to_string(n.node.role)},
              {"api", n.node.api},
              {"reachable", n.ok}};
    if (!n.ok) e["error"] = n.error;
    if (n.ok) e["settings"] = json::parse(to_json(n.settings, n.node.role));
    if (!n.drift.empty()) e["drift"] = n.drift;
    if (n.follows_desired)
      e["desired"] = {{"in_sync", n.desired_in_sync}, {"error", n.desired_error}};
    jn.push_back(std::move(e));
  }
  json jr = json::array();
  for (const PortRow& r : rows)
    jr.push_back({{"node", r.node},
                  {"port", r.port},
                  {"role", to_string(r.role)},
                  {"drops_per_s", r.drops},
                  {"resent_per_s", r.retrans},
                  {"pause_tx_per_s", r.pause_tx},
                  {"pause_rx_per_s", r.pause_rx},
                  {"ecn_marked_per_s", r.ecn_marked},
                  {"cnp_sent_per_s", r.cnp_sent},
                  {"cnp_handled_per_s", r.cnp_handled},
                  {"storms", r.storms},
                  {"queue_bytes", r.queue_bytes},
                  {"queue_high_water", r.queue_high_water},
                  {"paused_prios", r.paused_prios}});
  return json{{"nodes", jn}, {"ports", jr}}.dump();
}

}  // namespace uroce::fabric
