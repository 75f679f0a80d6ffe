/**
 * @file pfc_test.cc
 * @brief 802.1Qbb PFC and 802.3x PAUSE frames against docs/dcqcn-pfc.md §3.3 byte for byte.
 * The vectors' FCS (b0 b2 29 c3 / d1 31 78 ac, wire order) is checked with zlib, which
 * confirms the 60 bytes independently of our builder.
 */
#include "transport/wire/pfc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include "wire_test_util.h"

namespace uroce::wire {
namespace {

using test::hex;

const MacAddr kSrc = {{0x02, 0, 0, 0, 0, 0x01}};
const std::string kXoffPrio3 =
    "0180c2000001"
    "020000000001"
    "8808"
    "0101"
    "0008"
    "0000"
    "0000"
    "0000"
    "ffff"
    "0000"
    "0000"
    "0000"
    "0000" +
    std::string(52, '0');
const std::string kXonPrio3 =
    "0180c2000001"
    "020000000001"
    "8808"
    "0101"
    "0008"
    "0000"
    "0000"
    "0000"
    "0000"
    "0000"
    "0000"
    "0000"
    "0000" +
    std::string(52, '0');

uint32_t fcs(std::span<const uint8_t> f) {
  return static_cast<uint32_t>(crc32(0, f.data(), static_cast<uInt>(f.size())));
}

TEST(Pfc, XoffPriority3MatchesVector) {
  std::array<uint8_t, 64> buf{};
  std::array<uint16_t, 8> q{};
  q[3] = 0xffff;
  ASSERT_EQ(build_pfc(buf, kSrc, 0x08, q), 60u);
  const auto f = std::span<const uint8_t>(buf).first(60);
  EXPECT_EQ(hex(f), kXoffPrio3);
  EXPECT_EQ(fcs(f), 0xc329b2b0u);  // wire order b0 b2 29 c3

  MacControlFrame m;
  ASSERT_EQ(parse_mac_control(f, &m), MacControlParse::kOk);
  EXPECT_TRUE(m.pfc);
  EXPECT_EQ(m.class_enable, 0x08);
  EXPECT_EQ(m.quanta[3], 0xffff);
  EXPECT_EQ(m.quanta[2], 0);
  EXPECT_EQ(m.src, kSrc);
}

TEST(Pfc, XonPriority3MatchesVector) {
  std::array<uint8_t, 60> buf{};
  ASSERT_EQ(build_pfc(buf, kSrc, 0x08, {}), 60u);
  EXPECT_EQ(hex(buf), kXonPrio3);
  EXPECT_EQ(fcs(buf), 0xac7831d1u);  // wire order d1 31 78 ac
}

TEST(Pfc, PauseRoundTrip) {
  std::array<uint8_t, 60> buf{};
  ASSERT_EQ(build_pause(buf, kSrc, 0x1234), 60u);
  EXPECT_EQ(hex(std::span<const uint8_t>(buf).first(18)), "0180c2000001020000000001880800011234");
  MacControlFrame m;
  ASSERT_EQ(parse_mac_control(buf, &m), MacControlParse::kOk);
  EXPECT_FALSE(m.pfc);
  EXPECT_EQ(m.quanta[0], 0x1234);
  EXPECT_EQ(m.quanta[7], 0x1234);
}

TEST(Pfc, RejectsBadFrames) {
  std::array<uint8_t, 60> buf{};
  ASSERT_EQ(build_pfc(buf, kSrc, 0xff, {1, 2, 3, 4, 5, 6, 7, 8}), 60u);
  MacControlFrame m;
  EXPECT_EQ(parse_mac_control(std::span<const uint8_t>(buf).first(13), &m),
            MacControlParse::kNotMacControl);
  EXPECT_EQ(parse_mac_control(std::span<const uint8_t>(buf).first(33), &m),
            MacControlParse::kTruncated);
  EXPECT_EQ(parse_mac_control(std::span<const uint8_t>(buf).first(34), &m), MacControlParse::kOk);
  auto b = buf;
  b[15] = 0x02;  // opcode 0x0102
  EXPECT_EQ(parse_mac_control(b, &m), MacControlParse::kUnknownOpcode);
  b = buf;
  b[5] = 0x02;  // DA 01:80:c2:00:00:02 (slow protocols)
  EXPECT_EQ(parse_mac_control(b, &m), MacControlParse::kBadDestination);
  b = buf;
  b[13] = 0x00;  // EtherType 0x8800
  EXPECT_EQ(parse_mac_control(b, &m), MacControlParse::kNotMacControl);
  std::array<uint8_t, 59> small{};
  EXPECT_EQ(build_pfc(small, kSrc, 0, {}), 0u);
}

TEST(Pfc, QuantaToNanoseconds) {
  // 1 quantum = 512 bit times: 51.2 ns at 10G, 5.12 ns at 100G; 65535 at 100G = 335.5 us.
  EXPECT_EQ(pause_quanta_to_ns(1000, 10'000'000'000ull), 51'200u);
  EXPECT_EQ(pause_quanta_to_ns(65535, 100'000'000'000ull), 335'539u);
  EXPECT_EQ(pause_quanta_to_ns(0, 100'000'000'000ull), 0u);
}

}  // namespace
}  // namespace uroce::wire
