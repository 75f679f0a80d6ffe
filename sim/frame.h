/**
 * @file frame.h
 * @brief A frame in flight in the simulator: the Ethernet bytes (no FCS) plus metadata.
 * Units: bytes.
 */
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace uroce::sim {

/// One Ethernet frame without preamble and FCS, as a TxSink produces it.
struct Frame {
  std::vector<uint8_t> bytes;  ///< the frame, destination MAC first
  uint8_t priority = 0;        ///< traffic class 0..7 the frame is queued under
  bool is_cnp = false;         ///< congestion notification (TxMeta::is_cnp)
  bool is_control = false;     ///< MAC control (PFC): bypasses the priority queues
  uint32_t ingress_port = 0;   ///< switch port it entered on (buffer accounting)
  uint64_t id = 0;             ///< unique per simulator, assigned when first sent
  int64_t enqueued_ns = 0;     ///< when it entered its current egress queue

  size_t size() const { return bytes.size(); }
};

/// Recycles frame buffers so steady-state simulation does not allocate.
class FramePool {
 public:
  /// A frame whose buffer has room for at least `reserve` bytes. Its size is unspecified
  /// (a recycled buffer keeps its old size so resizing it does not zero-fill): set it.
  Frame get(size_t reserve = 4200) {
    Frame f;
    if (!free_.empty()) {
      f.bytes = std::move(free_.back());
      free_.pop_back();
    }
    if (f.bytes.capacity() < reserve) f.bytes.reserve(reserve);
    return f;
  }
  void put(Frame&& f) {
    if (free_.size() < kMaxFree && f.bytes.capacity() > 0) free_.push_back(std::move(f.bytes));
    f.bytes = {};
  }

 private:
  static constexpr size_t kMaxFree = 4096;
  std::vector<std::vector<uint8_t>> free_;
};

}  // namespace uroce::sim
