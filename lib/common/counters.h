/**
 * @file counters.h
 * @brief Engine counters, generated from counters.def so enum and names cannot drift.
 *
 * One writer (the engine, under its lock) and any number of readers (the verbs layer, the
 * uroce CLI through shared memory): increments are relaxed atomic stores of a plain uint64_t.
 */
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace uroce {

enum class Counter : uint16_t {
#define X(name, help) name,
#include "common/counters.def"
#undef X
  kCount
};

inline constexpr size_t kCounterCount = static_cast<size_t>(Counter::kCount);

inline constexpr std::array<std::string_view, kCounterCount> kCounterNames = {
#define X(name, help) #name,
#include "common/counters.def"
#undef X
};

inline constexpr std::array<std::string_view, kCounterCount> kCounterHelp = {
#define X(name, help) help,
#include "common/counters.def"
#undef X
};

constexpr std::string_view counter_name(Counter c) { return kCounterNames[static_cast<size_t>(c)]; }

/// A block of counters. Trivially copyable so it can live in shared memory.
struct CounterBlock {
  uint64_t v[kCounterCount] = {};

  void inc(Counter c, uint64_t n = 1) {
    std::atomic_ref<uint64_t> r(v[static_cast<size_t>(c)]);
    r.store(r.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get(Counter c) const {
    return __atomic_load_n(&v[static_cast<size_t>(c)], __ATOMIC_RELAXED);
  }
};

}  // namespace uroce
