// apply_message() on hand-built rtnetlink messages (message.h): what route and neighbour
// messages report, and that malformed ones the kernel never sends are ignored safely.
#include "netlink/message.h"

#include <gtest/gtest.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include "netlink/netdev.h"

namespace uroce::netlink::test {
namespace {

/// One message: header, family header, then raw attribute bytes.
template <typename FamilyHeader>
std::vector<uint8_t> message(uint16_t type, const FamilyHeader& fh, std::vector<uint8_t> attrs) {
  const size_t head = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof fh);
  std::vector<uint8_t> out(head + attrs.size());
  std::memcpy(out.data() + NLMSG_HDRLEN, &fh, sizeof fh);
  if (!attrs.empty()) std::memcpy(out.data() + head, attrs.data(), attrs.size());
  nlmsghdr hdr{};
  hdr.nlmsg_len = static_cast<uint32_t>(out.size());
  hdr.nlmsg_type = type;
  std::memcpy(out.data(), &hdr, sizeof hdr);
  return out;
}

std::vector<uint8_t> attr(uint16_t type, std::vector<uint8_t> data) {
  rtattr a{static_cast<unsigned short>(RTA_LENGTH(data.size())), type};
  std::vector<uint8_t> out(RTA_SPACE(data.size()));
  std::memcpy(out.data(), &a, sizeof a);
  if (!data.empty()) std::memcpy(out.data() + RTA_LENGTH(0), data.data(), data.size());
  return out;
}

NetdevState veth() {
  NetdevState st;
  st.ifindex = 2;
  st.name = "va";
  st.mtu = 1500;
  st.up = true;
  return st;
}

rtmsg ipv6_route() {
  rtmsg r{};
  r.rtm_family = AF_INET6;
  r.rtm_dst_len = 128;
  r.rtm_table = RT_TABLE_MAIN;
  r.rtm_protocol = RTPROT_BOOT;
  r.rtm_type = RTN_UNICAST;
  return r;
}

TEST(NetlinkMessage, RouteAndNeighbourMessagesOnlyReportAChange) {
  NetdevState st = veth();
  const NetdevState before = st;
  EXPECT_EQ(apply_message(&st, message(RTM_NEWROUTE, ipv6_route(), {})), kRoutesChanged);
  ndmsg nd{};
  nd.ndm_family = AF_INET;
  nd.ndm_ifindex = 2;
  EXPECT_EQ(apply_message(&st, message(RTM_DELNEIGH, nd, {})), kNeighChanged);
  EXPECT_EQ(st, before);
}

// An RTA_VIA of one byte (its family only, no address): libnl's route parser computes the
// address length as (size_t)-1 and copies that much.
TEST(NetlinkMessage, ShortViaIsNotHandedToTheRouteParser) {
  NetdevState st = veth();
  EXPECT_EQ(apply_message(&st, message(RTM_NEWROUTE, ipv6_route(), attr(RTA_VIA, {AF_INET6}))),
            kRoutesChanged);
  EXPECT_EQ(st, veth());
}

// A multipath next hop of length 0: libnl's parser would add next hops without advancing.
TEST(NetlinkMessage, ZeroLengthNextHopIsNotHandedToTheRouteParser) {
  NetdevState st = veth();
  std::vector<uint8_t> hop(sizeof(rtnexthop), 0);
  EXPECT_EQ(apply_message(&st, message(RTM_NEWROUTE, ipv6_route(), attr(RTA_MULTIPATH, hop))),
            kRoutesChanged);
  EXPECT_EQ(st, veth());
}

// The same short RTA_VIA in a request type the kernel never sends to a listener (found by
// fuzz/netlink_msg.cc): libnl's route cache would parse an RTM_GETROUTE too.
TEST(NetlinkMessage, MessagesNeitherLinkAddressRouteNorNeighbourChangeNothing) {
  NetdevState st = veth();
  EXPECT_EQ(apply_message(&st, message(RTM_GETROUTE, ipv6_route(), attr(RTA_VIA, {AF_INET6}))),
            kNoChange);
  ndmsg nd{};
  nd.ndm_family = AF_INET;
  nd.ndm_ifindex = 2;
  EXPECT_EQ(apply_message(&st, message(RTM_GETNEIGH, nd, {})), kNoChange);
  EXPECT_EQ(apply_message(&st, message(RTM_NEWRULE, ipv6_route(), {})), kNoChange);
  EXPECT_EQ(st, veth());
}

TEST(NetlinkMessage, RouteMessageShorterThanItsHeaderIsIgnored) {
  NetdevState st = veth();
  std::vector<uint8_t> bytes = message(RTM_NEWROUTE, ipv6_route(), {});
  bytes.resize(NLMSG_HDRLEN + 4);
  nlmsghdr hdr;
  std::memcpy(&hdr, bytes.data(), sizeof hdr);
  hdr.nlmsg_len = static_cast<uint32_t>(bytes.size());
  std::memcpy(bytes.data(), &hdr, sizeof hdr);
  EXPECT_EQ(apply_message(&st, bytes), kNoChange);
  EXPECT_EQ(st, veth());
}

}  // namespace
}  // namespace uroce::netlink::test
