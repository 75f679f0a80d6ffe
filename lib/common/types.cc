/**
 * @file types.cc
 * @brief Text conversion for MAC addresses and GIDs.
 */
#include "common/types.h"

#include <arpa/inet.h>

#include <cstdio>

namespace uroce {

std::string MacAddr::to_string() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4],
                b[5]);
  return buf;
}

bool MacAddr::parse(const std::string& s, MacAddr* out) {
  unsigned v[6];
  char tail;
  if (std::sscanf(s.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                  &tail) != 6)
    return false;
  for (int i = 0; i < 6; ++i) out->b[i] = static_cast<uint8_t>(v[i]);
  return true;
}

std::string Gid::to_string() const {
  char buf[INET6_ADDRSTRLEN];
  if (is_ipv4_mapped()) {
    inet_ntop(AF_INET, raw.data() + 12, buf, sizeof buf);
  } else {
    inet_ntop(AF_INET6, raw.data(), buf, sizeof buf);
  }
  return buf;
}

bool Gid::parse(const std::string& s, Gid* out) {
  uint8_t v4[4];
  if (inet_pton(AF_INET, s.c_str(), v4) == 1) {
    *out = Gid::from_ipv4((uint32_t{v4[0]} << 24) | (uint32_t{v4[1]} << 16) |
                          (uint32_t{v4[2]} << 8) | v4[3]);
    return true;
  }
  Gid g;
  if (inet_pton(AF_INET6, s.c_str(), g.raw.data()) == 1) {
    *out = g;
    return true;
  }
  return false;
}

std::vector<Gid> gid_table(const std::vector<Gid>& v2, bool roce_v1) {
  std::vector<Gid> t = v2;
  if (roce_v1) t.insert(t.end(), v2.begin(), v2.end());
  return t;
}

}  // namespace uroce
