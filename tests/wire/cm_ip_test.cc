/**
 * @file cm_ip_test.cc
 * @brief RDMA IP CM (transport/wire/cm_ip.h): service IDs and the REQ private data header,
 * byte positions written here from IBTA Annex A11.
 */
#include "transport/wire/cm_ip.h"

#include <gtest/gtest.h>

#include <array>

#include "common/byteorder.h"

namespace uroce::wire::cm {
namespace {

Gid v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  Gid g{};
  g.raw[10] = g.raw[11] = 0xff;
  g.raw[12] = a;
  g.raw[13] = b;
  g.raw[14] = c;
  g.raw[15] = d;
  return g;
}

TEST(IpCm, ServiceIdCarriesPortSpaceAndPort) {
  EXPECT_EQ(ip_service_id(kPsTcp, 7471), 0x0000000001061d2full);
  EXPECT_EQ(ip_port_space(0x0000000001061d2full), kPsTcp);
  EXPECT_EQ(ip_port(0x0000000001061d2full), 7471);
  EXPECT_EQ(ip_port_space(ip_service_id(kPsUdp, 1)), kPsUdp);
  EXPECT_FALSE(ip_port_space(0x1234));                 // not an IP CM service
  EXPECT_FALSE(ip_port_space(0x0200000001060000ull));  // another prefix
}

TEST(IpCm, Ipv4HeaderSitsInTheFirst36BytesOfThePrivateData) {
  std::array<uint8_t, 92> pd{};
  pd.fill(0xee);
  IpCmHeader h{4, 0xc001, v4(198, 18, 0, 1), v4(198, 18, 0, 2)};
  ASSERT_TRUE(build_ip_cm_header(h, pd));
  EXPECT_EQ(pd[0], 0);     // version
  EXPECT_EQ(pd[1], 0x40);  // IPv4
  EXPECT_EQ(load_be16(&pd[2]), 0xc001);
  for (int i = 4; i < 16; ++i) EXPECT_EQ(pd[i], 0) << i;
  EXPECT_EQ(load_be32(&pd[16]), 0xc6120001u);
  for (int i = 20; i < 32; ++i) EXPECT_EQ(pd[i], 0) << i;
  EXPECT_EQ(load_be32(&pd[32]), 0xc6120002u);
  EXPECT_EQ(pd[36], 0xee);  // the application's private data follows untouched
  auto back = parse_ip_cm_header(pd);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, h);
}

TEST(IpCm, Ipv6HeaderRoundTripsAndBadHeadersAreRefused) {
  std::array<uint8_t, 36> pd{};
  Gid a{}, b{};
  a.raw = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  b.raw = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
  IpCmHeader h{6, 1, a, b};
  ASSERT_TRUE(build_ip_cm_header(h, pd));
  EXPECT_EQ(pd[1], 0x60);
  EXPECT_EQ(pd[4], 0x20);
  EXPECT_EQ(pd[35], 2);
  EXPECT_EQ(parse_ip_cm_header(pd), h);

  EXPECT_FALSE(parse_ip_cm_header(std::span<const uint8_t>(pd).first(35)));
  auto bad = pd;
  bad[0] = 1;  // unknown header version
  EXPECT_FALSE(parse_ip_cm_header(bad));
  bad = pd;
  bad[1] = 0x50;  // IP version 5
  EXPECT_FALSE(parse_ip_cm_header(bad));
  std::array<uint8_t, 35> small{};
  EXPECT_FALSE(build_ip_cm_header(h, small));
}

}  // namespace
}  // namespace uroce::wire::cm
