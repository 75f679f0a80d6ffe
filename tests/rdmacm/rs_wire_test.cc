/**
 * @file rs_wire_test.cc
 * @brief The rsocket protocol's wire facts (lib/rdmacm/rs_wire.h), checked against the byte
 * layout of librdmacm's struct rs_conn_data and its immediate-data message format
 * (rdma-core docs/rsocket: "Connection Establishment", "Message Format").
 */
#include "rdmacm/rs_wire.h"

#include <gtest/gtest.h>

#include <array>

namespace uroce::rdmacm::rs {
namespace {

// docs/rsocket: bits 31:29 the type (000 data, 100 credit update, 110 iomap updated, 111
// control), bits 28:0 its argument.
TEST(RsWire, MessageTypesAreTheTopThreeBits) {
  EXPECT_EQ(msg(Op::kData, 65536), 0x00010000u);
  EXPECT_EQ(msg(Op::kSgl, 0x1234), 0x80001234u);
  EXPECT_EQ(msg(Op::kIomapSgl, 3), 0xc0000003u);
  EXPECT_EQ(msg(Op::kCtrl, static_cast<uint32_t>(Ctrl::kShutdown)), 0xe0000002u);
  EXPECT_EQ(msg_op(0xe0000000u), Op::kCtrl);
  EXPECT_EQ(msg_op(0x9fffffffu), Op::kSgl);
  EXPECT_EQ(msg_data(0x9fffffffu), 0x1fffffffu);
  // An argument wider than 29 bits loses its top bits, never the type's.
  EXPECT_EQ(msg_op(msg(Op::kData, 0xffffffffu)), Op::kData);
}

// struct rs_conn_data: version, flags, credits (big-endian), 3 reserved bytes, the iomap
// size, then target_sgl and data_buf as {addr, key, length}, all big-endian: 40 bytes.
TEST(RsWire, ConnDataLayout) {
  ConnData d;
  d.flags = kConnFlagIomap;
  d.credits = 384;
  d.iomap_size = 1;
  d.target_sgl = {0x0102030405060708ull, 0x11223344u, 2};
  d.data_buf = {0x1112131415161718ull, 0xa1a2a3a4u, 0x40000};
  std::array<uint8_t, 56> buf{};
  buf.fill(0xee);
  build_conn_data(d, buf);
  const std::array<uint8_t, 40> want = {
      1,    0x02, 0x01, 0x80, 0,    0,    0,    1,                             // header
      0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x11, 0x22, 0x33, 0x44,  // sgl
      0,    0,    0,    2,                                                     //
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0xa1, 0xa2, 0xa3, 0xa4,  // buf
      0,    0x04, 0,    0};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(buf[i], want[i]) << "byte " << i;
  EXPECT_EQ(buf[40], 0xee);  // nothing past the 40 bytes

  auto back = parse_conn_data(buf);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->flags, d.flags);
  EXPECT_EQ(back->credits, 384);
  EXPECT_EQ(back->iomap_size, 1);
  EXPECT_EQ(back->target_sgl.addr, d.target_sgl.addr);
  EXPECT_EQ(back->target_sgl.key, d.target_sgl.key);
  EXPECT_EQ(back->target_sgl.length, 2u);
  EXPECT_EQ(back->data_buf.addr, d.data_buf.addr);
  EXPECT_EQ(back->data_buf.key, d.data_buf.key);
  EXPECT_EQ(back->data_buf.length, 0x40000u);
}

TEST(RsWire, ConnDataRefusesShortOrOtherVersions) {
  std::array<uint8_t, 40> buf{};
  build_conn_data(ConnData{}, buf);
  EXPECT_TRUE(parse_conn_data(buf));
  EXPECT_FALSE(parse_conn_data(std::span<const uint8_t>(buf).first(39)));
  buf[0] = 2;
  EXPECT_FALSE(parse_conn_data(buf));
  buf[0] = 0;  // an all-zero private data block is not rsocket's
  EXPECT_FALSE(parse_conn_data(buf));
}

// librdmacm's 8-bit iomap size: values up to 128 as they are, larger ones in units of 256.
TEST(RsWire, IomapSizeScale) {
  EXPECT_EQ(iomap_size_to_wire(0), 0);
  EXPECT_EQ(iomap_size_to_wire(1), 1);
  EXPECT_EQ(iomap_size_to_wire(128), 128);
  EXPECT_EQ(iomap_size_to_wire(512), 0x82);
  EXPECT_EQ(iomap_size_from_wire(0x82), 512);
  EXPECT_EQ(iomap_size_round(100), 100);
  EXPECT_EQ(iomap_size_round(300), 256);  // 300 >> 8 = 1 unit of 256
  EXPECT_EQ(iomap_size_round(129), 128);  // 0x80 | (129 >> 8) reads back as 128
}

}  // namespace
}  // namespace uroce::rdmacm::rs
