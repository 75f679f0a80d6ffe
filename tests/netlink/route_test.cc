// Resolver::route(): the kernel's FIB answer, IPv4 and IPv6 (resolver.h).
#include "netlink/resolver.h"
#include "netns.h"

namespace uroce::netlink::test {
namespace {

class NetlinkRoute : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    make_veth();
    ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
    ASSERT_TRUE(run("ip addr add 2001:2::1/64 dev va nodad"));
    ASSERT_TRUE(run("ip route add 198.19.0.0/16 via 198.18.0.254"));
    ASSERT_TRUE(run("ip -6 route add 2001:2:1::/64 via 2001:2::fe"));
  }
};

TEST_F(NetlinkRoute, BehindAGatewayIsTheGateway) {
  Resolver res(ifindex_);
  std::string err;
  auto hop = res.route(gid("198.19.7.7"), &err);
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->ifindex, ifindex_);
  EXPECT_EQ(hop->gateway_or_dst, gid("198.18.0.254"));
  EXPECT_EQ(hop->src, gid("198.18.0.1"));

  auto hop6 = res.route(gid("2001:2:1::7"), &err);
  ASSERT_TRUE(hop6) << err;
  EXPECT_EQ(hop6->ifindex, ifindex_);
  EXPECT_EQ(hop6->gateway_or_dst, gid("2001:2::fe"));
  EXPECT_EQ(hop6->src, gid("2001:2::1"));
}

TEST_F(NetlinkRoute, OnLinkIsTheDestinationItself) {
  Resolver res(ifindex_);
  std::string err;
  auto hop = res.route(gid("198.18.0.9"), &err);
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->gateway_or_dst, gid("198.18.0.9"));
  EXPECT_EQ(hop->src, gid("198.18.0.1"));
  auto hop6 = res.route(gid("2001:2::9"), &err);
  ASSERT_TRUE(hop6) << err;
  EXPECT_EQ(hop6->gateway_or_dst, gid("2001:2::9"));
  EXPECT_EQ(hop6->src, gid("2001:2::1"));
}

TEST_F(NetlinkRoute, LinkLocalIsOnTheBoundNetdev) {
  ASSERT_TRUE(run("ip addr add fe80::1/64 dev va nodad"));
  // Another netdev with link-local addresses too: the lookup must not pick it.
  ASSERT_TRUE(run("ip link add vc type veth peer name vd"));
  ASSERT_TRUE(run("ip link set vc up"));
  ASSERT_TRUE(run("ip link set vd up"));
  Resolver res(ifindex_);
  std::string err;
  auto hop = res.route(gid("fe80::2"), &err);
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->ifindex, ifindex_);
  EXPECT_EQ(hop->gateway_or_dst, gid("fe80::2"));
  EXPECT_EQ(hop->src, gid("fe80::1"));
}

TEST_F(NetlinkRoute, PolicyRoutingIsTheKernels) {
  // A rule sending 198.18.9.0/24 to a table whose route uses another gateway.
  ASSERT_TRUE(run("ip route add 198.18.9.0/24 via 198.18.0.253 table 100"));
  ASSERT_TRUE(run("ip rule add to 198.18.9.0/24 table 100"));
  Resolver res(ifindex_);
  std::string err;
  auto hop = res.route(gid("198.18.9.1"), &err);
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->gateway_or_dst, gid("198.18.0.253"));
}

TEST_F(NetlinkRoute, NoRouteLocalOrOtherNetdevAreErrors) {
  Resolver res(ifindex_);
  std::string err;
  EXPECT_FALSE(res.route(gid("198.18.200.1"), &err));
  EXPECT_NE(err.find("no route to 198.18.200.1"), std::string::npos) << err;
  EXPECT_FALSE(res.route(gid("2001:2:ffff::1"), &err));
  EXPECT_NE(err.find("no route to"), std::string::npos) << err;

  EXPECT_FALSE(res.route(gid("198.18.0.1"), &err));
  EXPECT_NE(err.find("address of this host"), std::string::npos) << err;

  // A second veth pair (both ends here) with its own subnet: routes to it leave through vc.
  ASSERT_TRUE(run("ip link add vc type veth peer name vd"));
  ASSERT_TRUE(run("ip link set vc up"));
  ASSERT_TRUE(run("ip link set vd up"));
  ASSERT_TRUE(run("ip addr add 198.18.100.1/24 dev vc"));
  EXPECT_FALSE(res.route(gid("198.18.100.5"), &err));
  EXPECT_EQ(err, "route to 198.18.100.5 leaves through vc, not the bound netdev va");
}

TEST_F(NetlinkRoute, CacheAnswersUntilInvalidated) {
  Resolver res(ifindex_);
  std::string err;
  ASSERT_TRUE(res.route(gid("198.19.1.1"), &err)) << err;
  ASSERT_TRUE(run("ip route replace 198.19.0.0/16 via 198.18.0.253"));
  EXPECT_EQ(res.route(gid("198.19.1.1"), &err)->gateway_or_dst, gid("198.18.0.254"));
  res.invalidate_routes();
  EXPECT_EQ(res.route(gid("198.19.1.1"), &err)->gateway_or_dst, gid("198.18.0.253"));
}

}  // namespace
}  // namespace uroce::netlink::test
