/**
 * @file icrc.cc
 * @brief RoCEv2 and RoCE v1 ICRC over the masked pseudo-header (IBA Annex 17 and A16,
 * docs/dcqcn-pfc.md §3.1) with ISA-L CRC-32. Units: bytes.
 */
#include "transport/wire/icrc.h"

#include <emmintrin.h>
#include <immintrin.h>
#include <isa-l/crc.h>

#include <array>
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

/// A function-local static, not a namespace-scope one: a CRC computed during another file's
/// static initialisation must not see it uninitialised.
inline bool cpu_has_avx() {
  static const bool avx = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") != 0;
  }();
  return avx;
}

inline uint32_t isal_crc(uint32_t crc, const uint8_t* p, size_t n) {
  const uint32_t r = crc32_gzip_refl(crc, p, n);
  if (cpu_has_avx()) zero_upper_avx();
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

/// OR-masks for the vector path, in the layout of its buffer (see icrc_pseudo_header()).
/// IPv4: LRH 0..7 (all 0xFF), IP at 8: TOS 9, TTL 16, checksum 18-19; UDP checksum 34-35;
/// BTH byte 4 at 40.
constexpr std::array<uint8_t, 48> make_mask_v4() {
  std::array<uint8_t, 48> m{};
  for (size_t i : {0, 1, 2, 3, 4, 5, 6, 7, 9, 16, 18, 19, 34, 35, 40}) m[i] = 0xff;
  return m;
}
/// IPv6: 4 LRH bytes 0..3, IP at 4: traffic class + flow label (byte 4 low nibble, 5-7), hop
/// limit 11; UDP checksum 50-51; BTH byte 4 at 56.
constexpr std::array<uint8_t, 64> make_mask_v6() {
  std::array<uint8_t, 64> m{};
  for (size_t i : {0, 1, 2, 3, 5, 6, 7, 11, 50, 51, 56}) m[i] = 0xff;
  m[4] = 0x0f;
  return m;
}
alignas(16) constexpr std::array<uint8_t, 48> kMaskV4 = make_mask_v4();
alignas(16) constexpr std::array<uint8_t, 64> kMaskV6 = make_mask_v6();
/// Running CRC after the first 4 of the 8 LRH bytes.
constexpr uint32_t kCrcAfterLrhHalf = crc32_bitwise(kCrc32Init, kMaskedLrh.data(), 4);

}  // namespace

uint32_t icrc_pseudo_header(const uint8_t* l3, size_t ipv4_ihl_bytes) {
#if defined(__SSE2__)
  // The variant fields are masked to all ones, so masking is an OR with a constant. The common
  // layouts are assembled in whole 16-byte vectors, LRH bytes included, so that the buffer ISA-L
  // reads is a multiple of 16 bytes stored with the same 16-byte stores it loads (a partial
  // overlap would stall on store forwarding): IPv4 = 8 x 0xFF + 40 bytes = 48, IPv6 = the last
  // 4 0xFF bytes + 60 bytes = 64 (the first 4 are in the seed).
  if (ipv4_ihl_bytes == sizeof(Ipv4Hdr)) {
    const __m128i* m = reinterpret_cast<const __m128i*>(kMaskV4.data());
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(l3));
    alignas(16) uint8_t tmp[48];
    __m128i* t = reinterpret_cast<__m128i*>(tmp);
    _mm_store_si128(t, _mm_or_si128(_mm_slli_si128(x, 8), _mm_load_si128(m)));
    _mm_store_si128(t + 1, _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l3 + 8)),
                                        _mm_load_si128(m + 1)));
    _mm_store_si128(t + 2, _mm_or_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(l3 + 24)),
                                        _mm_load_si128(m + 2)));
    return isal_crc(kCrc32Init, tmp, sizeof(tmp));
  }
  if (ipv4_ihl_bytes == 0) {
    const __m128i* m = reinterpret_cast<const __m128i*>(kMaskV6.data());
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(l3));
    alignas(16) uint8_t tmp[64];
    __m128i* t = reinterpret_cast<__m128i*>(tmp);
    _mm_store_si128(t, _mm_or_si128(_mm_slli_si128(x, 4), _mm_load_si128(m)));
    for (int i = 1; i < 4; ++i) {
      const auto* src = reinterpret_cast<const __m128i*>(l3 + 16 * i - 4);
      _mm_store_si128(t + i, _mm_or_si128(_mm_loadu_si128(src), _mm_load_si128(m + i)));
    }
    return isal_crc(kCrcAfterLrhHalf, tmp, sizeof(tmp));
  }
#endif
  uint8_t tmp[60 + kL4L5];
  const size_t ip_len = ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr);
  const size_t n = ip_len + kL4L5;
  std::memcpy(tmp, l3, n);
  mask_variant_fields(tmp, ip_len, ipv4_ihl_bytes != 0);
  return isal_crc(kCrcAfterLrh, tmp, n);
}

uint32_t icrc_compute(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes) {
  const size_t ip_len = ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr);
  const size_t hdr = ip_len + sizeof(UdpHdr) + sizeof(Bth);
  const uint32_t crc = icrc_pseudo_header(l3.data(), ipv4_ihl_bytes);
  return crc32_update(crc, l3.subspan(hdr));
}

uint32_t icrc_compute_rxe_flush(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes) {
  const size_t bth = (ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr)) + sizeof(UdpHdr);
  return crc32_update(icrc_compute(l3, ipv4_ihl_bytes), l3.subspan(bth));
}

uint32_t icrc_pseudo_header_grh(const uint8_t* grh) {
  // GRH (IPv6 layout): TClass and FlowLabel are bits 27:0 of the first word, HopLmt byte 7.
  uint8_t tmp[sizeof(Ipv6Hdr) + sizeof(Bth)];
  std::memcpy(tmp, grh, sizeof(tmp));
  tmp[0] |= 0x0f;
  tmp[1] = 0xff;
  tmp[2] = 0xff;
  tmp[3] = 0xff;
  tmp[kIpv6HopLimitOffset] = 0xff;
  tmp[sizeof(Ipv6Hdr) + kBthFecnByteOffset] = 0xff;
  return isal_crc(kCrcAfterLrh, tmp, sizeof(tmp));
}

uint32_t icrc_compute_grh(std::span<const uint8_t> grh) {
  const uint32_t crc = icrc_pseudo_header_grh(grh.data());
  return crc32_update(crc, grh.subspan(sizeof(Ipv6Hdr) + sizeof(Bth)));
}

}  // namespace uroce::wire
