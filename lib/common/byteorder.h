/**
 * @file byteorder.h
 * @brief Big-endian field types for wire headers. Units: none.
 *
 * Be16/Be24/Be32/Be64 store network byte order and convert only through load()/store(), so
 * mixing host and network order does not compile. All are alignment 1 and trivially copyable,
 * so they can sit inside packed wire structs at any offset.
 */
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace uroce {

namespace detail {
template <typename T>
constexpr T bswap_if_little(T v) {
  if constexpr (std::endian::native == std::endian::little) {
    if constexpr (sizeof(T) == 2) return static_cast<T>(__builtin_bswap16(v));
    if constexpr (sizeof(T) == 4) return static_cast<T>(__builtin_bswap32(v));
    if constexpr (sizeof(T) == 8) return static_cast<T>(__builtin_bswap64(v));
  }
  return v;
}
}  // namespace detail

/// A big-endian unsigned integer of N bytes (2, 4 or 8) stored as bytes.
template <typename T>
class BeInt {
 public:
  constexpr BeInt() = default;
  constexpr T load() const {
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | bytes_[i]);
    return v;
  }
  constexpr void store(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) {
      bytes_[sizeof(T) - 1 - i] = static_cast<uint8_t>(v & 0xff);
      v = static_cast<T>(v >> 8);
    }
  }
  static constexpr BeInt of(T v) {
    BeInt b;
    b.store(v);
    return b;
  }
  friend constexpr bool operator==(const BeInt&, const BeInt&) = default;

 private:
  uint8_t bytes_[sizeof(T)] = {};
};

using Be16 = BeInt<uint16_t>;
using Be32 = BeInt<uint32_t>;
using Be64 = BeInt<uint64_t>;

/// A 24-bit big-endian field (QPN, PSN halves in some headers).
class Be24 {
 public:
  constexpr uint32_t load() const {
    return (uint32_t{bytes_[0]} << 16) | (uint32_t{bytes_[1]} << 8) | bytes_[2];
  }
  constexpr void store(uint32_t v) {
    bytes_[0] = static_cast<uint8_t>(v >> 16);
    bytes_[1] = static_cast<uint8_t>(v >> 8);
    bytes_[2] = static_cast<uint8_t>(v);
  }

 private:
  uint8_t bytes_[3] = {};
};

static_assert(sizeof(Be16) == 2 && alignof(Be16) == 1 && std::is_trivially_copyable_v<Be16>);
static_assert(sizeof(Be24) == 3 && alignof(Be24) == 1 && std::is_trivially_copyable_v<Be24>);
static_assert(sizeof(Be32) == 4 && alignof(Be32) == 1 && std::is_trivially_copyable_v<Be32>);
static_assert(sizeof(Be64) == 8 && alignof(Be64) == 1 && std::is_trivially_copyable_v<Be64>);

/// Host-order loads/stores of unaligned big-endian values in a byte buffer.
inline uint16_t load_be16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t load_be32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return detail::bswap_if_little(v);
}
inline uint64_t load_be64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return detail::bswap_if_little(v);
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  v = detail::bswap_if_little(v);
  std::memcpy(p, &v, 4);
}
inline void store_be64(uint8_t* p, uint64_t v) {
  v = detail::bswap_if_little(v);
  std::memcpy(p, &v, 8);
}

}  // namespace uroce
