/**
 * @file red_test.cc
 * @brief The RED/ECN marking curve (red.h): zero up to kmin, linear to pmax just below kmax,
 * one from kmax on.
 */
#include "dcqcn/red.h"

#include <gtest/gtest.h>

namespace uroce::dcqcn {
namespace {

TEST(RedCurve, ZeroUpToKminLinearToPmaxOneFromKmax) {
  const RedCurve c{.kmin_bytes = 5 * 1024, .kmax_bytes = 200 * 1024, .pmax = 0.01};
  EXPECT_EQ(red_mark_probability(c, 0), 0.0);
  EXPECT_EQ(red_mark_probability(c, 5 * 1024), 0.0);
  EXPECT_DOUBLE_EQ(red_mark_probability(c, 5 * 1024 + 1), 0.01 / (195 * 1024));
  EXPECT_DOUBLE_EQ(red_mark_probability(c, (5 + 195 / 2.0) * 1024), 0.005);
  EXPECT_DOUBLE_EQ(red_mark_probability(c, 200 * 1024 - 1), 0.01 * (195 * 1024 - 1) / (195 * 1024));
  EXPECT_EQ(red_mark_probability(c, 200 * 1024), 1.0);
  EXPECT_EQ(red_mark_probability(c, 1ull << 40), 1.0);
}

TEST(RedCurve, StepWhenKminEqualsKmax) {
  const RedCurve c{.kmin_bytes = 1000, .kmax_bytes = 1000, .pmax = 0.5};
  EXPECT_EQ(red_mark_probability(c, 999), 0.0);
  EXPECT_EQ(red_mark_probability(c, 1000), 0.0);
  EXPECT_EQ(red_mark_probability(c, 1001), 1.0);
}

static_assert(red_mark_probability({.kmin_bytes = 10, .kmax_bytes = 20, .pmax = 0.2}, 15) == 0.1);

}  // namespace
}  // namespace uroce::dcqcn
