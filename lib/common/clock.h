/**
 * @file clock.h
 * @brief The clock interface. lib/ code never reads a clock itself: it is given Timestamps.
 * Composition roots (lib/device's runtime, the simulator, tests) own a Clock and pass now() down.
 */
#pragma once

#include "common/time.h"

namespace uroce {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp now() const = 0;
};

/// A clock that moves only when told to (tests, simulator).
class ManualClock final : public Clock {
 public:
  Timestamp now() const override { return now_; }
  void set(Timestamp t) { now_ = t; }
  void advance(Duration d) { now_ = now_ + d; }

 private:
  Timestamp now_{0};
};

}  // namespace uroce
