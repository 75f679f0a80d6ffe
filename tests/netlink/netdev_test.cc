// query() and the GID order against a veth in a namespace of its own (netdev.h).
#include "netlink/netdev.h"

#include <sstream>

#include "netns.h"

namespace uroce::netlink::test {
namespace {

TEST(NetlinkGidOrder, LinkLocalThenIpv4ThenOtherIpv6) {
  std::vector<Gid> gids;
  EXPECT_TRUE(insert_gid(&gids, gid("2001:2::1")));
  EXPECT_TRUE(insert_gid(&gids, gid("198.18.0.1")));
  EXPECT_TRUE(insert_gid(&gids, gid("fe80::1")));
  EXPECT_TRUE(insert_gid(&gids, gid("198.18.0.2")));
  EXPECT_TRUE(insert_gid(&gids, gid("2001:2::2")));
  EXPECT_TRUE(insert_gid(&gids, gid("fe80::2")));
  EXPECT_FALSE(insert_gid(&gids, gid("198.18.0.1")));
  const std::vector<Gid> want{gid("fe80::1"),    gid("fe80::2"),   gid("198.18.0.1"),
                              gid("198.18.0.2"), gid("2001:2::1"), gid("2001:2::2")};
  EXPECT_EQ(gids, want);
  EXPECT_TRUE(erase_gid(&gids, gid("198.18.0.1")));
  EXPECT_FALSE(erase_gid(&gids, gid("198.18.0.1")));
  EXPECT_EQ(gids.size(), 5u);
}

using NetlinkQuery = NetnsTest;

TEST_F(NetlinkQuery, MissingNetdevIsOneClearLine) {
  std::string err;
  EXPECT_FALSE(query("uroce-none0", &err));
  EXPECT_EQ(err, "no such netdev 'uroce-none0'");
  EXPECT_FALSE(query(987654, &err));
  EXPECT_EQ(err, "no such netdev 987654");
  EXPECT_FALSE(query("a-name-longer-than-ifnamsiz", &err));
  EXPECT_NE(err.find("not a netdev name"), std::string::npos) << err;
}

// The kernel's own address order for va (`ip -o addr`), grouped as rxe lists GIDs.
std::vector<Gid> kernel_gids() {
  std::string out;
  EXPECT_TRUE(run("ip -o addr show dev va", &out));
  std::vector<Gid> gids;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("tentative") != std::string::npos || line.find("dadfailed") != std::string::npos)
      continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w != "inet" && w != "inet6") continue;
      words >> w;
      insert_gid(&gids, gid(w.substr(0, w.find('/')).c_str()));
      break;
    }
  }
  return gids;
}

TEST_F(NetlinkQuery, VethAttributesAndGidOrder) {
  make_veth();
  ASSERT_TRUE(run("ip link set va mtu 1400"));
  // Added out of order on purpose; several of each kind so that the kernel's order shows.
  ASSERT_TRUE(run("ip addr add 2001:2::1/64 dev va nodad"));
  ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
  ASSERT_TRUE(run("ip addr add fe80::1/64 dev va nodad"));
  ASSERT_TRUE(run("ip addr add 2001:2:0:1::1/64 dev va nodad"));
  ASSERT_TRUE(run("ip addr add 198.18.1.1/24 dev va"));
  ASSERT_TRUE(run("ip addr add 198.18.0.11/24 dev va"));  // secondary of 198.18.0.1/24
  ASSERT_TRUE(run("ip addr add fe80::2/64 dev va nodad"));

  std::string err;
  auto st = query("va", &err);
  ASSERT_TRUE(st) << err;
  EXPECT_EQ(st->ifindex, ifindex_);
  EXPECT_EQ(st->name, "va");
  EXPECT_EQ(st->mac.to_string(), "02:00:00:00:00:01");
  EXPECT_EQ(st->mtu, 1400u);
  EXPECT_TRUE(st->up);
  EXPECT_GE(st->rx_queues, 1u);

  ASSERT_EQ(st->gids.size(), 7u);
  for (size_t i = 0; i < st->gids.size(); ++i) {
    const int want_group = i < 2 ? 0 : i < 5 ? 1 : 2;
    EXPECT_EQ(gid_group(st->gids[i]), want_group) << i << ": " << st->gids[i].to_string();
  }
  EXPECT_EQ(st->gids, kernel_gids());
  // IPv4 keeps the kernel's order: primaries in the order added, then the secondary.
  EXPECT_EQ(st->gids[2], gid("198.18.0.1"));
  EXPECT_EQ(st->gids[3], gid("198.18.1.1"));
  EXPECT_EQ(st->gids[4], gid("198.18.0.11"));

  auto by_index = query(st->ifindex, &err);
  ASSERT_TRUE(by_index) << err;
  EXPECT_EQ(*by_index, *st);
}

TEST_F(NetlinkQuery, TentativeAndDadFailedAddressesAreNotGids) {
  make_veth();
  // The peer already owns 2001:2::5; ours runs DAD for it and fails (tentative until then).
  ASSERT_TRUE(peer("ip addr add 2001:2::5/64 dev vb nodad"));
  ASSERT_TRUE(write_sysctl("/proc/sys/net/ipv6/conf/va/accept_dad", "1"));
  ASSERT_TRUE(run("ip addr add 2001:2::5/64 dev va"));
  ASSERT_TRUE(run("ip addr add 198.18.0.1/24 dev va"));
  std::string err;
  auto st = query("va", &err);
  ASSERT_TRUE(st) << err;
  EXPECT_EQ(st->gids, std::vector<Gid>{gid("198.18.0.1")});
  std::string out;
  ASSERT_TRUE(run("ip -6 addr show dev va", &out));
  EXPECT_TRUE(out.find("tentative") != std::string::npos ||
              out.find("dadfailed") != std::string::npos)
      << out;
}

TEST_F(NetlinkQuery, DownWhenThePeerIsDown) {
  make_veth();
  std::string err;
  Monitor mon(ifindex_);
  ASSERT_TRUE(mon.ok()) << mon.error();
  ASSERT_TRUE(peer("ip link set vb down"));
  auto st = query("va", &err);
  ASSERT_TRUE(st) << err;
  EXPECT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return !s.up; }));
  st = query("va", &err);
  ASSERT_TRUE(st) << err;
  EXPECT_FALSE(st->up);  // IFF_UP without carrier is not up
}

}  // namespace
}  // namespace uroce::netlink::test
