/**
 * @file memif_pair_test.cc
 * @brief Two DpdkPorts in one process over a net_memif server/client pair (EAL --no-huge):
 * ARP resolution between them, frames both ways through the Port interface byte for byte,
 * 4096-MTU frames, TX back-pressure without loss, an empty mbuf pool (frames refused, none
 * lost, sending resumes), and frames to the port's own MAC looped back without touching the
 * wire. A memif client is not restarted under a handshake its server is slow to finish, and
 * is when the server goes (MemifRestart). Label dpdk (root, < 30 s).
 */
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/byteorder.h"
#include "config/config.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/eal.h"
#include "transport/wire/pfc.h"

namespace uroce::dpdk {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(5);
constexpr uint16_t kTestEtherType = 0x88b5;  // IEEE local experimental

/// Keeps every frame received.
struct Collect : FrameHandler {
  void on_frame(std::span<const uint8_t> f, const RxMeta&) override {
    frames.emplace_back(f.begin(), f.end());
  }
  std::vector<std::vector<uint8_t>> frames;
};

config::Device device(const std::string& name, const std::string& port, uint32_t ip, uint32_t mtu) {
  config::Device d;
  d.name = name;
  d.port = port;
  d.mtu = mtu;
  config::Address a;
  a.gid = Gid::from_ipv4(ip);
  a.prefix = 15;
  d.addresses.push_back(a);
  return d;
}

/// Writes a test frame of len bytes: to dst from src, EtherType 0x88b5, seq, pattern.
bool send_frame(Port& p, const MacAddr& dst, uint32_t seq, size_t len, uint8_t priority = 0) {
  uint8_t* b = p.begin_frame(len);
  if (!b) return false;
  std::memcpy(b, dst.b.data(), 6);
  std::memcpy(b + 6, p.mac().b.data(), 6);
  store_be16(b + 12, kTestEtherType);
  store_be32(b + 14, seq);
  for (size_t i = 18; i < len; ++i) b[i] = static_cast<uint8_t>(seq + i);
  TxMeta meta{};
  meta.priority = priority;
  p.end_frame(len, meta);
  return true;
}

/// A RoCEv2-shaped frame of len bytes (>= 64): IPv4, UDP to port 4791, seq, pattern.
bool send_roce_frame(Port& p, const MacAddr& dst, uint32_t seq, size_t len) {
  uint8_t* b = p.begin_frame(len);
  if (!b) return false;
  std::memset(b, 0, 42);
  std::memcpy(b, dst.b.data(), 6);
  std::memcpy(b + 6, p.mac().b.data(), 6);
  store_be16(b + 12, 0x0800);
  b[14] = 0x45;
  b[23] = 17;                // UDP
  store_be16(b + 36, 4791);  // destination port: RoCEv2
  store_be32(b + 42, seq);
  for (size_t i = 46; i < len; ++i) b[i] = static_cast<uint8_t>(seq + i);
  p.end_frame(len, TxMeta{});
  return true;
}

void check_roce_frame(const std::vector<uint8_t>& f, uint32_t seq, size_t len) {
  ASSERT_EQ(f.size(), len);
  ASSERT_EQ(load_be32(f.data() + 42), seq);
  for (size_t i = 46; i < len; ++i) ASSERT_EQ(f[i], static_cast<uint8_t>(seq + i)) << i;
}

void check_frame(const std::vector<uint8_t>& f, uint32_t seq, size_t len) {
  ASSERT_EQ(f.size(), len);
  ASSERT_EQ(load_be32(f.data() + 14), seq);
  for (size_t i = 18; i < len; ++i) ASSERT_EQ(f[i], static_cast<uint8_t>(seq + i)) << i;
}

class MemifPair : public ::testing::Test {
 protected:
  void open(uint32_t mtu) {
    static int seq = 0;
    sock_ =
        "/tmp/uroce-memif-test-" + std::to_string(getpid()) + "-" + std::to_string(seq) + ".sock";
    std::string n = std::to_string(seq++);
    std::string err;
    a_ = open_dpdk_port(
        device("a", "net_memif" + n + "0,role=server,id=0,socket=" + sock_, 0xc6120001, mtu), &err);
    ASSERT_TRUE(a_) << err;
    b_ = open_dpdk_port(
        device("b", "net_memif" + n + "1,role=client,id=0,socket=" + sock_, 0xc6120002, mtu), &err);
    ASSERT_TRUE(b_) << err;
    ASSERT_NE(a_->mac(), b_->mac());
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
    unlink(sock_.c_str());
  }
  /// Polls both ports (answering ARP) until ok() or the deadline.
  template <typename F>
  bool poll_until(F ok) {
    auto end = Clock::now() + kDeadline;
    while (Clock::now() < end) {
      a_->rx_burst(ha_, 64);
      b_->rx_burst(hb_, 64);
      a_->flush();
      b_->flush();
      if (ok()) return true;
    }
    return false;
  }
  /// Resolves b's address from a (ARP over the link).
  void resolve_b(MacAddr* mac) {
    ASSERT_TRUE(poll_until([&] { return a_->resolve(Gid::from_ipv4(0xc6120002), mac); }));
    hb_.frames.clear();
    ha_.frames.clear();
  }

  std::string sock_;
  std::unique_ptr<Port> a_, b_;
  Collect ha_, hb_;
};

TEST_F(MemifPair, ArpResolvesThePeerMac) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  MacAddr mac;
  // Expect: a's resolve() fails first (request sent), then b answers and a learns b's MAC.
  EXPECT_FALSE(a_->resolve(Gid::from_ipv4(0xc6120002), &mac));
  ASSERT_NO_FATAL_FAILURE(resolve_b(&mac));
  EXPECT_EQ(mac, b_->mac());
  // b knows a from a's request or its gratuitous ARP, else it asks now.
  MacAddr back;
  ASSERT_TRUE(poll_until([&] { return b_->resolve(Gid::from_ipv4(0xc6120001), &back); }));
  EXPECT_EQ(back, a_->mac());
  // ARP frames are not passed to the handler.
  for (auto& f : hb_.frames) EXPECT_NE(load_be16(f.data() + 12), 0x0806);
}

TEST_F(MemifPair, NeighbourDiscoveryResolvesAnIpv6Peer) {
  static int seq = 100;
  sock_ = "/tmp/uroce-memif-test-" + std::to_string(getpid()) + "-v6.sock";
  std::string n = std::to_string(seq++);
  auto with_v6 = [](config::Device d, const char* v6) {
    config::Address a;
    EXPECT_TRUE(Gid::parse(v6, &a.gid));
    a.prefix = 64;
    d.addresses.push_back(a);
    return d;
  };
  std::string err;
  a_ = open_dpdk_port(
      with_v6(device("a", "net_memif" + n + "0,role=server,id=0,socket=" + sock_, 0xc6120001, 1024),
              "2001:2::1"),
      &err);
  ASSERT_TRUE(a_) << err;
  b_ = open_dpdk_port(
      with_v6(device("b", "net_memif" + n + "1,role=client,id=0,socket=" + sock_, 0xc6120002, 1024),
              "2001:2::2"),
      &err);
  ASSERT_TRUE(b_) << err;
  Gid peer;
  ASSERT_TRUE(Gid::parse("2001:2::2", &peer));
  MacAddr mac;
  // Expect: an NS to b's solicited-node group, b's NA, then a knows b's MAC.
  ASSERT_TRUE(poll_until([&] { return a_->resolve(peer, &mac); }));
  EXPECT_EQ(mac, b_->mac());
  // ND frames (ICMPv6) are consumed by the port, not passed to the handler.
  for (auto& f : hb_.frames) EXPECT_FALSE(f[12] == 0x86 && f[13] == 0xdd && f[20] == 58);
}

TEST_F(MemifPair, FramesBothWaysByteForByte) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  EXPECT_EQ(a_->max_frame_len(), 1024u + kRoceOverhead);
  EXPECT_GT(a_->link_speed_bps(), 0u);
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  hb_.frames.clear();
  ha_.frames.clear();
  constexpr uint32_t kFrames = 2000;
  uint32_t sent_ab = 0, sent_ba = 0;
  ASSERT_TRUE(poll_until([&] {
    while (sent_ab < kFrames && send_frame(*a_, bmac, sent_ab, 60 + sent_ab % 1000)) ++sent_ab;
    while (sent_ba < kFrames && send_frame(*b_, a_->mac(), sent_ba, 1152 - sent_ba % 900))
      ++sent_ba;
    return hb_.frames.size() >= kFrames && ha_.frames.size() >= kFrames;
  })) << "a->b "
      << hb_.frames.size() << " b->a " << ha_.frames.size();
  ASSERT_EQ(hb_.frames.size(), kFrames);
  ASSERT_EQ(ha_.frames.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) {
    check_frame(hb_.frames[i], i, 60 + i % 1000);
    check_frame(ha_.frames[i], i, 1152 - i % 900);
  }
}

TEST_F(MemifPair, Mtu4096FramesFit) {
  ASSERT_NO_FATAL_FAILURE(open(4096));
  EXPECT_EQ(a_->max_frame_len(), 4096u + kRoceOverhead);
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  hb_.frames.clear();
  constexpr uint32_t kFrames = 200;
  uint32_t sent = 0;
  const size_t len = a_->max_frame_len();
  ASSERT_TRUE(poll_until([&] {
    while (sent < kFrames && send_frame(*a_, bmac, sent, len)) ++sent;
    return hb_.frames.size() >= kFrames;
  })) << hb_.frames.size();
  for (uint32_t i = 0; i < kFrames; ++i) check_frame(hb_.frames[i], i, len);
}

TEST_F(MemifPair, FullBurstBackPressureLosesNothing) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  hb_.frames.clear();
  // Fill the pending burst without polling the receiver: begin_frame() must eventually refuse
  // (ring and pending array full) rather than block or drop.
  uint32_t sent = 0;
  while (sent < 100000 && send_frame(*a_, bmac, sent, 200)) ++sent;
  EXPECT_LT(sent, 100000u) << "the port never pushed back";
  ASSERT_TRUE(poll_until([&] { return hb_.frames.size() >= sent; }))
      << hb_.frames.size() << "/" << sent;
  ASSERT_EQ(hb_.frames.size(), sent);
  for (uint32_t i = 0; i < sent; ++i) check_frame(hb_.frames[i], i, 200);
}

/// Takes every mbuf of every uroce port pool (drivers/dpdk names them "uroce_p<port>_<n>").
std::vector<rte_mbuf*> drain_port_pools() {
  std::vector<rte_mempool*> pools;
  rte_mempool_walk(
      [](rte_mempool* mp, void* arg) {
        if (std::strncmp(mp->name, "uroce_p", 7) == 0)
          static_cast<std::vector<rte_mempool*>*>(arg)->push_back(mp);
      },
      &pools);
  std::vector<rte_mbuf*> held;
  for (rte_mempool* mp : pools)
    while (rte_mbuf* m = rte_pktmbuf_alloc(mp)) held.push_back(m);
  return held;
}

TEST_F(MemifPair, EmptyMempoolRefusesFramesLosesNoneAndRecovers) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  for (uint32_t i = 0; i < 20; ++i) ASSERT_TRUE(send_frame(*a_, bmac, i, 200));
  a_->flush();  // 20 frames on the wire towards b, not yet received
  std::vector<rte_mbuf*> held = drain_port_pools();
  ASSERT_FALSE(held.empty());
  // Expect: with no mbuf left, a refuses a new frame (begin_frame returns null: back-pressure,
  // the engine retries later) and b's receive leaves the frames in the ring; nothing crashes.
  EXPECT_FALSE(send_frame(*a_, bmac, 999, 200));
  for (int k = 0; k < 100; ++k) b_->rx_burst(hb_, 64);
  for (rte_mbuf* m : held) rte_pktmbuf_free(m);
  // Expect: once mbufs are back, every frame sent before arrives once, in order, and sending
  // works again.
  ASSERT_TRUE(poll_until([&] { return hb_.frames.size() >= 20; })) << hb_.frames.size();
  ASSERT_EQ(hb_.frames.size(), 20u);
  for (uint32_t i = 0; i < 20; ++i) check_frame(hb_.frames[i], i, 200);
  ASSERT_TRUE(send_frame(*a_, bmac, 20, 200));
  ASSERT_TRUE(poll_until([&] { return hb_.frames.size() >= 21; }));
  check_frame(hb_.frames[20], 20, 200);
}

TEST_F(MemifPair, PfcFramesAreHonouredCountedAndNotPassedOn) {
  static int seq = 200;
  sock_ = "/tmp/uroce-memif-test-" + std::to_string(getpid()) + "-pfc.sock";
  std::string n = std::to_string(seq++);
  config::Device bd =
      device("b", "net_memif" + n + "1,role=client,id=0,socket=" + sock_, 0xc6120002, 1024);
  bd.pfc.enabled[3] = true;
  std::string err;
  a_ = open_dpdk_port(
      device("a", "net_memif" + n + "0,role=server,id=0,socket=" + sock_, 0xc6120001, 1024), &err);
  ASSERT_TRUE(a_) << err;
  b_ = open_dpdk_port(bd, &err);
  ASSERT_TRUE(b_) << err;
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  // a sends PFC XOFF for priority 3 (max quanta) and an 802.3x PAUSE of 0 (no-op XON).
  wire::PauseFrame xoff;
  xoff.class_enable = 1u << 3;
  xoff.quanta[3] = 0xffff;
  uint8_t* f = a_->begin_frame(wire::kMacControlFrameLen);
  ASSERT_NE(f, nullptr);
  wire::build_pause_frame(std::span<uint8_t>(f, wire::kMacControlFrameLen), a_->mac(), xoff);
  a_->end_frame(wire::kMacControlFrameLen, TxMeta{});
  a_->flush();
  PortInfo info;
  // Expect: b counts it on priority 3 and does not pass it to its handler.
  ASSERT_TRUE(poll_until([&] { return port_info(*b_, &info) && info.pfc.rx_prio_pause[3] == 1; }));
  EXPECT_EQ(info.pfc.rx_prio_pause[0], 0u);
  for (auto& fr : hb_.frames) EXPECT_NE(load_be16(fr.data() + 12), 0x8808);
  // b sends on the paused priority 3 and on priority 0: all arrive (3 after the pause ends).
  for (uint32_t i = 0; i < 20; ++i) {
    uint8_t* b = b_->begin_frame(200);
    ASSERT_NE(b, nullptr);
    std::memcpy(b, a_->mac().b.data(), 6);
    std::memcpy(b + 6, b_->mac().b.data(), 6);
    store_be16(b + 12, kTestEtherType);
    store_be32(b + 14, i);
    for (size_t k = 18; k < 200; ++k) b[k] = static_cast<uint8_t>(i + k);
    TxMeta meta;
    meta.priority = i % 2 ? 3 : 0;
    b_->end_frame(200, meta);
  }
  ASSERT_TRUE(poll_until([&] { return ha_.frames.size() >= 20; })) << ha_.frames.size();
  std::vector<bool> seen(20);
  for (auto& fr : ha_.frames) {
    uint32_t i = load_be32(fr.data() + 14);
    ASSERT_LT(i, 20u);
    check_frame(fr, i, 200);
    seen[i] = true;
  }
  for (uint32_t i = 0; i < 20; ++i) EXPECT_TRUE(seen[i]) << i;
}

TEST_F(MemifPair, FramesForOtherMacsAreFilteredOut) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  hb_.frames.clear();
  const MacAddr stranger{{0x02, 0x99, 0, 0, 0, 9}};
  ASSERT_TRUE(send_frame(*a_, stranger, 1, 100));
  ASSERT_TRUE(send_frame(*a_, bmac, 2, 100));
  a_->flush();
  ASSERT_TRUE(poll_until([&] { return !hb_.frames.empty(); }));
  ASSERT_EQ(hb_.frames.size(), 1u);
  check_frame(hb_.frames[0], 2, 100);
}

TEST_F(MemifPair, RoceFramesToTheOwnMacLoopBackWithoutTheWire) {
  // A QP addressing one of the device's own GIDs (UCX/MPI connecting a process to itself)
  // builds RoCE frames to the port's own MAC: a RoCE NIC loops them back internally.
  ASSERT_NO_FATAL_FAILURE(open(1024));
  MacAddr bmac;
  ASSERT_NO_FATAL_FAILURE(resolve_b(&bmac));
  PortCounters before;
  ASSERT_TRUE(b_->read_counters(&before));
  hb_.frames.clear();
  ha_.frames.clear();
  // More than one burst's worth and more than the loopback bound (kMaxQueued 512): the port
  // refuses while full and takes more once rx_burst() has handed the first ones over.
  constexpr uint32_t kFrames = 700;
  uint32_t sent = 0;
  ASSERT_TRUE(poll_until([&] {
    while (sent < kFrames && send_roce_frame(*a_, a_->mac(), sent, 64 + sent % 1000)) ++sent;
    return ha_.frames.size() >= kFrames;
  })) << ha_.frames.size();
  // Expect: every frame back at a, in order, byte for byte; nothing reached b's PMD.
  ASSERT_EQ(ha_.frames.size(), kFrames);
  for (uint32_t i = 0; i < kFrames; ++i) check_roce_frame(ha_.frames[i], i, 64 + i % 1000);
  ASSERT_TRUE(send_frame(*a_, bmac, 9999, 100));  // a marker frame that does go over the wire
  ASSERT_TRUE(poll_until([&] { return !hb_.frames.empty(); }));
  ASSERT_EQ(hb_.frames.size(), 1u);
  check_frame(hb_.frames[0], 9999, 100);
  PortCounters after;
  ASSERT_TRUE(b_->read_counters(&after));
  // The marker, and maybe an ARP announcement or two; not the 700 looped frames.
  EXPECT_GE(after.rx_packets_phy - before.rx_packets_phy, 1u);
  EXPECT_LT(after.rx_packets_phy - before.rx_packets_phy, 10u);
}

TEST_F(MemifPair, ReopeningTheSameDeviceWorks) {
  ASSERT_NO_FATAL_FAILURE(open(1024));
  a_.reset();
  b_.reset();
  std::string err;
  auto again = open_dpdk_port(
      device("a", "net_memif_again,role=server,id=0,socket=" + sock_ + "2", 0xc6120001, 1024),
      &err);
  ASSERT_TRUE(again) << err;
  again.reset();
  again = open_dpdk_port(
      device("a", "net_memif_again,role=server,id=0,socket=" + sock_ + "2", 0xc6120001, 1024),
      &err);
  ASSERT_TRUE(again) << err;
  again.reset();
  unlink((sock_ + "2").c_str());
  // EAL was started once, without hugepages here, and without --in-memory.
  auto args = eal_args_used();
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args[1].rfind("--file-prefix=uroce-" + std::to_string(getpid()) + "-", 0), 0u);
}

/// A memif server that accepts connections and says nothing, as a loaded server whose EAL
/// interrupt thread has not run yet: its client's handshake does not progress. net_memif's
/// socket name, in the abstract namespace (its default).
class SilentServer {
 public:
  explicit SilentServer(const std::string& name) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path + 1, name.data(), name.size());
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ok_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0 && listen(fd_, 8) == 0;
  }
  ~SilentServer() {
    drop();
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  /// Takes new connections and notices closed ones.
  void poll() {
    for (int c; (c = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
      conns_.push_back(c);
      ++accepted;
    }
    for (int& c : conns_) {
      char b;
      if (c >= 0 && recv(c, &b, 1, 0) == 0) {
        close(c);
        c = -1;
        ++closed_by_client;
      }
    }
  }
  /// The server goes: every connection closed.
  void drop() {
    for (int& c : conns_)
      if (c >= 0) close(c);
    conns_.clear();
  }
  int accepted = 0, closed_by_client = 0;

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::vector<int> conns_;
};

TEST(MemifRestart, AClientIsNotRestartedUnderAHandshakeButIsWhenItsServerGoes) {
  const std::string name = "/tmp/uroce-memif-silent-" + std::to_string(getpid()) + ".sock";
  SilentServer srv(name);
  ASSERT_TRUE(srv.ok());
  std::string err;
  auto c = open_dpdk_port(
      device("c", "net_memif_silent,role=client,id=0,socket=" + name, 0xc6120007, 1024), &err);
  ASSERT_TRUE(c) << err;
  Collect h;
  auto drive = [&](std::chrono::milliseconds d, auto done) {
    const auto end = Clock::now() + d;
    while (Clock::now() < end && !done()) {
      c->rx_burst(h, 64);
      c->flush();
      srv.poll();
      usleep(1000);
    }
  };
  // The client connected; its link stays down: the handshake does not progress. Expect: no
  // restart however long it waits (5 restart periods of 300 ms): the connection stays open,
  // no other comes. A restart stopped the port under EAL's interrupt thread, which crashed
  // net_memif (PMDS.md).
  drive(std::chrono::milliseconds(1500), [] { return false; });
  EXPECT_EQ(srv.accepted, 1);
  EXPECT_EQ(srv.closed_by_client, 0);
  // The server goes (every connection closed): the client's interrupt thread sees EOF and
  // closes its end. Expect: the port restarted after 300 ms of link down, i.e. a new
  // connection to whatever listens on the socket now.
  srv.drop();
  drive(std::chrono::milliseconds(5000), [&] { return srv.accepted == 2; });
  EXPECT_EQ(srv.accepted, 2);
}

TEST(DpdkRing, SinglePortLoopsFramesBackToItself) {
  // net_ring without nodeaction: one ring serves as the port's TX and RX (PMDS.md).
  std::string err;
  auto p = open_dpdk_port(device("r", "net_ring_selftest", 0xc6120005, 1024), &err);
  ASSERT_TRUE(p) << err;
  PortInfo info;
  ASSERT_TRUE(port_info(*p, &info));
  EXPECT_EQ(info.driver, "net_ring");
  Collect h;
  ASSERT_TRUE(send_frame(*p, p->mac(), 7, 300));
  p->flush();
  auto end = Clock::now() + kDeadline;
  while (h.frames.empty() && Clock::now() < end) p->rx_burst(h, 32);
  // The gratuitous ARP sent at open came back too, and was consumed, not passed on.
  ASSERT_EQ(h.frames.size(), 1u);
  check_frame(h.frames[0], 7, 300);
}

TEST(DpdkRing, FourQueuesCarryPrioritiesAndAllAreReceived) {
  // net_ring: TX queue i feeds RX queue i. Priority p goes out on TX queue p % 4, and
  // rx_burst() polls every RX queue, so all frames come back and each queue carried 1/4.
  config::Device d = device("r4", "net_ring_mq", 0xc6120006, 1024);
  d.queues = 4;
  std::string err;
  auto p = open_dpdk_port(d, &err);
  ASSERT_TRUE(p) << err;
  PortInfo before;
  ASSERT_TRUE(port_info(*p, &before));
  ASSERT_EQ(before.tx_queue_frames.size(), 4u);
  constexpr uint32_t kPerPriority = 50;
  uint32_t seq = 0;
  for (uint32_t i = 0; i < kPerPriority; ++i)
    for (uint8_t prio = 0; prio < 8; ++prio) {
      ASSERT_TRUE(send_frame(*p, p->mac(), seq++, 200, prio));
      if (seq % 16 == 0) p->flush();
    }
  p->flush();
  Collect h;
  auto end = Clock::now() + kDeadline;
  while (h.frames.size() < seq && Clock::now() < end) {
    p->rx_burst(h, 32);
    p->flush();
  }
  ASSERT_EQ(h.frames.size(), seq);
  std::vector<bool> seen(seq);
  for (const auto& f : h.frames) {
    uint32_t s = load_be32(f.data() + 14);
    ASSERT_LT(s, seq);
    EXPECT_FALSE(seen[s]) << s;
    seen[s] = true;
    check_frame(f, s, 200);
  }
  PortInfo after;
  ASSERT_TRUE(port_info(*p, &after));
  for (size_t q = 0; q < 4; ++q) {
    // Two priorities per queue; the gratuitous ARP at open went on queue 0.
    EXPECT_GE(after.tx_queue_frames[q] - before.tx_queue_frames[q], 2 * kPerPriority) << q;
    EXPECT_LE(after.tx_queue_frames[q] - before.tx_queue_frames[q], 2 * kPerPriority + 1) << q;
    EXPECT_GE(after.rx_queue_frames[q], 2 * kPerPriority) << q;
  }
}

/// An IPv4-shaped frame of len bytes with the given DSCP and ECN field, to dst.
bool send_ip_frame(Port& p, const MacAddr& dst, uint8_t dscp, size_t len, uint8_t ecn = 0) {
  uint8_t* b = p.begin_frame(len);
  if (!b) return false;
  std::memset(b, 0, len);
  std::memcpy(b, dst.b.data(), 6);
  std::memcpy(b + 6, p.mac().b.data(), 6);
  store_be16(b + 12, 0x0800);
  b[14] = 0x45;
  b[15] = static_cast<uint8_t>(dscp << 2 | ecn);
  p.end_frame(len, TxMeta{});
  return true;
}

TEST(DpdkPfcTx, ABacklogOnAPfcPrioritySendsXoffThenXon) {
  // net_ring loops the port to itself. Ten 300-byte frames of DSCP 26 (priority 3, PFC on)
  // wait in the ring; the poll that drains them sees a 3000-byte backlog >= xoff_bytes and
  // sends XOFF for priority 3; the next poll finds it drained (<= xon_bytes) and sends XON.
  // The looped PFC frames are honoured by the same port (rx_prio3_pause). Priority 0 frames
  // (PFC off) never send anything.
  config::Device d = device("p", "net_ring_pfc", 0xc6120008, 1024);
  d.pfc.enabled[3] = true;
  d.pfc.xoff_bytes = 2000;
  d.pfc.xon_bytes = 500;
  std::string err;
  auto p = open_dpdk_port(d, &err);
  ASSERT_TRUE(p) << err;
  Collect h;
  auto poll_until = [&](size_t frames) {
    auto end = Clock::now() + kDeadline;
    while (h.frames.size() < frames && Clock::now() < end) p->rx_burst(h, 64);
  };
  PortCounters c;
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(send_ip_frame(*p, p->mac(), 0, 300));
  p->flush();
  poll_until(10);
  p->rx_burst(h, 64);
  ASSERT_TRUE(p->read_counters(&c));
  EXPECT_EQ(c.tx_prio_pause[3], 0u);  // priority 0: no PFC
  EXPECT_EQ(c.tx_prio_pause[0], 0u);

  for (int i = 0; i < 10; ++i) ASSERT_TRUE(send_ip_frame(*p, p->mac(), 26, 300));
  p->flush();
  poll_until(20);
  ASSERT_EQ(h.frames.size(), 20u);
  ASSERT_TRUE(p->read_counters(&c));
  EXPECT_EQ(c.tx_prio_pause[3], 1u);  // XOFF
  auto end = Clock::now() + kDeadline;
  while ((c.tx_prio_pause[3] < 2 || c.rx_prio_pause[3] < 2) && Clock::now() < end) {
    p->rx_burst(h, 64);
    ASSERT_TRUE(p->read_counters(&c));
  }
  EXPECT_EQ(c.tx_prio_pause[3], 2u);  // XON after the drain
  EXPECT_EQ(c.rx_prio_pause[3], 2u);  // both came back around the ring and were honoured
  EXPECT_EQ(h.frames.size(), 20u);    // PFC frames are consumed, not passed on
  for (int q = 0; q < 8; ++q)
    if (q != 3) {
      EXPECT_EQ(c.tx_prio_pause[q], 0u) << q;
    }
}

TEST(DpdkRing, ReceivedFramesAreCountedPerPriorityWithTheirCeMarks) {
  // net_ring loops the port to itself: 6 frames of DSCP 26 (priority 3), 2 of them CE-marked,
  // and 4 of DSCP 48 (priority 6), none marked. The gratuitous ARP at open is consumed by the
  // port and counted nowhere.
  std::string err;
  auto p = open_dpdk_port(device("c", "net_ring_rxprio", 0xc6120009, 1024), &err);
  ASSERT_TRUE(p) << err;
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(send_ip_frame(*p, p->mac(), 26, 300, i < 2 ? 3 : 2));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(send_ip_frame(*p, p->mac(), 48, 100));
  p->flush();
  Collect h;
  auto end = Clock::now() + kDeadline;
  while (h.frames.size() < 10 && Clock::now() < end) p->rx_burst(h, 64);
  ASSERT_EQ(h.frames.size(), 10u);
  PortCounters c;
  ASSERT_TRUE(p->read_counters(&c));
  EXPECT_EQ(c.rx_prio_packets[3], 6u);
  EXPECT_EQ(c.rx_prio_bytes[3], 1800u);
  EXPECT_EQ(c.rx_prio_marked[3], 2u);
  EXPECT_EQ(c.rx_prio_packets[6], 4u);
  EXPECT_EQ(c.rx_prio_bytes[6], 400u);
  EXPECT_EQ(c.rx_prio_marked[6], 0u);
  for (int q : {0, 1, 2, 4, 5, 7}) EXPECT_EQ(c.rx_prio_packets[q], 0u) << q;
}

TEST(DpdkOpen, MoreQueuesThanThePmdHasFailsWithOneLine) {
  // net_pcap reading an empty capture file has one RX and one TX queue.
  const std::string in = "/tmp/uroce-q-test-" + std::to_string(getpid()) + ".pcap";
  const uint8_t header[24] = {0xd4, 0xc3, 0xb2, 0xa1, 2,    0,    4, 0, 0, 0, 0, 0,
                              0,    0,    0,    0,    0xff, 0xff, 0, 0, 1, 0, 0, 0};
  FILE* f = std::fopen(in.c_str(), "wb");
  ASSERT_TRUE(f);
  ASSERT_EQ(std::fwrite(header, 1, sizeof header, f), sizeof header);
  std::fclose(f);
  config::Device d =
      device("q", "net_pcap_q0,rx_pcap=" + in + ",tx_pcap=/dev/null", 0xc6120007, 1024);
  d.queues = 2;
  std::string err;
  auto p = open_dpdk_port(d, &err);
  std::remove(in.c_str());
  EXPECT_FALSE(p);
  EXPECT_NE(err.find("queues 2 but net_pcap has 1 RX and 1 TX queues; allowed: queues <= 1"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

TEST(DpdkOpen, AfPacketMtuTooLargeWithoutFramesz) {
  // No interface needed: the frame check happens after the port exists, so use a missing one
  // and only check that a bad iface fails cleanly with one line.
  std::string err;
  auto p =
      open_dpdk_port(device("x", "net_af_packet9,iface=uroce-no-such-if", 0xc6120001, 4096), &err);
  EXPECT_FALSE(p);
  EXPECT_EQ(err.rfind("device x (port \"net_af_packet9,iface=uroce-no-such-if\"): ", 0), 0u) << err;
}

TEST(DpdkOpen, BadPortFailsWithOneLine) {
  std::string err;
  auto p = open_dpdk_port(device("x", "net_nosuchpmd0", 0xc6120001, 1024), &err);
  EXPECT_FALSE(p);
  EXPECT_NE(err.find("device x (port \"net_nosuchpmd0\")"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
}

}  // namespace
}  // namespace uroce::dpdk
