/**
 * @file node_api.cc
 * @brief The /v1 routes (see node_api.h).
 */
#include "fabric/node_api.h"

#include <prometheus/text_serializer.h>

#include <nlohmann/json.hpp>

namespace uroce::fabric {

using nlohmann::json;

mgmt::Response NodeApi::handle(const mgmt::Request& r) {
  const bool get = r.method == "GET" || r.method == "HEAD";
  if (r.path == "/v1" || r.path == "/v1/") {
    if (!get) return mgmt::error(405, "GET only");
    return {200, json{{"api", "uroce-node"},
                      {"version", kApiVersion},
                      {"node", b_->name()},
                      {"role", to_string(b_->role())}}
                     .dump()};
  }
  if (r.path == "/v1/settings") {
    if (get) return {200, to_json(b_->settings(), b_->role())};
    if (r.method == "PATCH") return write(r, false);
    if (r.method == "PUT") return write(r, true);
    return mgmt::error(405, "GET, PATCH or PUT");
  }
  if (r.path == "/v1/state") {
    if (!get) return mgmt::error(405, "GET only");
    json state = json::parse(b_->state_json(), nullptr, false);
    if (state.is_discarded()) return mgmt::error(500, "the node's state is not JSON");
    json doc{{"node", b_->name()},
             {"role", to_string(b_->role())},
             {"settings", json::parse(to_json(b_->settings(), b_->role()))},
             {"state", std::move(state)}};
    if (desired_) doc["desired"] = json::parse(desired_(), nullptr, false);
    return {200, doc.dump()};
  }
  if (r.path == "/metrics") {
    if (!get) return mgmt::error(405, "GET only");
    return {200, metrics(), "text/plain; version=0.0.4"};
  }
  return mgmt::error(404, "no such resource: " + r.path + " (see GET /v1)");
}

std::string NodeApi::metrics() const {
  const Settings s = b_->settings();
  const std::vector<prometheus::ClientMetric::Label> node = {
      {"node", b_->name()}, {"role", std::string(to_string(b_->role()))}};
  std::vector<prometheus::MetricFamily> fams;
  auto gauge = [&](const char* name, const char* help) -> prometheus::MetricFamily& {
    return fams.emplace_back(
        prometheus::MetricFamily{name, help, prometheus::MetricType::Gauge, {}});
  };
  auto add = [](prometheus::MetricFamily& f, std::vector<prometheus::ClientMetric::Label> labels,
                double v) {
    prometheus::ClientMetric m;
    m.label = std::move(labels);
    m.gauge.value = v;
    f.metric.push_back(std::move(m));
  };
  auto with = [&](std::string name, std::string value) {
    auto l = node;
    l.push_back({std::move(name), std::move(value)});
    return l;
  };
  add(gauge("uroce_node_info", "The node's role and profile."), with("profile", s.profile), 1);
  add(gauge("uroce_node_lossless", "1 when PFC protects the priority RoCE data travels on."), node,
      (s.pfc_priorities >> s.roce_prio()) & 1);
  auto& pfc = gauge("uroce_node_pfc_enabled", "1 for each priority PFC protects.");
  for (int p = 0; p < 8; ++p)
    add(pfc, with("priority", std::to_string(p)), (s.pfc_priorities >> p) & 1);
  add(gauge("uroce_node_ecn", "1 when the node marks (switch) or sends ECT (host)."), node,
      s.ecn ? 1 : 0);
  if (desired_) {
    json d = json::parse(desired_(), nullptr, false);
    if (d.is_object())
      add(gauge("uroce_node_desired_in_sync", "1 when the node has the fabric's desired state."),
          node, d.value("in_sync", false) ? 1 : 0);
  }
  for (prometheus::MetricFamily& f : b_->metric_families()) fams.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(fams);
}

mgmt::Response NodeApi::write(const mgmt::Request& r, bool whole) {
  std::lock_guard<std::mutex> lock(write_mu_);
  const Settings before = b_->settings();
  Settings next = whole ? defaults(b_->role()) : before;
  std::string err;
  if (!apply_json(r.body, b_->role(), &next, &err)) return mgmt::error(400, err);
  const std::vector<std::string> changed = diff(before, next, b_->role());
  const bool dry = mgmt::query_flag(r.query, "dry_run");
  if (!dry && !changed.empty()) {
    err = b_->apply(next);
    if (!err.empty()) return mgmt::error(503, "not applied: " + err);
  }
  return {200, json{{"changed", changed},
                    {"applied", !dry && !changed.empty()},
                    {"settings", json::parse(to_json(dry ? before : next, b_->role()))}}
                   .dump()};
}

}  // namespace uroce::fabric
