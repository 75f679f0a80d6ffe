/**
 * @file serve.cc
 * @brief `uroce serve` (see serve.h).
 */
#include "serve.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "exporter.h"
#include "fabric/desired.h"
#include "fabric/node_api.h"
#include "mgmt/http_server.h"
#include "profile_cmd.h"
#include "settings_edit.h"
#include "show.h"

namespace uroce::tool {

namespace {

std::mutex g_mu;
std::condition_variable g_cv;
std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

/// A host as a node: its configuration file and its running programs.
class HostNode : public fabric::NodeBackend {
 public:
  HostNode(std::string name, std::string path, std::string run_dir)
      : name_(std::move(name)), path_(std::move(path)), run_dir_(std::move(run_dir)) {}

  fabric::Role role() const override { return fabric::Role::kHost; }
  std::string name() const override { return name_; }

  fabric::Settings settings() const override {
    std::string err;
    std::optional<config::Config> cfg = read(&err);
    if (!cfg || cfg->devices.empty()) return fabric::defaults(fabric::Role::kHost);
    return host_settings(cfg->devices.front());
  }

  std::string apply(const fabric::Settings& s) override {
    std::lock_guard<std::mutex> lock(file_mu_);
    std::string before, after, err;
    if (!read_text(path_, &before)) return path_ + ": cannot read: " + std::strerror(errno);
    if (!write_host_settings(before, path_, s, &after, &err)) return err;
    if (!write_atomically_with_backup(path_, before, after, &err)) return err;
    return "";
  }

  /// The running programs' counters, as `uroce exporter` serves them.
  std::vector<prometheus::MetricFamily> metric_families() const override {
    return exporter::collect_families(run_dir_);
  }

  std::string state_json() const override {
    nlohmann::json j;
    j["config"] = path_;
    std::string err;
    std::optional<config::Config> cfg = read(&err);
    if (!cfg) {
      j["config_error"] = err;
    } else {
      // Devices whose settings differ from the first's (the one the API reports).
      nlohmann::json drift = nlohmann::json::array();
      for (size_t i = 1; i < cfg->devices.size(); ++i)
        if (!(host_settings(cfg->devices[i]) == host_settings(cfg->devices[0])))
          drift.push_back(cfg->devices[i].name);
      j["drift"] = drift;
    }
    ShowOptions so;
    so.run_dir = run_dir_;
    nlohmann::json running = nlohmann::json::parse(roce_state_json(so), nullptr, false);
    j["running"] = running.is_discarded() ? nlohmann::json::object() : running;
    return j.dump();
  }

 private:
  std::optional<config::Config> read(std::string* err) const {
    std::string text;
    if (!read_text(path_, &text)) {
      *err = path_ + ": cannot read: " + std::strerror(errno);
      return std::nullopt;
    }
    return config::parse(text, path_, err);
  }

  const std::string name_, path_, run_dir_;
  std::mutex file_mu_;
};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "host";
  return buf;
}

}  // namespace

int serve(const ServeOptions& o) {
  std::string err, token, tried;
  if (!o.token_file.empty() && !mgmt::read_token_file(o.token_file, &token, &err)) {
    std::fprintf(stderr, "uroce serve: --token-file %s\n", err.c_str());
    return 2;
  }
  const std::string path = config_file(o.config, &tried);
  std::string text;
  if (path.empty() || !read_text(path, &text)) {
    std::fprintf(stderr, "uroce serve: no configuration file (%s); name one with --config FILE\n",
                 path.empty() ? ("tried " + tried).c_str() : (path + " cannot be read").c_str());
    return 1;
  }
  if (!config::parse(text, path, &err)) {
    std::fprintf(stderr, "uroce serve: %s\n", err.c_str());
    return 1;
  }
  HostNode node(o.name.empty() ? host_name() : o.name, path, o.run_dir);
  std::unique_ptr<fabric::DesiredFollower> follower;
  fabric::NodeApi api(
      &node, [&follower]() { return follower ? follower->status_json() : std::string("null"); });
  std::unique_ptr<mgmt::Server> server = mgmt::Server::start(
      mgmt::ServerOptions{.listen = o.listen, .token = token},
      [&api](const mgmt::Request& r) { return api.handle(r); }, &err);
  if (!server) {
    std::fprintf(stderr, "uroce serve: --listen: %s\n", err.c_str());
    return 1;
  }
  std::printf("uroce serve: node %s, %s, API on %s (port %u)%s\n", node.name().c_str(),
              path.c_str(), o.listen.c_str(), server->port(),
              token.empty() ? ", read-only (no --token-file)" : "");
  if (!o.desired.empty()) {
    follower = std::make_unique<fabric::DesiredFollower>(
        &node, o.desired, fabric::report_url_for(o.desired),
        o.listen.substr(0, o.listen.rfind(':') + 1) + std::to_string(server->port()),
        o.desired_every_ms, token);
    std::printf("uroce serve: following the desired state at %s every %u ms\n", o.desired.c_str(),
                o.desired_every_ms);
  }
  std::fflush(stdout);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::unique_lock<std::mutex> lock(g_mu);
  while (!g_stop.load()) g_cv.wait_for(lock, std::chrono::milliseconds(100));
  return 0;
}

}  // namespace uroce::tool
