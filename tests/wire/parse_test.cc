/**
 * @file parse_test.cc
 * @brief The receive gate rejects every malformed-frame class with its reason and counter, and
 * never reads past the buffer (run under ASan in the asan preset).
 */
#include "transport/wire/parse.h"

#include <gtest/gtest.h>

#include <random>

#include "wire_test_util.h"

namespace uroce::wire {
namespace {

using test::reseal_ipv4;

constexpr size_t kL3 = 14;
constexpr size_t kL4 = kL3 + 20;
constexpr size_t kBth = kL4 + 8;

/// A valid untagged IPv4 RC WRITE_FIRST with 8 payload bytes: 14 + 20 + 8 + 12 + 16 + 8 + 4.
std::vector<uint8_t> valid_frame(Opcode op = Opcode::kRcRdmaWriteFirst, size_t payload = 8) {
  return test::build_frame(test::default_spec(op), payload);
}

DropReason parse_of(const std::vector<uint8_t>& f) {
  ParsedPacket p;
  return parse(f, &p);
}

/// Sets the IPv4 total length and the UDP length to describe an IP packet of ip_len bytes, then
/// cuts the frame to match and reseals it.
std::vector<uint8_t> shrink_to(std::vector<uint8_t> f, size_t ip_len) {
  f.resize(kL3 + ip_len);
  f[kL3 + 2] = static_cast<uint8_t>(ip_len >> 8);
  f[kL3 + 3] = static_cast<uint8_t>(ip_len);
  if (ip_len >= 20 + 6) {
    const size_t udp_len = ip_len - 20;
    f[kL4 + 4] = static_cast<uint8_t>(udp_len >> 8);
    f[kL4 + 5] = static_cast<uint8_t>(udp_len);
  }
  reseal_ipv4(f);
  return f;
}

TEST(Parse, ValidFrameIsAccepted) {
  EXPECT_EQ(parse_of(valid_frame()), DropReason::kOk);
  // Ethernet padding after the IP packet is ignored.
  auto f = valid_frame(Opcode::kRcSendOnly, 0);
  ASSERT_EQ(f.size(), 58u);
  f.resize(60, 0);
  EXPECT_EQ(parse_of(f), DropReason::kOk);
}

TEST(Parse, ShortAndWrongEtherType) {
  const auto f = valid_frame();
  for (size_t n = 0; n < 14; ++n) {
    EXPECT_EQ(parse_of(std::vector<uint8_t>(f.begin(), f.begin() + static_cast<long>(n))),
              DropReason::kShortFrame)
        << n;
  }
  auto g = f;
  g[12] = 0x88;  // 0x8808 MAC control
  g[13] = 0x08;
  EXPECT_EQ(parse_of(g), DropReason::kNotIp);
  EXPECT_EQ(drop_counter(DropReason::kNotIp), Counter::rx_not_roce);
  g[12] = 0x81;  // VLAN tag cut short
  g[13] = 0x00;
  g.resize(17);
  EXPECT_EQ(parse_of(g), DropReason::kShortFrame);
}

TEST(Parse, EveryTruncationIsRejectedWithoutOverread) {
  // Cut the frame anywhere without fixing the lengths: the declared lengths exceed the buffer.
  const auto f = valid_frame();
  for (size_t n = 14; n < f.size(); ++n) {
    // Copy into an exact-size heap buffer so ASan sees any read past it.
    std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<long>(n));
    cut.shrink_to_fit();
    const DropReason r = parse_of(cut);
    EXPECT_EQ(r, n < kL4 ? DropReason::kIpTruncated : DropReason::kIpBadLength) << n;
  }
}

TEST(Parse, ConsistentlyTruncatedAtEachHeader) {
  const auto f = valid_frame();
  // IP packet of 20..27 bytes: UDP header incomplete.
  for (size_t ip_len = 20; ip_len < 28; ++ip_len) {
    EXPECT_EQ(parse_of(shrink_to(f, ip_len)), DropReason::kUdpTruncated) << ip_len;
  }
  // UDP payload shorter than BTH + ICRC.
  for (size_t ip_len = 28; ip_len < 28 + 16; ++ip_len) {
    EXPECT_EQ(parse_of(shrink_to(f, ip_len)), DropReason::kBthTruncated) << ip_len;
  }
  // RETH cut: BTH + ICRC fit, BTH + RETH + ICRC do not.
  for (size_t ip_len = 28 + 16; ip_len < 28 + 12 + 16 + 4; ++ip_len) {
    EXPECT_EQ(parse_of(shrink_to(f, ip_len)), DropReason::kHeaderTruncated) << ip_len;
  }
}

TEST(Parse, BadIpv4Headers) {
  auto f = valid_frame();
  f[kL3] = 0x65;  // version 6 under EtherType IPv4
  EXPECT_EQ(parse_of(f), DropReason::kIpBadVersion);

  f = valid_frame();
  f[kL3] = 0x44;  // IHL 4
  EXPECT_EQ(parse_of(f), DropReason::kIpBadHeaderLength);
  f = valid_frame(Opcode::kRcSendOnly, 0);
  f[kL3] = 0x4f;  // IHL 15 = 60 bytes, but only 44 bytes follow the Ethernet header
  EXPECT_EQ(parse_of(f), DropReason::kIpBadHeaderLength);
  f = valid_frame();
  f[kL3] = 0x4f;  // IHL 15 inside the frame: the "options" swallow UDP, so UDP is misread
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kUdpBadLength);

  f = valid_frame();
  f[kL3 + 2] = 0x00;  // total length 19 < IHL
  f[kL3 + 3] = 19;
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kIpBadLength);
  f = valid_frame();
  f[kL3 + 2] = 0x10;  // total length beyond the frame
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kIpBadLength);

  f = valid_frame();
  f[kL3 + 10] ^= 0xff;
  EXPECT_EQ(parse_of(f), DropReason::kIpBadChecksum);
  EXPECT_EQ(drop_counter(DropReason::kIpBadChecksum), Counter::rx_malformed);

  f = valid_frame();
  f[kL3 + 6] = 0x20;  // MF
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kIpFragment);
  f = valid_frame();
  f[kL3 + 7] = 0x01;  // fragment offset 8
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kIpFragment);

  f = valid_frame();
  f[kL3 + 9] = 6;  // TCP
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kNotUdp);
  EXPECT_EQ(drop_counter(DropReason::kNotUdp), Counter::rx_not_roce);
}

TEST(Parse, Ipv4WithOptionsIsAccepted) {
  // Insert 4 bytes of options (IHL 6): NOP NOP NOP EOL.
  auto f = valid_frame();
  f.insert(f.begin() + kL3 + 20, {0x01, 0x01, 0x01, 0x00});
  f[kL3] = 0x46;
  const size_t total = f.size() - kL3;
  f[kL3 + 2] = static_cast<uint8_t>(total >> 8);
  f[kL3 + 3] = static_cast<uint8_t>(total);
  reseal_ipv4(f);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.ip_header.size(), 24u);
  EXPECT_EQ(p.payload.size(), 8u);
}

TEST(Parse, BadIpv6Headers) {
  auto f = test::build_frame(test::default_spec(Opcode::kRcSendOnly, true), 8);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  auto g = f;
  g[kL3] = 0x45;
  EXPECT_EQ(parse_of(g), DropReason::kIpBadVersion);
  g = f;
  g[kL3 + 4] = 0x01;  // payload length beyond the frame
  EXPECT_EQ(parse_of(g), DropReason::kIpBadLength);
  g = f;
  g[kL3 + 6] = 0;  // hop-by-hop extension header
  EXPECT_EQ(parse_of(g), DropReason::kNotUdp);
  g = std::vector<uint8_t>(f.begin(), f.begin() + kL3 + 39);
  EXPECT_EQ(parse_of(g), DropReason::kIpTruncated);
  g = f;
  g[kL3 + 40 + 5] ^= 0x01;  // UDP length
  EXPECT_EQ(parse_of(g), DropReason::kUdpBadLength);
  g = f;
  g[kL3 + 40 + 8 + 9] ^= 0x01;  // PSN: ICRC
  EXPECT_EQ(parse_of(g), DropReason::kBadIcrc);
  g = f;
  g[kL3 + 1] ^= 0xf0;  // traffic class: masked
  g[kL3 + 7] = 3;      // hop limit: masked
  EXPECT_EQ(parse_of(g), DropReason::kOk);
}

TEST(Parse, BadUdp) {
  auto f = valid_frame();
  f[kL4 + 5] ^= 0x04;  // UDP length != IP payload
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kUdpBadLength);
  f = valid_frame();
  f[kL4 + 2] = 0x12;  // dport 4790 (0x12b6)
  f[kL4 + 3] = 0xb6;
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kNotRocePort);
  EXPECT_EQ(drop_counter(DropReason::kNotRocePort), Counter::rx_not_roce);
}

TEST(Parse, BadBth) {
  for (uint8_t op : {0x15, 0x18, 0x1f, 0x2c, 0x40, 0x4c, 0x60, 0x66, 0x80, 0x82, 0xff}) {
    auto f = valid_frame();
    f[kBth] = op;
    reseal_ipv4(f);
    EXPECT_EQ(parse_of(f), DropReason::kUnknownOpcode) << int{op};
  }
  EXPECT_EQ(drop_counter(DropReason::kUnknownOpcode), Counter::rx_unknown_opcode);
  auto f = valid_frame();
  f[kBth + 1] |= 0x01;  // TVer 1
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kBadTver);
}

TEST(Parse, BadPad) {
  // SEND_ONLY with 4 payload bytes: pad count 0; claiming pad 1..3 is fine size-wise (pad <= 4).
  auto f = valid_frame(Opcode::kRcSendOnly, 4);
  f[kBth + 1] |= 0x30;
  reseal_ipv4(f);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.payload.size(), 1u);
  // Zero payload bytes but pad count 2.
  f = valid_frame(Opcode::kRcSendOnly, 0);
  f[kBth + 1] |= 0x20;
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kBadPad);
  // Payload + pad not a multiple of 4: cut 1 byte (declared lengths fixed).
  f = valid_frame(Opcode::kRcSendOnly, 8);
  f = shrink_to(f, f.size() - kL3 - 1);
  EXPECT_EQ(parse_of(f), DropReason::kBadPad);
  // Pad on an opcode without payload.
  f = valid_frame(Opcode::kRcAcknowledge, 0);
  f[kBth + 1] |= 0x10;
  reseal_ipv4(f);
  EXPECT_EQ(parse_of(f), DropReason::kBadPad);
}

TEST(Parse, UnexpectedPayload) {
  // An ACK with 4 extra bytes before the ICRC.
  auto f = valid_frame(Opcode::kRcAcknowledge, 0);
  f.insert(f.end() - 4, {0, 0, 0, 0});
  const size_t ip_len = f.size() - kL3;
  f = shrink_to(f, ip_len);
  EXPECT_EQ(parse_of(f), DropReason::kUnexpectedPayload);
}

TEST(Parse, BadIcrc) {
  auto f = valid_frame();
  f[f.size() - 5] ^= 0x10;  // last payload byte
  EXPECT_EQ(parse_of(f), DropReason::kBadIcrc);
  // parse_headers() does not look at the ICRC; check_icrc() does.
  ParsedPacket p;
  ASSERT_EQ(parse_headers(f, &p), DropReason::kOk);
  EXPECT_EQ(check_icrc(f, p), DropReason::kBadIcrc);
}

TEST(Parse, EveryReasonHasANameAndACounter) {
  for (int r = 0; r <= static_cast<int>(DropReason::kBadIcrc); ++r) {
    const auto d = static_cast<DropReason>(r);
    EXPECT_FALSE(to_string(d).empty());
    EXPECT_EQ(to_string(d)[0], 'k');
    const Counter c = drop_counter(d);
    EXPECT_TRUE(c == Counter::rx_malformed || c == Counter::rx_not_roce ||
                c == Counter::rx_unknown_opcode || c == Counter::rx_icrc_encapsulated);
  }
  EXPECT_EQ(to_string(DropReason::kBadPad), "kBadPad");
}

TEST(Parse, RandomMutationsNeverCrash) {
  // A cheap in-tree stand-in for the fuzzer: random byte flips and cuts of valid frames.
  std::mt19937 rng(7);
  std::vector<std::vector<uint8_t>> seeds;
  for (int v = 0; v < 256; ++v) {
    if (kOpcodeTable[v].valid) {
      const size_t n = kOpcodeTable[v].has_payload() ? 13 : 0;
      seeds.push_back(test::build_frame(test::default_spec(static_cast<Opcode>(v), v & 1), n));
      ASSERT_FALSE(seeds.back().empty());
    }
  }
  int ok = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    auto f = seeds[rng() % seeds.size()];
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < flips; ++k) f[rng() % f.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    if (rng() % 4 == 0) f.resize(rng() % f.size());
    f.shrink_to_fit();
    ParsedPacket p;
    if (parse(f, &p) == DropReason::kOk) {
      ++ok;
      ASSERT_LE(p.payload.data() + p.payload.size(), f.data() + f.size());
    }
  }
  // Flips of masked fields (TOS, TTL, FECN/BECN, UDP checksum...) leave some frames valid.
  EXPECT_GT(ok, 0);
}

}  // namespace
}  // namespace uroce::wire
