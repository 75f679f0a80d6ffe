/**
 * @file loopback_port.h
 * @brief An in-process port whose transmitted frames come back on its own receive side.
 *
 * Two QPs on one device in one process talk to each other through it: every frame the engine
 * writes is queued as bytes, handed back by the next rx_burst() after flush(), and parsed
 * again by the engine (serialised to bytes and re-parsed: docs/design.md, "Principles"). Every IP
 * address resolves to the port's own MAC. Bounded: at most `capacity` frames in flight;
 * begin_frame() returns nullptr when full (the engine retries on its next poll).
 *
 * Thread-safety: none; the engine lock holder calls it. Units: bytes, bits per second.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/port.h"
#include "config/config.h"

namespace uroce::loopback {

class LoopbackPort final : public Port {
 public:
  /// mac: the port's address; max_frame: largest frame in bytes; speed: reported link speed.
  LoopbackPort(MacAddr mac, size_t max_frame, uint64_t speed_bps, size_t capacity = 4096);

  uint8_t* begin_frame(size_t max_len) override;
  void end_frame(size_t len, const TxMeta& meta) override;
  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override;
  void flush() override;
  MacAddr mac() const override { return mac_; }
  size_t max_frame_len() const override { return max_frame_; }
  uint64_t link_speed_bps() const override { return speed_bps_; }
  bool resolve(const Gid& ip, MacAddr* mac) override;

  /// Frames sent (end_frame) and received (rx_burst) since creation.
  uint64_t tx_frames() const { return tx_frames_; }
  uint64_t rx_frames() const { return rx_frames_; }
  /// Frames waiting for flush() / for rx_burst().
  size_t pending_tx() const { return tx_.size(); }
  size_t pending_rx() const { return rx_.size(); }

 private:
  struct Frame {
    std::vector<uint8_t> buf;
    size_t len = 0;
  };
  Frame take_buffer(size_t len);

  MacAddr mac_;
  size_t max_frame_;
  uint64_t speed_bps_;
  size_t capacity_;
  Frame open_;  ///< buffer handed out by begin_frame()
  bool has_open_ = false;
  std::deque<Frame> tx_;  ///< written, not yet flushed
  std::deque<Frame> rx_;  ///< flushed, waiting for rx_burst()
  std::vector<std::vector<uint8_t>> free_;
  uint64_t tx_frames_ = 0, rx_frames_ = 0;
};

/// Opens the loopback port of a device: MAC from the configuration (else derived from the
/// device name), frames up to mtu + 256 bytes, 100 Gb/s.
std::unique_ptr<Port> open_loopback_port(const config::Device& dev, std::string* err);

}  // namespace uroce::loopback
