/**
 * @file frame_io.h
 * @brief The driver's frame buffers as PortPipeline (port_pipeline.h) sees them: allocate,
 * free, hand a burst to a TX queue. A DPDK driver implements it over an mbuf pool
 * (drivers/dpdk/ethdev_io.h), a test over plain memory.
 *
 * Contract: a Frame's handle is the driver's (an mbuf, a UMEM slot); data stays valid and
 * unmoved until the frame is freed or taken by tx_burst(). Every frame alloc() returned goes
 * back exactly once, through free() or as part of the prefix tx_burst() reports as taken.
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace uroce::pipeline {

/// One frame buffer: the driver's handle, its data area, and the frame's length in bytes
/// (the buffer's capacity right after alloc()).
struct Frame {
  void* handle = nullptr;
  uint8_t* data = nullptr;
  uint32_t len = 0;
};

class FrameIo {
 public:
  virtual ~FrameIo() = default;
  /// A fresh buffer in *f (len = its capacity); false when none is free.
  virtual bool alloc(Frame* f) = 0;
  /// Returns n frames to the driver unsent.
  virtual void free(const Frame* frames, size_t n) = 0;
  /// Offers frames[0..n) to TX queue `queue`, each with its len; returns how many were taken,
  /// always a prefix. The rest stay the caller's (it offers them again later).
  virtual size_t tx_burst(uint16_t queue, Frame* frames, size_t n) = 0;
  /// Whether TX may be attempted now (a port still starting says no, and may retry its start
  /// here). Asked once per PortPipeline::flush().
  virtual bool tx_ready() { return true; }
};

}  // namespace uroce::pipeline
