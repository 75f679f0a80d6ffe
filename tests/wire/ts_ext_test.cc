/**
 * @file ts_ext_test.cc
 * @brief uroce's timestamp extension on the wire (ts_ext.h): BTH bit 29, the TSETH of a request
 * (4 bytes) and of an RC Acknowledge (8 bytes) survive build -> parse, after the
 * selective-repeat header when there is one, before the payload; the bit on any other opcode
 * is dropped, a TSETH longer than the frame is truncated.
 */
#include "transport/wire/ts_ext.h"

#include <gtest/gtest.h>

#include "transport/wire/bth.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

constexpr size_t kBth = 14 + 20 + 8;  // untagged IPv4

TEST(TsExtTest, RequestStampRoundTripsBeforeThePayload) {
  FrameSpec s = test::default_spec(Opcode::kRcSendOnly);
  s.has_tseth = true;
  s.tseth.stamp = 0xfedcba98;
  const std::vector<uint8_t> f = test::build_frame(s, 32);
  ASSERT_FALSE(f.empty());
  const uint32_t w2 = load_be32(f.data() + kBth + 8);
  EXPECT_TRUE(w2 & kBthUroceTsMask);
  EXPECT_FALSE(w2 & kBthUroceExtMask);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_TRUE(p.has_tseth);
  EXPECT_EQ(p.tseth, (TsethValue{0xfedcba98, 0}));
  EXPECT_EQ(p.ext, UroceExt::kNone);
  ASSERT_EQ(p.payload.size(), 32u);
  EXPECT_EQ(p.payload.data(), f.data() + kBth + 12 + kTsethRequestLen);
  EXPECT_EQ(p.payload[31], 31);
}

TEST(TsExtTest, RequestStampFollowsTheSreth) {
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteFirst);
  s.ext = UroceExt::kSreth;
  s.sreth = {3, 0x55, 0x1000};
  s.has_tseth = true;
  s.tseth.stamp = 17;
  const std::vector<uint8_t> f = test::build_frame(s, 8);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.reth, s.reth);
  EXPECT_EQ(p.sreth, s.sreth);
  EXPECT_EQ(p.tseth.stamp, 17u);
  EXPECT_EQ(p.payload.data(), f.data() + kBth + 12 + 16 + sizeof(Sreth) + kTsethRequestLen);
}

TEST(TsExtTest, AckEchoAndHoldFollowTheSack) {
  FrameSpec s = test::default_spec(Opcode::kRcAcknowledge);
  s.ext = UroceExt::kSack;
  s.sack.nwords = 1;
  s.sack.set(2);
  s.has_tseth = true;
  s.tseth = {0x80000001, 2500};
  const std::vector<uint8_t> f = test::build_frame(s, 0);
  EXPECT_EQ(f.size(), kBth + 12 + 4 + 8 + kTsethAckLen + 4);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.sack, s.sack);
  EXPECT_EQ(p.tseth, s.tseth);

  s.ext = UroceExt::kNone;  // go-back-N with timestamps: the TSETH alone
  ASSERT_EQ(parse(test::build_frame(s, 0), &p), DropReason::kOk);
  EXPECT_EQ(p.ext, UroceExt::kNone);
  EXPECT_EQ(p.tseth, s.tseth);
}

TEST(TsExtTest, TheBitOnAnotherOpcodeIsDropped) {
  for (Opcode op : {Opcode::kUdSendOnly, Opcode::kRcRdmaReadResponseOnly, Opcode::kUcSendOnly,
                    Opcode::kRcAtomicAcknowledge, Opcode::kCnp}) {
    const size_t payload = opcode_info(op).has_payload() ? 32 : 0;
    std::vector<uint8_t> f = test::build_frame(test::default_spec(op), payload);
    ASSERT_FALSE(f.empty());
    f[kBth + 8] |= static_cast<uint8_t>(kBthUroceTsMask >> 24);
    test::reseal_ipv4(f);
    ParsedPacket p;
    EXPECT_EQ(parse(f, &p), DropReason::kBadExtension) << static_cast<int>(op);
  }
}

TEST(TsExtTest, ATsethLongerThanTheFrameIsTruncated) {
  // An ACK whose bit promises 8 bytes of TSETH that are not there.
  std::vector<uint8_t> f = test::build_frame(test::default_spec(Opcode::kRcAcknowledge), 0);
  f[kBth + 8] |= static_cast<uint8_t>(kBthUroceTsMask >> 24);
  test::reseal_ipv4(f);
  ParsedPacket p;
  EXPECT_EQ(parse(f, &p), DropReason::kHeaderTruncated);
}

}  // namespace
}  // namespace uroce::wire
