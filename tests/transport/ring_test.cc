/**
 * @file ring_test.cc
 * @brief The fixed-capacity ring: power-of-two rounding, FIFO order, wrap of positions.
 */
#include "transport/ring.h"

#include <gtest/gtest.h>

namespace uroce::transport {
namespace {

TEST(RingTest, RoundsUpAndRefusesWhenFull) {
  Ring<int> r(5);
  EXPECT_EQ(r.capacity(), 8u);
  for (int i = 0; i < 8; ++i) *r.push() = i;
  EXPECT_TRUE(r.full());
  EXPECT_EQ(r.push(), nullptr);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(r.front(), i);
    r.pop();
  }
  EXPECT_TRUE(r.empty());
}

TEST(RingTest, FifoAcrossManyWraps) {
  Ring<uint32_t> r(4);
  uint32_t in = 0, out = 0;
  for (int round = 0; round < 10000; ++round) {
    while (!r.full()) *r.push() = in++;
    r.pop();
    ++out;
    EXPECT_EQ(r.front(), out);
    EXPECT_EQ(r.at(r.size() - 1), in - 1);
  }
}

}  // namespace
}  // namespace uroce::transport
