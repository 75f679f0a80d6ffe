/**
 * @file addr_test.cc
 * @brief lib/rdmacm address resolution (addr.h): sockaddr <-> GID, prefix coverage (IPv4
 * prefixes count from the IPv4 address), longest-prefix choice, own addresses, a bound
 * source, and destinations no device serves.
 */
#include "rdmacm/addr.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace uroce::rdmacm {
namespace {

Gid v4(const char* s) {
  in_addr a{};
  inet_pton(AF_INET, s, &a);
  return Gid::from_ipv4(ntohl(a.s_addr));
}
Gid v6(const char* s) {
  Gid g;
  inet_pton(AF_INET6, s, g.raw.data());
  return g;
}

TEST(RdmacmAddr, SockaddrRoundTripsThroughGid) {
  sockaddr_storage ss;
  to_sockaddr(v4("198.18.0.1"), 7174, &ss);
  auto* sa = reinterpret_cast<sockaddr*>(&ss);
  EXPECT_EQ(sa->sa_family, AF_INET);
  EXPECT_EQ(port_of(sa), 7174);
  EXPECT_EQ(sockaddr_len(sa), sizeof(sockaddr_in));
  EXPECT_EQ(*gid_of(sa), v4("198.18.0.1"));
  to_sockaddr(v6("fd00::2"), 1, &ss);
  EXPECT_EQ(sa->sa_family, AF_INET6);
  EXPECT_EQ(*gid_of(sa), v6("fd00::2"));
  sockaddr other{};
  other.sa_family = AF_UNIX;
  EXPECT_FALSE(gid_of(&other));
  EXPECT_EQ(sockaddr_len(&other), 0u);
}

TEST(RdmacmAddr, PrefixCoversOnlyItsNetworkAndFamily) {
  EXPECT_TRUE(covers(v4("198.18.0.1"), 15, v4("198.19.255.7")));
  EXPECT_FALSE(covers(v4("198.18.0.1"), 15, v4("198.20.0.1")));
  EXPECT_TRUE(covers(v4("198.18.0.1"), 32, v4("198.18.0.1")));
  EXPECT_FALSE(covers(v4("198.18.0.1"), 32, v4("198.18.0.2")));
  EXPECT_TRUE(covers(v4("198.18.0.1"), 0, v4("10.1.2.3")));
  EXPECT_FALSE(covers(v4("198.18.0.1"), 0, v6("fd00::1"))) << "IPv4 never covers IPv6";
  EXPECT_TRUE(covers(v6("fd00::1"), 64, v6("fd00::99")));
  EXPECT_FALSE(covers(v6("fd00::1"), 64, v6("fd01::1")));
  EXPECT_TRUE(is_any(v4("0.0.0.0")));
  EXPECT_TRUE(is_any(Gid{}));
  EXPECT_FALSE(is_any(v4("198.18.0.1")));
}

TEST(RdmacmAddr, RouteTakesLongestPrefixOwnAddressOrBoundSource) {
  std::vector<LocalAddr> addrs = {
      {0, 0, v4("198.18.0.1"), 15}, {1, 0, v4("198.18.7.1"), 24}, {1, 1, v6("fd00::1"), 64}};
  EXPECT_EQ(route(addrs, std::nullopt, v4("198.18.7.9"))->device, 1) << "/24 beats /15";
  EXPECT_EQ(route(addrs, std::nullopt, v4("198.18.0.2"))->device, 0);
  EXPECT_EQ(route(addrs, std::nullopt, v6("fd00::5"))->gid_index, 1);
  EXPECT_EQ(route(addrs, std::nullopt, v4("198.18.7.1"))->gid, v4("198.18.7.1")) << "own";
  EXPECT_FALSE(route(addrs, std::nullopt, v4("203.0.113.1"))) << "no gateway";
  // A bound source decides, whatever the prefixes say; a foreign or other-family one fails.
  EXPECT_EQ(route(addrs, v4("198.18.0.1"), v4("198.18.7.9"))->device, 0);
  EXPECT_FALSE(route(addrs, v4("198.18.0.99"), v4("198.18.0.2")));
  EXPECT_FALSE(route(addrs, v6("fd00::1"), v4("198.18.0.2")));
  EXPECT_EQ(route(addrs, v4("0.0.0.0"), v4("198.18.0.2"))->device, 0) << "any: routed";
}

}  // namespace
}  // namespace uroce::rdmacm
