/**
 * @file doctor.cc
 * @brief diagnose (see doctor.h).
 */
#include "fabric/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace uroce::fabric {

namespace {

/// RoCE frame overhead above the RoCE MTU in an IP packet: IPv6 (40) + UDP (8) + BTH (12) +
/// RETH (16) + ICRC (4), the largest of the usual first packets.
constexpr uint32_t kRoceIpOverhead = 80;

std::string names(const std::vector<std::string>& v) {
  return fmt::format("{}", fmt::join(v, ", "));
}

/// value -> the nodes that have it; and the value most nodes have (ties: the smallest).
template <class V>
struct Groups {
  std::map<V, std::vector<std::string>> by;
  void add(const V& v, const std::string& n) { by[v].push_back(n); }
  V majority() const {
    auto best = by.begin();
    for (auto it = by.begin(); it != by.end(); ++it)
      if (it->second.size() > best->second.size()) best = it;
    return best->first;
  }
  std::vector<std::string> others() const {
    std::vector<std::string> out;
    const V m = majority();
    for (const auto& [v, ns] : by)
      if (v != m) out.insert(out.end(), ns.begin(), ns.end());
    return out;
  }
};

std::string prio_list(uint8_t mask) {
  return fmt::format("[{}]", fmt::join(priorities(mask), ","));
}

}  // namespace

std::vector<Finding> diagnose(const std::vector<NodeSample>& samples,
                              const std::vector<PortRow>& rates) {
  std::vector<Finding> out;
  std::vector<const NodeSample*> hosts, switches, up;
  for (const NodeSample& s : samples) {
    if (!s.ok) {
      out.push_back({"unreachable",
                     true,
                     {s.node.name},
                     s.node.name + " did not answer: " + s.error,
                     "check that its API runs (uroce serve on a host, uroce-switch --api) and "
                     "the inventory's address " +
                         s.node.api});
      continue;
    }
    up.push_back(&s);
    (s.node.role == Role::kHost ? hosts : switches).push_back(&s);
  }
  if (up.empty()) return out;

  // The DSCPs the hosts send (the most common, if they differ: roce-priority names them).
  Groups<int> roce_dscp, cnp_dscp;
  for (const NodeSample* h : hosts) {
    roce_dscp.add(h->settings.roce_dscp, h->node.name);
    cnp_dscp.add(h->settings.cnp_dscp, h->node.name);
  }
  const int data_dscp = hosts.empty() ? 26 : roce_dscp.majority();
  const int cnp = hosts.empty() ? 48 : cnp_dscp.majority();
  if (roce_dscp.by.size() > 1)
    out.push_back(
        {"roce-priority", true, roce_dscp.others(),
         fmt::format("hosts send RoCE data with different DSCPs: {} use another than "
                     "DSCP {} (the others)",
                     names(roce_dscp.others()), data_dscp),
         fmt::format("uroce fabric apply a change with {{\"all\": {{\"roce_dscp\": {}}}}}",
                     data_dscp)});
  for (auto [what, dscp] : {std::pair<const char*, int>{"RoCE data", data_dscp}, {"CNPs", cnp}}) {
    Groups<int> prio;
    for (const NodeSample* n : up) prio.add(n->settings.dscp_to_prio[dscp & 63], n->node.name);
    if (prio.by.size() > 1) {
      const int m = prio.majority();
      std::string detail;
      for (const auto& [p, ns] : prio.by)
        detail += fmt::format("; priority {} on {}", p, names(ns));
      out.push_back(
          {"roce-priority", true, prio.others(),
           fmt::format("{} (DSCP {}) travel on different priorities{}: a switch pauses "
                       "and queues them on one class, a host on another",
                       what, dscp, detail),
           fmt::format("to put DSCP {} on priority {} everywhere, uroce fabric apply a change "
                       "file {{\"all\": {{\"dscp_to_prio\": {{\"{}\": {}}}, \"profile\": "
                       "\"lossless\"}}}}; uroce fabric apply PROFILE instead puts every node back "
                       "on the default map (DSCP {} on priority {}) with that profile",
                       dscp, m, dscp, m, dscp, dscp >> 3)});
    }
  }

  // PFC: the lossless priority as most nodes map RoCE data; who protects it, who does not.
  Groups<int> data_prio;
  for (const NodeSample* n : up)
    data_prio.add(n->settings.dscp_to_prio[data_dscp & 63], n->node.name);
  const int lossless = data_prio.majority();
  Groups<uint8_t> masks;
  for (const NodeSample* n : up) masks.add(n->settings.pfc_priorities, n->node.name);
  if (masks.by.size() > 1) {
    std::vector<std::string> with, without;
    for (const NodeSample* n : up)
      ((n->settings.pfc_priorities >> lossless) & 1 ? with : without).push_back(n->node.name);
    std::string detail;
    for (const auto& [m, ns] : masks.by)
      detail += fmt::format("; PFC {} on {}", prio_list(m), names(ns));
    out.push_back(
        {"pfc-mismatch", true, masks.others(),
         with.empty() || without.empty()
             ? fmt::format("nodes pause different priorities{}", detail)
             : fmt::format("PFC protects priority {} (RoCE data) on {} but not on {}: frames "
                           "a node there cannot take are dropped, not paused{}",
                           lossless, names(with), names(without), detail),
         "uroce fabric apply lossless (or lossy) so that every node agrees"});
  }
  for (const NodeSample* sw : switches)
    for (const NodeSample* h : hosts)
      if (sw->settings.trust == Trust::kPcp && h->settings.trust == Trust::kDscp) {
        out.push_back({"trust",
                       false,
                       {sw->node.name},
                       fmt::format("{} classifies by PCP while hosts classify by DSCP: untagged "
                                   "RoCE frames land on priority 0 there",
                                   sw->node.name),
                       fmt::format("trust DSCP on {}: uroce fabric apply a change with "
                                   "{{\"switch\": {{\"trust\": \"dscp\"}}}}",
                                   sw->node.name)});
        break;
      }

  // ECN: switches must mark where hosts run DCQCN.
  std::vector<std::string> dcqcn_hosts, no_ecn_hosts;
  for (const NodeSample* h : hosts) {
    if (h->settings.dcqcn && h->settings.ecn) dcqcn_hosts.push_back(h->node.name);
    if (!h->settings.ecn) no_ecn_hosts.push_back(h->node.name);
  }
  std::vector<std::string> no_mark;
  for (const NodeSample* sw : switches)
    if (!sw->settings.ecn) no_mark.push_back(sw->node.name);
  if (!dcqcn_hosts.empty() && !no_mark.empty())
    out.push_back(
        {"ecn-off", true, no_mark,
         fmt::format("ECN marking is off on {} while {} run DCQCN: they never learn of "
                     "congestion there, and its queue grows to PFC or to drops",
                     names(no_mark), names(dcqcn_hosts)),
         "uroce fabric apply a change with {\"switch\": {\"ecn\": {\"enabled\": true}}}"});
  if (!no_ecn_hosts.empty() && no_ecn_hosts.size() < hosts.size())
    out.push_back({"ecn-off", false, no_ecn_hosts,
                   fmt::format("{} send RoCE data without ECT: switches cannot mark it, DCQCN "
                               "does not slow them",
                               names(no_ecn_hosts)),
                   "uroce fabric apply a change with {\"host\": {\"ecn\": {\"enabled\": true}}}"});

  // MTU: every host's largest RoCE packet through every switch.
  for (const NodeSample* sw : switches) {
    std::vector<std::string> big;
    uint32_t largest = 0;
    for (const NodeSample* h : hosts)
      if (h->settings.mtu + kRoceIpOverhead > sw->settings.mtu) {
        big.push_back(h->node.name);
        largest = std::max(largest, h->settings.mtu);
      }
    if (!big.empty())
      out.push_back({"mtu", true, big,
                     fmt::format("{} send RoCE packets of up to {} bytes of IP (RoCE MTU {}), "
                                 "more than {} forwards ({}): they are dropped there",
                                 names(big), largest + kRoceIpOverhead, largest, sw->node.name,
                                 sw->settings.mtu),
                     fmt::format("raise {}'s MTU to at least {}, or lower the hosts' RoCE MTU",
                                 sw->node.name, largest + kRoceIpOverhead)});
  }

  Groups<std::string> profiles;
  for (const NodeSample* n : up)
    profiles.add(n->settings.profile.empty() ? "(none)" : n->settings.profile, n->node.name);
  if (profiles.by.size() > 1) {
    std::string detail;
    for (const auto& [p, ns] : profiles.by) detail += fmt::format("; {} on {}", p, names(ns));
    out.push_back({"profile", false, profiles.others(),
                   fmt::format("nodes run different profiles{}", detail.substr(0)),
                   fmt::format("uroce fabric apply {}", profiles.majority() == "(none)"
                                                            ? std::string("PROFILE")
                                                            : profiles.majority())});
  }
  for (const NodeSample* n : up)
    if (n->follows_desired && !n->desired_in_sync)
      out.push_back({"desired-state",
                     true,
                     {n->node.name},
                     fmt::format("{} does not have the fabric's desired state{}", n->node.name,
                                 n->desired_error.empty() ? "" : ": " + n->desired_error),
                     "fix what its error says (the document, the node's reachability of the "
                     "desired-state server); the node applies the document again every period"});
  for (const NodeSample* h : hosts)
    if (!h->drift.empty())
      out.push_back({"drift",
                     false,
                     {h->node.name},
                     fmt::format("on {}, devices {} have other settings than the first device "
                                 "(edited by hand?)",
                                 h->node.name, names(h->drift)),
                     "uroce fabric apply PROFILE (a write sets every device of a host alike)"});

  // Counters: storms, CNPs without marks, drops where the fabric is lossless.
  std::vector<PortRow> totals;
  if (rates.empty()) totals = rows({}, samples, 0);
  const std::vector<PortRow>& r = rates.empty() ? totals : rates;
  uint64_t cnps = 0, marks = 0;
  std::vector<std::string> cnp_hosts;
  bool all_lossless = !switches.empty();
  for (const NodeSample* sw : switches)
    all_lossless &= (sw->settings.pfc_priorities >> lossless) & 1;
  for (const PortRow& p : r) {
    if (p.storms > 0)
      out.push_back({"pfc-storm",
                     true,
                     {p.node},
                     fmt::format("{} {}: the pause-storm watchdog fired {} times (a peer pauses "
                                 "without end)",
                                 p.node, p.port, p.storms),
                     "find the port that sends the pauses (PAUSE_TX in uroce fabric show roce) "
                     "and the receiver that cannot drain"});
    if (p.role == Role::kHost && p.cnp_sent > 0) {
      cnps += static_cast<uint64_t>(p.cnp_sent);
      if (std::find(cnp_hosts.begin(), cnp_hosts.end(), p.node) == cnp_hosts.end())
        cnp_hosts.push_back(p.node);
    }
    if (p.role == Role::kSwitch) marks += static_cast<uint64_t>(p.ecn_marked);
    if (p.role == Role::kSwitch && p.drops > 0 && all_lossless)
      out.push_back(
          {"drops-lossless",
           true,
           {p.node},
           fmt::format("{} {} dropped frames ({:.0f}{}) although every switch pauses "
                       "priority {}: its buffer is smaller than what PFC lets in, or "
                       "the drops are on another priority",
                       p.node, p.port, p.drops, rates.empty() ? " in all" : "/s", lossless),
           "lower pfc.xoff_bytes (uroce fabric apply storage / a change) or check "
           "which priority the dropped frames carry"});
  }
  if (cnps > 0 && marks == 0 && !switches.empty())
    out.push_back({"cnp-without-ecn", false, cnp_hosts,
                   fmt::format("{} sent CNPs but no switch in the inventory marked ECN: something "
                               "outside it marks, or the hosts' counters are from earlier traffic",
                               names(cnp_hosts)),
                   "add the marking device to the inventory, or look at ECN_MARK over an "
                   "interval (uroce fabric show roce)"});
  return out;
}

std::string render_findings(const std::vector<Finding>& f) {
  if (f.empty()) return "uroce fabric doctor: no problem found\n";
  std::string out;
  for (const Finding& x : f)
    out += fmt::format("{} [{}] {}\n  nodes: {}\n  fix: {}\n", x.error ? "ERROR" : "WARNING",
                       x.check, x.what, names(x.nodes), x.fix);
  return out;
}

std::string render_findings_json(const std::vector<Finding>& f) {
  nlohmann::json a = nlohmann::json::array();
  for (const Finding& x : f)
    a.push_back({{"check", x.check},
                 {"severity", x.error ? "error" : "warning"},
                 {"nodes", x.nodes},
                 {"what", x.what},
                 {"fix", x.fix}});
  return nlohmann::json{{"findings", a}}.dump();
}

}  // namespace uroce::fabric
