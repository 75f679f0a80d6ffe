// Monitor::poll() follows address, link and MTU changes of a veth (monitor.h).
#include "netlink/monitor.h"

#include <algorithm>

#include "netlink/resolver.h"
#include "netns.h"

namespace uroce::netlink::test {
namespace {

using NetlinkMonitor = NetnsTest;

bool has(const NetdevState& s, const Gid& g) {
  return std::find(s.gids.begin(), s.gids.end(), g) != s.gids.end();
}

TEST_F(NetlinkMonitor, ReportsAddressesLinkStateAndMtu) {
  make_veth();
  Monitor mon(ifindex_);
  ASSERT_TRUE(mon.ok()) << mon.error();
  std::string err;
  auto st = query(ifindex_, &err);  // after the Monitor opened: no change falls between
  ASSERT_TRUE(st) << err;
  mon.poll(&*st);  // whatever was still queued from make_veth()
  const Gid v4 = gid("198.18.0.1"), v6 = gid("2001:2::1"), ll = gid("fe80::1");

  ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
  EXPECT_TRUE(wait_for(mon, &*st, [&](const NetdevState& s) { return has(s, v4); }));
  ASSERT_TRUE(run("ip addr add 2001:2::1/64 dev va nodad"));
  ASSERT_TRUE(run("ip addr add fe80::1/64 dev va nodad"));
  EXPECT_TRUE(wait_for(mon, &*st, [&](const NetdevState& s) { return has(s, v6) && has(s, ll); }));
  EXPECT_EQ(st->gids, (std::vector<Gid>{ll, v4, v6}));
  EXPECT_EQ(*st, *query(ifindex_, &err));

  ASSERT_TRUE(run("ip addr del 198.18.0.1/24 dev va"));
  EXPECT_TRUE(wait_for(mon, &*st, [&](const NetdevState& s) { return !has(s, v4); }));
  EXPECT_EQ(st->gids, (std::vector<Gid>{ll, v6}));

  ASSERT_TRUE(run("ip link set va mtu 1280"));
  EXPECT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return s.mtu == 1280; }));

  ASSERT_TRUE(run("ip link set va down"));
  EXPECT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return !s.up; }));
  ASSERT_TRUE(run("ip link set va up"));
  EXPECT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return s.up; }));
  // Whatever the kernel did with the IPv6 addresses on down/up (keep_addr_on_down), the
  // Monitor agrees with query().
  mon.poll(&*st);
  auto now = query(ifindex_, &err);
  ASSERT_TRUE(now) << err;
  EXPECT_EQ(st->gids, now->gids);
  EXPECT_EQ(st->up, now->up);
  EXPECT_EQ(st->mtu, 1280u);
}

TEST_F(NetlinkMonitor, PollReturnsTrueOnlyOnChange) {
  make_veth();
  Monitor mon(ifindex_);
  ASSERT_TRUE(mon.ok()) << mon.error();
  std::string err;
  auto st = query(ifindex_, &err);
  ASSERT_TRUE(st) << err;
  mon.poll(&*st);
  EXPECT_FALSE(mon.poll(&*st));  // nothing pending
  // A route change is no netdev change, but it arrives on the fd.
  ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
  ASSERT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return !s.gids.empty(); }));
  ASSERT_TRUE(run("ip route add 198.19.0.0/16 via 198.18.0.2"));
  pollfd pfd{mon.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 20000), 1);
  EXPECT_FALSE(mon.poll(&*st));
  const NetdevState before = *st;
  ASSERT_TRUE(run("ip link set va mtu 1300"));
  ASSERT_EQ(::poll(&pfd, 1, 20000), 1);
  EXPECT_TRUE(mon.poll(&*st));
  EXPECT_EQ(st->mtu, 1300u);
  EXPECT_EQ(st->gids, before.gids);
}

TEST_F(NetlinkMonitor, RouteChangesDropTheResolverCache) {
  make_veth();
  ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
  Resolver res(ifindex_);
  Monitor mon(ifindex_, &res);
  ASSERT_TRUE(mon.ok()) << mon.error();
  std::string err;
  auto st = query(ifindex_, &err);
  ASSERT_TRUE(st) << err;
  ASSERT_TRUE(run("ip route add 198.19.0.0/16 via 198.18.0.2"));
  auto hop = res.route(gid("198.19.1.1"), &err);
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->gateway_or_dst, gid("198.18.0.2"));
  ASSERT_TRUE(run("ip route replace 198.19.0.0/16 via 198.18.0.3"));
  // Until the Monitor has seen the change, the cache answers; afterwards the kernel does.
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (hop && hop->gateway_or_dst != gid("198.18.0.3") &&
         std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{mon.fd(), POLLIN, 0};
    ::poll(&pfd, 1, 1000);
    mon.poll(&*st);
    hop = res.route(gid("198.19.1.1"), &err);
  }
  ASSERT_TRUE(hop) << err;
  EXPECT_EQ(hop->gateway_or_dst, gid("198.18.0.3"));
}

}  // namespace
}  // namespace uroce::netlink::test
