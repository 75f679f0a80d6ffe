/**
 * @file control.cc
 * @brief Control (see control.h).
 */
#include "uroce-switch/control.h"

#include <array>
#include <nlohmann/json.hpp>

namespace uroce::uswitch {

fabric::Settings Control::settings() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_force_;
}

std::string Control::apply(const fabric::Settings& s) {
  std::unique_lock<std::mutex> lock(mu_);
  posted_ = s;
  const uint64_t gen = ++posted_gen_;
  pending_.store(true, std::memory_order_release);
  if (!cv_.wait_for(lock, timeout_, [&] { return taken_gen_ >= gen; })) {
    posted_.reset();
    pending_.store(false, std::memory_order_release);
    return "the forwarding loop did not take the change within " +
           std::to_string(timeout_.count()) + " ms; nothing changed";
  }
  // Taken: the loop applies it within its round.
  cv_.wait(lock, [&] { return applied_gen_ >= gen; });
  return "";
}

std::string Control::state_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

std::optional<fabric::Settings> Control::take() {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.store(false, std::memory_order_release);
  if (!posted_) return std::nullopt;
  taken_ = std::move(posted_);
  posted_.reset();
  taken_gen_ = posted_gen_;
  cv_.notify_all();
  return taken_;
}

void Control::applied() {
  std::lock_guard<std::mutex> lock(mu_);
  if (taken_) in_force_ = *taken_;
  taken_.reset();
  applied_gen_ = taken_gen_;
  cv_.notify_all();
}

std::vector<prometheus::MetricFamily> Control::metric_families() const {
  const nlohmann::json st = nlohmann::json::parse(state_json(), nullptr, false);
  if (!st.is_object() || !st.contains("ports")) return {};
  struct Metric {
    const char* field;
    bool counter;
    const char* help;
  };
  static constexpr Metric kMetrics[] = {
      {"rx_packets", true, "Frames the port received."},
      {"rx_bytes", true, "Bytes the port received."},
      {"tx_packets", true, "Frames the port sent."},
      {"tx_bytes", true, "Bytes the port sent."},
      {"pfc_xoff_sent", true, "PFC XOFF frames (and refreshes) sent to the port's peer."},
      {"pfc_xon_sent", true, "PFC XON frames sent to the port's peer."},
      {"pfc_rx", true, "PAUSE/PFC frames received from the port's peer."},
      {"ecn_marked", true, "Frames marked CE on the port's egress link."},
      {"drops", true, "Frames dropped on the port's egress link (buffer full)."},
      {"mtu_drops", true, "Frames received above the MTU, dropped."},
      {"queue_bytes", false, "Bytes queued on the port's egress link."},
      {"queue_high_water", false, "Most bytes ever queued on the port's egress link."},
  };
  auto sample = [](std::string port, double v, bool counter,
                   std::vector<prometheus::ClientMetric::Label> more = {}) {
    prometheus::ClientMetric m;
    m.label.push_back({"port", std::move(port)});
    for (auto& l : more) m.label.push_back(std::move(l));
    (counter ? m.counter.value : m.gauge.value) = v;
    return m;
  };
  std::vector<prometheus::MetricFamily> out;
  for (const Metric& m : kMetrics) {
    prometheus::MetricFamily f{
        std::string("uroce_switch_") + m.field + (m.counter ? "_total" : ""),
        m.help,
        m.counter ? prometheus::MetricType::Counter : prometheus::MetricType::Gauge,
        {}};
    for (const nlohmann::json& p : st["ports"])
      if (p.is_object() && p.contains(m.field) && p[m.field].is_number())
        f.metric.push_back(sample(std::to_string(p.value("port", 0)),
                                  static_cast<double>(p[m.field].get<uint64_t>()), m.counter));
    out.push_back(std::move(f));
  }
  prometheus::MetricFamily paused{"uroce_switch_paused",
                                  "1 while the port's peer pauses the priority.",
                                  prometheus::MetricType::Gauge,
                                  {}};
  for (const nlohmann::json& p : st["ports"]) {
    if (!p.is_object()) continue;
    std::array<int, 8> on{};
    for (const nlohmann::json& q : p.value("paused_prios", nlohmann::json::array()))
      if (q.is_number_integer() && q.get<int>() >= 0 && q.get<int>() < 8) on[q.get<int>()] = 1;
    for (int q = 0; q < 8; ++q)
      paused.metric.push_back(sample(std::to_string(p.value("port", 0)), on[q], false,
                                     {{"priority", std::to_string(q)}}));
  }
  out.push_back(std::move(paused));
  return out;
}

void Control::publish(std::string state_json) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(state_json);
}

}  // namespace uroce::uswitch
