/**
 * @file control.cc
 * @brief Control (see control.h).
 */
#include "uroce-switch/control.h"

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

void Control::publish(std::string state_json) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = std::move(state_json);
}

}  // namespace uroce::uswitch
