/**
 * @file pfc_frame_test.cc
 * @brief 802.1Qbb / 802.3x frames byte for byte against docs/dcqcn-pfc.md §3.3 (including the FCS),
 * and the per-speed quantum table of §3.3.
 */
#include "dcqcn/pfc_frame.h"

#include <gtest/gtest.h>

#include <vector>

namespace uroce::dcqcn {
namespace {

std::vector<uint8_t> hex(const char* s) {
  std::vector<uint8_t> v;
  auto nib = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (; s[0] && s[1]; s += 2) {
    while (*s == ' ') ++s;
    v.push_back(static_cast<uint8_t>(nib(s[0]) << 4 | nib(s[1])));
  }
  return v;
}

const MacAddr kSrc{{0x02, 0, 0, 0, 0, 0x01}};

// §3.3 test frame: XOFF on priority 3 with 0xFFFF quanta from 02:00:00:00:00:01;
// FCS (wire order) b0 b2 29 c3.
TEST(PfcFrame, XoffPrio3MatchesReferenceBytes) {
  std::vector<uint8_t> want =
      hex("0180c2000001020000000001880801010008000000000000ffff0000000000000000");
  want.resize(60, 0);  // + 26 zero bytes
  PauseFrame f;
  f.class_enable = 1u << 3;
  f.quanta[3] = 0xFFFF;
  std::array<uint8_t, kPfcFrameLen> out{};
  ASSERT_EQ(build_pause_frame(f, kSrc, out), 60u);
  EXPECT_EQ(std::vector<uint8_t>(out.begin(), out.end()), want);
  const uint32_t fcs = ethernet_fcs(out);
  const uint8_t wire[4] = {static_cast<uint8_t>(fcs), static_cast<uint8_t>(fcs >> 8),
                           static_cast<uint8_t>(fcs >> 16), static_cast<uint8_t>(fcs >> 24)};
  EXPECT_EQ(wire[0], 0xb0);
  EXPECT_EQ(wire[1], 0xb2);
  EXPECT_EQ(wire[2], 0x29);
  EXPECT_EQ(wire[3], 0xc3);
}

// §3.3: XON is the same frame with time[3] = 0; FCS d1 31 78 ac.
TEST(PfcFrame, XonPrio3Fcs) {
  PauseFrame f;
  f.class_enable = 1u << 3;
  std::array<uint8_t, kPfcFrameLen> out{};
  build_pause_frame(f, kSrc, out);
  EXPECT_EQ(ethernet_fcs(out), 0xac7831d1u);
}

TEST(PfcFrame, ParseRoundTripAndGlobalPause) {
  PauseFrame f;
  f.class_enable = 0x48;
  f.quanta[3] = 0x1234;
  f.quanta[6] = 7;
  std::array<uint8_t, kPfcFrameLen> out{};
  build_pause_frame(f, kSrc, out);
  auto p = parse_pause_frame(out);
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->global);
  EXPECT_EQ(p->class_enable, 0x48);
  EXPECT_EQ(p->quanta[3], 0x1234);
  EXPECT_EQ(p->quanta[6], 7);

  PauseFrame g;
  g.global = true;
  g.quanta[0] = 0x00FF;
  build_pause_frame(g, kSrc, out);
  EXPECT_EQ(out[14], 0x00);
  EXPECT_EQ(out[15], 0x01);  // opcode 0x0001
  auto q = parse_pause_frame(out);
  ASSERT_TRUE(q.has_value());
  EXPECT_TRUE(q->global);
  EXPECT_EQ(q->class_enable, 0xFF);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(q->quanta[i], 0x00FF);

  out[12] = 0x08;
  out[13] = 0x00;  // IPv4 EtherType: not MAC control
  EXPECT_FALSE(parse_pause_frame(out).has_value());
  EXPECT_FALSE(parse_pause_frame(std::span<const uint8_t>(out.data(), 10)).has_value());
}

// §3.3 table: 1 quantum = 512 bit times; the maximum (65535) per speed.
TEST(PfcFrame, QuantaDurations) {
  EXPECT_EQ(pause_quanta_ns(65535, 100'000'000'000ull), 335540);  // 335.5392 µs rounded up
  EXPECT_EQ(pause_quanta_ns(65535, 10'000'000'000ull), 3355392);
  EXPECT_EQ(pause_quanta_ns(65535, 400'000'000'000ull), 83885);  // 83.8848 µs
  EXPECT_EQ(pause_quanta_ns(1, 25'000'000'000ull), 21);          // 20.48 ns
  EXPECT_EQ(pause_quanta_ns(0, 100'000'000'000ull), 0);
}

}  // namespace
}  // namespace uroce::dcqcn
