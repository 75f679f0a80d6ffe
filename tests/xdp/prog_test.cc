/**
 * @file prog_test.cc
 * @brief uroce's XDP program (drivers/xdp/roce_steer.bpf.c) as the kernel runs it: loaded
 * through the verifier, fed hand-built frames with BPF_PROG_TEST_RUN. Its xsks_map is empty
 * here, so a RoCEv2 frame comes back XDP_PASS too and is told apart by the counter it bumps
 * (unbound: RoCEv2 without a socket) from the frames the program passes (passed).
 * Needs root (BPF); label dpdk with the other tests that need the kernel's XDP.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstdint>
#include <vector>

#include "xdp/xdp.h"

namespace {

using Frame = std::vector<uint8_t>;

void put16(Frame& f, uint16_t v) {
  f.push_back(static_cast<uint8_t>(v >> 8));
  f.push_back(static_cast<uint8_t>(v));
}

Frame ether(uint16_t type, std::vector<uint16_t> tags = {}) {
  Frame f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  for (uint16_t tpid : tags) put16(f, tpid), put16(f, 100);  // TPID, TCI (VID 100)
  put16(f, type);
  return f;
}

/// UDP header and 40 payload bytes (a BTH-sized body).
void udp(Frame& f, uint16_t dport) {
  put16(f, 50000), put16(f, dport), put16(f, 48), put16(f, 0);
  f.insert(f.end(), 40, 0xab);
}

Frame ipv4(uint16_t dport, std::vector<uint16_t> tags = {}, uint8_t proto = 17, int ihl = 5,
           uint16_t frag = 0x4000 /* DF */) {
  Frame f = ether(0x0800, tags);
  f.push_back(static_cast<uint8_t>(0x40 | ihl));
  f.push_back(0);
  put16(f, static_cast<uint16_t>(ihl * 4 + 48));
  put16(f, 1), put16(f, frag);
  f.push_back(64), f.push_back(proto), put16(f, 0);
  for (uint8_t b : {198, 18, 0, 2, 198, 18, 0, 1}) f.push_back(b);
  for (int i = 5; i < ihl; ++i) f.insert(f.end(), {1, 1, 1, 1});  // options: NOPs
  udp(f, dport);
  return f;
}

Frame ipv6(uint16_t dport, std::vector<uint16_t> tags = {}, uint8_t next = 17) {
  Frame f = ether(0x86dd, tags);
  f.insert(f.end(), {0x60, 0, 0, 0});
  put16(f, next == 17 ? 48 : 56);
  f.push_back(next), f.push_back(64);
  for (int i = 0; i < 32; ++i) f.push_back(static_cast<uint8_t>(i < 16 ? 0x20 : 0x30));
  if (next != 17) f.insert(f.end(), {17, 0, 1, 4, 0, 0, 0, 0});  // hop-by-hop: PadN, then UDP
  udp(f, dport);
  return f;
}

class XdpProg : public ::testing::Test {
 protected:
  void SetUp() override {
    obj_ = bpf_object__open_file(uroce::xdp::object_path().c_str(), nullptr);
    ASSERT_NE(obj_, nullptr) << "cannot open " << uroce::xdp::object_path();
    ASSERT_EQ(bpf_object__load(obj_), 0) << "the verifier refused the program";
    bpf_program* p = bpf_object__find_program_by_name(obj_, "uroce_roce");
    ASSERT_NE(p, nullptr);
    prog_ = bpf_program__fd(p);
    ASSERT_NE(bpf_object__find_map_by_name(obj_, "xsks_map"), nullptr);
    bpf_map* m = bpf_object__find_map_by_name(obj_, "uroce_counts");
    ASSERT_NE(m, nullptr);
    counts_ = bpf_map__fd(m);
  }
  void TearDown() override { bpf_object__close(obj_); }

  uint64_t counter(uint32_t k) {
    std::vector<uint64_t> v(static_cast<size_t>(libbpf_num_possible_cpus()));
    EXPECT_EQ(bpf_map_lookup_elem(counts_, &k, v.data()), 0);
    uint64_t sum = 0;
    for (uint64_t x : v) sum += x;
    return sum;
  }

  /// Runs the program on f; true when it took f for RoCEv2 (the unbound counter moved).
  bool roce(Frame f) {
    const uint64_t passed = counter(1), unbound = counter(2);
    bpf_test_run_opts run{};
    run.sz = sizeof run;
    run.data_in = f.data();
    run.data_size_in = static_cast<uint32_t>(f.size());
    run.repeat = 1;
    EXPECT_EQ(bpf_prog_test_run_opts(prog_, &run), 0);
    EXPECT_EQ(run.retval, XDP_PASS);  // empty xsks_map: the fallback action
    const uint64_t dp = counter(1) - passed, du = counter(2) - unbound;
    EXPECT_EQ(dp + du, 1u);
    return du == 1;
  }

  bpf_object* obj_ = nullptr;
  int prog_ = -1, counts_ = -1;
};

TEST_F(XdpProg, RoceV2IsTaken) {
  EXPECT_TRUE(roce(ipv4(4791)));
  EXPECT_TRUE(roce(ipv4(4791, {}, 17, 15)));  // IHL 15: 40 bytes of options
  EXPECT_TRUE(roce(ipv6(4791)));
  EXPECT_TRUE(roce(ipv4(4791, {0x8100})));
  EXPECT_TRUE(roce(ipv6(4791, {0x8100})));
  EXPECT_TRUE(roce(ipv4(4791, {0x88a8})));          // 802.1ad alone
  EXPECT_TRUE(roce(ipv4(4791, {0x88a8, 0x8100})));  // QinQ
  EXPECT_TRUE(roce(ipv6(4791, {0x8100, 0x8100})));
}

TEST_F(XdpProg, EverythingElsePasses) {
  EXPECT_FALSE(roce(ipv4(4792)));
  EXPECT_FALSE(roce(ipv6(4792)));
  EXPECT_FALSE(roce(ipv4(4791, {}, 6)));                     // TCP to 4791
  EXPECT_FALSE(roce(ipv4(4791, {}, 1)));                     // ICMP
  EXPECT_FALSE(roce(ipv6(4791, {}, 0)));                     // hop-by-hop header before UDP: kernel
  EXPECT_FALSE(roce(ipv4(4791, {}, 17, 4)));                 // IHL below 5
  EXPECT_FALSE(roce(ipv4(4791, {}, 17, 5, 0x2000)));         // first fragment (MF)
  EXPECT_FALSE(roce(ipv4(4791, {}, 17, 5, 0x0010)));         // later fragment
  EXPECT_FALSE(roce(ipv4(4791, {0x8100, 0x8100, 0x8100})));  // three tags
  Frame arp = ether(0x0806);
  arp.insert(arp.end(), 28, 0);
  EXPECT_FALSE(roce(arp));
}

TEST_F(XdpProg, TruncatedFramesPass) {
  Frame v4 = ipv4(4791);
  for (size_t len : {size_t{14}, size_t{20}, size_t{34}, size_t{37}}) {
    Frame f(v4.begin(), v4.begin() + static_cast<long>(len));
    f.resize(std::max<size_t>(len, 14));
    EXPECT_FALSE(roce(f)) << len;
  }
  Frame v6 = ipv6(4791);
  EXPECT_FALSE(roce(Frame(v6.begin(), v6.begin() + 57)));  // 3 bytes of UDP
  EXPECT_TRUE(roce(Frame(v4.begin(), v4.begin() + 42)));   // UDP header, no payload
}

}  // namespace
