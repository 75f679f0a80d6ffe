/**
 * @file sr_ext_test.cc
 * @brief uroce's selective-repeat extension on the wire (sr_ext.h): the BTH bit, the SRETH of
 * SEND/WRITE requests and the SACKETH bitmap of ACKs survive build -> parse; the payload starts
 * after them; the bit on any other opcode and a SACKETH of 0 or more than 16 words are dropped.
 */
#include "transport/wire/sr_ext.h"

#include <gtest/gtest.h>

#include "transport/wire/bth.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

constexpr size_t kBth = 14 + 20 + 8;  // untagged IPv4

TEST(SrExtTest, SrethRoundTripsAndThePayloadFollowsIt) {
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteMiddle);
  s.ext = UroceExt::kSreth;
  s.sreth = {7, 0x1234, 0x7f0000001000ull};
  const std::vector<uint8_t> f = test::build_frame(s, 64);
  ASSERT_FALSE(f.empty());
  EXPECT_TRUE(load_be32(f.data() + kBth + 8) & kBthUroceExtMask);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.ext, UroceExt::kSreth);
  EXPECT_EQ(p.sreth, s.sreth);
  ASSERT_EQ(p.payload.size(), 64u);
  EXPECT_EQ(p.payload[0], 0);
  EXPECT_EQ(p.payload[63], 63);
  EXPECT_EQ(p.payload.data(), f.data() + kBth + 12 + sizeof(Sreth));
}

TEST(SrExtTest, SrethSitsAfterTheIbaHeadersOfAWriteFirst) {
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteFirst);
  s.reth = {0x1000, 0x55, 4096};
  s.ext = UroceExt::kSreth;
  s.sreth = {0, 0x55, 0x1000};
  ParsedPacket p;
  ASSERT_EQ(parse(test::build_frame(s, 16), &p), DropReason::kOk);
  EXPECT_EQ(p.reth, s.reth);
  EXPECT_EQ(p.sreth, s.sreth);
  EXPECT_EQ(p.payload.size(), 16u);
}

TEST(SrExtTest, SackBitmapRoundTrips) {
  FrameSpec s = test::default_spec(Opcode::kRcAcknowledge);
  s.aeth = {0x1f, Msn(3)};
  s.ext = UroceExt::kSack;
  s.sack.base = Psn(0xfffffe);  // the bitmap crosses the PSN wrap
  s.sack.nwords = 2;
  s.sack.set(0);
  s.sack.set(33);
  const std::vector<uint8_t> f = test::build_frame(s, 0);
  EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 4 + 4 + 8 + 4);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.ext, UroceExt::kSack);
  EXPECT_EQ(p.sack, s.sack);
  EXPECT_TRUE(p.sack.has(0) && p.sack.has(33) && !p.sack.has(1));
  EXPECT_TRUE(p.payload.empty());
}

TEST(SrExtTest, AFrameWithoutTheBitHasNoExtension) {
  ParsedPacket p;
  ASSERT_EQ(parse(test::build_frame(test::default_spec(Opcode::kRcSendOnly), 8), &p),
            DropReason::kOk);
  EXPECT_EQ(p.ext, UroceExt::kNone);
  EXPECT_EQ(p.payload.size(), 8u);
}

/// Sets the extension bit of a built frame and reseals it.
std::vector<uint8_t> with_bit(std::vector<uint8_t> f) {
  f[kBth + 8] |= static_cast<uint8_t>(kBthUroceExtMask >> 24);
  test::reseal_ipv4(f);
  return f;
}

TEST(SrExtTest, TheBitOnAnotherOpcodeIsDropped) {
  for (Opcode op :
       {Opcode::kUdSendOnly, Opcode::kRcRdmaReadResponseOnly, Opcode::kRcRdmaReadRequest,
        Opcode::kRcFetchAdd, Opcode::kUcSendOnly, Opcode::kRcAtomicAcknowledge}) {
    ParsedPacket p;
    const size_t payload = opcode_info(op).has_payload() ? 32 : 0;
    const std::vector<uint8_t> f = with_bit(test::build_frame(test::default_spec(op), payload));
    ASSERT_FALSE(f.empty());
    EXPECT_EQ(parse(f, &p), DropReason::kBadExtension) << static_cast<int>(op);
  }
}

TEST(SrExtTest, ASackOfNoOrTooManyWordsIsDropped) {
  FrameSpec s = test::default_spec(Opcode::kRcAcknowledge);
  s.ext = UroceExt::kSack;
  s.sack.nwords = 1;
  std::vector<uint8_t> f = test::build_frame(s, 0);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  for (uint8_t words : {uint8_t{0}, uint8_t{17}, uint8_t{255}}) {
    std::vector<uint8_t> g = f;
    g[kBth + 16] = words;  // the SACKETH's first byte: its word count
    test::reseal_ipv4(g);
    EXPECT_EQ(parse(g, &p), DropReason::kBadExtension) << int{words};
  }
}

TEST(SrExtTest, ASackLongerThanTheFrameIsTruncated) {
  FrameSpec s = test::default_spec(Opcode::kRcAcknowledge);
  s.ext = UroceExt::kSack;
  s.sack.nwords = 1;
  std::vector<uint8_t> f = test::build_frame(s, 0);
  f[kBth + 16] = 16;  // claims 64 bytes of bitmap; the frame has 4
  test::reseal_ipv4(f);
  ParsedPacket p;
  EXPECT_EQ(parse(f, &p), DropReason::kHeaderTruncated);
}

}  // namespace
}  // namespace uroce::wire
