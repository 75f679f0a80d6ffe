/**
 * @file loopback_port.cc
 * @brief LoopbackPort: TX frames are queued, flush() moves them to RX, rx_burst() hands them
 * to the frame handler.
 */
#include "loopback/loopback_port.h"

namespace uroce::loopback {

LoopbackPort::LoopbackPort(MacAddr mac, size_t max_frame, uint64_t speed_bps, size_t capacity)
    : mac_(mac), max_frame_(max_frame), speed_bps_(speed_bps), capacity_(capacity) {}

LoopbackPort::Frame LoopbackPort::take_buffer(size_t len) {
  Frame f;
  if (!free_.empty()) {
    f.buf = std::move(free_.back());
    free_.pop_back();
  }
  if (f.buf.size() < len) f.buf.resize(len);
  return f;
}

uint8_t* LoopbackPort::begin_frame(size_t max_len) {
  if (has_open_) {  // abandoned begin_frame(): reuse its buffer
    if (open_.buf.size() < max_len) open_.buf.resize(max_len);
    return open_.buf.data();
  }
  if (tx_.size() + rx_.size() >= capacity_) return nullptr;
  open_ = take_buffer(max_len);
  has_open_ = true;
  return open_.buf.data();
}

void LoopbackPort::end_frame(size_t len, const TxMeta&) {
  if (!has_open_) return;
  open_.len = len;
  tx_.push_back(std::move(open_));
  open_ = Frame{};
  has_open_ = false;
  ++tx_frames_;
}

void LoopbackPort::flush() {
  while (!tx_.empty()) {
    rx_.push_back(std::move(tx_.front()));
    tx_.pop_front();
  }
}

size_t LoopbackPort::rx_burst(FrameHandler& h, size_t max, Timestamp) {
  size_t n = 0;
  RxMeta meta;
  while (n < max && !rx_.empty()) {
    Frame f = std::move(rx_.front());
    rx_.pop_front();
    h.on_frame(std::span<const uint8_t>(f.buf.data(), f.len), meta);
    free_.push_back(std::move(f.buf));
    ++n;
    ++rx_frames_;
  }
  return n;
}

bool LoopbackPort::resolve(const Gid&, MacAddr* mac) {
  *mac = mac_;
  return true;
}

std::unique_ptr<Port> open_loopback_port(const config::Device& dev, std::string*) {
  MacAddr mac;
  if (dev.mac) {
    mac = *dev.mac;
  } else {
    uint64_t h = 1469598103934665603ull;  // FNV-1a of the device name
    for (char ch : dev.name) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
    mac.b = {0x02,
             static_cast<uint8_t>(h >> 32),
             static_cast<uint8_t>(h >> 24),
             static_cast<uint8_t>(h >> 16),
             static_cast<uint8_t>(h >> 8),
             static_cast<uint8_t>(h)};
  }
  return std::make_unique<LoopbackPort>(mac, dev.mtu + 256, 100'000'000'000ull);
}

}  // namespace uroce::loopback
