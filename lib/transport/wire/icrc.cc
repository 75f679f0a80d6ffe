/**
 * @file icrc.cc
 * @brief RoCEv2 ICRC over the masked pseudo-header (IBA Annex 17 §A17.3.3) with ISA-L CRC-32.
 * Units: bytes.
 */
#include "transport/wire/icrc.h"

#include <immintrin.h>
#include <isa-l/crc.h>

#include <array>
#include <initializer_list>
#include <cstring>

#include "transport/wire/bth.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/ipv6.h"
#include "transport/wire/udp.h"

namespace uroce::wire {
namespace {

/// Bitwise CRC-32 (reflected, poly 0xEDB88320), for the compile-time constant below only.
constexpr uint32_t crc32_bitwise(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

constexpr std::array<uint8_t, 8> kMaskedLrh = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
/// Running CRC after the 8 bytes of 0xFF that stand for the LRH.
constexpr uint32_t kCrcAfterLrh = crc32_bitwise(kCrc32Init, kMaskedLrh.data(), 8);
constexpr uint8_t kCheckInput[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
static_assert(crc32_bitwise(0, kCheckInput, 9) == 0xcbf43926u, "CRC-32 check value");

constexpr size_t kUdpChecksumOffset = 6;
constexpr size_t kIpv4TosOffset = 1;
constexpr size_t kIpv4TtlOffset = 8;
constexpr size_t kIpv4ChecksumOffset = 10;
constexpr size_t kIpv6HopLimitOffset = 7;

// ISA-L's AVX-512 kernel (crc32_gzip_refl_by16_10, ISA-L 2.30) returns with the upper vector
// state dirty (no vzeroupper), which makes every later SSE instruction of the caller pay a
// state-transition penalty (measured: the pseudo-header CRC went from ~17 ns to ~135 ns).
// Clear it after each call on CPUs with AVX.
__attribute__((target("avx"))) void zero_upper_avx() { _mm256_zeroupper(); }
void zero_upper_none() {}
using ZeroUpperFn = void (*)();
const ZeroUpperFn kZeroUpper = __builtin_cpu_supports("avx") ? zero_upper_avx : zero_upper_none;

inline uint32_t isal_crc(uint32_t crc, const uint8_t* p, size_t n) {
  const uint32_t r = crc32_gzip_refl(crc, p, n);
  kZeroUpper();
  return r;
}

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data) {
  if (data.empty()) return crc;
  return isal_crc(crc, data.data(), data.size());
}

namespace {

/// Masks the variant fields of an IP + UDP + BTH copy (ip_len = IP header bytes).
inline void mask_variant_fields(uint8_t* tmp, size_t ip_len, bool ipv4) {
  if (ipv4) {
    tmp[kIpv4TosOffset] = 0xff;
    tmp[kIpv4TtlOffset] = 0xff;
    tmp[kIpv4ChecksumOffset] = 0xff;
    tmp[kIpv4ChecksumOffset + 1] = 0xff;
  } else {
    // Traffic class (bits 27:20) and flow label (19:0) to all ones; the version stays.
    tmp[0] |= 0x0f;
    tmp[1] = 0xff;
    tmp[2] = 0xff;
    tmp[3] = 0xff;
    tmp[kIpv6HopLimitOffset] = 0xff;
  }
  tmp[ip_len + kUdpChecksumOffset] = 0xff;
  tmp[ip_len + kUdpChecksumOffset + 1] = 0xff;
  tmp[ip_len + sizeof(UdpHdr) + kBthFecnByteOffset] = 0xff;
}

constexpr size_t kL4L5 = sizeof(UdpHdr) + sizeof(Bth);

/// 16 bytes as a GCC/Clang vector (SSE2 on x86-64, NEON on arm64).
using V16 = uint8_t __attribute__((vector_size(16)));

/// A byte mask with 0xFF at the given offsets (< 16 + base), as a vector of bytes [base, +16).
constexpr V16 mask16(size_t base, std::initializer_list<size_t> at) {
  V16 v{};
  for (size_t i : at)
    if (i >= base && i < base + 16) v[i - base] = 0xff;
  return v;
}
/// Same, 8 bytes as a little/big-endian-agnostic uint64_t built byte by byte at run time.
constexpr std::array<uint8_t, 8> mask8(size_t base, std::initializer_list<size_t> at) {
  std::array<uint8_t, 8> m{};
  for (size_t i : at)
    if (i >= base && i < base + 8) m[i - base] = 0xff;
  return m;
}
uint64_t as_u64(const std::array<uint8_t, 8>& m) {
  uint64_t v;
  std::memcpy(&v, m.data(), 8);
  return v;
}

// IPv4 (40 bytes): TOS 1, TTL 8, checksum 10-11, UDP checksum 26-27, BTH byte 4 = 32.
constexpr std::initializer_list<size_t> kV4Masked = {1, 8, 10, 11, 26, 27, 32};
const V16 kMaskV4[2] = {mask16(0, kV4Masked), mask16(16, kV4Masked)};
const uint64_t kMaskV4Tail = as_u64(mask8(32, kV4Masked));
// IPv6 (60 bytes): TC + flow label (byte 0 low nibble, 1-3), hop limit 7, UDP checksum 46-47,
// BTH byte 4 = 52.
constexpr std::initializer_list<size_t> kV6Masked = {1, 2, 3, 7, 46, 47, 52};
const V16 kMaskV6First = [] {
  V16 v = mask16(0, kV6Masked);
  v[0] = 0x0f;
  return v;
}();
const V16 kMaskV6Third = mask16(32, kV6Masked);
const uint64_t kMaskV6Tail = as_u64(mask8(48, kV6Masked));

}  // namespace

uint32_t icrc_pseudo_header(const uint8_t* l3, size_t ipv4_ihl_bytes) {
  // The variant fields are masked to all ones, so masking is an OR with a constant. The common
  // layouts (IPv4 without options: 40 bytes, IPv6: 60 bytes) are OR-ed in 16-byte vectors and
  // stored with the same widths ISA-L loads them with; IPv4 with options takes the byte path.
  alignas(16) uint8_t tmp[60 + kL4L5];
  if (ipv4_ihl_bytes == sizeof(Ipv4Hdr)) {
    V16 a, b;
    uint64_t c;
    std::memcpy(&a, l3, 16);
    std::memcpy(&b, l3 + 16, 16);
    std::memcpy(&c, l3 + 32, 8);
    a |= kMaskV4[0];
    b |= kMaskV4[1];
    c |= kMaskV4Tail;
    std::memcpy(tmp, &a, 16);
    std::memcpy(tmp + 16, &b, 16);
    std::memcpy(tmp + 32, &c, 8);
    return isal_crc(kCrcAfterLrh, tmp, sizeof(Ipv4Hdr) + kL4L5);
  }
  if (ipv4_ihl_bytes == 0) {
    V16 a, b, c;
    uint64_t d;
    uint32_t e;
    std::memcpy(&a, l3, 16);
    std::memcpy(&b, l3 + 16, 16);
    std::memcpy(&c, l3 + 32, 16);
    std::memcpy(&d, l3 + 48, 8);
    std::memcpy(&e, l3 + 56, 4);
    a |= kMaskV6First;
    c |= kMaskV6Third;
    d |= kMaskV6Tail;
    std::memcpy(tmp, &a, 16);
    std::memcpy(tmp + 16, &b, 16);
    std::memcpy(tmp + 32, &c, 16);
    std::memcpy(tmp + 48, &d, 8);
    std::memcpy(tmp + 56, &e, 4);
    return isal_crc(kCrcAfterLrh, tmp, sizeof(Ipv6Hdr) + kL4L5);
  }
  const size_t n = ipv4_ihl_bytes + kL4L5;
  std::memcpy(tmp, l3, n);
  mask_variant_fields(tmp, ipv4_ihl_bytes, true);
  return isal_crc(kCrcAfterLrh, tmp, n);
}

uint32_t icrc_compute(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes) {
  const size_t ip_len = ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr);
  const size_t hdr = ip_len + sizeof(UdpHdr) + sizeof(Bth);
  const uint32_t crc = icrc_pseudo_header(l3.data(), ipv4_ihl_bytes);
  return crc32_update(crc, l3.subspan(hdr));
}

}  // namespace uroce::wire
