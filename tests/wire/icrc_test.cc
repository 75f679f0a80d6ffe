/**
 * @file icrc_test.cc
 * @brief ICRC (IBA Annex 17, docs/dcqcn-pfc.md §3.1) and the byte-exact CNP vector of
 * docs/dcqcn-pfc.md §3.1 (libconntrack-cm tests/test_cnp.cpp, from the Mellanox "RoCEv2 CNP Packet
 * Format Example").
 */
#include "transport/wire/icrc.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "transport/wire/build.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

using test::hex;
using test::unhex;

// IP(src=22.22.22.8, dst=22.22.22.7, id=0x98c6, flags=DF, ttl=0x20, tos=0x89)/
// UDP(sport=56238, dport=4791, chksum=0)/cnp(dqpn=0xd2)
const char* kCnpVector =
    "4589003C 98C64000 20116927 16161608 16161607 DBAE12B7 00280000 8100FFFF 400000D2 00000000"
    "00000000 00000000 00000000 00000000 DAFC1BEF";

FrameSpec cnp_spec() {
  FrameSpec s;
  s.src_mac = {{0x02, 0, 0, 0, 0, 0x08}};
  s.dst_mac = {{0x02, 0, 0, 0, 0, 0x07}};
  s.src_ip = Gid::from_ipv4(0x16161608);
  s.dst_ip = Gid::from_ipv4(0x16161607);
  s.ip_id = 0x98c6;
  s.ttl = 0x20;
  s.dscp = 0x89 >> 2;
  s.ecn = 0x89 & 3;
  s.udp_sport = 56238;
  s.pkey = 0xffff;
  s.dest_qpn = Qpn(0xd2);
  return s;
}

std::vector<uint8_t> with_ethernet(const std::vector<uint8_t>& ip_packet) {
  static const uint8_t kEth[14] = {0x02, 0, 0, 0, 0, 0x07, 0x02, 0, 0, 0, 0, 0x08, 0x08, 0x00};
  std::vector<uint8_t> f(14 + ip_packet.size());
  std::memcpy(f.data(), kEth, 14);
  std::memcpy(f.data() + 14, ip_packet.data(), ip_packet.size());
  return f;
}

TEST(Crc32, IsaLMatchesZlib) {
  std::mt19937 rng(42);
  for (size_t len : {0u, 1u, 3u, 7u, 8u, 15u, 16u, 63u, 64u, 65u, 1000u, 1024u, 4096u, 9000u}) {
    std::vector<uint8_t> b(len);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    const uint32_t z = static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(len)));
    EXPECT_EQ(crc32_update(kCrc32Init, b), z) << len;
    // Incremental: any split point gives the same value.
    for (size_t cut : {size_t{0}, len / 3, len / 2, len}) {
      const uint32_t a = crc32_update(kCrc32Init, std::span<const uint8_t>(b).first(cut));
      EXPECT_EQ(crc32_update(a, std::span<const uint8_t>(b).subspan(cut)), z) << len << "/" << cut;
    }
  }
  const uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(crc32_update(kCrc32Init, check), 0xcbf43926u);
}

TEST(CnpVector, BuilderProducesTheVectorByteForByte) {
  std::vector<uint8_t> buf(128);
  const size_t len = build_cnp(cnp_spec(), buf);
  ASSERT_EQ(len, 14u + 60u);
  const std::vector<uint8_t> ip(buf.begin() + 14, buf.begin() + static_cast<long>(len));
  EXPECT_EQ(hex(ip), hex(unhex(kCnpVector)));
  // IP checksum 0x6927, ICRC DA FC 1B EF (zlib value 0xEF1BFCDA).
  EXPECT_EQ(ip[10], 0x69);
  EXPECT_EQ(ip[11], 0x27);
  EXPECT_EQ(load_icrc(ip.data() + 56), 0xef1bfcdau);
}

TEST(CnpVector, ParsesAndDecodes) {
  const auto f = with_ethernet(unhex(kCnpVector));
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.opcode, Opcode::kCnp);
  EXPECT_TRUE(p.becn);
  EXPECT_FALSE(p.fecn);
  EXPECT_EQ(p.dest_qpn, Qpn(0xd2));
  EXPECT_EQ(p.psn, Psn(0));
  EXPECT_EQ(p.pkey, 0xffff);
  EXPECT_EQ(p.dscp, 34);
  EXPECT_EQ(p.ecn, 1);
  EXPECT_EQ(p.ttl, 0x20);
  EXPECT_EQ(p.ip_id, 0x98c6);
  EXPECT_EQ(p.udp_sport, 56238);
  EXPECT_EQ(p.src_ip, Gid::from_ipv4(0x16161608));
  EXPECT_EQ(p.dst_ip, Gid::from_ipv4(0x16161607));
  EXPECT_TRUE(p.payload.empty());
}

TEST(CnpVector, CorruptingAnInvariantByteFailsTheIcrc) {
  // Byte offsets in the IP packet: 20+8 = BTH; 28+2 = P_Key, 28+7 = DestQP low byte,
  // 28+12.. reserved, the UDP source port (20).
  for (size_t at : {30u, 35u, 40u, 55u, 20u}) {
    auto f = with_ethernet(unhex(kCnpVector));
    f[14 + at] ^= 0x01;
    ParsedPacket p;
    EXPECT_EQ(parse(f, &p), DropReason::kBadIcrc) << at;
    EXPECT_EQ(drop_counter(DropReason::kBadIcrc), Counter::rx_icrc_encapsulated);
  }
  // The ICRC itself.
  auto f = with_ethernet(unhex(kCnpVector));
  f.back() ^= 0x80;
  ParsedPacket p;
  EXPECT_EQ(parse(f, &p), DropReason::kBadIcrc);
}

TEST(CnpVector, VariantFieldsMayChange) {
  // Receive the CNP with TOS, TTL (and so the IP checksum), UDP checksum and FECN/BECN rewritten
  // (Expect: still valid, the ICRC masks them).
  auto f = with_ethernet(unhex(kCnpVector));
  f[14 + 1] = 0x03;   // TOS: DSCP 0, CE
  f[14 + 8] = 0x01;   // TTL
  f[14 + 26] = 0x12;  // UDP checksum
  f[14 + 27] = 0x34;
  f[14 + 28 + 4] = 0x80;  // FECN set, BECN cleared
  test::reseal_ipv4(f);   // recomputes the IP checksum; the ICRC comes out unchanged
  EXPECT_EQ(hex(std::span<const uint8_t>(f).last(4)), "dafc1bef");
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.ecn, 3);
  EXPECT_EQ(p.ttl, 1);
  EXPECT_TRUE(p.fecn);
  EXPECT_FALSE(p.becn);
}

/// Reference pseudo-header CRC written from Annex 17 with zlib, for comparison.
uint32_t reference_pseudo_header(const uint8_t* l3, size_t ihl) {
  const size_t ip = ihl ? ihl : 40;
  uint8_t b[8 + 60 + 8 + 12];
  const size_t n = 8 + ip + 8 + 12;
  std::memset(b, 0xff, 8);
  std::memcpy(b + 8, l3, ip + 8 + 12);
  uint8_t* h = b + 8;
  if (ihl) {
    h[1] = 0xff;           // TOS
    h[8] = 0xff;           // TTL
    h[10] = h[11] = 0xff;  // header checksum
  } else {
    h[0] |= 0x0f;               // traffic class (high nibble)
    h[1] = h[2] = h[3] = 0xff;  // traffic class (low nibble) + flow label
    h[7] = 0xff;                // hop limit
  }
  h[ip + 6] = h[ip + 7] = 0xff;  // UDP checksum
  h[ip + 8 + 4] = 0xff;          // BTH FECN|BECN|Resv6
  return static_cast<uint32_t>(crc32(0, b, static_cast<uInt>(n)));
}

TEST(Icrc, PseudoHeaderMatchesReferenceForRandomHeaders) {
  // Covers the 16-byte-vector paths (IPv4 IHL 5, IPv6) and the byte path (IPv4 with options).
  std::mt19937 rng(3);
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<uint8_t> b(60 + 8 + 12);
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    for (size_t ihl : {size_t{20}, size_t{0}, size_t{24}, size_t{60}}) {
      // Exact-size copy so ASan catches reads past IP + UDP + BTH.
      const size_t n = (ihl ? ihl : 40) + 8 + 12;
      std::vector<uint8_t> exact(b.begin(), b.begin() + static_cast<long>(n));
      ASSERT_EQ(icrc_pseudo_header(exact.data(), ihl), reference_pseudo_header(exact.data(), ihl))
          << "ihl " << ihl << " iter " << iter;
    }
  }
}

TEST(Icrc, HeaderPartThenPayloadEqualsWhole) {
  FrameLayout l;
  auto s = test::default_spec(Opcode::kRcRdmaWriteMiddle);
  auto f = test::build_frame(s, 4096, &l);
  ASSERT_FALSE(f.empty());
  const uint8_t* l3 = f.data() + l.l3_offset;
  uint32_t crc = icrc_pseudo_header(l3, 20);
  crc = crc32_update(crc, std::span<const uint8_t>(f).subspan(l.payload_offset, 4096));
  EXPECT_EQ(crc, load_icrc(f.data() + f.size() - 4));
  // finish_icrc() writes what the incremental path produced.
  std::vector<uint8_t> g = f;
  g[g.size() - 1] = 0;
  finish_icrc(g, g.size(), crc);
  EXPECT_EQ(g, f);
}

TEST(Icrc, FusedPathWithExtendedHeadersAndPad) {
  // Headers (pseudo-header + RETH + ImmDt), then the payload in chunks, then the pad: the same
  // ICRC finalize() writes, for IPv4/IPv6, tagged or not.
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteOnlyWithImmediate, ipv6);
      s.vlan = vlan;
      constexpr size_t kPayload = 4093;  // 3 pad bytes
      FrameLayout l;
      const auto want = test::build_frame(s, kPayload, &l);
      ASSERT_FALSE(want.empty());

      std::vector<uint8_t> buf(kPayload + kMaxFrameOverhead);
      const FrameLayout l2 = build_headers(s, buf);
      const size_t len = finalize_lengths(buf, l2, kPayload);
      ASSERT_EQ(len, want.size());
      uint32_t crc = icrc_headers(buf, l2);
      for (size_t off = 0; off < kPayload; off += 1000) {
        const size_t n = std::min<size_t>(1000, kPayload - off);
        for (size_t i = 0; i < n; ++i)
          buf[l2.payload_offset + off + i] = want[l.payload_offset + off + i];
        crc = crc32_update(crc, std::span<const uint8_t>(buf).subspan(l2.payload_offset + off, n));
      }
      const size_t pad_at = l2.payload_offset + kPayload;
      crc = crc32_update(crc, std::span<const uint8_t>(buf).subspan(pad_at, len - 4 - pad_at));
      finish_icrc(buf, len, crc);
      buf.resize(len);
      EXPECT_EQ(buf, want) << "ipv6=" << ipv6 << " vlan=" << vlan;
    }
  }
}

// An RC FLUSH (opcode 0x1c; FETH placement type 1 = global, selectivity 0 = range; RETH
// va 0x55f2b331c3b0, rkey 0x2f8, length 10000) that uroce sent with rxe_flush_icrc to Linux rxe
// (Debian's 6.12.95 of bookworm-backports, tests/interop vm_rxe_uroce.sh --ibta15): rxe counted it
// in rcvd_pkts and answered with a zero-length RDMA READ Response Only (0x10, AETH 0x1f) of its
// PSN. The same FLUSH with IBA's ICRC was dropped by rxe, all 8 tries.
const char* kRxeFlushFrame =
    "020000000002020000000001 0800"
    "456a0040 00004000 4011ae1b c6120001 c6120002"  // IPv4, ECT(0), DSCP 26
    "da4a12b7 002c0000"                             // UDP 4791, length 44
    "1c00ffff 00000011 00a94f0b"                    // BTH: RC_FLUSH, QP 0x11, PSN 0xa94f0b
    "00000001"                                      // FETH
    "000055f2b331c3b0 000002f8 00002710"            // RETH
    "86b35e14";                                     // ICRC (rxe's)

TEST(RxeFlushIcrc, RxeAcceptedFrameCarriesItAndNotTheStandardOne) {
  const std::vector<uint8_t> f = unhex(kRxeFlushFrame);
  ASSERT_EQ(f.size(), 78u);
  const std::span<const uint8_t> l3 = std::span<const uint8_t>(f).subspan(14, f.size() - 14 - 4);
  const uint32_t wire = load_icrc(f.data() + f.size() - 4);
  EXPECT_EQ(icrc_compute_rxe_flush(l3, 20), wire);
  EXPECT_NE(icrc_compute(l3, 20), wire);
  // rxe's: IBA's continued over BTH + FETH + RETH as on the wire (zlib as the reference).
  const uint32_t std_crc = icrc_compute(l3, 20);
  EXPECT_EQ(static_cast<uint32_t>(crc32(std_crc, f.data() + 14 + 20 + 8, 32)), wire);

  // The receive side: parse() calls it a bad ICRC, check_icrc_rxe_flush() takes it, and refuses
  // it after one changed bit.
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kBadIcrc);
  EXPECT_EQ(p.opcode, Opcode::kRcFlush);
  EXPECT_EQ(check_icrc_rxe_flush(f, p), DropReason::kOk);
  std::vector<uint8_t> g = f;
  g[14 + 20 + 8 + 12 + 3] ^= 0x02;  // FETH placement type 1 -> 3
  ASSERT_EQ(parse_headers(g, &p), DropReason::kOk);
  EXPECT_EQ(check_icrc_rxe_flush(g, p), DropReason::kBadIcrc);
}

TEST(RxeFlushIcrc, BuilderWritesItForFlushOverIpv4AndIpv6AndOnlyForFlush) {
  for (bool ipv6 : {false, true}) {
    FrameSpec s = test::default_spec(Opcode::kRcFlush, ipv6);
    s.feth = {1, 0};
    s.reth = {0x1000, 0x1234, 64};
    FrameLayout l;
    std::vector<uint8_t> f = test::build_frame(s, 0, &l);
    ASSERT_FALSE(f.empty());
    ParsedPacket p;
    ASSERT_EQ(parse(f, &p), DropReason::kOk) << "ipv6=" << ipv6;  // IBA's by default
    EXPECT_EQ(check_icrc_rxe_flush(f, p), DropReason::kBadIcrc);
    write_icrc_rxe_flush(f, l, f.size());
    EXPECT_EQ(parse(f, &p), DropReason::kBadIcrc);
    EXPECT_EQ(check_icrc_rxe_flush(f, p), DropReason::kOk) << "ipv6=" << ipv6;
  }
  // Any other opcode with rxe's formula is not taken for it.
  FrameSpec s = test::default_spec(Opcode::kRcRdmaReadRequest);
  s.reth = {0x1000, 0x1234, 64};
  FrameLayout l;
  std::vector<uint8_t> f = test::build_frame(s, 0, &l);
  ASSERT_FALSE(f.empty());
  write_icrc_rxe_flush(f, l, f.size());
  ParsedPacket p;
  ASSERT_EQ(parse_headers(f, &p), DropReason::kOk);
  EXPECT_EQ(check_icrc_rxe_flush(f, p), DropReason::kBadIcrc);
}

}  // namespace
}  // namespace uroce::wire
