/**
 * @file scratch.h
 * @brief Uninitialised per-call arrays for the data path.
 *
 * The engine's value types (transport::Sge, transport::Cqe) zero every member by default. A
 * local array of them would be cleared on every ibv_post_send/ibv_poll_cq call (32 SGEs are
 * 512 bytes, 32 completions 2.5 KiB), although each call fills only what it uses.
 */
#pragma once

#include <cstddef>
#include <type_traits>

namespace uroce::verbs {

/// Storage for N objects of T that a call writes before it reads them.
template <typename T, size_t N>
union Scratch {
  static_assert(std::is_trivially_destructible_v<T> && std::is_trivially_copyable_v<T>);
  Scratch() {}  // NOLINT: leaves v uninitialised on purpose
  T v[N];
};

}  // namespace uroce::verbs
