/**
 * @file gid_table_test.cc
 * @brief merge_gid_table() (lib/device gid_table.h): slots keep their index while their
 * address stays, removed addresses free their slot, new ones take the lowest free slot.
 */
#include "device/gid_table.h"

#include <gtest/gtest.h>

namespace uroce::device {
namespace {

Gid v4(uint8_t last) { return Gid::from_ipv4(0xC6120000u | last); }  // 198.18.0.<last>

TEST(GidTable, FirstTableIsTheKernelsOrder) {
  std::vector<Gid> now = {v4(1), v4(2)};
  EXPECT_EQ(merge_gid_table({}, now), now);
}

TEST(GidTable, RemovedAddressLeavesAZeroSlotAndOthersKeepTheirIndex) {
  auto t = merge_gid_table({v4(1), v4(2), v4(3)}, {v4(1), v4(3)});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0], v4(1));
  EXPECT_TRUE(t[1].is_zero());
  EXPECT_EQ(t[2], v4(3));
}

TEST(GidTable, NewAddressTakesTheLowestFreeSlotThenExtends) {
  auto t = merge_gid_table({v4(1), Gid{}, v4(3)}, {v4(1), v4(3), v4(7), v4(8)});
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[1], v4(7));
  EXPECT_EQ(t[3], v4(8));
}

TEST(GidTable, TrailingFreeSlotsAreDropped) {
  auto t = merge_gid_table({v4(1), v4(2)}, {v4(1)});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], v4(1));
  EXPECT_TRUE(merge_gid_table({v4(1)}, {}).empty());
}

TEST(GidTable, UnchangedAddressesGiveTheSameTable) {
  std::vector<Gid> old = {v4(1), Gid{}, v4(3)};
  EXPECT_EQ(merge_gid_table(old, {v4(3), v4(1)}), old);
}

}  // namespace
}  // namespace uroce::device
