/**
 * @file capture_tap.h
 * @brief `uroce capture` in the device runtime: a TxSink that copies every frame the engine sends
 * into the capture ring (lib/stats capture.h) on its way to the port, and the per-device
 * check that attaches to a ring the tool created and lets it go when the tool is done.
 * Frames the port answers itself (ARP, neighbour discovery, PFC) are not seen here.
 */
#pragma once

#include <cstdint>
#include <ctime>

#include "common/packet_io.h"
#include "stats/capture.h"

namespace uroce::device {

/// CLOCK_REALTIME in ns (pcap timestamps).
inline uint64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

/// Forwards to `inner`, copying each finished frame into `ring`.
class CaptureTap final : public TxSink {
 public:
  CaptureTap(TxSink& inner, stats::CaptureWriter& ring) : inner_(inner), ring_(ring) {}
  uint8_t* begin_frame(size_t max_len) override { return cur_ = inner_.begin_frame(max_len); }
  void end_frame(size_t len, const TxMeta& meta) override {
    if (cur_) ring_.write({cur_, len}, true, wall_ns());
    cur_ = nullptr;
    inner_.end_frame(len, meta);
  }

 private:
  TxSink& inner_;
  stats::CaptureWriter& ring_;
  uint8_t* cur_ = nullptr;
};

}  // namespace uroce::device
