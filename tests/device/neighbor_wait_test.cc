/**
 * @file neighbor_wait_test.cc
 * @brief The blocking neighbour wait of ibv_create_ah (lib/device/neighbor_wait.h) with a fake
 * resolver that answers after N polls and a fake clock: it keeps progress running between
 * tries, succeeds when the reply comes within the 1 s budget, and gives up after it.
 */
#include "device/neighbor_wait.h"

#include <gtest/gtest.h>

namespace uroce::device {
namespace {

/// An ARP cache that learns the reply during the progress step that follows `answer_after`
/// resolve() calls; each pause moves the fake clock by the pause length.
struct Fake {
  int answer_after = 0;  ///< resolve() calls before a reply arrives; <0: never
  int resolves = 0;
  int steps = 0;
  bool learned = false;
  Timestamp t{1'000'000};

  bool run(Duration budget = kNeighborWaitBudget) {
    return wait_for_neighbor(
        [&] {
          ++resolves;
          return learned;
        },
        [&] {
          ++steps;  // the RX burst: the reply is learned only here
          if (answer_after >= 0 && resolves >= answer_after) learned = true;
        },
        [&] { return t; }, [&] { t = t + kNeighborWaitPause; }, budget);
  }
};

TEST(NeighborWait, CachedAddressNeedsNoProgress) {
  Fake f;
  f.learned = true;
  EXPECT_TRUE(f.run());
  EXPECT_EQ(f.resolves, 1);
  EXPECT_EQ(f.steps, 0);
}

TEST(NeighborWait, MissIsLearnedThroughTheProgressStep) {
  Fake f;
  f.answer_after = 1;  // the reply is in the next RX burst
  const Timestamp t0 = f.t;
  EXPECT_TRUE(f.run());
  EXPECT_EQ(f.steps, 1);
  EXPECT_EQ(f.t, t0);  // no pause needed
}

TEST(NeighborWait, SlowReplyWithinTheBudgetSucceeds) {
  Fake f;
  f.answer_after = 500;  // ~250 pauses of 1 ms: 250 ms
  const Timestamp t0 = f.t;
  EXPECT_TRUE(f.run());
  EXPECT_LT(f.t - t0, kNeighborWaitBudget);
  EXPECT_GE(f.steps, 250);
}

TEST(NeighborWait, NoReplyGivesUpAfterTheBudget) {
  Fake f;
  f.answer_after = -1;
  const Timestamp t0 = f.t;
  EXPECT_FALSE(f.run());
  EXPECT_GE(f.t - t0, kNeighborWaitBudget);
  EXPECT_LE(f.t - t0, kNeighborWaitBudget + kNeighborWaitPause);
  // One progress step per pause: progress kept running the whole second.
  EXPECT_GE(f.steps, 1000);
  EXPECT_LE(f.steps, 1002);
}

}  // namespace
}  // namespace uroce::device
