/**
 * @file fabric_cmd.cc
 * @brief `uroce fabric` (see fabric_cmd.h).
 */
#include "fabric_cmd.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "fabric/apply.h"
#include "fabric/desired.h"
#include "fabric/doctor.h"
#include "fabric/inventory.h"
#include "fabric/view.h"
#include "mgmt/http_client.h"
#include "mgmt/http_server.h"
#include "profile_cmd.h"
#include "profile_edit.h"

namespace uroce::tool {

namespace {

std::optional<fabric::Inventory> load_inventory(const FabricOptions& o) {
  std::string path = o.inventory;
  if (path.empty()) {
    const char* env = std::getenv("UROCE_FABRIC");
    path = env && *env ? env : "/etc/uroce/fabric.toml";
  }
  std::string text, err;
  if (!read_text(path, &text)) {
    std::fprintf(stderr, "uroce fabric: %s: cannot read (name the inventory with --inventory)\n",
                 path.c_str());
    return std::nullopt;
  }
  std::optional<fabric::Inventory> inv = fabric::parse_inventory(text, path, &err);
  if (!inv) std::fprintf(stderr, "uroce fabric: %s\n", err.c_str());
  return inv;
}

fabric::Transport transport(const fabric::Inventory& inv) {
  return [timeout = inv.timeout_ms](const std::vector<mgmt::Call>& calls) {
    return mgmt::perform_all(calls, timeout);
  };
}

std::vector<fabric::NodeSample> sample(const fabric::Inventory& inv) {
  std::vector<mgmt::Call> calls;
  for (const fabric::Node& n : inv.nodes) calls.push_back({"GET", n.url("/v1/state"), "", ""});
  const std::vector<mgmt::Result> rs = mgmt::perform_all(calls, inv.timeout_ms);
  std::vector<fabric::NodeSample> out;
  for (size_t i = 0; i < inv.nodes.size(); ++i)
    out.push_back(fabric::sample_node(inv.nodes[i], rs[i].status, rs[i].body, rs[i].error));
  return out;
}

/// Two samples interval_s apart (one when 0) and the rows between them.
std::pair<std::vector<fabric::NodeSample>, std::vector<fabric::PortRow>> observe(
    const fabric::Inventory& inv, double interval_s) {
  if (interval_s <= 0) {
    auto s = sample(inv);
    return {s, fabric::rows({}, s, 0)};
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto first = sample(inv);
  std::this_thread::sleep_until(t0 + std::chrono::duration<double>(interval_s));
  const auto t1 = std::chrono::steady_clock::now();
  auto second = sample(inv);
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  auto r = fabric::rows(first, second, secs);
  return {std::move(second), std::move(r)};
}

}  // namespace

int fabric_apply(const FabricOptions& o) {
  std::optional<fabric::Inventory> inv = load_inventory(o);
  if (!inv) return 2;
  fabric::Change change;
  std::string err, text;
  const bool is_profile_name =
      o.what.find('/') == std::string::npos && o.what.find('.') == std::string::npos;
  if (is_profile_name) {
    if (!is_profile(o.what)) {
      std::fprintf(stderr,
                   "uroce fabric: unknown profile \"%s\"; known: lossless, lossy, hpc, storage (or "
                   "a change file, e.g. ./change.json)\n",
                   o.what.c_str());
      return 2;
    }
    change = fabric::profile_change(o.what);
  } else {
    std::optional<fabric::Change> c;
    if (!read_text(o.what, &text) || !(c = fabric::parse_change_file(text, &err))) {
      std::fprintf(stderr, "uroce fabric: %s: %s\n", o.what.c_str(),
                   err.empty() ? "cannot read" : err.c_str());
      return 2;
    }
    change = *c;
  }
  std::string token;
  if (!inv->token_file.empty() && !mgmt::read_token_file(inv->token_file, &token, &err)) {
    std::fprintf(stderr, "uroce fabric: token_file %s\n", err.c_str());
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  fabric::ApplyReport rep = fabric::apply_change(*inv, change, token, o.dry_run, transport(*inv));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.json) {
    nlohmann::json nodes = nlohmann::json::array();
    for (const fabric::NodeReport& n : rep.nodes)
      nodes.push_back({{"node", n.node},
                       {"outcome", fabric::to_string(n.outcome)},
                       {"changes", n.changes},
                       {"error", n.error}});
    std::printf("%s\n", nlohmann::json{{"ok", rep.ok},
                                       {"dry_run", o.dry_run},
                                       {"stopped", rep.stopped},
                                       {"seconds", secs},
                                       {"nodes", nodes}}
                            .dump()
                            .c_str());
  } else {
    for (const fabric::NodeReport& n : rep.nodes) {
      std::printf("%-12s %s%s\n", n.node.c_str(), std::string(fabric::to_string(n.outcome)).c_str(),
                  n.error.empty() ? "" : (": " + n.error).c_str());
      for (const std::string& c : n.changes) std::printf("    %s\n", c.c_str());
    }
    if (rep.ok)
      std::printf("uroce fabric: %s on %zu nodes (%.2f s)\n",
                  o.dry_run ? "every node would take the change" : "done", rep.nodes.size(), secs);
    else if (rep.stopped == "apply")
      std::printf(
          "uroce fabric: a node failed during the change; the others were put back (see "
          "each node's outcome; \"unknown\" ones need a look)\n");
    else
      std::printf("uroce fabric: stopped at the %s step: nothing was changed\n",
                  rep.stopped.c_str());
  }
  return rep.ok ? 0 : 1;
}

int fabric_show_roce(const FabricOptions& o) {
  std::optional<fabric::Inventory> inv = load_inventory(o);
  if (!inv) return 2;
  auto [nodes, rows] = observe(*inv, o.interval_s);
  std::fputs((o.json ? fabric::render_json(nodes, rows) + "\n" : fabric::render_table(nodes, rows))
                 .c_str(),
             stdout);
  for (const fabric::NodeSample& n : nodes)
    if (!n.ok) return 1;
  return 0;
}

int fabric_doctor(const FabricOptions& o) {
  std::optional<fabric::Inventory> inv = load_inventory(o);
  if (!inv) return 2;
  auto [nodes, rows] = observe(*inv, o.interval_s);
  const std::vector<fabric::Finding> f =
      fabric::diagnose(nodes, o.interval_s > 0 ? rows : std::vector<fabric::PortRow>{});
  std::fputs((o.json ? fabric::render_findings_json(f) + "\n" : fabric::render_findings(f)).c_str(),
             stdout);
  for (const fabric::Finding& x : f)
    if (x.error) return 1;
  return 0;
}

namespace {

constexpr char kRules[] =
    R"(# The fabric's alerts (uroce fabric prometheus-config; docs/fabric.md "Prometheus").
groups:
  - name: uroce-fabric
    rules:
      - alert: UroceNodeDown
        expr: up{job="uroce-fabric"} == 0
        for: 1m
        labels: {severity: critical}
        annotations:
          summary: "{{ $labels.node }} ({{ $labels.role }}): its node API does not answer"
      - alert: UrocePfcStorm
        expr: >-
          increase(rdma_tx_pause_storm_warning_events_total[5m]) > 0
          or increase(rdma_tx_pause_storm_error_events_total[5m]) > 0
        labels: {severity: critical}
        annotations:
          summary: "{{ $labels.node }}: a priority stayed paused past the storm watchdog"
      - alert: UroceCnpSurge
        expr: sum by (node) (rate(rdma_np_cnp_sent_total[1m])) > 10000
        for: 2m
        labels: {severity: warning}
        annotations:
          summary: "{{ $labels.node }} sends {{ $value }} CNPs/s: a congested hot spot"
      - alert: UroceLosslessDrops
        expr: >-
          sum by (node) (rate(uroce_switch_drops_total[1m])) > 0
          and on (node) uroce_node_lossless == 1
        labels: {severity: critical}
        annotations:
          summary: "{{ $labels.node }} drops frames although it runs lossless"
      - alert: UroceNotAsDesired
        expr: uroce_node_desired_in_sync == 0
        for: 1m
        labels: {severity: warning}
        annotations:
          summary: "{{ $labels.node }} does not have the fabric's desired state"
)";

std::atomic<bool> g_serve_stop{false};
void on_serve_signal(int) { g_serve_stop.store(true); }

/// The desired state's file, checked for both roles; "" with *err when it does not validate.
std::string read_desired(const std::string& path, std::string* err) {
  std::string text;
  if (!read_text(path, &text)) {
    *err = path + ": cannot read";
    return "";
  }
  for (fabric::Role r : {fabric::Role::kHost, fabric::Role::kSwitch})
    if (!fabric::desired_for(text, "", r, err)) {
      *err = path + ": " + *err;
      return "";
    }
  return text;
}

}  // namespace

int fabric_prometheus_config(const FabricOptions& o) {
  std::optional<fabric::Inventory> inv = load_inventory(o);
  if (!inv) return 2;
  std::string cfg = "# uroce fabric prometheus-config, from " + inv->source +
                    " (docs/fabric.md \"Prometheus\")\n"
                    "global:\n  scrape_interval: 5s\n  evaluation_interval: 5s\n"
                    "rule_files:\n  - uroce-fabric-rules.yml\n"
                    "scrape_configs:\n  - job_name: uroce-fabric\n    metrics_path: /metrics\n"
                    "    honor_labels: true\n    static_configs:\n";
  for (const fabric::Node& n : inv->nodes)
    cfg +=
        fmt::format("      - targets: [\"{}\"]\n        labels: {{node: \"{}\", role: \"{}\"}}\n",
                    n.api, n.name, fabric::to_string(n.role));
  std::string err;
  for (const auto& [file, text] : {std::pair<std::string, std::string>{"prometheus.yml", cfg},
                                   {"uroce-fabric-rules.yml", kRules}}) {
    const std::string path = o.what + "/" + file;
    if (!write_atomically(path, text, 0644, &err)) {
      std::fprintf(stderr, "uroce fabric: %s\n", err.c_str());
      return 1;
    }
    std::printf("uroce fabric: wrote %s\n", path.c_str());
  }
  return 0;
}

int fabric_serve(const FabricServeOptions& o) {
  std::string err, token;
  if (!o.token_file.empty() && !mgmt::read_token_file(o.token_file, &token, &err)) {
    std::fprintf(stderr, "uroce fabric serve: --token-file %s\n", err.c_str());
    return 2;
  }
  if (read_desired(o.state, &err).empty()) {
    std::fprintf(stderr, "uroce fabric serve: %s\n", err.c_str());
    return 2;
  }
  std::mutex mu;
  std::map<std::string, std::pair<nlohmann::json, std::chrono::steady_clock::time_point>> reports;
  auto handle = [&](const mgmt::Request& r) -> mgmt::Response {
    if (r.path == "/v1" && r.method == "GET")
      return {200, nlohmann::json{{"api", "uroce-fabric"}, {"version", 1}}.dump()};
    if (r.path == "/v1/desired" && r.method == "GET") {
      std::string e;
      std::string text = read_desired(o.state, &e);
      if (text.empty()) return mgmt::error(503, e + " (the nodes keep what they have)");
      return {200, text};
    }
    if (r.path == "/v1/report" && r.method == "POST") {
      nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
      if (!j.is_object() || !j.contains("node") || !j["node"].is_string())
        return mgmt::error(400, "a report is {\"node\": NAME, ...}");
      std::lock_guard<std::mutex> lock(mu);
      if (reports.size() >= 100000 && !reports.count(j["node"].get<std::string>()))
        return mgmt::error(507, "too many nodes");
      reports[j["node"].get<std::string>()] = {j, std::chrono::steady_clock::now()};
      return {200, "{}"};
    }
    if (r.path == "/v1/nodes" && r.method == "GET") {
      std::lock_guard<std::mutex> lock(mu);
      nlohmann::json a = nlohmann::json::array();
      const auto now = std::chrono::steady_clock::now();
      for (const auto& [name, rep] : reports) {
        nlohmann::json e = rep.first;
        e["seen_s_ago"] = std::chrono::duration<double>(now - rep.second).count();
        a.push_back(std::move(e));
      }
      return {200, nlohmann::json{{"nodes", a}}.dump()};
    }
    return mgmt::error(404, "no such resource: " + r.method + " " + r.path);
  };
  std::unique_ptr<mgmt::Server> server =
      mgmt::Server::start(mgmt::ServerOptions{.listen = o.listen, .token = token}, handle, &err);
  if (!server) {
    std::fprintf(stderr, "uroce fabric serve: --listen: %s\n", err.c_str());
    return 1;
  }
  std::printf("uroce fabric serve: %s on %s (port %u)\n", o.state.c_str(), o.listen.c_str(),
              server->port());
  std::fflush(stdout);
  std::signal(SIGINT, on_serve_signal);
  std::signal(SIGTERM, on_serve_signal);
  std::mutex wait_mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(wait_mu);
  while (!g_serve_stop.load()) cv.wait_for(lock, std::chrono::milliseconds(100));
  return 0;
}

}  // namespace uroce::tool
