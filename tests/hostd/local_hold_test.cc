/**
 * @file local_hold_test.cc
 * @brief LocalHold (lib/hostd/local_hold.h): a same-host frame waits for a full receiver up to
 * kHold, then the receiver is stalled (its frames dropped at once) until it has room again.
 */
#include "hostd/local_hold.h"

#include <gtest/gtest.h>

namespace uroce::hostd {
namespace {

const Timestamp kT0{1'000'000};
const Duration kTick = Duration::micros(100);

TEST(LocalHold, RoomNeverWaits) {
  LocalHold::Sender s;
  LocalHold::Receiver r;
  EXPECT_FALSE(LocalHold::must_wait(s, r, true, kT0));
  EXPECT_FALSE(s.waiting);
  EXPECT_FALSE(r.stalled);
}

TEST(LocalHold, FullReceiverHoldsTheSenderUntilKHoldThenStalls) {
  LocalHold::Sender s;
  LocalHold::Receiver r;
  Timestamp t = kT0;
  for (; t - kT0 < LocalHold::kHold; t = t + kTick)
    EXPECT_TRUE(LocalHold::must_wait(s, r, false, t)) << (t - kT0).ns;
  EXPECT_FALSE(LocalHold::must_wait(s, r, false, t));  // kHold passed: dropped by the caller
  EXPECT_TRUE(r.stalled);
  // Frames to a stalled receiver go on at once, from this sender and any other.
  LocalHold::Sender other;
  EXPECT_FALSE(LocalHold::must_wait(s, r, false, t + kTick));
  EXPECT_FALSE(LocalHold::must_wait(other, r, false, t + kTick));
  EXPECT_FALSE(other.waiting);
}

TEST(LocalHold, RoomAgainEndsTheStallAndTheNextFullWaitsAnew) {
  LocalHold::Sender s;
  LocalHold::Receiver r;
  ASSERT_TRUE(LocalHold::must_wait(s, r, false, kT0));
  ASSERT_FALSE(LocalHold::must_wait(s, r, false, kT0 + LocalHold::kHold));
  ASSERT_TRUE(r.stalled);
  EXPECT_FALSE(LocalHold::must_wait(s, r, true, kT0 + LocalHold::kHold + kTick));
  EXPECT_FALSE(r.stalled);
  const Timestamp later = kT0 + LocalHold::kHold * 3;
  EXPECT_TRUE(LocalHold::must_wait(s, r, false, later));
  EXPECT_TRUE(LocalHold::must_wait(s, r, false, later + LocalHold::kHold - kTick));
  EXPECT_FALSE(LocalHold::must_wait(s, r, false, later + LocalHold::kHold));
}

TEST(LocalHold, AWaitThatEndsWithRoomDoesNotCountTowardsTheNext) {
  LocalHold::Sender s;
  LocalHold::Receiver r;
  ASSERT_TRUE(LocalHold::must_wait(s, r, false, kT0));
  ASSERT_FALSE(LocalHold::must_wait(s, r, true, kT0 + LocalHold::kHold - kTick));
  // Full again just after: a wait of its own, not the rest of the first one.
  EXPECT_TRUE(LocalHold::must_wait(s, r, false, kT0 + LocalHold::kHold));
  EXPECT_FALSE(r.stalled);
}

}  // namespace
}  // namespace uroce::hostd
