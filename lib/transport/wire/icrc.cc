/**
 * @file icrc.cc
 * @brief RoCEv2 ICRC over the masked pseudo-header (IBA Annex 17 §A17.3.3) with ISA-L CRC-32.
 * Units: bytes.
 */
#include "transport/wire/icrc.h"

#include <isa-l/crc.h>

#include <array>
#include <cstring>

#include "transport/wire/bth.h"
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

}  // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data) {
  if (data.empty()) return crc;
  return crc32_gzip_refl(crc, data.data(), data.size());
}

uint32_t icrc_pseudo_header(const uint8_t* l3, size_t ipv4_ihl_bytes) {
  // IP (<= 60) + UDP (8) + BTH (12), copied so the variant fields can be masked.
  uint8_t tmp[60 + sizeof(UdpHdr) + sizeof(Bth)];
  const size_t ip_len = ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr);
  const size_t n = ip_len + sizeof(UdpHdr) + sizeof(Bth);
  std::memcpy(tmp, l3, n);
  if (ipv4_ihl_bytes) {
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
  return crc32_gzip_refl(kCrcAfterLrh, tmp, n);
}

uint32_t icrc_compute(std::span<const uint8_t> l3, size_t ipv4_ihl_bytes) {
  const size_t ip_len = ipv4_ihl_bytes ? ipv4_ihl_bytes : sizeof(Ipv6Hdr);
  const size_t hdr = ip_len + sizeof(UdpHdr) + sizeof(Bth);
  const uint32_t crc = icrc_pseudo_header(l3.data(), ipv4_ihl_bytes);
  return crc32_update(crc, l3.subspan(hdr));
}

}  // namespace uroce::wire
