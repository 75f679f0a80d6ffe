/**
 * @file control.h
 * @brief The switch's side of the node API (lib/fabric/node_api.h): the settings in force and
 * the hand-over of new ones from an API thread to the forwarding loop, which owns every queue
 * and counter. apply() posts the settings and waits until the loop has taken them (it checks
 * pending() once per polling round, ~µs apart while busy, at most ~20 µs when idle), so the
 * answer to a PATCH means "in force"; a loop that does not take them in time gets them
 * withdrawn and the API answers that nothing changed. The loop publishes its counters as JSON
 * for GET /v1/state. Thread-safe.
 */
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "fabric/node_api.h"

namespace uroce::uswitch {

class Control : public fabric::NodeBackend {
 public:
  Control(std::string name, const fabric::Settings& initial,
          std::chrono::milliseconds timeout = std::chrono::seconds(2))
      : name_(std::move(name)), in_force_(initial), timeout_(timeout) {}

  // API threads.
  fabric::Role role() const override { return fabric::Role::kSwitch; }
  std::string name() const override { return name_; }
  fabric::Settings settings() const override;
  std::string apply(const fabric::Settings& s) override;
  std::string state_json() const override;
  /// The ports' counters (the last published state) as uroce_switch_* metric families.
  std::vector<prometheus::MetricFamily> metric_families() const override;

  // The forwarding loop.
  bool pending() const { return pending_.load(std::memory_order_acquire); }
  /// The posted settings, now the loop's to apply (then applied()); nullopt if withdrawn.
  std::optional<fabric::Settings> take();
  /// The loop applied what take() gave it: in force from now on.
  void applied();
  void publish(std::string state_json);

 private:
  const std::string name_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  fabric::Settings in_force_;
  std::optional<fabric::Settings> posted_;
  std::optional<fabric::Settings> taken_;
  uint64_t posted_gen_ = 0, taken_gen_ = 0, applied_gen_ = 0;
  std::atomic<bool> pending_{false};
  std::string state_ = "{}";
  const std::chrono::milliseconds timeout_;
};

}  // namespace uroce::uswitch
