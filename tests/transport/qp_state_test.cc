/**
 * @file qp_state_test.cc
 * @brief The modify_qp transition/mask table against ibv_modify_qp(3) and IBA Vol 1 §10.3.
 */
#include "transport/qp_state.h"

#include <gtest/gtest.h>

namespace uroce::transport {
namespace {

constexpr uint32_t kRcInit = kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags;
constexpr uint32_t kRcRtr = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn |
                            kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
constexpr uint32_t kRcRts =
    kAttrState | kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrSqPsn | kAttrMaxQpRdAtomic;

TEST(QpStateTest, RcHappyPathMasks) {
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kReset, QpState::kInit, kRcInit));
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kInit, QpState::kRtr, kRcRtr));
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kRtr, QpState::kRts, kRcRts));
}

TEST(QpStateTest, XrcMasksAreTheKernels) {
  // XRC_SEND (IB_QPT_XRC_INI): no responder attributes at RTR, the requester's at RTS.
  const uint32_t path = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
  EXPECT_TRUE(check_modify_mask(QpType::kXrcSend, QpState::kReset, QpState::kInit, kRcInit));
  EXPECT_TRUE(check_modify_mask(QpType::kXrcSend, QpState::kInit, QpState::kRtr, path));
  EXPECT_EQ(check_modify_mask(QpType::kXrcSend, QpState::kInit, QpState::kRtr, kRcRtr).code(),
            EINVAL);
  EXPECT_TRUE(check_modify_mask(QpType::kXrcSend, QpState::kRtr, QpState::kRts, kRcRts));
  // XRC_RECV (IB_QPT_XRC_TGT): the responder's at RTR, only timeout and SQ PSN at RTS (what
  // ibv_xsrq_pingpong and pyverbs pass).
  EXPECT_TRUE(check_modify_mask(QpType::kXrcRecv, QpState::kInit, QpState::kRtr, kRcRtr));
  EXPECT_EQ(check_modify_mask(QpType::kXrcRecv, QpState::kInit, QpState::kRtr, path).code(),
            EINVAL);
  EXPECT_TRUE(check_modify_mask(QpType::kXrcRecv, QpState::kRtr, QpState::kRts,
                                kAttrState | kAttrTimeout | kAttrSqPsn));
  EXPECT_EQ(check_modify_mask(QpType::kXrcRecv, QpState::kRtr, QpState::kRts, kRcRts).code(),
            EINVAL);
  EXPECT_TRUE(check_modify_mask(QpType::kXrcRecv, QpState::kRts, QpState::kRts, kAttrMinRnrTimer));
  EXPECT_EQ(
      check_modify_mask(QpType::kXrcSend, QpState::kRts, QpState::kRts, kAttrMinRnrTimer).code(),
      EINVAL);
}

TEST(QpStateTest, MissingRequiredBitIsEinval) {
  // RC INIT->RTR without MIN_RNR_TIMER (required for RC only).
  EXPECT_EQ(
      check_modify_mask(QpType::kRc, QpState::kInit, QpState::kRtr, kRcRtr & ~kAttrMinRnrTimer),
      Status::invalid());
  // The same mask is fine for UC without the RC-only bits.
  EXPECT_TRUE(check_modify_mask(QpType::kUc, QpState::kInit, QpState::kRtr,
                                kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn));
  // RTR->RTS RC without TIMEOUT.
  EXPECT_EQ(check_modify_mask(QpType::kRc, QpState::kRtr, QpState::kRts, kRcRts & ~kAttrTimeout),
            Status::invalid());
  // UD RESET->INIT needs QKEY.
  EXPECT_EQ(check_modify_mask(QpType::kUd, QpState::kReset, QpState::kInit,
                              kAttrState | kAttrPkeyIndex | kAttrPort),
            Status::invalid());
}

TEST(QpStateTest, ExtraBitIsEinval) {
  // QKEY is not an RC attribute at RESET->INIT.
  EXPECT_EQ(check_modify_mask(QpType::kRc, QpState::kReset, QpState::kInit, kRcInit | kAttrQkey),
            Status::invalid());
  // UC RTR->RTS must not carry TIMEOUT.
  EXPECT_EQ(check_modify_mask(QpType::kUc, QpState::kRtr, QpState::kRts,
                              kAttrState | kAttrSqPsn | kAttrTimeout),
            Status::invalid());
  // UD INIT->RTR must not carry AV.
  EXPECT_EQ(check_modify_mask(QpType::kUd, QpState::kInit, QpState::kRtr, kAttrState | kAttrAv),
            Status::invalid());
}

TEST(QpStateTest, IllegalTransitions) {
  EXPECT_FALSE(transition_rule(QpType::kRc, QpState::kReset, QpState::kRts).valid);
  EXPECT_FALSE(transition_rule(QpType::kRc, QpState::kInit, QpState::kRts).valid);
  EXPECT_FALSE(transition_rule(QpType::kRc, QpState::kRtr, QpState::kRtr).valid);
  EXPECT_FALSE(transition_rule(QpType::kRc, QpState::kErr, QpState::kRts).valid);
  EXPECT_FALSE(transition_rule(QpType::kUd, QpState::kSqe, QpState::kSqd).valid);
}

TEST(QpStateTest, AnyStateToResetOrErr) {
  for (int s = 0; s < 7; ++s) {
    auto st = static_cast<QpState>(s);
    EXPECT_TRUE(check_modify_mask(QpType::kRc, st, QpState::kReset, kAttrState));
    EXPECT_TRUE(check_modify_mask(QpType::kUd, st, QpState::kErr, kAttrState));
    // ... but with nothing else.
    EXPECT_FALSE(check_modify_mask(QpType::kRc, st, QpState::kErr, kAttrState | kAttrTimeout));
  }
}

TEST(QpStateTest, SameStateModifies) {
  // RTS->RTS may change MIN_RNR_TIMER on RC, not on UD.
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kRts, QpState::kRts, kAttrMinRnrTimer));
  EXPECT_FALSE(check_modify_mask(QpType::kUd, QpState::kRts, QpState::kRts, kAttrMinRnrTimer));
  EXPECT_TRUE(check_modify_mask(QpType::kUd, QpState::kRts, QpState::kRts, kAttrQkey));
  // RTS->SQD with the async-notify flag; SQD->SQD RC may change the path.
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kRts, QpState::kSqd,
                                kAttrState | kAttrEnSqdAsyncNotify));
  EXPECT_TRUE(check_modify_mask(QpType::kRc, QpState::kSqd, QpState::kSqd, kAttrAv | kAttrTimeout));
}

TEST(QpStateTest, Names) {
  EXPECT_EQ(to_string(QpState::kRts), "RTS");
  EXPECT_EQ(to_string(QpState::kSqe), "SQE");
}

}  // namespace
}  // namespace uroce::transport
