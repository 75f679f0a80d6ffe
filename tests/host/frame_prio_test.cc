/**
 * @file frame_prio_test.cc
 * @brief uroce-hostd's priority of a client frame (tools/uroce-hostd/frame_prio.h): the PCP of
 * a tagged frame, else the DSCP's class selector (IPv4 TOS, IPv6 traffic class), else 0.
 */
#include "uroce-hostd/frame_prio.h"

#include <gtest/gtest.h>

#include <vector>

namespace uroce::hostd {
namespace {

std::vector<uint8_t> eth(uint16_t type, std::vector<uint8_t> rest) {
  std::vector<uint8_t> f(12, 0);
  f.push_back(static_cast<uint8_t>(type >> 8));
  f.push_back(static_cast<uint8_t>(type));
  f.insert(f.end(), rest.begin(), rest.end());
  return f;
}

TEST(FramePrio, PcpThenDscpThenZero) {
  EXPECT_EQ(frame_priority(eth(0x8100, {0xa0, 0x05, 0x08, 0x00})), 5);  // PCP 5
  EXPECT_EQ(frame_priority(eth(0x0800, {0x45, 26 << 2})), 3);           // DSCP 26 -> 3
  EXPECT_EQ(frame_priority(eth(0x0800, {0x45, (48 << 2) | 1})), 6);     // DSCP 48, ECT(1)
  // IPv6: version 6, traffic class 26 << 2 = 0x68 split over bytes 0 and 1.
  EXPECT_EQ(frame_priority(eth(0x86dd, {0x66, 0x80})), 3);
  EXPECT_EQ(frame_priority(eth(0x0806, {0, 0})), 0);  // ARP
  EXPECT_EQ(frame_priority(std::vector<uint8_t>(10, 0)), 0);
}

}  // namespace
}  // namespace uroce::hostd
