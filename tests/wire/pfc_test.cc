/**
 * @file pfc_test.cc
 * @brief 802.1Qbb PFC and 802.3x PAUSE frames against docs/dcqcn-pfc.md §3.3 byte for byte,
 * and the per-speed quantum table of §3.3. The vectors' FCS (b0 b2 29 c3 / d1 31 78 ac, wire
 * order) is checked with zlib, which confirms the 60 bytes independently of our builder, and
 * with crc32_update (icrc.h), the CRC-32 a sender appends.
 */
#include "transport/wire/pfc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <vector>

#include "transport/wire/icrc.h"
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

/// The FCS of a frame in wire order (CRC-32, least significant byte first).
std::array<uint8_t, 4> fcs_wire_order(std::span<const uint8_t> f) {
  const uint32_t v = crc32_update(kCrc32Init, f);
  return {static_cast<uint8_t>(v), static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v >> 16),
          static_cast<uint8_t>(v >> 24)};
}

PauseFrame pfc(uint8_t class_enable, const std::array<uint16_t, 8>& quanta) {
  PauseFrame f;
  f.class_enable = class_enable;
  f.quanta = quanta;
  return f;
}

TEST(Pfc, XoffPriority3MatchesVector) {
  std::array<uint8_t, 64> buf{};
  std::array<uint16_t, 8> q{};
  q[3] = 0xffff;
  ASSERT_EQ(build_pause_frame(buf, kSrc, pfc(0x08, q)), 60u);
  const auto f = std::span<const uint8_t>(buf).first(60);
  EXPECT_EQ(hex(f), kXoffPrio3);
  EXPECT_EQ(fcs(f), 0xc329b2b0u);  // wire order b0 b2 29 c3
  EXPECT_EQ(fcs_wire_order(f), (std::array<uint8_t, 4>{0xb0, 0xb2, 0x29, 0xc3}));

  MacControlFrame m;
  ASSERT_EQ(parse_mac_control(f, &m), MacControlParse::kOk);
  EXPECT_FALSE(m.pause.global);
  EXPECT_EQ(m.pause.class_enable, 0x08);
  EXPECT_EQ(m.pause.quanta[3], 0xffff);
  EXPECT_EQ(m.pause.quanta[2], 0);
  EXPECT_EQ(m.src, kSrc);
}

// §3.3: XON is the same frame with time[3] = 0.
TEST(Pfc, XonPriority3MatchesVector) {
  std::array<uint8_t, 60> buf{};
  ASSERT_EQ(build_pause_frame(buf, kSrc, pfc(0x08, {})), 60u);
  EXPECT_EQ(hex(buf), kXonPrio3);
  EXPECT_EQ(fcs(buf), 0xac7831d1u);  // wire order d1 31 78 ac
  EXPECT_EQ(crc32_update(kCrc32Init, buf), 0xac7831d1u);
}

TEST(Pfc, PauseRoundTrip) {
  std::array<uint8_t, 60> buf{};
  PauseFrame g;
  g.global = true;
  g.quanta[0] = 0x1234;
  ASSERT_EQ(build_pause_frame(buf, kSrc, g), 60u);
  EXPECT_EQ(hex(std::span<const uint8_t>(buf).first(18)), "0180c2000001020000000001880800011234");
  MacControlFrame m;
  ASSERT_EQ(parse_mac_control(buf, &m), MacControlParse::kOk);
  EXPECT_TRUE(m.pause.global);
  EXPECT_EQ(m.pause.quanta[0], 0x1234);
  EXPECT_EQ(m.pause.quanta[7], 0x1234);
}

TEST(Pfc, ParseRoundTripAndGlobalPause) {
  PauseFrame f;
  f.class_enable = 0x48;
  f.quanta[3] = 0x1234;
  f.quanta[6] = 7;
  std::array<uint8_t, kMacControlFrameLen> out{};
  ASSERT_EQ(build_pause_frame(out, kSrc, f), 60u);
  MacControlFrame p;
  ASSERT_EQ(parse_mac_control(out, &p), MacControlParse::kOk);
  EXPECT_FALSE(p.pause.global);
  EXPECT_EQ(p.pause.class_enable, 0x48);
  EXPECT_EQ(p.pause.quanta[3], 0x1234);
  EXPECT_EQ(p.pause.quanta[6], 7);

  PauseFrame g;
  g.global = true;
  g.quanta[0] = 0x00FF;
  build_pause_frame(out, kSrc, g);
  EXPECT_EQ(out[14], 0x00);
  EXPECT_EQ(out[15], 0x01);  // opcode 0x0001
  MacControlFrame q;
  ASSERT_EQ(parse_mac_control(out, &q), MacControlParse::kOk);
  EXPECT_TRUE(q.pause.global);
  EXPECT_EQ(q.pause.class_enable, 0xFF);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q.pause.quanta[i], 0x00FF);

  out[12] = 0x08;
  out[13] = 0x00;  // IPv4 EtherType: not MAC control
  EXPECT_EQ(parse_mac_control(out, &q), MacControlParse::kNotMacControl);
  EXPECT_EQ(parse_mac_control(std::span<const uint8_t>(out.data(), 10), &q),
            MacControlParse::kNotMacControl);
}

TEST(Pfc, RejectsBadFrames) {
  std::array<uint8_t, 60> buf{};
  ASSERT_EQ(build_pause_frame(buf, kSrc, pfc(0xff, {1, 2, 3, 4, 5, 6, 7, 8})), 60u);
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
  EXPECT_EQ(build_pause_frame(small, kSrc, pfc(0, {})), 0u);
}

// §3.3 table: 1 quantum = 512 bit times (51.2 ns at 10G, 5.12 ns at 100G); the maximum (65535)
// per speed. Rounded up to a ns: a pause lasts at least what the frame asks.
TEST(Pfc, QuantaToNanoseconds) {
  EXPECT_EQ(pause_quanta_ns(1000, 10'000'000'000ull), 51'200);
  EXPECT_EQ(pause_quanta_ns(65535, 100'000'000'000ull), 335'540);  // 335.5392 µs rounded up
  EXPECT_EQ(pause_quanta_ns(65535, 10'000'000'000ull), 3'355'392);
  EXPECT_EQ(pause_quanta_ns(65535, 400'000'000'000ull), 83'885);  // 83.8848 µs
  EXPECT_EQ(pause_quanta_ns(1, 25'000'000'000ull), 21);           // 20.48 ns
  EXPECT_EQ(pause_quanta_ns(0, 100'000'000'000ull), 0);
  EXPECT_EQ(pause_quanta_ns(0xffff, 0), 0);
  static_assert(pause_quanta_ns(1000, 10'000'000'000ull) == 51'200);
}

}  // namespace
}  // namespace uroce::wire
