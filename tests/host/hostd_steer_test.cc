/**
 * @file hostd_steer_test.cc
 * @brief What uroce-hostd steers by (tools/uroce-hostd/steer.h): the destination QPN of
 * RoCEv2 frames (IPv4 with options, IPv6, 802.1Q-tagged; not RoCE: none), the QPN block it
 * falls in, and the blocks given to clients (cyclic, never block 0, freed blocks come back
 * only after the others).
 */
#include <gtest/gtest.h>

#include <initializer_list>
#include <set>
#include <vector>

#include "uroce-hostd/steer.h"

namespace uroce::hostd {
namespace {

/// Ethernet (+ optional tag) + IP + UDP to `dport` + a BTH with destination QP `qpn`.
std::vector<uint8_t> frame(bool v6, bool vlan, uint32_t qpn, uint16_t dport = 4791,
                           int ip_options = 0) {
  std::vector<uint8_t> f(12, 0xaa);
  auto add = [&f](std::initializer_list<int> bytes) {
    for (int b : bytes) f.push_back(static_cast<uint8_t>(b));
  };
  if (vlan) add({0x81, 0x00, 0x60, 0x05});
  const size_t ip = f.size() + 2;
  if (v6) {
    add({0x86, 0xdd});
    f.resize(ip + 40, 0);
    f[ip] = 0x60;
    f[ip + 6] = 17;
  } else {
    add({0x08, 0x00});
    f.resize(ip + 20 + 4 * static_cast<size_t>(ip_options), 0);
    f[ip] = static_cast<uint8_t>(0x40 | (5 + ip_options));
    f[ip + 9] = 17;
  }
  add({0xc0, 0x00, dport >> 8, dport & 0xff, 0, 0, 0, 0});
  const size_t bth = f.size();
  f.resize(bth + 12 + 20, 0);  // BTH, payload + ICRC
  f[bth + 4] = 0xff;           // reserved byte before the QPN: must not leak into it
  f[bth + 5] = static_cast<uint8_t>(qpn >> 16);
  f[bth + 6] = static_cast<uint8_t>(qpn >> 8);
  f[bth + 7] = static_cast<uint8_t>(qpn);
  return f;
}

TEST(HostdSteer, DestQpnOfEveryRoceFrameShape) {
  EXPECT_EQ(roce_dest_qpn(frame(false, false, 0x312345)), 0x312345u);
  EXPECT_EQ(roce_dest_qpn(frame(false, false, 0x312345, 4791, 2)), 0x312345u);
  EXPECT_EQ(roce_dest_qpn(frame(true, false, 1)), 1u);
  EXPECT_EQ(roce_dest_qpn(frame(false, true, 0xabcdef)), 0xabcdefu);
  EXPECT_EQ(roce_dest_qpn(frame(true, true, 0x7)), 0x7u);
  EXPECT_FALSE(roce_dest_qpn(frame(false, false, 5, 4792)));
  auto f = frame(false, false, 5);
  f.resize(40);
  EXPECT_FALSE(roce_dest_qpn(f)) << "truncated";
}

TEST(HostdSteer, BlockOfAQpn) {
  QpnBlocks b(13);
  EXPECT_EQ(b.count(), 2048u);
  EXPECT_EQ(b.block_of(0x000001), 0u);  // QP1: block 0
  EXPECT_EQ(b.block_of(0x002000), 1u);
  EXPECT_EQ(b.block_of(0xffffff), 2047u);
  EXPECT_EQ(b.block_of(0x1ffffff), 2047u) << "only 24 bits count";
}

TEST(HostdSteer, BlocksAreGivenCyclicallyNeverBlockZero) {
  QpnBlocks b(13);
  EXPECT_EQ(b.give(), 1u);
  EXPECT_EQ(b.give(), 2u);
  EXPECT_EQ(b.give(), 3u);
  b.free(1);
  EXPECT_EQ(b.in_use(), 2u);
  EXPECT_EQ(b.give(), 4u) << "a freed block comes back only after the others";
  std::set<uint32_t> got{2, 3, 4};
  while (auto x = b.give()) {
    EXPECT_NE(*x, 0u);
    EXPECT_TRUE(got.insert(*x).second) << *x << " given twice";
  }
  EXPECT_EQ(got.size(), 2047u);  // every block but 0, block 1 last
  EXPECT_EQ(b.in_use(), 2047u);
  b.free(700);
  EXPECT_EQ(b.give(), 700u);
}

TEST(HostdSteer, AClientResumesItsOwnBlockAndReservedOnesAreKeptForIt) {
  using T = QpnBlocks::Take;
  const QpnBlocks::Owner p1{101, 1000}, p3{103, 1000}, other{999, 1000};
  QpnBlocks b(13);
  // A daemon after a restart: blocks 1 and 3 were its predecessor's clients'.
  b.reserve(1, p1);
  b.reserve(3, p3);
  EXPECT_TRUE(b.held(1));
  EXPECT_EQ(b.owner(3), p3);
  EXPECT_EQ(b.give(other), 2u);
  EXPECT_EQ(b.give(other), 4u) << "a reserved block is passed over";
  EXPECT_EQ(b.take(3, other), T::kNotYours) << "another process may not resume it";
  EXPECT_EQ(b.take(3, QpnBlocks::Owner{103, 0}), T::kNotYours) << "nor the same pid as root";
  EXPECT_EQ(b.take(3, p3), T::kOk) << "its client comes back";
  EXPECT_EQ(b.take(3, p3), T::kGiven) << "given already";
  EXPECT_EQ(b.take(2, other), T::kGiven) << "another client's";
  EXPECT_EQ(b.take(0, p1), T::kNotReserved);
  EXPECT_EQ(b.take(b.count(), p1), T::kNotReserved);
  EXPECT_EQ(b.take(9, p1), T::kNotReserved) << "a process does not choose a free block";
  EXPECT_EQ(b.in_use(), 3u);
  b.unreserve_all();  // the window for resuming ended: block 1 is given again
  EXPECT_FALSE(b.held(1));
  EXPECT_EQ(b.owner(1), QpnBlocks::Owner{});
  EXPECT_EQ(b.take(1, p1), T::kNotReserved) << "too late to resume";
  std::set<uint32_t> got;
  while (auto x = b.give()) got.insert(*x);
  EXPECT_TRUE(got.contains(1));
  EXPECT_FALSE(got.contains(3));
}

TEST(HostdSteer, AFreedBlockHasNoOwner) {
  QpnBlocks b(13);
  const QpnBlocks::Owner p{42, 7};
  const auto x = b.give(p);
  ASSERT_TRUE(x);
  EXPECT_EQ(b.owner(*x), p);
  b.free(*x);
  EXPECT_EQ(b.owner(*x), QpnBlocks::Owner{});
  b.reserve(*x, p);
  b.free(*x);  // freeing a block nobody took leaves the reservation
  EXPECT_EQ(b.owner(*x), p);
}

TEST(HostdSteer, AtLeast1024ClientsOf4096Qps) {
  QpnBlocks b(13);
  EXPECT_GE(b.count() - 1, 1024u);
  EXPECT_GE(1u << b.bits(), 4096u);
}

}  // namespace
}  // namespace uroce::hostd
