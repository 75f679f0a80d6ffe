/**
 * @file addr.cc
 * @brief Address resolution (see addr.h).
 */
#include "rdmacm/addr.h"

#include <array>
#include <cstring>

namespace uroce::rdmacm {

std::optional<Gid> gid_of(const sockaddr* sa) {
  if (!sa) return std::nullopt;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return Gid::from_ipv4(ntohl(in->sin_addr.s_addr));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    Gid g;
    std::memcpy(g.raw.data(), &in6->sin6_addr, 16);
    return g;
  }
  return std::nullopt;
}

uint16_t port_of(const sockaddr* sa) {
  if (!sa) return 0;
  if (sa->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(sa)->sin_port);
  if (sa->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_port);
  return 0;
}

void to_sockaddr(const Gid& gid, uint16_t port, sockaddr_storage* out) {
  std::memset(out, 0, sizeof *out);
  if (gid.is_ipv4_mapped() || is_any(gid)) {
    auto* in = reinterpret_cast<sockaddr_in*>(out);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    in->sin_addr.s_addr = htonl(gid.ipv4());
    return;
  }
  auto* in6 = reinterpret_cast<sockaddr_in6*>(out);
  in6->sin6_family = AF_INET6;
  in6->sin6_port = htons(port);
  std::memcpy(&in6->sin6_addr, gid.raw.data(), 16);
}

socklen_t sockaddr_len(const sockaddr* sa) {
  if (!sa) return 0;
  if (sa->sa_family == AF_INET) return sizeof(sockaddr_in);
  if (sa->sa_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

bool is_any(const Gid& g) {
  if (g.is_zero()) return true;
  return g.is_ipv4_mapped() && g.ipv4() == 0;
}

bool is_loopback(const Gid& g) {
  if (g.is_ipv4_mapped()) return (g.ipv4() >> 24) == 127;
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  return g.raw == kV6Loopback;
}

bool covers(const Gid& net, uint8_t prefix, const Gid& dst) {
  if (net.is_ipv4_mapped() != dst.is_ipv4_mapped()) return false;
  // IPv4 prefixes count from the IPv4 address, the last 32 bits of the GID.
  int bits = net.is_ipv4_mapped() ? 96 + std::min<int>(prefix, 32) : std::min<int>(prefix, 128);
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((net.raw[i] & mask) != (dst.raw[i] & mask)) return false;
  }
  return true;
}

std::optional<LocalAddr> find_local(const std::vector<LocalAddr>& addrs, const Gid& g) {
  for (const LocalAddr& a : addrs)
    if (a.gid == g) return a;
  return std::nullopt;
}

std::optional<LocalAddr> route(const std::vector<LocalAddr>& addrs, const std::optional<Gid>& src,
                               const Gid& dst) {
  if (src && !is_any(*src)) {
    auto a = find_local(addrs, *src);
    if (!a || a->gid.is_ipv4_mapped() != dst.is_ipv4_mapped()) return std::nullopt;
    return a;
  }
  if (auto own = find_local(addrs, dst)) return own;
  std::optional<LocalAddr> best;
  for (const LocalAddr& a : addrs)
    if (covers(a.gid, a.prefix, dst) && (!best || a.prefix > best->prefix)) best = a;
  return best;
}

}  // namespace uroce::rdmacm
