/**
 * @file desired.h
 * @brief Zero-touch provisioning (docs/fabric.md "Zero-touch"): the fabric's desired state as
 * one JSON document any HTTP server can serve (`uroce fabric serve` does, and takes the nodes'
 * reports), and the follower every node runs when started with its address: it fetches the
 * document at start and every period, makes the node's settings what the document says for it,
 * and reports in.
 *
 *   {"version": 7,
 *    "all":    {"profile": "lossless"},          change documents (settings.h), applied in
 *    "host":   {"mtu": 4096},                    this order on the role's defaults: all, the
 *    "switch": {"ecn": {"kmin_bytes": 10240}},   role's, the node's own
 *    "nodes":  {"h5": {"dscp_to_prio": {"26": 4}}}}
 */
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "fabric/node_api.h"
#include "fabric/settings.h"

namespace uroce::fabric {

/// The settings the document gives node `name` of role r; nullopt with *err (one line).
std::optional<Settings> desired_for(const std::string& doc, const std::string& name, Role r,
                                    std::string* err);

/// Where a follower of `desired_url` reports: the same server's /v1/report when the URL ends
/// in /v1/desired (`uroce fabric serve`), else "" (a static server takes no reports).
std::string report_url_for(const std::string& desired_url);

/// What the follower last saw; for GET /v1/state ("desired") and the fabric's doctor.
struct DesiredStatus {
  std::string url;
  bool fetched = false;  ///< a document was read at least once
  bool in_sync = false;  ///< the node's settings are the document's
  int64_t version = -1;  ///< the document's "version", -1 if none
  std::string error;     ///< the last fetch's or apply's problem, "" if none
  uint64_t applied = 0;  ///< times it changed the node's settings
};

/// The node's follower: a thread fetching `url` every `period`, applying through `b`, and
/// POSTing {"node", "role", "api", "in_sync", "version"} to `report_url` (when not empty).
class DesiredFollower {
 public:
  DesiredFollower(NodeBackend* b, std::string url, std::string report_url, std::string api,
                  uint32_t period_ms, std::string token);
  ~DesiredFollower();
  DesiredFollower(const DesiredFollower&) = delete;
  DesiredFollower& operator=(const DesiredFollower&) = delete;

  /// Fetches and applies once now (the constructor's thread does the same every period).
  void poll_once();
  DesiredStatus status() const;
  /// The status as a JSON object's text.
  std::string status_json() const;

 private:
  void run();

  NodeBackend* b_;
  const std::string url_, report_url_, api_, token_;
  const uint32_t period_ms_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  DesiredStatus st_;
  std::mutex poll_mu_;  ///< one poll at a time
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace uroce::fabric
