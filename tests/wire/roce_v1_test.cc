/**
 * @file roce_v1_test.cc
 * @brief RoCE v1 frames (IBA Annex A16): Ethernet with EtherType 0x8915, the 40-byte GRH (IBA
 * Vol 1 §8.3) and the BTH. The builder's bytes field by field, the parser's decode and checks,
 * and the ICRC against a reference written here with zlib from the base specification's rule for
 * a global packet (§7.8.1: LRH as 8 bytes of 0xFF, GRH TClass/FlowLabel/HopLmt and BTH byte 4
 * masked to ones, no UDP header). Units: bytes.
 */
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/byteorder.h"
#include "transport/wire/build.h"
#include "transport/wire/icrc.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

FrameSpec v1_spec(Opcode op = Opcode::kRcRdmaWriteFirst, bool ipv6_gids = true) {
  FrameSpec s = test::default_spec(op, ipv6_gids);
  s.roce_v1 = true;
  s.flow_label = 0xabcde;
  s.ttl = 7;
  return s;
}

/// The ICRC of a RoCE v1 frame whose GRH starts at l3, from zlib: independent of icrc.cc.
uint32_t reference_icrc(const std::vector<uint8_t>& f, size_t l3) {
  // Sized first and copied with memcpy: GCC 12 warns (-Warray-bounds) on insert() here at -O2.
  const size_t covered = f.size() - 4 - l3;
  std::vector<uint8_t> b(8 + covered, 0xff);
  std::memcpy(b.data() + 8, f.data() + l3, covered);
  uint8_t* grh = b.data() + 8;
  grh[0] |= 0x0f;  // TClass (high nibble) keeps IPVer
  grh[1] = grh[2] = grh[3] = 0xff;
  grh[7] = 0xff;       // HopLmt
  grh[40 + 4] = 0xff;  // BTH FECN|BECN|Resv6
  return static_cast<uint32_t>(crc32(0, b.data(), static_cast<uInt>(b.size())));
}

TEST(RoceV1, BuilderWritesEthertypeGrhAndBth) {
  for (bool vlan : {false, true}) {
    FrameSpec s = v1_spec(Opcode::kRcSendOnly);
    s.vlan = vlan;
    s.pcp = 3;
    s.vid = 42;
    FrameLayout l;
    const auto f = test::build_frame(s, 13, &l);
    ASSERT_FALSE(f.empty());
    const size_t l2 = vlan ? 18 : 14;
    EXPECT_EQ(load_be16(f.data() + l2 - 2), 0x8915);
    if (vlan) {
      EXPECT_EQ(load_be16(f.data() + 12), 0x8100);
    }
    EXPECT_TRUE(l.roce_v1);
    EXPECT_TRUE(l.ipv6);
    EXPECT_EQ(l.l3_offset, l2);
    EXPECT_EQ(l.bth_offset, l2 + 40);
    EXPECT_EQ(l.l4_offset, l.bth_offset);
    const uint8_t* g = f.data() + l2;
    const uint32_t w0 = load_be32(g);
    EXPECT_EQ(w0 >> 28, 6u);                                      // IPVer
    EXPECT_EQ((w0 >> 20) & 0xff, uint32_t{s.dscp} << 2 | s.ecn);  // TClass
    EXPECT_EQ(w0 & 0xfffff, s.flow_label);                        // FlowLabel
    EXPECT_EQ(load_be16(g + 4), f.size() - l2 - 40);              // PayLen: BTH..ICRC
    EXPECT_EQ(g[6], 0x1b);                                        // NxtHdr: IBA BTH
    EXPECT_EQ(g[7], s.ttl);                                       // HopLmt
    EXPECT_EQ(std::memcmp(g + 8, s.src_ip.raw.data(), 16), 0);    // SGID
    EXPECT_EQ(std::memcmp(g + 24, s.dst_ip.raw.data(), 16), 0);   // DGID
    EXPECT_EQ(g[40], static_cast<uint8_t>(Opcode::kRcSendOnly));  // BTH right after
    EXPECT_EQ(load_be32(g + 44) & 0xffffff, s.dest_qpn.value());
    // 14 (+4) + GRH 40 + BTH 12 + 13 payload + 3 pad + ICRC 4.
    EXPECT_EQ(f.size(), l2 + 40 + 12 + 16 + 4);
    EXPECT_EQ(f.size(), frame_len_for(s, 13));
    EXPECT_EQ(load_icrc(f.data() + f.size() - 4), reference_icrc(f, l2));
  }
}

TEST(RoceV1, GidsOfEitherFamilyMakeAGrh) {
  // IPv4-mapped GIDs (a RoCE v1 GID of an IPv4 address) still make a GRH, not an IPv4 header.
  const auto f = test::build_frame(v1_spec(Opcode::kRcSendOnly, false), 8);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(load_be16(f.data() + 12), 0x8915);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_TRUE(p.roce_v1);
  EXPECT_EQ(p.ip_version, 6);
  EXPECT_EQ(p.src_ip, test::gid("198.18.0.1"));
  EXPECT_EQ(p.dst_ip, test::gid("198.18.0.2"));
}

TEST(RoceV1, EveryOpcodeRoundTripsThroughTheParser) {
  int n = 0;
  for (int v = 0; v < 256; ++v) {
    const OpcodeInfo& info = kOpcodeTable[v];
    if (!info.valid) continue;
    for (bool vlan : {false, true}) {
      FrameSpec s = v1_spec(static_cast<Opcode>(v), /*ipv6_gids=*/vlan);  // both families
      s.vlan = vlan;
      s.se = true;
      const size_t len = info.has_payload() ? 61 : 0;
      std::vector<uint8_t> f;
      if (s.opcode == Opcode::kCnp) {
        f.resize(128);
        f.resize(build_cnp(s, f));
      } else {
        f = test::build_frame(s, len);
      }
      ASSERT_FALSE(f.empty()) << info.name;
      SCOPED_TRACE(info.name);
      ParsedPacket p;
      ASSERT_EQ(parse(f, &p), DropReason::kOk);
      EXPECT_TRUE(p.roce_v1);
      EXPECT_EQ(p.opcode, s.opcode);
      EXPECT_EQ(p.src_ip, s.src_ip);
      EXPECT_EQ(p.dst_ip, s.dst_ip);
      EXPECT_EQ(p.dscp, s.dscp);
      EXPECT_EQ(p.ecn, s.ecn);
      EXPECT_EQ(p.ttl, s.ttl);
      EXPECT_EQ(p.flow_label, s.flow_label);
      EXPECT_EQ(p.udp_sport, 0);
      EXPECT_EQ(p.udp_dport, 0);
      EXPECT_EQ(p.has_vlan, vlan);
      EXPECT_EQ(p.dest_qpn, s.dest_qpn);
      EXPECT_EQ(p.pkey, s.pkey);
      EXPECT_EQ(p.ip_header.size(), 40u);
      EXPECT_EQ(p.ip_packet_len, f.size() - (vlan ? 18 : 14));
      EXPECT_EQ(p.bth_offset, (vlan ? 18 : 14) + 40);
      EXPECT_EQ(p.payload.size(), len);
      if (s.opcode != Opcode::kCnp) {
        EXPECT_EQ(p.psn, s.psn);
        if (info.has(ExtHdr::kReth)) {
          EXPECT_EQ(p.reth.va, s.reth.va);
          EXPECT_EQ(p.reth.rkey, s.reth.rkey);
        }
        if (info.has(ExtHdr::kDeth)) {
          EXPECT_EQ(p.deth.qkey, s.deth.qkey);
          EXPECT_EQ(p.deth.src_qpn, s.deth.src_qpn);
        }
      }
      for (size_t i = 0; i < len; ++i) ASSERT_EQ(p.payload[i], static_cast<uint8_t>(i));
      EXPECT_EQ(load_icrc(f.data() + f.size() - 4), reference_icrc(f, vlan ? 18 : 14));
      ++n;
    }
  }
  EXPECT_GT(n, 50);
}

TEST(RoceV1, IcrcCoversTheInvariantFieldsOnly) {
  const FrameSpec s = v1_spec(Opcode::kUdSendOnly);
  const auto good = test::build_frame(s, 32);
  ASSERT_FALSE(good.empty());
  ParsedPacket p;
  ASSERT_EQ(parse(good, &p), DropReason::kOk);
  // Variant fields: TClass, FlowLabel, HopLmt, BTH FECN/BECN: the ICRC still holds.
  for (size_t at :
       {size_t{14}, size_t{15}, size_t{16}, size_t{17}, size_t{14 + 7}, size_t{14 + 40 + 4}}) {
    auto f = good;
    f[at] ^= at == 14 ? 0x0f : 0xc0;  // keep IPVer
    EXPECT_EQ(parse(f, &p), DropReason::kOk) << "byte " << at;
  }
  // Invariant fields: SGID, DGID, BTH opcode/QPN/PSN, DETH, payload: kBadIcrc.
  for (size_t at : {size_t{14 + 8}, size_t{14 + 39}, size_t{14 + 40 + 5}, size_t{14 + 40 + 11},
                    size_t{14 + 52}, good.size() - 5}) {
    auto f = good;
    f[at] ^= 0x01;
    EXPECT_EQ(parse(f, &p), DropReason::kBadIcrc) << "byte " << at;
  }
}

TEST(RoceV1, IcrcDiffersFromRoceV2Ipv6) {
  // Same GIDs, same BTH and payload: RoCEv2's ICRC also covers the UDP header.
  FrameSpec s1 = v1_spec(Opcode::kRcSendOnly);
  FrameSpec s2 = s1;
  s2.roce_v1 = false;
  const auto f1 = test::build_frame(s1, 16);
  const auto f2 = test::build_frame(s2, 16);
  ASSERT_FALSE(f1.empty() || f2.empty());
  EXPECT_EQ(f2.size(), f1.size() + 8);
  EXPECT_NE(load_icrc(f1.data() + f1.size() - 4), load_icrc(f2.data() + f2.size() - 4));
  // A v2 frame relabelled 0x8915 is not a v1 frame (NxtHdr is UDP's).
  auto g = f2;
  store_be16(g.data() + 12, 0x8915);
  ParsedPacket p;
  EXPECT_EQ(parse(g, &p), DropReason::kNotUdp);
}

TEST(RoceV1, MalformedGrhIsDroppedWithItsReason) {
  const auto good = test::build_frame(v1_spec(Opcode::kRcSendOnly), 16);
  ASSERT_FALSE(good.empty());
  ParsedPacket p;
  {
    auto f = good;
    f.resize(14 + 39);  // ends inside the GRH
    EXPECT_EQ(parse(f, &p), DropReason::kIpTruncated);
  }
  {
    auto f = good;
    f[14] = static_cast<uint8_t>((f[14] & 0x0f) | 0x40);  // IPVer 4
    EXPECT_EQ(parse(f, &p), DropReason::kIpBadVersion);
  }
  {
    auto f = good;
    store_be16(f.data() + 18, static_cast<uint16_t>(f.size() - 14 - 40 + 1));  // PayLen past end
    EXPECT_EQ(parse(f, &p), DropReason::kIpBadLength);
  }
  {
    auto f = good;
    f[14 + 6] = 17;  // NxtHdr: UDP
    EXPECT_EQ(parse(f, &p), DropReason::kNotUdp);
  }
  {
    auto f = good;
    store_be16(f.data() + 18, 12);  // PayLen: a BTH and no room for the ICRC
    EXPECT_EQ(parse(f, &p), DropReason::kBthTruncated);
  }
  {
    // Ethernet padding after the packet is ignored, as for RoCEv2.
    auto f = good;
    f.insert(f.end(), 20, 0);
    EXPECT_EQ(parse(f, &p), DropReason::kOk);
  }
}

TEST(RoceV1, FusedIcrcPathMatchesFinalize) {
  for (bool vlan : {false, true}) {
    FrameSpec s = v1_spec(Opcode::kRcRdmaWriteOnlyWithImmediate);
    s.vlan = vlan;
    constexpr size_t kPayload = 1021;
    FrameLayout l;
    const auto want = test::build_frame(s, kPayload, &l);
    ASSERT_FALSE(want.empty());
    std::vector<uint8_t> buf(kPayload + kMaxFrameOverhead);
    const FrameLayout l2 = build_headers(s, buf);
    const size_t len = finalize_lengths(buf, l2, kPayload);
    ASSERT_EQ(len, want.size());
    std::copy(want.begin() + l.payload_offset, want.begin() + l.payload_offset + kPayload,
              buf.begin() + l2.payload_offset);
    uint32_t crc = icrc_headers(buf, l2);
    crc = crc32_update(
        crc, std::span<const uint8_t>(buf).subspan(l2.payload_offset, len - 4 - l2.payload_offset));
    finish_icrc(buf, len, crc);
    buf.resize(len);
    EXPECT_EQ(buf, want) << "vlan=" << vlan;
    EXPECT_EQ(icrc_compute_grh(std::span<const uint8_t>(want).subspan(
                  l.l3_offset, want.size() - 4 - l.l3_offset)),
              load_icrc(want.data() + want.size() - 4));
  }
}

}  // namespace
}  // namespace uroce::wire
