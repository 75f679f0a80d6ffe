/**
 * @file build_test.cc
 * @brief Builder -> parser round trip for every opcode, IPv4/IPv6, with and without 802.1Q,
 * payload lengths 0..9 (pad counts 0..3), and the builder's error returns.
 */
#include "transport/wire/build.h"

#include <gtest/gtest.h>

#include "transport/wire/describe.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

void expect_fields_match(const FrameSpec& s, const ParsedPacket& p, size_t payload_len) {
  EXPECT_EQ(p.src_mac, s.src_mac);
  EXPECT_EQ(p.dst_mac, s.dst_mac);
  EXPECT_EQ(p.has_vlan, s.vlan);
  if (s.vlan) {
    EXPECT_EQ(p.pcp, s.pcp);
    EXPECT_EQ(p.vid, s.vid);
    EXPECT_EQ(p.dei, s.dei);
  }
  EXPECT_EQ(p.src_ip, s.src_ip);
  EXPECT_EQ(p.dst_ip, s.dst_ip);
  EXPECT_EQ(p.ip_version, s.src_ip.is_ipv4_mapped() ? 4 : 6);
  EXPECT_EQ(p.dscp, s.dscp);
  EXPECT_EQ(p.ecn, s.ecn);
  EXPECT_EQ(p.ttl, s.ttl);
  EXPECT_EQ(p.flow_label, s.flow_label);
  EXPECT_EQ(p.udp_sport, s.udp_sport);
  EXPECT_EQ(p.udp_dport, 4791);
  EXPECT_EQ(p.opcode, s.opcode);
  EXPECT_EQ(p.se, s.se);
  EXPECT_EQ(p.migreq, s.migreq);
  EXPECT_EQ(p.padcnt, (4 - payload_len % 4) % 4);
  EXPECT_EQ(p.tver, 0);
  EXPECT_EQ(p.pkey, s.pkey);
  EXPECT_EQ(p.fecn, s.fecn);
  EXPECT_EQ(p.becn, s.becn);
  EXPECT_EQ(p.dest_qpn, s.dest_qpn);
  EXPECT_EQ(p.ackreq, s.ackreq);
  EXPECT_EQ(p.psn, s.psn);
  const OpcodeInfo& i = opcode_info(s.opcode);
  ASSERT_EQ(p.info, &i);
  if (i.has(ExtHdr::kReth)) {
    EXPECT_EQ(p.reth, s.reth);
  }
  if (i.has(ExtHdr::kFeth)) {
    EXPECT_EQ(p.feth, s.feth);
  }
  if (i.has(ExtHdr::kAeth)) {
    EXPECT_EQ(p.aeth, s.aeth);
  }
  if (i.has(ExtHdr::kAtomicEth)) {
    EXPECT_EQ(p.atomic_eth, s.atomic_eth);
  }
  if (i.has(ExtHdr::kAtomicAckEth)) {
    EXPECT_EQ(p.atomic_ack_orig, s.atomic_ack_orig);
  }
  if (i.has(ExtHdr::kImmDt)) {
    EXPECT_EQ(p.imm, s.imm);
  }
  if (i.has(ExtHdr::kIeth)) {
    EXPECT_EQ(p.ieth_rkey, s.ieth_rkey);
  }
  if (i.has(ExtHdr::kDeth)) {
    EXPECT_EQ(p.deth, s.deth);
  }
  if (i.has(ExtHdr::kXrcEth)) {
    EXPECT_EQ(p.xrc_srqn, s.xrc_srqn);
  }
  ASSERT_EQ(p.payload.size(), payload_len);
  for (size_t k = 0; k < payload_len; ++k) EXPECT_EQ(p.payload[k], static_cast<uint8_t>(k));
}

TEST(BuildParse, RoundTripEveryOpcode) {
  int frames = 0;
  for (int v = 0; v < 256; ++v) {
    if (!kOpcodeTable[v].valid) continue;
    const auto op = static_cast<Opcode>(v);
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        FrameSpec s = test::default_spec(op, ipv6);
        s.vlan = vlan;
        s.pcp = 3;
        s.vid = 100;
        s.se = (v & 1) != 0;
        s.becn = (v & 2) != 0;
        s.fecn = (v & 4) != 0;
        const size_t max_payload = kOpcodeTable[v].has_payload() ? 9 : 0;
        for (size_t n = 0; n <= max_payload; ++n) {
          SCOPED_TRACE(testing::Message()
                       << kOpcodeTable[v].name << " v6=" << ipv6 << " vlan=" << vlan << " n=" << n);
          FrameLayout l;
          const auto f = test::build_frame(s, n, &l);
          ASSERT_FALSE(f.empty());
          EXPECT_EQ(f.size(), l.payload_offset + n + (4 - n % 4) % 4 + 4);
          ParsedPacket p;
          ASSERT_EQ(parse(f, &p), DropReason::kOk);
          expect_fields_match(s, p, n);
          EXPECT_EQ(p.bth_offset, l.bth_offset);
          ++frames;
        }
      }
    }
  }
  EXPECT_GT(frames, 1000);
}

TEST(BuildParse, FlushFethPrecedesRethWithSelectivityAbovePlacement) {
  // IBA 1.5 Annex A19 as Linux rxe's rxe_hdr.h lays the FETH out: bits 5:4 selectivity level,
  // bits 3:0 placement type, the rest reserved (zero); the RETH after it.
  FrameSpec s = test::default_spec(Opcode::kRcFlush);
  s.feth = {2, 1};  // persistence, whole region
  FrameLayout l;
  auto f = test::build_frame(s, 0, &l);
  ASSERT_FALSE(f.empty());
  const uint8_t* x = f.data() + l.bth_offset + 12;
  EXPECT_EQ(load_be32(x), 0x12u);
  EXPECT_EQ(load_be64(x + 4), s.reth.va);
  EXPECT_EQ(load_be32(x + 12), s.reth.rkey);
  EXPECT_EQ(load_be32(x + 16), s.reth.dma_len);
  EXPECT_EQ(l.payload_offset, l.bth_offset + 32);
  // Out-of-range values keep to their fields.
  s.feth = {0xff, 0xff};
  f = test::build_frame(s, 0, &l);
  EXPECT_EQ(load_be32(f.data() + l.bth_offset + 12), 0x3fu);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.feth, (FethValue{0x0f, 0x03}));
}

TEST(BuildParse, XrcethFollowsTheBthAndPrecedesTheReth) {
  // IBA 9.3.9: Resv8 then the 24-bit XRC SRQ number, right after the BTH; a RETH after it.
  FrameSpec s = test::default_spec(Opcode::kXrcRdmaWriteOnly);
  s.xrc_srqn = 0xffabcdef;  // only 24 bits fit
  FrameLayout l;
  auto f = test::build_frame(s, 4, &l);
  ASSERT_FALSE(f.empty());
  const uint8_t* x = f.data() + l.bth_offset + 12;
  EXPECT_EQ(load_be32(x), 0x00abcdefu);
  EXPECT_EQ(load_be64(x + 4), s.reth.va);
  EXPECT_EQ(l.payload_offset, l.bth_offset + 32);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.xrc_srqn, 0x00abcdefu);
  // Reserved bits set by a sender are ignored.
  f[l.bth_offset + 12] = 0x5a;
  ASSERT_EQ(parse_headers(f, &p), DropReason::kOk);
  EXPECT_EQ(p.xrc_srqn, 0x00abcdefu);
  // Responses carry none: an XRC ACK is BTH + AETH.
  s = test::default_spec(Opcode::kXrcAcknowledge);
  f = test::build_frame(s, 0, &l);
  EXPECT_EQ(l.payload_offset, l.bth_offset + 16);
}

TEST(BuildParse, XrcRequestWithoutRoomForItsXrcethIsTruncated) {
  // An XRC SEND_ONLY whose packet ends after the BTH: kHeaderTruncated (rx_malformed).
  FrameSpec s = test::default_spec(Opcode::kRcSendOnly);
  FrameLayout l;
  auto f = test::build_frame(s, 0, &l);
  ASSERT_EQ(f.size(), size_t{l.bth_offset} + 12 + 4);
  f[l.bth_offset] = static_cast<uint8_t>(Opcode::kXrcSendOnly);
  ParsedPacket p;
  EXPECT_EQ(parse(f, &p), DropReason::kHeaderTruncated);
  EXPECT_EQ(drop_counter(DropReason::kHeaderTruncated), Counter::rx_malformed);
}

TEST(BuildParse, AtomicWriteCarriesRethAndEightBytes) {
  FrameSpec s = test::default_spec(Opcode::kRcAtomicWrite);
  s.reth = {0x1000, 0x42, 8};
  FrameLayout l;
  auto f = test::build_frame(s, 8, &l);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(l.payload_offset, l.bth_offset + 28);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.reth, s.reth);
  EXPECT_EQ(p.payload.size(), 8u);
  EXPECT_EQ(p.padcnt, 0);
}

TEST(BuildParse, Ipv6HeaderFields) {
  FrameSpec s = test::default_spec(Opcode::kRcSendOnly, true);
  s.flow_label = 0xfffff;
  s.dscp = 63;
  s.ecn = 3;
  s.ttl = 1;
  FrameLayout l;
  const auto f = test::build_frame(s, 20, &l);
  ASSERT_EQ(l.l3_offset, 14);
  EXPECT_EQ(f[12], 0x86);
  EXPECT_EQ(f[13], 0xdd);
  EXPECT_EQ(f[14], 0x6f);  // version 6, TC high nibble 0xf
  EXPECT_EQ(f[15], 0xff);  // TC low nibble 0xf, flow label high nibble 0xf
  // Payload length = UDP 8 + BTH 12 + 20 + ICRC 4; UDP checksum 0.
  EXPECT_EQ((f[18] << 8) | f[19], 44);
  EXPECT_EQ(f[14 + 40 + 6], 0);
  EXPECT_EQ(f[14 + 40 + 7], 0);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(p.flow_label, 0xfffffu);
  EXPECT_EQ(p.ip_header.size(), 40u);
}

TEST(BuildParse, ErrorsAreReported) {
  std::vector<uint8_t> buf(200);
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteFirst);
  // Unknown opcode.
  s.opcode = static_cast<Opcode>(0x15);
  EXPECT_EQ(build_headers(s, buf).payload_offset, 0);
  // Buffer shorter than the headers (14 + 20 + 8 + 28 = 70).
  s.opcode = Opcode::kRcRdmaWriteFirst;
  EXPECT_EQ(build_headers(s, std::span<uint8_t>(buf).first(69)).payload_offset, 0);
  FrameLayout l = build_headers(s, std::span<uint8_t>(buf).first(70));
  ASSERT_EQ(l.payload_offset, 70);
  // finalize() needs room for pad + ICRC.
  EXPECT_EQ(finalize(std::span<uint8_t>(buf).first(70 + 5), l, 5), 0u);
  EXPECT_EQ(finalize(std::span<uint8_t>(buf).first(70 + 8 + 4), l, 5), 82u);
  // Payload on an opcode without payload.
  s.opcode = Opcode::kRcAcknowledge;
  l = build_headers(s, buf);
  EXPECT_EQ(finalize(buf, l, 4), 0u);
  EXPECT_EQ(finalize(buf, l, 0), 14u + 20 + 8 + 16 + 4);
}

TEST(BuildParse, CnpBuilderSetsTheCnpFields) {
  FrameSpec s = test::default_spec(Opcode::kRcSendOnly);
  s.psn = Psn(77);
  s.se = true;
  std::vector<uint8_t> buf(128);
  const size_t len = build_cnp(s, buf);
  ASSERT_EQ(len, 14u + 20 + 8 + 12 + 16 + 4);
  ParsedPacket p;
  ASSERT_EQ(parse(std::span<const uint8_t>(buf).first(len), &p), DropReason::kOk);
  EXPECT_EQ(p.opcode, Opcode::kCnp);
  EXPECT_TRUE(p.becn);
  EXPECT_FALSE(p.se);
  EXPECT_FALSE(p.ackreq);
  EXPECT_EQ(p.psn, Psn(0));
  EXPECT_EQ(p.dest_qpn, s.dest_qpn);
  EXPECT_EQ(build_cnp(s, std::span<uint8_t>(buf).first(len - 1)), 0u);
}

TEST(Describe, OneLineSummary) {
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteFirst);
  const auto f = test::build_frame(s, 8);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_EQ(describe(p),
            "RC_RDMA_WRITE_FIRST 198.18.0.1:49443 > 198.18.0.2 dqpn=0x000abc psn=1193046 A "
            "pkey=0xffff dscp=26 ecn=2 RETH(va=0x1122334455667788 rkey=0xaabbccdd len=4096) "
            "payload=8");
  s = test::default_spec(Opcode::kRcAcknowledge);
  s.aeth = {aeth_syndrome(kAethTypeRnrNak, 14), Msn(5)};
  s.ackreq = false;
  const auto g = test::build_frame(s, 0);
  ASSERT_EQ(parse(g, &p), DropReason::kOk);
  EXPECT_NE(describe(p).find("AETH(RNR_NAK value=14 msn=5)"), std::string::npos) << describe(p);
}

}  // namespace
}  // namespace uroce::wire
