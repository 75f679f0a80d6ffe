/**
 * @file loopback_port_test.cc
 * @brief drivers/loopback: frames written through the TxSink come back, byte for byte and in
 * order, from rx_burst() after flush(); the port is bounded; every IP resolves to its own MAC.
 */
#include "loopback/loopback_port.h"

#include <gtest/gtest.h>

#include <vector>

#include "config/config.h"

namespace uroce::loopback {
namespace {

struct Collect : FrameHandler {
  std::vector<std::vector<uint8_t>> frames;
  void on_frame(std::span<const uint8_t> f, const RxMeta&) override {
    frames.emplace_back(f.begin(), f.end());
  }
};

TEST(LoopbackPort, TxComesBackOnRxAfterFlush) {
  LoopbackPort port(MacAddr{{2, 0, 0, 0, 0, 1}}, 1500, 100'000'000'000ull);
  for (uint8_t i = 0; i < 3; ++i) {
    uint8_t* p = port.begin_frame(64);
    ASSERT_NE(p, nullptr);
    for (int k = 0; k < 60; ++k) p[k] = static_cast<uint8_t>(i * 60 + k);
    port.end_frame(60u + i, TxMeta{});
  }
  Collect c;
  // Expect: nothing on RX before flush.
  EXPECT_EQ(port.rx_burst(c, 16), 0u);
  port.flush();
  // Expect: two, then the third frame, in order and unchanged.
  EXPECT_EQ(port.rx_burst(c, 2), 2u);
  EXPECT_EQ(port.rx_burst(c, 16), 1u);
  ASSERT_EQ(c.frames.size(), 3u);
  for (uint8_t i = 0; i < 3; ++i) {
    ASSERT_EQ(c.frames[i].size(), 60u + i);
    for (int k = 0; k < 60; ++k) EXPECT_EQ(c.frames[i][k], static_cast<uint8_t>(i * 60 + k));
  }
  EXPECT_EQ(port.tx_frames(), 3u);
  EXPECT_EQ(port.rx_frames(), 3u);
}

TEST(LoopbackPort, BoundedAndAbandonedFramesAreNotSent) {
  LoopbackPort port(MacAddr{{2, 0, 0, 0, 0, 1}}, 1500, 1, /*capacity=*/2);
  ASSERT_NE(port.begin_frame(100), nullptr);
  port.end_frame(100, TxMeta{});
  ASSERT_NE(port.begin_frame(100), nullptr);  // abandoned by the next begin_frame
  ASSERT_NE(port.begin_frame(100), nullptr);
  port.end_frame(10, TxMeta{});
  // Expect: full at capacity 2.
  EXPECT_EQ(port.begin_frame(100), nullptr);
  port.flush();
  Collect c;
  EXPECT_EQ(port.rx_burst(c, 16), 2u);
  EXPECT_EQ(c.frames[1].size(), 10u);
  EXPECT_NE(port.begin_frame(100), nullptr);
}

TEST(LoopbackPort, ResolvesEveryAddressToItself) {
  config::Device d;
  d.name = "uroce7";
  std::string err;
  auto port = open_loopback_port(d, &err);
  ASSERT_NE(port, nullptr);
  MacAddr m;
  ASSERT_TRUE(port->resolve(Gid::from_ipv4(0xc6120002), &m));
  EXPECT_EQ(m, port->mac());
  EXPECT_FALSE(m.is_zero());
  EXPECT_GE(port->max_frame_len(), d.mtu + 58u);  // Eth + IPv6 + UDP + BTH + ... + ICRC
}

}  // namespace
}  // namespace uroce::loopback
