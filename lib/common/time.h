/**
 * @file time.h
 * @brief Simulated or real time as a value. Units: nanoseconds.
 *
 * Nothing under lib/ reads a clock: time comes in as a Timestamp argument. The real clock
 * lives in drivers/ (TSC / CLOCK_MONOTONIC), the simulator and the tests use a counter.
 */
#pragma once

#include <compare>
#include <cstdint>
#include <limits>

namespace uroce {

/// A span of time in nanoseconds.
struct Duration {
  int64_t ns = 0;  ///< nanoseconds

  static constexpr Duration nanos(int64_t v) { return {v}; }
  static constexpr Duration micros(int64_t v) { return {v * 1000}; }
  static constexpr Duration millis(int64_t v) { return {v * 1000 * 1000}; }
  static constexpr Duration seconds(int64_t v) { return {v * 1000 * 1000 * 1000}; }
  constexpr double us() const { return static_cast<double>(ns) / 1e3; }
  constexpr double secs() const { return static_cast<double>(ns) / 1e9; }

  friend constexpr auto operator<=>(Duration, Duration) = default;
  friend constexpr Duration operator+(Duration a, Duration b) { return {a.ns + b.ns}; }
  friend constexpr Duration operator-(Duration a, Duration b) { return {a.ns - b.ns}; }
  friend constexpr Duration operator*(Duration a, int64_t k) { return {a.ns * k}; }
};

/// A point in time, nanoseconds since an arbitrary epoch of the clock that produced it.
struct Timestamp {
  int64_t ns = 0;  ///< nanoseconds since the clock's epoch

  /// A deadline that never arrives.
  static constexpr Timestamp never() { return {std::numeric_limits<int64_t>::max()}; }
  constexpr bool is_never() const { return ns == never().ns; }

  friend constexpr auto operator<=>(Timestamp, Timestamp) = default;
  friend constexpr Timestamp operator+(Timestamp t, Duration d) { return {t.ns + d.ns}; }
  friend constexpr Timestamp operator-(Timestamp t, Duration d) { return {t.ns - d.ns}; }
  friend constexpr Duration operator-(Timestamp a, Timestamp b) { return {a.ns - b.ns}; }
};

constexpr Timestamp earliest(Timestamp a, Timestamp b) { return a < b ? a : b; }

}  // namespace uroce
