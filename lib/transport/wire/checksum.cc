/**
 * @file checksum.cc
 * @brief IPv4 header checksum (RFC 791 §3.1, computed as RFC 1071 describes). Units: bytes.
 */
#include "transport/wire/ipv4.h"

namespace uroce::wire {

uint16_t ipv4_checksum(const uint8_t* hdr, size_t len) {
  uint32_t sum = 0;
  for (size_t i = 0; i + 1 < len; i += 2) sum += (uint32_t{hdr[i]} << 8) | hdr[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace uroce::wire
