/**
 * @file sim_core_test.cc
 * @brief Simulator core on fake endpoints: event order, serialisation + propagation timing
 * to the ns, queue limits and backpressure, seeded impairments, switch forwarding, priority
 * queueing, ECN marking and PFC. Units: ns, bytes, bit/s.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <set>

#include "sim/fabric.h"
#include "sim/frame_bytes.h"
#include "sim/link.h"
#include "sim/pcap.h"
#include "sim/sampler.h"
#include "sim/simulator.h"
#include "sim/switch.h"
#include "tests/sim/fake_endpoint.h"
#include "transport/wire/pfc.h"

namespace uroce::sim::test {
namespace {

constexpr uint64_t k10G = 10'000'000'000ull;
constexpr uint64_t k100G = 100'000'000'000ull;

TEST(SimulatorTest, EventsRunInTimeThenInsertionOrder) {
  Simulator sim;
  std::vector<int> order;
  sim.call_at(Timestamp{20}, [&] { order.push_back(3); });
  sim.call_at(Timestamp{10}, [&] { order.push_back(1); });
  sim.call_at(Timestamp{10}, [&] { order.push_back(2); });
  sim.call_at(Timestamp{30}, [&] {
    order.push_back(4);
    sim.call_at(Timestamp{5}, [&] { order.push_back(5); });  // past: runs at now
  });
  ASSERT_TRUE(sim.run_until(Timestamp{100}));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_EQ(sim.now(), Timestamp{100});
}

TEST(SimulatorTest, SerialisationIncludesFcsPreambleAndIfg) {
  // Expect: (64 + 4 + 20) * 8 = 704 bits = 7.04 ns at 100 Gb/s; 1500 B at 10 Gb/s = 1219.2 ns.
  EXPECT_EQ(serialization_ps(64, k100G), 7040);
  EXPECT_EQ(serialization_ps(1500, k10G), 1'219'200);
}

TEST(SimulatorTest, SerialisationPlusPropagationExactToTheNs) {
  Simulator sim;
  FakeEndpoint a(sim, mac_of(1)), b(sim, mac_of(2));
  LinkParams p{.rate_bps = k10G, .propagation = Duration::nanos(1000)};
  Link ab(sim, p, &b, 0);
  a.attach(&ab);
  // Send 3 x 1000 B back to back at t = 0: 1024 B on the wire each = 819.2 ns.
  a.send(3, 1000, mac_of(2));
  ASSERT_TRUE(sim.run_until(Timestamp{10'000}));
  // Send one more on the idle link at t = 10000.
  a.send(1, 1000, mac_of(2));
  ASSERT_TRUE(sim.run_until(Timestamp{20'000}));
  ASSERT_EQ(b.rx.size(), 4u);
  // Expect: last bit at 819.2, 1638.4, 2457.6 (+1000 propagation, rounded up to a ns).
  EXPECT_EQ(b.rx[0].t, Timestamp{1820});
  EXPECT_EQ(b.rx[1].t, Timestamp{2639});
  EXPECT_EQ(b.rx[2].t, Timestamp{3458});
  EXPECT_EQ(b.rx[3].t, Timestamp{10'000 + 820 + 1000});
  EXPECT_EQ(ab.stats().sent, 4u);
  EXPECT_EQ(ab.stats().sent_bytes, 4000u);
}

TEST(SimulatorTest, BackToBackFramesDoNotDriftFromRounding) {
  Simulator sim;
  FakeEndpoint a(sim, mac_of(1)), b(sim, mac_of(2));
  LinkParams p{.rate_bps = k100G, .propagation = Duration::nanos(0)};
  Link ab(sim, p, &b, 0);
  a.attach(&ab);
  // 1000 frames of 1000 B: 1024 * 8 bits = 81.92 ns each; the last ends at exactly 81920 ns.
  a.send(1000, 1000, mac_of(2));
  ASSERT_TRUE(sim.run_until(Timestamp{1'000'000}));
  ASSERT_EQ(b.rx.size(), 1000u);
  EXPECT_EQ(b.rx.back().t, Timestamp{81'920});
  EXPECT_EQ(b.rx[0].t, Timestamp{82});  // 81.92 rounded up
}

TEST(SimulatorTest, HostQueueLimitRefusesAndSignalsSpace) {
  Simulator sim;
  FakeEndpoint b(sim, mac_of(2));
  LinkParams p{.rate_bps = k10G, .propagation = Duration::nanos(100), .max_frames = 4};
  struct Obs : LinkObserver {
    std::vector<Timestamp> space;
    void on_space(Timestamp now) override { space.push_back(now); }
  } obs;
  Link ab(sim, p, &b, 0, &obs);
  int accepted = 0;
  for (int i = 0; i < 6; ++i) {
    Frame f = sim.pool().get(1000);
    make_roce_frame(f.bytes, 1000, mac_of(1), mac_of(2), 26, static_cast<uint32_t>(i));
    accepted += ab.enqueue(std::move(f), sim.now()) ? 1 : 0;
  }
  // Expect: 4 accepted (one on the wire, three waiting), 2 refused.
  EXPECT_EQ(accepted, 4);
  EXPECT_EQ(ab.stats().tail_drops, 2u);
  EXPECT_FALSE(ab.can_accept(1000));
  ASSERT_TRUE(sim.run_until(Timestamp{100'000}));
  // Expect: space signalled when the first frame left the wire (819.2 -> 820 ns).
  ASSERT_FALSE(obs.space.empty());
  EXPECT_EQ(obs.space.front(), Timestamp{820});
  EXPECT_EQ(b.rx.size(), 4u);
}

TEST(SimulatorTest, EndpointBlockedByQueueResumesOnSpace) {
  Simulator sim;
  FakeEndpoint a(sim, mac_of(1)), b(sim, mac_of(2));
  LinkParams p{.rate_bps = k10G, .propagation = Duration::nanos(100), .max_frames = 2};
  Link ab(sim, p, &b, 0);
  a.attach(&ab);
  a.send(50, 500, mac_of(2));
  ASSERT_TRUE(sim.run_until(Timestamp{1'000'000}));
  EXPECT_EQ(b.rx.size(), 50u);
  EXPECT_EQ(ab.stats().tail_drops, 0u);
  // Expect: still back to back: 50 * 524 B * 0.8 ns/B = 20960 ns + 100.
  EXPECT_EQ(b.rx.back().t, Timestamp{20'960 + 100});
}

struct ImpairRun {
  std::vector<std::pair<int64_t, std::vector<uint8_t>>> rx;
  LinkStats stats;
};

ImpairRun run_impaired(const Impairments& imp, int frames) {
  Simulator sim;
  FakeEndpoint a(sim, mac_of(1)), b(sim, mac_of(2));
  Link ab(sim, LinkParams{.rate_bps = k100G, .propagation = Duration::nanos(1000)}, &b, 0);
  ab.set_impairments(imp);
  a.attach(&ab);
  a.send(static_cast<size_t>(frames), 256, mac_of(2));
  sim.run_until(Timestamp{100'000'000});
  ImpairRun r;
  for (auto& x : b.rx) r.rx.emplace_back(x.t.ns, x.bytes);
  r.stats = ab.stats();
  return r;
}

/// The BTH PSN field the fake endpoint wrote (its sequence number).
uint32_t seq_of(const std::vector<uint8_t>& b) {
  return (uint32_t{b[14 + 20 + 8 + 9]} << 16) | (uint32_t{b[14 + 20 + 8 + 10]} << 8) |
         b[14 + 20 + 8 + 11];
}

TEST(SimulatorTest, ImpairmentsAreReproducibleFromTheSeed) {
  Impairments imp{.seed = 42,
                  .loss = 0.05,
                  .reorder = 0.05,
                  .reorder_delay = Duration::micros(3),
                  .duplicate = 0.05,
                  .corrupt = 0.05};
  ImpairRun r1 = run_impaired(imp, 20'000);
  ImpairRun r2 = run_impaired(imp, 20'000);
  EXPECT_EQ(r1.rx, r2.rx);
  imp.seed = 43;
  ImpairRun r3 = run_impaired(imp, 20'000);
  EXPECT_NE(r1.rx, r3.rx);
  // Expect: rates near 5 % of 20000 = 1000 (binomial sd ~31; allow 6 sd).
  for (uint64_t n : {r1.stats.lost, r1.stats.reordered, r1.stats.duplicated, r1.stats.corrupted}) {
    EXPECT_GT(n, 800u);
    EXPECT_LT(n, 1200u);
  }
  // Expect: delivered = sent - lost + duplicated.
  EXPECT_EQ(r1.rx.size(), 20'000 - r1.stats.lost + r1.stats.duplicated);
  // Reordering happened: some frame arrives after a frame sent later.
  bool out_of_order = false;
  for (size_t i = 1; i < r1.rx.size(); ++i)
    out_of_order |= seq_of(r1.rx[i].second) < seq_of(r1.rx[i - 1].second);
  EXPECT_TRUE(out_of_order);
}

TEST(SimulatorTest, ImpairmentStreamsAreIndependent) {
  // Changing the loss rate must not change which frames get duplicated.
  Impairments imp{.seed = 9, .loss = 0.0, .duplicate = 0.1};
  ImpairRun a = run_impaired(imp, 5000);
  imp.loss = 0.3;
  ImpairRun b = run_impaired(imp, 5000);
  auto dups = [](const ImpairRun& r) {
    std::map<uint32_t, int> n;
    for (auto& x : r.rx) ++n[seq_of(x.second)];
    std::set<uint32_t> d;
    for (auto& [s, c] : n)
      if (c > 1) d.insert(s);
    return std::pair{d, n};
  };
  auto [da, na] = dups(a);
  auto [db, nb] = dups(b);
  // Expect: every duplicated frame of run b was duplicated in run a, and every frame of run
  // a that survived the loss in run b and was duplicated in a is duplicated in b too.
  for (uint32_t s : db) EXPECT_TRUE(da.count(s)) << s;
  for (uint32_t s : da) {
    if (nb.count(s)) {
      EXPECT_TRUE(db.count(s)) << s;
    }
  }
  EXPECT_GT(db.size(), 100u);
}

TEST(SimulatorTest, CorruptionFlipsOneByteAfterTheBth) {
  Impairments imp{.seed = 5, .corrupt = 1.0};
  ImpairRun r = run_impaired(imp, 200);
  ASSERT_EQ(r.rx.size(), 200u);
  std::vector<uint8_t> orig;
  for (auto& [t, bytes] : r.rx) {
    uint32_t s = seq_of(bytes);
    make_roce_frame(orig, 256, mac_of(1), mac_of(2), 26, s);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < orig.size(); ++i)
      if (orig[i] != bytes[i]) {
        if (!diff) first = i;
        ++diff;
      }
    EXPECT_EQ(diff, 1u);
    EXPECT_GE(first, 14u + 20 + 8 + 12);
  }
}

TEST(SimulatorTest, DownLinkAndDropFilterDropEverything) {
  Impairments imp{.seed = 1};
  imp.drop_if = [](const Frame& f) { return seq_of(f.bytes) % 2 == 0; };
  ImpairRun r = run_impaired(imp, 100);
  EXPECT_EQ(r.rx.size(), 50u);
  EXPECT_EQ(r.stats.dropped_filter, 50u);
  for (auto& x : r.rx) EXPECT_EQ(seq_of(x.second) % 2, 1u);
}

TEST(SimulatorTest, TapSeesDeliveredFramesAndPcapRecordsThem) {
  Simulator sim;
  FakeEndpoint a(sim, mac_of(1)), b(sim, mac_of(2));
  Link ab(sim, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(1000)}, &b, 0);
  a.attach(&ab);
  std::string path = ::testing::TempDir() + "sim_tap_test.pcap";
  size_t tapped = 0;
  {
    PcapWriter w(path);
    ASSERT_TRUE(w.ok());
    ab.set_tap([&](const Frame& f, Timestamp t) {
      ++tapped;
      w.write(f, t);
    });
    a.send(3, 100, mac_of(2));
    sim.run_until(Timestamp{1'000'000});
  }
  EXPECT_EQ(tapped, 3u);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::vector<uint8_t> bytes(4096);
  size_t n = std::fread(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  // Expect: 24-byte header + 3 x (16-byte record header + 100 bytes).
  EXPECT_EQ(n, 24u + 3 * 116);
  uint32_t magic, first_ns;
  std::memcpy(&magic, bytes.data(), 4);
  std::memcpy(&first_ns, bytes.data() + 28, 4);
  EXPECT_EQ(magic, 0xa1b23c4du);
  EXPECT_EQ(first_ns, 1000u + 100);  // (124 B * 0.8 ns/B = 99.2 -> 100) + 1000
  std::remove(path.c_str());
}

// ---- Switch -----------------------------------------------------------------------------

/// N fake hosts on one switch; every link has the same parameters.
struct Star {
  explicit Star(int n, LinkParams lp, SwitchConfig cfg = {}) : sw(sim, cfg) {
    for (int i = 0; i < n; ++i) {
      hosts.push_back(std::make_unique<FakeEndpoint>(sim, mac_of(static_cast<uint8_t>(i + 1))));
      uint32_t port = sw.add_port(lp, hosts.back().get(), 0);
      sw.add_route(mac_of(static_cast<uint8_t>(i + 1)), port);
      up.push_back(std::make_unique<Link>(sim, lp, &sw, port));
      hosts.back()->attach(up.back().get());
    }
  }
  Simulator sim;
  Switch sw;
  std::vector<std::unique_ptr<FakeEndpoint>> hosts;
  std::vector<std::unique_ptr<Link>> up;
};

TEST(SwitchTest, ForwardsByDestinationMacWithStoreAndForwardTiming) {
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(1000)});
  s.hosts[0]->send(1, 1000, mac_of(2));
  s.hosts[0]->send(1, 1000, mac_of(3));
  s.hosts[0]->send(1, 1000, mac_of(9));  // unknown
  ASSERT_TRUE(s.sim.run_until(Timestamp{100'000}));
  ASSERT_EQ(s.hosts[1]->rx.size(), 1u);
  ASSERT_EQ(s.hosts[2]->rx.size(), 1u);
  EXPECT_TRUE(s.hosts[0]->rx.empty());
  EXPECT_EQ(s.sw.stats().no_route, 1u);
  // Expect: host link 819.2 + 1000 -> switch at 1820; egress 1820 + 819.2 + 1000 -> 3640.
  EXPECT_EQ(s.hosts[1]->rx[0].t, Timestamp{3640});
  // Second frame: reaches the switch at 2639 (1638.4 + 1000), egress to host 3 idle.
  EXPECT_EQ(s.hosts[2]->rx[0].t, Timestamp{2639 + 820 + 1000});
  EXPECT_EQ(s.sw.buffer_used(), 0u);
}

TEST(SwitchTest, IncastBuildsTheEgressQueueAndDrainsIt) {
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)});
  s.hosts[0]->send(100, 1000, mac_of(3));
  s.hosts[1]->send(100, 1000, mac_of(3));
  ASSERT_TRUE(s.sim.run_until(Timestamp{10'000'000}));
  EXPECT_EQ(s.hosts[2]->rx.size(), 200u);
  // Two line-rate senders into one port: the egress queue grows to about 100 frames.
  EXPECT_GT(s.sw.egress(2).stats().max_queue_bytes, 90'000u);
  EXPECT_EQ(s.sw.buffer_used(), 0u);
  // Expect: the receiver link is busy back to back from the first frame on: the last frame
  // ends 200 * 819.2 ns after the first started, the first 819.2 ns after (both rounded up).
  int64_t ser = serialization_ps(1000, k10G);
  EXPECT_EQ(s.hosts[2]->rx.back().t.ns - s.hosts[2]->rx.front().t.ns,
            (200 * ser + 999) / 1000 - (ser + 999) / 1000);
}

TEST(SwitchTest, HigherPriorityOvertakesQueuedLowerPriority) {
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)});
  // Host 1 fills the queue to host 3 with DSCP 26 (priority 3); host 2 sends DSCP 48
  // (priority 6) a little later.
  s.hosts[0]->send(50, 1000, mac_of(3), 3, 26);
  s.hosts[1]->send(30, 1000, mac_of(3), 3, 26);
  s.sim.run_until(Timestamp{5'000});
  s.hosts[1]->send(1, 1000, mac_of(3), 6, 48);
  ASSERT_TRUE(s.sim.run_until(Timestamp{1'000'000}));
  ASSERT_EQ(s.hosts[2]->rx.size(), 81u);
  size_t pos = 0;
  for (size_t i = 0; i < s.hosts[2]->rx.size(); ++i)
    if (traffic_class(s.hosts[2]->rx[i].bytes) >> 2 == 48) pos = i;
  // Expect: the priority-6 frame left right after the frame on the wire when it arrived,
  // far ahead of the ~70 queued priority-3 frames.
  EXPECT_LT(pos, 12u);
}

TEST(SwitchTest, RedEcnMarksAboveKmaxAndNotBelowKmin) {
  SwitchConfig cfg;
  cfg.ecn = EcnConfig{.enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 40'000, .pmax = 0.5};
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)}, cfg);
  s.hosts[0]->send(300, 1000, mac_of(3));
  s.hosts[1]->send(300, 1000, mac_of(3));
  ASSERT_TRUE(s.sim.run_until(Timestamp{10'000'000}));
  ASSERT_EQ(s.hosts[2]->rx.size(), 600u);
  size_t first_marked = 0, marked = 0;
  for (size_t i = 0; i < 600; ++i) {
    auto& b = s.hosts[2]->rx[i].bytes;
    EXPECT_TRUE(ipv4_checksum_ok(b)) << i;
    if (ecn(b) == Ecn::kCe) {
      if (!marked) first_marked = i;
      ++marked;
    } else {
      EXPECT_EQ(ecn(b), Ecn::kEct0);
    }
  }
  // Expect: nothing marked until the queue passed kmin (20 frames queued), and about
  // (600 - 2*40) frames marked with certainty once the queue stays above kmax.
  EXPECT_GE(first_marked, 19u);
  EXPECT_GT(marked, 400u);
  EXPECT_EQ(marked, s.sw.stats().ecn_marked);
  // Frames from a single sender never queue: none marked.
  Star t(2, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)}, cfg);
  t.hosts[0]->send(300, 1000, mac_of(2));
  t.sim.run_until(Timestamp{10'000'000});
  EXPECT_EQ(t.sw.stats().ecn_marked, 0u);
}

TEST(SwitchTest, EcnAtDequeueMarksOnTheQueueLeftBehind) {
  SwitchConfig cfg;
  cfg.ecn = EcnConfig{
      .enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 40'000, .pmax = 0.5, .at_dequeue = true};
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)}, cfg);
  s.hosts[0]->send(300, 1000, mac_of(3));
  s.hosts[1]->send(300, 1000, mac_of(3));
  ASSERT_TRUE(s.sim.run_until(Timestamp{10'000'000}));
  ASSERT_EQ(s.hosts[2]->rx.size(), 600u);
  size_t marked = 0;
  for (auto& r : s.hosts[2]->rx) marked += ecn(r.bytes) == Ecn::kCe;
  // Expect: marking while the queue behind the departing frame is above kmax (most of the
  // incast), and the tail of the burst (queue draining below kmin) unmarked.
  EXPECT_GT(marked, 400u);
  EXPECT_EQ(ecn(s.hosts[2]->rx.back().bytes), Ecn::kEct0);
  EXPECT_EQ(marked, s.sw.stats().ecn_marked);
}

TEST(SwitchTest, PfcPausesSendersInsteadOfDropping) {
  SwitchConfig cfg;
  cfg.buffer_bytes = 60'000;
  cfg.pfc = PfcConfig{.enabled = true,
                      .lossless_mask = 1u << 3,
                      .xoff_bytes = 10'000,
                      .xon_bytes = 5'000,
                      .headroom_bytes = 20'000};
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(500)}, cfg);
  s.hosts[0]->send(500, 1000, mac_of(3), 3, 26);
  s.hosts[1]->send(500, 1000, mac_of(3), 3, 26);
  ASSERT_TRUE(s.sim.run_until(Timestamp{100'000'000}));
  // Expect: every frame delivered, no drop, pauses were sent and honoured.
  EXPECT_EQ(s.hosts[2]->rx.size(), 1000u);
  EXPECT_EQ(s.sw.stats().headroom_drops + s.sw.stats().buffer_drops, 0u);
  EXPECT_GT(s.sw.stats().xoff_sent, 0u);
  EXPECT_GT(s.sw.stats().xon_sent, 0u);
  EXPECT_GT(s.hosts[0]->pfc_rx + s.hosts[1]->pfc_rx, 0u);
  EXPECT_LE(s.sw.stats().max_buffer_bytes, 60'000u + 60'000u);
  // Same incast on a lossy priority with the same small buffer drops frames.
  Star t(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(500)}, cfg);
  t.hosts[0]->send(500, 1000, mac_of(3), 0, 0);
  t.hosts[1]->send(500, 1000, mac_of(3), 0, 0);
  t.sim.run_until(Timestamp{100'000'000});
  EXPECT_GT(t.sw.stats().buffer_drops, 0u);
  EXPECT_EQ(t.sw.stats().xoff_sent, 0u);
}

TEST(SwitchTest, XoffIsRefreshedWhileTheIngressCannotDrain) {
  // The egress towards host 2 is held paused for 10 ms, so host 1's frames stay in the buffer
  // above XOFF and no more arrive once host 1 is paused: only a timer can renew the pause
  // before it expires (65535 quanta at 10 Gb/s = 3.36 ms; refreshed every 1.68 ms).
  SwitchConfig cfg;
  cfg.buffer_bytes = 60'000;
  cfg.pfc = PfcConfig{.enabled = true,
                      .lossless_mask = 1u << 3,
                      .xoff_bytes = 10'000,
                      .xon_bytes = 5'000,
                      .headroom_bytes = 20'000};
  Star s(2, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(500)}, cfg);
  s.sw.egress(1).pause(3, Duration::millis(10), Timestamp{0});
  s.hosts[0]->send(100, 1000, mac_of(2), 3, 26);
  ASSERT_TRUE(s.sim.run_until(Timestamp{1'000'000}));
  const uint64_t admitted = s.sw.stats().received;
  EXPECT_EQ(s.sw.stats().xoff_sent, 1u);
  EXPECT_LT(admitted, 100u);
  ASSERT_TRUE(s.sim.run_until(Timestamp{7'500'000}));
  // Refreshed at about 1.69, 3.36, 5.04 and 6.72 ms; host 1 never resumed; no XON.
  EXPECT_EQ(s.sw.stats().xoff_sent, 5u);
  EXPECT_EQ(s.hosts[0]->pfc_rx, 5u);
  EXPECT_EQ(s.sw.stats().received, admitted);
  EXPECT_EQ(s.sw.stats().xon_sent, 0u);
  EXPECT_TRUE(s.hosts[1]->rx.empty());
  // The egress resumes at 10 ms: the ingress drains, XON, every frame delivered.
  ASSERT_TRUE(s.sim.run_until(Timestamp{20'000'000}));
  EXPECT_EQ(s.hosts[1]->rx.size(), 100u);
  EXPECT_GT(s.sw.stats().xon_sent, 0u);
}

TEST(SwitchTest, HeadroomSmallerThanTheCableRoundTripDropsLosslessFramesAndCountsThem) {
  // A 50 us cable at 10 Gb/s: after XOFF leaves, frames keep arriving for a round trip; two
  // senders into one port add one sender's rate to the buffer, ~2 * 50 us * 10 Gb/s = 125 KB
  // (docs/dcqcn-pfc.md §4.1: headroom must cover the cable). Buffer 60 KB, XOFF at 10 KB per
  // ingress port: the buffer overruns by ~85 KB; headroom 3 x 5 KB cannot hold that,
  // 3 x 60 KB can.
  auto run = [](uint64_t headroom, uint64_t* delivered) {
    SwitchConfig cfg;
    cfg.buffer_bytes = 60'000;
    cfg.pfc = PfcConfig{.enabled = true,
                        .lossless_mask = 1u << 3,
                        .xoff_bytes = 10'000,
                        .xon_bytes = 5'000,
                        .headroom_bytes = headroom};
    Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(50'000)}, cfg);
    s.hosts[0]->send(500, 1000, mac_of(3), 3, 26);
    s.hosts[1]->send(500, 1000, mac_of(3), 3, 26);
    EXPECT_TRUE(s.sim.run_until(Timestamp{100'000'000}));
    *delivered = s.hosts[2]->rx.size();
    EXPECT_GT(s.sw.stats().xoff_sent, 0u);
    EXPECT_EQ(s.sw.stats().buffer_drops, 0u);  // lossless frames are never buffer drops
    // Admitted bytes never exceed the buffer plus the headroom of the 3 ports.
    EXPECT_LE(s.sw.stats().max_buffer_bytes, 60'000 + 3 * headroom);
    return s.sw.stats();
  };
  uint64_t small_delivered = 0, big_delivered = 0;
  SwitchStats small = run(5'000, &small_delivered);
  SwitchStats big = run(60'000, &big_delivered);
  // Expect: with too little headroom the switch used all of it (admitted bytes within one
  // frame of buffer + headroom) before it dropped, and counted every drop as a headroom drop;
  // every frame it did not drop arrived. With enough headroom nothing is lost.
  EXPECT_GT(small.headroom_drops, 0u);
  EXPECT_GE(small.max_buffer_bytes + 1100, 60'000u + 3 * 5'000u);
  EXPECT_EQ(small_delivered + small.headroom_drops, 1000u);
  EXPECT_EQ(big.headroom_drops, 0u);
  EXPECT_EQ(big_delivered, 1000u);
  EXPECT_GT(big.max_buffer_bytes, 60'000u);  // headroom was needed, and it sufficed
}

TEST(FabricTest, TwoTierRoutesEveryPairThroughTheSpine) {
  // Two leaves with two hosts each, one spine. 10 Gb/s, 100 ns per hop.
  Simulator sim;
  Fabric fab(sim);
  LinkParams lp{.rate_bps = k10G, .propagation = Duration::nanos(100)};
  uint32_t spine = fab.add_switch();
  uint32_t leaf[2] = {fab.add_switch(), fab.add_switch()};
  fab.connect_switches(leaf[0], spine, lp);
  fab.connect_switches(leaf[1], spine, lp);
  std::vector<std::unique_ptr<FakeEndpoint>> h;
  for (int i = 0; i < 4; ++i) {
    h.push_back(std::make_unique<FakeEndpoint>(sim, mac_of(static_cast<uint8_t>(i + 1))));
    fab.add_host(h.back().get(), mac_of(static_cast<uint8_t>(i + 1)), leaf[i / 2], lp);
  }
  fab.build_routes();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j) h[i]->send(1, 500, mac_of(static_cast<uint8_t>(j + 1)));
  ASSERT_TRUE(sim.run_until(Timestamp{1'000'000}));
  for (int j = 0; j < 4; ++j) {
    ASSERT_EQ(h[j]->rx.size(), 3u) << j;
    for (auto& r : h[j]->rx) EXPECT_EQ(dst_mac(r.bytes), mac_of(static_cast<uint8_t>(j + 1)));
  }
  for (uint32_t s = 0; s < 3; ++s) EXPECT_EQ(fab.sw(s).stats().no_route, 0u);
  // Host 0 -> host 2 crosses 4 hops: first frame out of host 0 is to host 1 (2 hops), the
  // second (to host 2) leaves host 0 at 2 x 419.2 ns and then goes 4 hops store-and-forward.
  EXPECT_EQ(fab.sw(spine).stats().forwarded, 8u);
}

TEST(SamplerTest, SamplesQueueDepthPeriodically) {
  Star s(3, LinkParams{.rate_bps = k10G, .propagation = Duration::nanos(100)});
  Sampler smp(s.sim, Duration::micros(10), Timestamp{} + Duration::micros(200));
  smp.add("q_bytes", [&] { return static_cast<double>(s.sw.egress(2).queued_bytes()); });
  smp.start();
  s.hosts[0]->send(100, 1000, mac_of(3));
  s.hosts[1]->send(100, 1000, mac_of(3));
  ASSERT_TRUE(s.sim.run_until(Timestamp{} + Duration::micros(500)));
  // Expect: 21 rows at 0, 10, ..., 200 us; the queue grows (2 in, 1 out) then drains by ~165 us.
  ASSERT_EQ(smp.rows().size(), 21u);
  EXPECT_DOUBLE_EQ(smp.rows()[3][0], 30.0);
  double peak = 0;
  for (auto& r : smp.rows()) peak = std::max(peak, r[1]);
  EXPECT_GT(peak, 50'000);
  EXPECT_EQ(smp.rows().back()[1], 0);
}

TEST(PfcTest, FrameRoundTripAndPauseTime) {
  wire::PauseFrame p;
  p.class_enable = 0x48;
  p.quanta[3] = 0xffff;
  p.quanta[6] = 7;
  std::vector<uint8_t> b(wire::kMacControlFrameLen);
  ASSERT_EQ(wire::build_pause_frame(b, mac_of(1), p), 60u);
  EXPECT_EQ(b[0], 0x01);
  EXPECT_EQ(b[12], 0x88);
  EXPECT_EQ(b[13], 0x08);
  wire::MacControlFrame q;
  ASSERT_EQ(wire::parse_mac_control(b, &q), wire::MacControlParse::kOk);
  EXPECT_EQ(q.pause.class_enable, 0x48);
  EXPECT_EQ(q.pause.quanta[3], 0xffff);
  EXPECT_EQ(q.pause.quanta[6], 7);
  // 65535 * 512 bits at 100 Gb/s = 335.5392 us (docs/dcqcn-pfc.md §3.3).
  EXPECT_EQ(Duration::nanos(wire::pause_quanta_ns(0xffff, k100G)), Duration::nanos(335'540));
}

TEST(FrameBytesTest, EcnOnIpv6) {
  std::vector<uint8_t> b(14 + 40 + 8 + 12 + 16, 0);
  b[12] = 0x86;
  b[13] = 0xdd;
  b[14] = 0x60 | (26 >> 2);                                          // version 6, TC high nibble
  b[15] = static_cast<uint8_t>(((26 << 2) & 0x0f) << 4 | (2 << 4));  // TC low nibble, ECT(0)
  b[14 + 6] = 17;
  b[14 + 40 + 2] = kRoceUdpPort >> 8;
  b[14 + 40 + 3] = kRoceUdpPort & 0xff;
  EXPECT_EQ(traffic_class(b) >> 2, 26);
  EXPECT_EQ(ecn(b), Ecn::kEct0);
  set_ecn(b, Ecn::kCe);
  EXPECT_EQ(ecn(b), Ecn::kCe);
  EXPECT_EQ(traffic_class(b) >> 2, 26);
  EXPECT_EQ(roce_payload_offset(b), 14u + 40 + 8 + 12);
}

}  // namespace
}  // namespace uroce::sim::test
