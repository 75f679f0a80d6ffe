/**
 * @file cm_test.cc
 * @brief CM MADs (transport/wire/cm.h): every message survives build -> parse, fields sit at
 * the byte and bit positions of IBA Vol 1 Tables 106-113 (checked on raw bytes, written here
 * from the tables, not through the code under test), and malformed MADs are refused with
 * their reason.
 */
#include "transport/wire/cm.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "common/byteorder.h"

namespace uroce::wire::cm {
namespace {

constexpr size_t H = kMadHeaderLen;  // message byte n is MAD byte H + n

std::array<uint8_t, kMadLen> build(const Mad& m) {
  std::array<uint8_t, kMadLen> b{};
  build_cm_mad(m, b);
  return b;
}

Mad mad_of(Message msg, uint64_t tid = 0x1122334455667788ull) {
  Mad m;
  m.hdr.tid = tid;
  m.hdr.attr_id = static_cast<uint16_t>(attr_of(msg));
  m.msg = std::move(msg);
  return m;
}

Req sample_req() {
  Req r;
  r.local_comm_id = 0xa1b2c3d4;
  r.service_id = 0x0000000001064321ull;  // RDMA_PS_TCP, port 0x4321
  r.local_ca_guid = 0x0202c9fffe000001ull;
  r.local_qkey = 0;
  r.local_qpn = 0x123456;
  r.responder_resources = 16;
  r.initiator_depth = 8;
  r.remote_cm_response_timeout = 20;
  r.transport = Transport::kRc;
  r.end_to_end_flow_control = true;
  r.starting_psn = 0xabcdef;
  r.local_cm_response_timeout = 19;
  r.retry_count = 7;
  r.pkey = 0xffff;
  r.path_mtu = 5;  // 4096
  r.rnr_retry_count = 6;
  r.max_cm_retries = 15;
  r.srq = true;
  r.primary.local_gid.raw = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
  r.primary.remote_gid.raw = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
  r.primary.flow_label = 0xabcde;
  r.primary.packet_rate = 0x3f;
  r.primary.traffic_class = 106;
  r.primary.hop_limit = 64;
  r.primary.sl = 3;
  r.primary.subnet_local = true;
  r.primary.local_ack_timeout = 14;
  for (size_t i = 0; i < r.private_data.size(); ++i) r.private_data[i] = static_cast<uint8_t>(i);
  return r;
}

TEST(CmMad, HeaderIsTheCmClassSendWithTheTransactionId) {
  auto b = build(mad_of(Rtu{}));
  EXPECT_EQ(b[0], 1);     // base version
  EXPECT_EQ(b[1], 0x07);  // CM class
  EXPECT_EQ(b[2], 2);     // class version
  EXPECT_EQ(b[3], 0x03);  // Send
  EXPECT_EQ(load_be64(&b[8]), 0x1122334455667788ull);
  EXPECT_EQ(load_be16(&b[16]), 0x0014);  // RTU
}

TEST(CmMad, ReqFieldsSitWhereTable106PutsThem) {
  auto b = build(mad_of(sample_req()));
  const uint8_t* p = &b[H];
  EXPECT_EQ(load_be16(&b[16]), 0x0010);
  EXPECT_EQ(load_be32(p + 0), 0xa1b2c3d4u);
  EXPECT_EQ(load_be64(p + 8), 0x0000000001064321ull);
  EXPECT_EQ(load_be64(p + 16), 0x0202c9fffe000001ull);
  EXPECT_EQ(load_be32(p + 32), 0x12345610u);                       // QPN (24) | responder resources
  EXPECT_EQ(p[39], 8);                                             // initiator depth
  EXPECT_EQ(p[43], (20 << 3) | (0 << 1) | 1);                      // remote CM timeout | RC | E2E
  EXPECT_EQ(load_be32(p + 44), (0xabcdefu << 8) | (19 << 3) | 7);  // PSN | timeout | retry
  EXPECT_EQ(load_be16(p + 48), 0xffff);
  EXPECT_EQ(p[50], (5 << 4) | 6);          // MTU | RDC 0 | RNR retry
  EXPECT_EQ(p[51], (15 << 4) | (1 << 3));  // max CM retries | SRQ
  EXPECT_EQ(load_be16(p + 52), 0xffff);    // LIDs: none on RoCE
  EXPECT_EQ(p[56 + 12], 198);
  EXPECT_EQ(p[72 + 15], 2);
  EXPECT_EQ(load_be32(p + 88), (0xabcdeu << 12) | 0x3f);  // flow label | packet rate
  EXPECT_EQ(p[92], 106);
  EXPECT_EQ(p[93], 64);
  EXPECT_EQ(p[94], (3 << 4) | (1 << 3));  // SL | subnet local
  EXPECT_EQ(p[95], 14 << 3);              // local ACK timeout
  for (size_t i = 96; i < 140; ++i) EXPECT_EQ(p[i], 0) << "alternate path byte " << i;
  EXPECT_EQ(p[140], 0);
  EXPECT_EQ(p[140 + 91], 91);  // private data runs to the MAD's end
}

TEST(CmMad, RepRejMraDreqFieldsSitWhereTheirTablesPutThem) {
  Rep rep;
  rep.local_comm_id = 1;
  rep.remote_comm_id = 2;
  rep.local_qpn = 0xfedcba;
  rep.starting_psn = 0x000102;
  rep.responder_resources = 4;
  rep.initiator_depth = 5;
  rep.target_ack_delay = 31;
  rep.failover_accepted = 2;
  rep.end_to_end_flow_control = true;
  rep.rnr_retry_count = 7;
  rep.srq = true;
  rep.local_ca_guid = 0x0102030405060708ull;
  rep.private_data[195] = 0xee;
  auto b = build(mad_of(rep));
  const uint8_t* p = &b[H];
  EXPECT_EQ(load_be32(p + 4), 2u);
  EXPECT_EQ(load_be32(p + 12) >> 8, 0xfedcbau);
  EXPECT_EQ(load_be32(p + 20) >> 8, 0x000102u);
  EXPECT_EQ(p[24], 4);
  EXPECT_EQ(p[25], 5);
  EXPECT_EQ(p[26], (31 << 3) | (2 << 1) | 1);
  EXPECT_EQ(p[27], (7 << 5) | (1 << 4));
  EXPECT_EQ(load_be64(p + 28), 0x0102030405060708ull);
  EXPECT_EQ(b[kMadLen - 1], 0xee);

  Rej rej;
  rej.message_rejected = MsgRef::kRep;
  rej.ari_length = 72;
  rej.reason = static_cast<uint16_t>(RejReason::kConsumerDefined);
  rej.ari[0] = 0xaa;
  rej.private_data[0] = 0xbb;
  b = build(mad_of(rej));
  p = &b[H];
  EXPECT_EQ(load_be16(&b[16]), 0x0012);
  EXPECT_EQ(p[8], 1 << 6);
  EXPECT_EQ(p[9], 72 << 1);
  EXPECT_EQ(load_be16(p + 10), 28);
  EXPECT_EQ(p[12], 0xaa);
  EXPECT_EQ(p[84], 0xbb);

  Mra mra;
  mra.message_mraed = MsgRef::kOther;
  mra.service_timeout = 17;
  b = build(mad_of(mra));
  EXPECT_EQ(b[H + 8], 2 << 6);
  EXPECT_EQ(b[H + 9], 17 << 3);

  Dreq dreq;
  dreq.remote_qpn = 0x00abcd;
  dreq.private_data[0] = 0x5a;
  b = build(mad_of(dreq));
  EXPECT_EQ(load_be32(&b[H + 8]) >> 8, 0x00abcdu);
  EXPECT_EQ(b[H + 12], 0x5a);
}

TEST(CmMad, EceVendorIdSitsWhereIba14PutsItAndTheOptionsInTheAttributeModifier) {
  Req req = sample_req();
  req.vendor_id = 0xfffffe;
  Mad m = mad_of(req);
  m.hdr.attr_mod = 1;
  auto b = build(m);
  EXPECT_EQ(b[H + 4], 0);  // reserved
  EXPECT_EQ(load_be32(&b[H + 4]) & 0xffffff, 0xfffffeu);
  EXPECT_EQ(load_be32(&b[20]), 1u);  // MAD header: attribute modifier
  auto back = parse_cm_mad(b);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->hdr.attr_mod, 1u);
  EXPECT_EQ(std::get<Req>(back->msg), req);

  Rep rep;
  rep.local_qpn = 0xabcdef;
  rep.starting_psn = 0x123456;
  rep.vendor_id = 0x0a0b0c;  // its three bytes sit beside the QPN, the EECN and the PSN
  b = build(mad_of(rep));
  EXPECT_EQ(b[H + 15], 0x0a);
  EXPECT_EQ(b[H + 19], 0x0b);
  EXPECT_EQ(b[H + 23], 0x0c);
  EXPECT_EQ(load_be32(&b[H + 12]) >> 8, 0xabcdefu);
  EXPECT_EQ(load_be32(&b[H + 20]) >> 8, 0x123456u);
  back = parse_cm_mad(b);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(std::get<Rep>(back->msg), rep);
}

TEST(CmMad, XrcReqAndRepFieldsSitWhereAnnexA14PutsThem) {
  // The REQ of an XRC initiator: Transport Service Type 3, Extended Transport Type 1 (byte 51's
  // low 3 bits), as Linux's cm_req_set_qp_type writes it for IB_QPT_XRC_INI.
  Req req = sample_req();
  req.transport = Transport::kExtended;
  req.extended_transport = kExtendedXrc;
  req.srq = false;
  EXPECT_TRUE(is_xrc(req));
  auto b = build(mad_of(req));
  EXPECT_EQ(b[H + 43], (20 << 3) | (3 << 1) | 1);  // remote CM timeout | 3 | E2E
  EXPECT_EQ(b[H + 51], (15 << 4) | 1);             // max CM retries | SRQ 0 | extended 1
  auto back = parse_cm_mad(b);
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<Req>(back->msg), req);
  EXPECT_FALSE(is_xrc(sample_req()));

  // The answer of an XRC target: its QPN in the Local EE Context Number (bytes 16..18).
  Rep rep;
  rep.local_eecn = 0x0a0b0c;
  rep.srq = true;
  rep.vendor_id = 0xffffff;  // byte 19, beside the EECN, is the vendor's middle byte
  b = build(mad_of(rep));
  EXPECT_EQ(load_be32(&b[H + 12]) >> 8, 0u);
  EXPECT_EQ(load_be32(&b[H + 16]), 0x0a0b0cffu);
  back = parse_cm_mad(b);
  ASSERT_TRUE(back);
  EXPECT_EQ(std::get<Rep>(back->msg), rep);

  // Other extended transport types are reserved.
  b = build(mad_of(req));
  b[H + 51] = static_cast<uint8_t>((b[H + 51] & ~7) | 2);
  ParseError err{};
  EXPECT_FALSE(parse_cm_mad(b, &err));
  EXPECT_EQ(err, ParseError::kBadField);
}

TEST(CmMad, SidrFieldsSitWhereTables119And120PutThem) {
  SidrReq q;
  q.request_id = 0x01020304;
  q.pkey = 0x8001;
  q.service_id = 0x0000000001110007ull;  // RDMA_PS_UDP, port 7
  q.private_data[215] = 0x77;
  auto b = build(mad_of(q));
  EXPECT_EQ(load_be16(&b[16]), 0x0017);
  EXPECT_EQ(load_be32(&b[H]), 0x01020304u);
  EXPECT_EQ(load_be16(&b[H + 4]), 0x8001);
  EXPECT_EQ(load_be64(&b[H + 8]), 0x0000000001110007ull);
  EXPECT_EQ(b[kMadLen - 1], 0x77);

  SidrRep r;
  r.request_id = 9;
  r.status = static_cast<uint8_t>(SidrStatus::kValid);
  r.info_length = 2;
  r.qpn = 0xabcdef;
  r.service_id = 0x0000000001110007ull;
  r.qkey = 0x11223344;
  r.info[0] = 0xcc;
  r.private_data[0] = 0xdd;
  b = build(mad_of(r));
  EXPECT_EQ(load_be16(&b[16]), 0x0018);
  EXPECT_EQ(b[H + 4], 0);
  EXPECT_EQ(b[H + 5], 2);
  EXPECT_EQ(load_be32(&b[H + 8]) >> 8, 0xabcdefu);
  EXPECT_EQ(load_be64(&b[H + 12]), 0x0000000001110007ull);
  EXPECT_EQ(load_be32(&b[H + 20]), 0x11223344u);
  EXPECT_EQ(b[H + 24], 0xcc);
  EXPECT_EQ(b[H + 96], 0xdd);
  b[H + 5] = 73;  // more additional information than its 72-byte field
  ParseError err{};
  EXPECT_FALSE(parse_cm_mad(b, &err));
  EXPECT_EQ(err, ParseError::kBadField);
}

TEST(CmMad, EveryMessageSurvivesBuildThenParse) {
  Rep rep;
  rep.local_comm_id = 7;
  rep.local_qpn = 0x11;
  rep.local_eecn = 0x22;
  rep.private_data.fill(0x42);
  Rej rej;
  rej.reason = 8;
  rej.ari_length = 3;
  rej.ari = {1, 2, 3};
  Mra mra;
  mra.service_timeout = 9;
  Dreq dreq;
  dreq.remote_qpn = 0xffffff;
  Drep drep;
  drep.remote_comm_id = 99;
  Rtu rtu;
  rtu.private_data[223] = 1;
  SidrReq sq;
  sq.service_id = 5;
  SidrRep sr;
  sr.qpn = 0x123;
  sr.info_length = 72;
  const Message msgs[] = {sample_req(), mra, rej, rep, rtu, dreq, drep, sq, sr};
  for (const Message& msg : msgs) {
    Mad m = mad_of(msg, 0x42 + msg.index());
    auto b = build(m);
    ParseError err{};
    auto back = parse_cm_mad(b, &err);
    ASSERT_TRUE(back) << "message " << msg.index() << ": " << to_string(err);
    EXPECT_EQ(*back, m) << "message " << msg.index();
  }
}

TEST(CmMad, MalformedMadsAreRefusedWithTheirReason) {
  auto good = build(mad_of(Rtu{}));
  auto expect = [](std::span<const uint8_t> b, ParseError want) {
    ParseError err{};
    EXPECT_FALSE(parse_cm_mad(b, &err));
    EXPECT_EQ(err, want) << to_string(err);
  };
  expect(std::span<const uint8_t>(good).first(kMadLen - 1), ParseError::kTooShort);
  auto b = good;
  b[1] = 0x01;  // subnet management
  expect(b, ParseError::kNotCm);
  b = good;
  b[0] = 2;
  expect(b, ParseError::kNotCm);
  b = good;
  b[2] = 1;
  expect(b, ParseError::kBadClassVersion);
  b = good;
  b[3] = 0x81;  // a response method
  expect(b, ParseError::kBadMethod);
  b = good;
  store_be16(&b[16], 0x0019);  // LAP (no path migration)
  expect(b, ParseError::kUnknownAttribute);
  store_be16(&b[16], 0x0019);
  store_be16(&b[16], 0x0001);  // ClassPortInfo
  expect(b, ParseError::kUnknownAttribute);

  Rej rej;
  b = build(mad_of(rej));
  b[H + 9] = 73 << 1;  // ARI longer than its 72-byte field
  expect(b, ParseError::kBadField);
  b = build(mad_of(rej));
  b[H + 8] = 3 << 6;  // "message rejected" 3 is reserved
  expect(b, ParseError::kBadField);
  b = build(mad_of(sample_req()));
  b[H + 43] |= 3 << 1;  // transport service type 3 without an extended type (XRC) is reserved
  expect(b, ParseError::kBadField);
}

TEST(CmMad, LongerInputIsReadToItsFirst256Bytes) {
  std::array<uint8_t, kMadLen + 16> b{};
  Mad m = mad_of(Drep{});
  build_cm_mad(m, std::span<uint8_t, kMadLen>(b.data(), kMadLen));
  b[kMadLen] = 0xff;  // trailing bytes (UD padding) do not matter
  auto back = parse_cm_mad(b);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, m);
}

}  // namespace
}  // namespace uroce::wire::cm

namespace uroce::wire::cm {
namespace {

/// The fuzz seeds (fuzz/make_seeds.py writes them from the IBA tables by hand) are MADs this
/// parser accepts, each the message its name says.
TEST(CmMad, FuzzSeedsParseAsTheMessageTheyAreNamedFor) {
  const std::pair<const char*, AttrId> seeds[] = {
      {"req", AttrId::kReq},   {"rep", AttrId::kRep},          {"rtu", AttrId::kRtu},
      {"rej", AttrId::kRej},   {"mra", AttrId::kMra},          {"dreq", AttrId::kDreq},
      {"drep", AttrId::kDrep}, {"sidr_req", AttrId::kSidrReq}, {"sidr_rep", AttrId::kSidrRep}};
  for (auto [name, attr] : seeds) {
    std::string path = std::string(UROCE_FUZZ_CORPUS_DIR) + "/cm_mad/" + name;
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(f) << path;
    std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), {});
    ParseError err{};
    auto mad = parse_cm_mad(b, &err);
    ASSERT_TRUE(mad) << name << ": " << to_string(err);
    EXPECT_EQ(attr_of(mad->msg), attr) << name;
    EXPECT_EQ(mad->hdr.tid, 0x1234u);
  }
  std::ifstream f(std::string(UROCE_FUZZ_CORPUS_DIR) + "/cm_mad/req", std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), {});
  auto req = parse_cm_mad(b);
  ASSERT_TRUE(req);
  const Req& r = std::get<Req>(req->msg);
  EXPECT_EQ(r.local_qpn, 0x11u);
  EXPECT_EQ(r.responder_resources, 16);
  EXPECT_EQ(r.starting_psn, 0x100u);
  EXPECT_EQ(r.path_mtu, 5);
  EXPECT_EQ(r.rnr_retry_count, 7);
  EXPECT_EQ(r.primary.remote_gid.raw[15], 2);
  EXPECT_EQ(r.primary.hop_limit, 64);
}

}  // namespace
}  // namespace uroce::wire::cm
