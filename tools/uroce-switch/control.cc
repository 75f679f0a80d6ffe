/**
 * @file control.cc
 * @brief Control (see control.h).
 */
#include "uroce-switch/control.h"

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>

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

std::string Control::metrics_text() const {
  const nlohmann::json st = nlohmann::json::parse(state_json(), nullptr, false);
  if (!st.is_object() || !st.contains("ports")) return "";
  struct Metric {
    const char* field;
    const char* type;
    const char* help;
  };
  static constexpr Metric kMetrics[] = {
      {"rx_packets", "counter", "Frames the port received."},
      {"rx_bytes", "counter", "Bytes the port received."},
      {"tx_packets", "counter", "Frames the port sent."},
      {"tx_bytes", "counter", "Bytes the port sent."},
      {"pfc_xoff_sent", "counter", "PFC XOFF frames (and refreshes) sent to the port's peer."},
      {"pfc_xon_sent", "counter", "PFC XON frames sent to the port's peer."},
      {"pfc_rx", "counter", "PAUSE/PFC frames received from the port's peer."},
      {"ecn_marked", "counter", "Frames marked CE on the port's egress link."},
      {"drops", "counter", "Frames dropped on the port's egress link (buffer full)."},
      {"mtu_drops", "counter", "Frames received above the MTU, dropped."},
      {"queue_bytes", "gauge", "Bytes queued on the port's egress link."},
      {"queue_high_water", "gauge", "Most bytes ever queued on the port's egress link."},
  };
  std::string out;
  for (const Metric& m : kMetrics) {
    const std::string name = std::string("uroce_switch_") + m.field +
                             (std::string_view(m.type) == "counter" ? "_total" : "");
    out += "# HELP " + name + " " + m.help + "\n# TYPE " + name + " " + m.type + "\n";
    for (const nlohmann::json& p : st["ports"]) {
      if (!p.is_object() || !p.contains(m.field) || !p[m.field].is_number()) continue;
      out += name + "{port=\"" + std::to_string(p.value("port", 0)) + "\"} " +
             std::to_string(p[m.field].get<uint64_t>()) + "\n";
    }
  }
  out +=
      "# HELP uroce_switch_paused 1 while the port's peer pauses the priority.\n"
      "# TYPE uroce_switch_paused gauge\n";
  for (const nlohmann::json& p : st["ports"]) {
    if (!p.is_object()) continue;
    std::array<int, 8> paused{};
    for (const nlohmann::json& q : p.value("paused_prios", nlohmann::json::array()))
      if (q.is_number_integer() && q.get<int>() >= 0 && q.get<int>() < 8) paused[q.get<int>()] = 1;
    for (int q = 0; q < 8; ++q)
      out += "uroce_switch_paused{port=\"" + std::to_string(p.value("port", 0)) + "\",priority=\"" +
             std::to_string(q) + "\"} " + std::to_string(paused[q]) + "\n";
  }
  return out;
}

void Control::publish(std::string state_json) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(state_json);
}

}  // namespace uroce::uswitch
