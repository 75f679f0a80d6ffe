/**
 * @file headers_test.cc
 * @brief The packed wire structs (eth.h ... ext_headers.h, pfc.h) have the spec's byte layout:
 * field offsets per IEEE 802.3/802.1Q, RFC 791/8200/768 and IBA Vol 1 §9.2-9.3, and their
 * accessors decode a frame from the builder to the values the parser returns.
 */
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "transport/wire/bth.h"
#include "transport/wire/eth.h"
#include "transport/wire/ext_headers.h"
#include "transport/wire/ipv4.h"
#include "transport/wire/ipv6.h"
#include "transport/wire/pfc.h"
#include "transport/wire/udp.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

static_assert(offsetof(EthHdr, src) == 6 && offsetof(EthHdr, ethertype) == 12);
static_assert(offsetof(Ipv4Hdr, total_length) == 2 && offsetof(Ipv4Hdr, ttl) == 8 &&
              offsetof(Ipv4Hdr, checksum) == 10 && offsetof(Ipv4Hdr, src) == 12 &&
              offsetof(Ipv4Hdr, dst) == 16);
static_assert(offsetof(Ipv6Hdr, payload_length) == 4 && offsetof(Ipv6Hdr, hop_limit) == 7 &&
              offsetof(Ipv6Hdr, src) == 8 && offsetof(Ipv6Hdr, dst) == 24);
static_assert(offsetof(UdpHdr, length) == 4 && offsetof(UdpHdr, checksum) == 6);
static_assert(offsetof(Bth, pkey) == 2 && offsetof(Bth, fecn_becn_qpn) == 4 &&
              offsetof(Bth, ackreq_psn) == 8);
static_assert(offsetof(Reth, rkey) == 8 && offsetof(Reth, dma_len) == 12);
static_assert(offsetof(AtomicEth, rkey) == 8 && offsetof(AtomicEth, swap_add) == 12 &&
              offsetof(AtomicEth, compare) == 20);
static_assert(offsetof(Deth, resv_srcqp) == 4);
static_assert(offsetof(PfcBody, class_enable) == 2 && offsetof(PfcBody, time) == 4);

template <typename T>
T at(const std::vector<uint8_t>& f, size_t off) {
  T t;
  std::memcpy(&t, f.data() + off, sizeof(T));
  return t;
}

TEST(Headers, StructAccessorsDecodeABuiltFrame) {
  FrameSpec s = test::default_spec(Opcode::kRcRdmaWriteOnlyWithImmediate);
  s.vlan = true;
  s.pcp = 5;
  s.dei = true;
  s.vid = 0x123;
  s.se = true;
  s.migreq = true;
  s.fecn = true;
  s.becn = false;
  FrameLayout l;
  const auto f = test::build_frame(s, 7, &l);
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);

  const auto eth = at<EthHdr>(f, 0);
  EXPECT_EQ(eth.dst, s.dst_mac);
  EXPECT_EQ(eth.src, s.src_mac);
  EXPECT_EQ(eth.ethertype.load(), kEtherTypeVlan);
  const auto tag = at<VlanTag>(f, 14);
  EXPECT_EQ(tag.pcp(), 5);
  EXPECT_TRUE(tag.dei());
  EXPECT_EQ(tag.vid(), 0x123);
  EXPECT_EQ(tag.ethertype.load(), kEtherTypeIpv4);
  VlanTag t2;
  t2.set(5, true, 0x123);
  t2.ethertype.store(kEtherTypeIpv4);
  EXPECT_EQ(std::memcmp(&t2, f.data() + 14, 4), 0);

  const auto ip = at<Ipv4Hdr>(f, l.l3_offset);
  EXPECT_EQ(ip.version(), 4);
  EXPECT_EQ(ip.ihl(), 5);
  EXPECT_EQ(ip.dscp(), s.dscp);
  EXPECT_EQ(ip.ecn(), s.ecn);
  EXPECT_EQ(ip.total_length.load(), f.size() - l.l3_offset);
  EXPECT_EQ(ip.flags_frag.load(), kIpv4FlagDf);
  EXPECT_EQ(ip.protocol, kIpProtoUdp);
  EXPECT_EQ(Gid::from_ipv4(ip.src.load()), s.src_ip);
  EXPECT_EQ(ipv4_checksum(f.data() + l.l3_offset, 20), 0);

  const auto udp = at<UdpHdr>(f, l.l4_offset);
  EXPECT_EQ(udp.sport.load(), s.udp_sport);
  EXPECT_EQ(udp.dport.load(), kRoceV2Port);
  EXPECT_EQ(udp.length.load(), f.size() - l.l4_offset);
  EXPECT_EQ(udp.checksum.load(), 0);

  const auto bth = at<Bth>(f, l.bth_offset);
  EXPECT_EQ(bth.opcode(), s.opcode);
  EXPECT_TRUE(bth.se());
  EXPECT_TRUE(bth.migreq());
  EXPECT_EQ(bth.padcnt(), 1);  // 7 payload bytes + 1
  EXPECT_EQ(bth.tver(), 0);
  EXPECT_EQ(bth.pkey.load(), s.pkey);
  EXPECT_TRUE(bth.fecn());
  EXPECT_FALSE(bth.becn());
  EXPECT_EQ(bth.dest_qpn(), s.dest_qpn);
  EXPECT_EQ(bth.ackreq(), s.ackreq);
  EXPECT_EQ(bth.psn(), s.psn);
  Bth b2{};
  b2.set_opcode(s.opcode);
  b2.set_flags(true, true, 1);
  b2.pkey.store(s.pkey);
  b2.set_fecn_becn_qpn(true, false, s.dest_qpn);
  b2.set_ackreq_psn(s.ackreq, s.psn);
  EXPECT_EQ(std::memcmp(&b2, f.data() + l.bth_offset, sizeof(Bth)), 0);

  const auto reth = at<Reth>(f, l.bth_offset + 12);
  EXPECT_EQ(reth.va.load(), s.reth.va);
  EXPECT_EQ(reth.rkey.load(), s.reth.rkey);
  EXPECT_EQ(reth.dma_len.load(), s.reth.dma_len);
  EXPECT_EQ(at<ImmDt>(f, l.bth_offset + 28).imm.load(), s.imm);
}

TEST(Headers, AethDethAtomicAccessors) {
  FrameSpec s = test::default_spec(Opcode::kRcAtomicAcknowledge);
  s.aeth = {aeth_syndrome(kAethTypeNak, kAethNakRemoteAccessError), Msn(0x123456)};
  FrameLayout l;
  auto f = test::build_frame(s, 0, &l);
  const auto aeth = at<Aeth>(f, l.bth_offset + 12);
  EXPECT_EQ(aeth.syndrome(), 0x62);
  EXPECT_EQ(aeth.msn(), Msn(0x123456));
  ParsedPacket p;
  ASSERT_EQ(parse(f, &p), DropReason::kOk);
  EXPECT_TRUE(p.aeth.is_nak());
  EXPECT_EQ(p.aeth.value(), kAethNakRemoteAccessError);
  EXPECT_EQ(at<AtomicAckEth>(f, l.bth_offset + 16).orig.load(), s.atomic_ack_orig);

  s = test::default_spec(Opcode::kUdSendOnly);
  f = test::build_frame(s, 4, &l);
  const auto deth = at<Deth>(f, l.bth_offset + 12);
  EXPECT_EQ(deth.qkey.load(), s.deth.qkey);
  EXPECT_EQ(deth.src_qpn(), s.deth.src_qpn);

  s = test::default_spec(Opcode::kRcCompareSwap);
  f = test::build_frame(s, 0, &l);
  const auto a = at<AtomicEth>(f, l.bth_offset + 12);
  EXPECT_EQ(a.va.load(), s.atomic_eth.va);
  EXPECT_EQ(a.rkey.load(), s.atomic_eth.rkey);
  EXPECT_EQ(a.swap_add.load(), s.atomic_eth.swap_add);
  EXPECT_EQ(a.compare.load(), s.atomic_eth.compare);

  s = test::default_spec(Opcode::kRcSendOnly, true);
  s.flow_label = 0xabcde;
  s.dscp = 10;
  s.ecn = 3;
  f = test::build_frame(s, 4, &l);
  const auto ip6 = at<Ipv6Hdr>(f, l.l3_offset);
  EXPECT_EQ(ip6.version(), 6);
  EXPECT_EQ(ip6.traffic_class(), (10 << 2) | 3);
  EXPECT_EQ(ip6.flow_label(), 0xabcdeu);
  EXPECT_EQ(ip6.payload_length.load(), f.size() - l.l3_offset - 40);
}

}  // namespace
}  // namespace uroce::wire
