/**
 * @file desired.cc
 * @brief desired_for and DesiredFollower (see desired.h).
 */
#include "fabric/desired.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "mgmt/http_client.h"

namespace uroce::fabric {

using nlohmann::json;

std::optional<Settings> desired_for(const std::string& doc, const std::string& name, Role r,
                                    std::string* err) {
  if (doc.size() > 16u * kMaxBodyBytes) {
    *err = "the desired state is larger than " + std::to_string(16u * kMaxBodyBytes) + " bytes";
    return std::nullopt;
  }
  json j = json::parse(doc, nullptr, false);
  if (!j.is_object()) {
    *err = "the desired state is not a JSON object";
    return std::nullopt;
  }
  for (const auto& [k, v] : j.items())
    if (k != "version" && k != "all" && k != "host" && k != "switch" && k != "nodes") {
      *err = k + ": unknown key; allowed: version, all, host, switch, nodes";
      return std::nullopt;
    }
  if (j.contains("version") && !j["version"].is_number_integer()) {
    *err = "version: not an integer";
    return std::nullopt;
  }
  Settings s = defaults(r);
  auto layer = [&](const json& d, const std::string& where) {
    if (!d.is_object()) {
      *err = where + ": not a change document (a JSON object)";
      return false;
    }
    std::string e;
    if (!apply_json(d.dump(), r, &s, &e)) {
      *err = where + "." + e;
      return false;
    }
    return true;
  };
  if (j.contains("all") && !layer(j["all"], "all")) return std::nullopt;
  const std::string role(to_string(r));
  if (j.contains(role) && !layer(j[role], role)) return std::nullopt;
  if (j.contains("nodes")) {
    if (!j["nodes"].is_object()) {
      *err = "nodes: not an object {\"name\": change document}";
      return std::nullopt;
    }
    if (j["nodes"].contains(name) && !layer(j["nodes"][name], "nodes." + name)) return std::nullopt;
  }
  return s;
}

std::string report_url_for(const std::string& desired_url) {
  constexpr std::string_view kPath = "/v1/desired";
  if (desired_url.size() < kPath.size() ||
      desired_url.compare(desired_url.size() - kPath.size(), kPath.size(), kPath) != 0)
    return "";
  return desired_url.substr(0, desired_url.size() - kPath.size()) + "/v1/report";
}

DesiredFollower::DesiredFollower(NodeBackend* b, std::string url, std::string report_url,
                                 std::string api, uint32_t period_ms, std::string token)
    : b_(b),
      url_(std::move(url)),
      report_url_(std::move(report_url)),
      api_(std::move(api)),
      token_(std::move(token)),
      period_ms_(period_ms) {
  st_.url = url_;
  thread_ = std::thread([this] { run(); });
}

DesiredFollower::~DesiredFollower() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void DesiredFollower::run() {
  for (;;) {
    poll_once();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(period_ms_), [&] { return stop_; })) return;
  }
}

void DesiredFollower::poll_once() {
  std::lock_guard<std::mutex> poll(poll_mu_);
  DesiredStatus next = status();
  const mgmt::Result r = mgmt::perform({"GET", url_, "", ""}, 5000);
  std::string err;
  std::optional<Settings> want;
  if (!r.ok()) {
    err = r.status == 0 ? "cannot fetch " + url_ + ": " + r.error
                        : url_ + ": HTTP " + std::to_string(r.status);
  } else if (!(want = desired_for(r.body, b_->name(), b_->role(), &err))) {
    err = url_ + ": " + err;
  } else {
    next.fetched = true;
    json j = json::parse(r.body, nullptr, false);
    next.version = j.is_object() && j.contains("version") && j["version"].is_number_integer()
                       ? j["version"].get<int64_t>()
                       : -1;
    if (!(b_->settings() == *want)) {
      err = b_->apply(*want);
      if (err.empty()) ++next.applied;
    }
  }
  // Out of sync when the node's settings are not the document's (or no document was read).
  next.in_sync = want && b_->settings() == *want;
  next.error = err;
  {
    std::lock_guard<std::mutex> lock(mu_);
    st_ = next;
  }
  if (!report_url_.empty())
    mgmt::perform({"POST", report_url_,
                   json{{"node", b_->name()},
                        {"role", to_string(b_->role())},
                        {"api", api_},
                        {"in_sync", next.in_sync},
                        {"version", next.version},
                        {"error", next.error}}
                       .dump(),
                   token_},
                  2000);
}

DesiredStatus DesiredFollower::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return st_;
}

std::string DesiredFollower::status_json() const {
  const DesiredStatus s = status();
  return json{{"url", s.url},         {"fetched", s.fetched}, {"in_sync", s.in_sync},
              {"version", s.version}, {"error", s.error},     {"applied", s.applied}}
      .dump();
}

}  // namespace uroce::fabric
