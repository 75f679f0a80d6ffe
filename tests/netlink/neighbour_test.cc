// Resolver::neighbour(): the kernel resolves, we read its table (resolver.h).
#include "netlink/resolver.h"
#include "netns.h"

namespace uroce::netlink::test {
namespace {

class NetlinkNeighbour : public NetnsTest {
 protected:
  void SetUp() override {
    NetnsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    make_veth();
    ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
    ASSERT_TRUE(run("ip addr add 2001:2::1/64 dev va nodad"));
    ASSERT_TRUE(peer("ip addr add 198.18.0.2/24 dev vb"));
    ASSERT_TRUE(peer("ip addr add 2001:2::2/64 dev vb nodad"));
    // Faster failure for absent neighbours: 3 probes 300 ms apart instead of 1 s.
    ASSERT_TRUE(write_sysctl("/proc/sys/net/ipv4/neigh/va/retrans_time_ms", "300"));
    ASSERT_TRUE(write_sysctl("/proc/sys/net/ipv6/neigh/va/retrans_time_ms", "300"));
  }

  // Calls neighbour() until it is no longer pending, woken by the Monitor's neighbour
  // events (a 1 s poll timeout covers a missed wake-up); the first answer is returned in
  // *first.
  Resolve resolve(Resolver& res, const Gid& ip, MacAddr* mac, Resolve* first) {
    Monitor mon(ifindex_, &res);
    EXPECT_TRUE(mon.ok()) << mon.error();
    NetdevState st;
    st.ifindex = ifindex_;
    Resolve r = res.neighbour(ifindex_, ip, mac);
    *first = r;
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (r == Resolve::kPending && std::chrono::steady_clock::now() < deadline) {
      pollfd pfd{mon.fd(), POLLIN, 0};
      ::poll(&pfd, 1, 1000);
      mon.poll(&st);
      r = res.neighbour(ifindex_, ip, mac);
    }
    return r;
  }
};

MacAddr peer_mac() {
  MacAddr m;
  EXPECT_TRUE(MacAddr::parse("02:00:00:00:00:02", &m));
  return m;
}

TEST_F(NetlinkNeighbour, ReachablePeerGoesFromPendingToFound) {
  Resolver res(ifindex_);
  MacAddr mac;
  Resolve first;
  EXPECT_EQ(resolve(res, gid("198.18.0.2"), &mac, &first), Resolve::kFound);
  EXPECT_EQ(first, Resolve::kPending);
  EXPECT_EQ(mac, peer_mac());
  std::string out;
  ASSERT_TRUE(run("ip neigh show dev va 198.18.0.2", &out));
  EXPECT_NE(out.find("02:00:00:00:00:02"), std::string::npos) << out;
  // Cached now.
  MacAddr again;
  EXPECT_EQ(res.neighbour(ifindex_, gid("198.18.0.2"), &again), Resolve::kFound);
  EXPECT_EQ(again, peer_mac());
}

TEST_F(NetlinkNeighbour, ReachablePeerIpv6) {
  Resolver res(ifindex_);
  MacAddr mac;
  Resolve first;
  EXPECT_EQ(resolve(res, gid("2001:2::2"), &mac, &first), Resolve::kFound);
  EXPECT_EQ(first, Resolve::kPending);
  EXPECT_EQ(mac, peer_mac());
}

TEST_F(NetlinkNeighbour, LinkLocalPeer) {
  ASSERT_TRUE(run("ip addr add fe80::1/64 dev va nodad"));
  ASSERT_TRUE(peer("ip addr add fe80::2/64 dev vb nodad"));
  Resolver res(ifindex_);
  MacAddr mac;
  Resolve first;
  EXPECT_EQ(resolve(res, gid("fe80::2"), &mac, &first), Resolve::kFound);
  EXPECT_EQ(mac, peer_mac());
}

TEST_F(NetlinkNeighbour, KnownEntryIsFoundAtOnce) {
  ASSERT_TRUE(run("ip neigh add 198.18.0.50 lladdr 02:00:00:00:00:50 dev va nud permanent"));
  Resolver res(ifindex_);
  MacAddr mac;
  EXPECT_EQ(res.neighbour(ifindex_, gid("198.18.0.50"), &mac), Resolve::kFound);
  EXPECT_EQ(mac.to_string(), "02:00:00:00:00:50");
}

TEST_F(NetlinkNeighbour, AbsentAddressFails) {
  Resolver res(ifindex_);
  MacAddr mac;
  Resolve first;
  EXPECT_EQ(resolve(res, gid("198.18.0.77"), &mac, &first), Resolve::kFailed);
  EXPECT_EQ(first, Resolve::kPending);
  // The next call is a new attempt.
  EXPECT_EQ(res.neighbour(ifindex_, gid("198.18.0.77"), &mac), Resolve::kPending);
  EXPECT_EQ(resolve(res, gid("2001:2::77"), &mac, &first), Resolve::kFailed);
}

}  // namespace
}  // namespace uroce::netlink::test
