/**
 * @file node_api.h
 * @brief The /v1 routes every uroce node serves (docs/fabric.md "The node API";
 * docs/api/openapi.yaml), on a backend that is a switch or a host:
 *
 *   GET   /v1                   what this is: api, version, node name, role
 *   GET   /v1/state             settings + the backend's live state (ports, counters)
 *   GET   /v1/settings          the settings in force
 *   PATCH /v1/settings          a change document (settings.h); ?dry_run=1 only reports
 *   PUT   /v1/settings          a whole document: the role's defaults, then the document
 *   GET   /metrics              Prometheus text format: uroce_node_info{node, role, profile},
 *                               uroce_node_lossless (PFC on the RoCE priority),
 *                               uroce_node_pfc_enabled{priority}, uroce_node_ecn,
 *                               uroce_node_desired_in_sync (zero-touch nodes), then the
 *                               backend's own (a switch's ports, a host's programs)
 *
 * A write answers {"changed": ["key: old -> new", ...], "applied": bool, "settings": {...}}.
 * Writes are serialised: a document is applied to the settings in force when its turn comes,
 * validated whole, and handed to the backend, which applies it or refuses it as a whole.
 */
#pragma once

#include <prometheus/metric_family.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "fabric/settings.h"
#include "mgmt/http_server.h"

namespace uroce::fabric {

inline constexpr int kApiVersion = 1;

class NodeBackend {
 public:
  virtual ~NodeBackend() = default;
  virtual Role role() const = 0;
  virtual std::string name() const = 0;
  virtual Settings settings() const = 0;
  /// Makes s the node's settings: "" when done, else one line why not (nothing changed).
  virtual std::string apply(const Settings& s) = 0;
  /// The live state (ports, counters, ...) as the text of a JSON object.
  virtual std::string state_json() const = 0;
  /// The node's own metric families (GET /metrics serves them after NodeApi's node-level
  /// ones); none by default.
  virtual std::vector<prometheus::MetricFamily> metric_families() const { return {}; }
};

class NodeApi {
 public:
  /// desired: the zero-touch follower's status as a JSON object's text (desired.h), reported
  /// under "desired" in GET /v1/state; empty when the node follows no desired state.
  explicit NodeApi(NodeBackend* b, std::function<std::string()> desired = {})
      : b_(b), desired_(std::move(desired)) {}
  mgmt::Response handle(const mgmt::Request& r);

 private:
  mgmt::Response write(const mgmt::Request& r, bool whole);
  std::string metrics() const;

  NodeBackend* b_;
  std::function<std::string()> desired_;
  std::mutex write_mu_;  ///< one write at a time
};

}  // namespace uroce::fabric
