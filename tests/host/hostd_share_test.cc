/**
 * @file hostd_share_test.cc
 * @brief What uroce-hostd steers by (drivers/host/hostd_share.h): the destination QPN of
 * RoCEv2 frames (IPv4 with options, IPv6, 802.1Q-tagged; not RoCE: none), the slot a tagged
 * QPN carries, and client slot claims (the lowest free one, freed when its holder closes).
 */
#include "host/hostd_share.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <initializer_list>
#include <vector>

#include "common/port.h"

namespace uroce::host {
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

TEST(HostdShare, DestQpnOfEveryRoceFrameShape) {
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

TEST(HostdShare, SlotIsTheQpnTag) {
  static_assert(kSharedQpnTagBits == 4);
  EXPECT_EQ(slot_of_qpn(0x312345), 3);
  EXPECT_EQ(slot_of_qpn(0x012345), 0);
  EXPECT_EQ(slot_of_qpn(0xf00011), 15);
}

TEST(HostdShare, OnlyServedSlotsNameAClient) {
  EXPECT_EQ(client_of_qpn(0x012345), 0);
  EXPECT_EQ(client_of_qpn(0x712345), kHostdSlots - 1);
  EXPECT_FALSE(client_of_qpn(0x812345)) << "tag 8: no client of an 8-slot daemon";
  EXPECT_FALSE(client_of_qpn(0xf00011));
}

TEST(HostdShare, ClaimsTheLowestFreeSlot) {
  char dir[] = "/tmp/hostd_share_testXXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  setenv("UROCE_RUN_DIR", dir, 1);
  std::string err;
  auto a = claim_slot("veth9", &err);
  auto b = claim_slot("veth9", &err);
  ASSERT_TRUE(a && b) << err;
  EXPECT_EQ(a->slot, 0);
  EXPECT_EQ(b->slot, 1);
  close(a->fd);
  auto c = claim_slot("veth9", &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->slot, 0) << "a closed holder frees its slot";
  std::vector<int> fds{b->fd, c->fd};
  for (int k = 2; k < kHostdSlots; ++k) {
    auto s = claim_slot("veth9", &err);
    ASSERT_TRUE(s) << err;
    fds.push_back(s->fd);
  }
  EXPECT_FALSE(claim_slot("veth9", &err));
  EXPECT_NE(err.find("slots"), std::string::npos);
  EXPECT_FALSE(hostd_running("veth9")) << "no daemon lock held, no socket";
  for (int fd : fds) close(fd);
  unsetenv("UROCE_RUN_DIR");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace uroce::host
