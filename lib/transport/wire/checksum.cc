/**
 * @file checksum.cc
 * @brief IPv4 header checksum (RFC 791 §3.1, computed as RFC 1071 describes). Units: bytes.
 *
 * Sums 32-bit words in native byte order: the ones' complement sum is byte-order independent
 * (RFC 1071 §2(B)), so one swap at the end gives the network-order result.
 */
#include <bit>
#include <cstring>

#include "transport/wire/ipv4.h"

namespace uroce::wire {

uint16_t ipv4_checksum(const uint8_t* hdr, size_t len) {
  uint64_t sum = 0;
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    uint32_t w;
    std::memcpy(&w, hdr + i, 4);
    sum += w;
  }
  if (i + 2 <= len) {
    uint16_t w;
    std::memcpy(&w, hdr + i, 2);
    sum += w;
  }
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  sum = (sum & 0xffffu) + (sum >> 16);
  const auto folded = static_cast<uint16_t>(~sum & 0xffffu);
  if constexpr (std::endian::native == std::endian::little) {
    return static_cast<uint16_t>((folded >> 8) | (folded << 8));
  }
  return folded;
}

}  // namespace uroce::wire
