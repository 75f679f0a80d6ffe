/**
 * @file rx_class_test.cc
 * @brief drivers/pipeline/rx_class.h: a received frame's priority under trust dscp (the IP DSCP
 * through dscp_to_prio) and trust pcp (the 802.1Q PCP through pcp_to_prio, untagged frames on
 * priority 0), and its ECN field; is_rocev2() (UDP to port 4791 over IPv4/IPv6, tagged or
 * not) and is_roce() (also RoCE v1, EtherType 0x8915). References: docs/dcqcn-pfc.md §3.4,
 * IEEE 802.1Q §6.9.3, IBA Annex 17 §A17.2, Annex A16.
 */
#include "pipeline/rx_class.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <vector>

namespace uroce::pipeline {
namespace {

/// An Ethernet frame with an IPv4 (or IPv6) header whose traffic class is tc, optionally
/// 802.1Q-tagged with `pcp`.
std::vector<uint8_t> frame(uint8_t tc, int pcp = -1, bool ipv6 = false) {
  std::vector<uint8_t> f(12, 0x02);
  auto put = [&f](uint8_t b) { f.push_back(b); };
  if (pcp >= 0) {  // TPID 0x8100, PCP, VID 0x123
    put(0x81);
    put(0x00);
    put(static_cast<uint8_t>(pcp << 5 | 0x01));
    put(0x23);
  }
  if (ipv6) {
    put(0x86);
    put(0xdd);
    put(static_cast<uint8_t>(0x60 | tc >> 4));
    put(static_cast<uint8_t>((tc & 0x0f) << 4));
  } else {
    put(0x08);
    put(0x00);
    put(0x45);
    put(tc);
  }
  f.resize(f.size() + 40, 0);
  return f;
}

config::Device device(config::Device::Trust trust) {
  config::Device d;
  d.trust = trust;
  d.dscp_to_prio[46] = 5;                    // EF -> 5 instead of the class selector's 5
  d.pcp_to_prio = {0, 0, 1, 3, 4, 5, 6, 7};  // PCP 1 shares priority 0, PCP 2 -> 1
  return d;
}

TEST(RxClass, TrustDscpUsesTheDscpMapAndIgnoresThePcp) {
  RxClassifier c = RxClassifier::of(device(config::Device::Trust::kDscp));
  RxClass r = c(frame(26 << 2 | 2));  // RoCE: DSCP 26, ECT(0)
  EXPECT_EQ(r.prio, 3);
  EXPECT_EQ(r.ecn, 2);
  r = c(frame(48 << 2 | 3, /*pcp=*/1));  // CNP DSCP 48, CE, tagged PCP 1: the DSCP decides
  EXPECT_EQ(r.prio, 6);
  EXPECT_EQ(r.ecn, 3);
  EXPECT_EQ(c(frame(46 << 2, -1, /*ipv6=*/true)).prio, 5);
  EXPECT_EQ(c(frame(26 << 2 | 1, -1, true)).ecn, 1);
  std::vector<uint8_t> arp = frame(0xff);
  arp[12] = 0x08;
  arp[13] = 0x06;  // ARP: not IP, priority 0, ECN 0
  EXPECT_EQ(c(arp).prio, 0);
  EXPECT_EQ(c(arp).ecn, 0);
}

TEST(RxClass, TrustPcpUsesThePcpMapAndPutsUntaggedFramesOnPriorityZero) {
  RxClassifier c = RxClassifier::of(device(config::Device::Trust::kPcp));
  RxClass r = c(frame(0 << 2 | 3, /*pcp=*/3));  // DSCP 0 but PCP 3: priority 3, CE kept
  EXPECT_EQ(r.prio, 3);
  EXPECT_EQ(r.ecn, 3);
  EXPECT_EQ(c(frame(26 << 2, /*pcp=*/2)).prio, 1);  // through the map, not the identity
  EXPECT_EQ(c(frame(26 << 2, /*pcp=*/1)).prio, 0);
  EXPECT_EQ(c(frame(48 << 2, /*pcp=*/6, /*ipv6=*/true)).prio, 6);
  EXPECT_EQ(c(frame(26 << 2 | 2)).prio, 0);  // untagged RoCE: priority 0 under trust pcp
  EXPECT_EQ(c(frame(26 << 2 | 2)).ecn, 2);
}

TEST(RxClass, ShortFramesAreClassifiedWithoutReadingPastTheirEnd) {
  RxClassifier c = RxClassifier::of(device(config::Device::Trust::kPcp));
  std::vector<uint8_t> f = frame(26 << 2 | 3, 5);
  f.resize(18);  // tag and EtherType, no IP header
  EXPECT_EQ(c(f).prio, 5);
  EXPECT_EQ(c(f).ecn, 0);
  f.resize(13);
  EXPECT_EQ(c(f).prio, 0);
  RxClassifier d = RxClassifier::of(device(config::Device::Trust::kDscp));
  f = frame(26 << 2 | 3);
  f.resize(15);
  EXPECT_EQ(d(f).prio, 0);
}

/// A frame to port `dport` over UDP (or another IP protocol), IPv4 with `ihl` words or IPv6,
/// optionally 802.1Q-tagged; `cut` bytes removed from its end.
std::vector<uint8_t> udp_frame(uint16_t dport, bool ipv6 = false, bool tagged = false,
                               uint8_t proto = 17, uint8_t ihl = 5, size_t cut = 0) {
  std::vector<uint8_t> f;
  auto put = [&f](std::initializer_list<int> bytes) {
    for (int b : bytes) f.push_back(static_cast<uint8_t>(b));
  };
  auto zeros = [&f](size_t n) { f.resize(f.size() + n, 0); };
  for (int i = 0; i < 12; ++i) put({0x02});
  if (tagged) put({0x81, 0x00, 0x60, 0x01});
  const size_t l3 = f.size() + 2;
  if (ipv6) {
    put({0x86, 0xdd});
    zeros(40);
    f[l3] = 0x60;
    f[l3 + 6] = proto;
  } else {
    put({0x08, 0x00});
    zeros(size_t{ihl} * 4);
    f[l3] = static_cast<uint8_t>(0x40 | ihl);
    f[l3 + 9] = proto;
  }
  put({0xc0, 0x00, dport >> 8, dport & 0xff, 0, 20, 0, 0});
  zeros(12);  // a BTH
  f.resize(f.size() - cut);
  return f;
}

TEST(IsRocev2, UdpToPort4791OverIpv4OrIpv6TaggedOrNot) {
  EXPECT_TRUE(is_rocev2(udp_frame(4791)));
  EXPECT_TRUE(is_rocev2(udp_frame(4791, /*ipv6=*/true)));
  EXPECT_TRUE(is_rocev2(udp_frame(4791, false, /*tagged=*/true)));
  EXPECT_TRUE(is_rocev2(udp_frame(4791, true, true)));
  EXPECT_TRUE(is_rocev2(udp_frame(4791, false, false, 17, /*ihl=*/6)));  // IPv4 options
  EXPECT_FALSE(is_rocev2(udp_frame(4792)));
  EXPECT_FALSE(is_rocev2(udp_frame(4791, false, false, /*proto=*/6)));  // TCP
  EXPECT_FALSE(is_rocev2(udp_frame(4791, true, false, 6)));
  auto arp = udp_frame(4791);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(is_rocev2(arp));
}

TEST(IsRocev2, ShortFramesAreRefusedWithoutReadingPastTheirEnd) {
  // Cut into the UDP header (it must be whole), into the IP header, into the tag.
  const size_t full = udp_frame(4791).size();
  for (size_t cut = 12 + 1; cut <= full; ++cut) {
    auto f = udp_frame(4791, false, false, 17, 5, cut);
    bool udp_whole = f.size() >= 14 + 20 + 8;
    EXPECT_EQ(is_rocev2(std::span<const uint8_t>(f.data(), f.size())), udp_whole) << cut;
  }
  for (size_t n = 0; n < 18; ++n) {
    auto f = udp_frame(4791, true, true);
    EXPECT_FALSE(is_rocev2(std::span<const uint8_t>(f.data(), n))) << n;
  }
}

TEST(IsRoce, RoceV2AndRoceV1TaggedOrNot) {
  EXPECT_TRUE(is_roce(udp_frame(4791)));
  EXPECT_TRUE(is_roce(udp_frame(4791, true, true)));
  EXPECT_FALSE(is_roce(udp_frame(4792)));
  for (bool tagged : {false, true}) {
    auto v1 = udp_frame(4791, /*ipv6=*/true, tagged);
    const size_t et = tagged ? 16 : 12;
    v1[et] = 0x89;
    v1[et + 1] = 0x15;
    EXPECT_TRUE(is_roce(v1)) << tagged;
    EXPECT_FALSE(is_rocev2(v1)) << tagged;
    // A RoCE v1 GRH's TClass classifies the frame as an IPv6 traffic class does.
    const size_t l3 = et + 2;
    v1[l3] = 0x6b;  // IPVer 6, TClass 0xba: DSCP 46, ECN 2
    v1[l3 + 1] = 0xa0;
    RxClassifier c;
    for (int d = 0; d < 64; ++d) c.dscp_to_prio[static_cast<size_t>(d)] = d == 46 ? 5 : 0;
    const RxClass rc = c(v1);
    EXPECT_EQ(rc.prio, 5) << tagged;
    EXPECT_EQ(rc.ecn, 2) << tagged;
  }
  // Cut inside the tag or the EtherType: no RoCE, nothing read past the end.
  auto v1 = udp_frame(4791, true, true);
  v1[16] = 0x89;
  v1[17] = 0x15;
  for (size_t n = 0; n < 18; ++n) EXPECT_FALSE(is_roce(std::span<const uint8_t>(v1.data(), n)));
}

}  // namespace
}  // namespace uroce::pipeline
