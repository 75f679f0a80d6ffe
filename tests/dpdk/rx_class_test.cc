/**
 * @file rx_class_test.cc
 * @brief drivers/dpdk/rx_class.h: a received frame's priority under trust dscp (the IP DSCP
 * through dscp_to_prio) and trust pcp (the 802.1Q PCP through pcp_to_prio, untagged frames on
 * priority 0), and its ECN field. References: reference/dcqcn.md §3.4, IEEE 802.1Q §6.9.3.
 */
#include "dpdk/rx_class.h"

#include <gtest/gtest.h>

#include <vector>

namespace uroce::dpdk {
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
  d.dscp_to_prio[46] = 5;                       // EF -> 5 instead of the class selector's 5
  d.pcp_to_prio = {0, 0, 1, 3, 4, 5, 6, 7};     // PCP 1 shares priority 0, PCP 2 -> 1
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

}  // namespace
}  // namespace uroce::dpdk
