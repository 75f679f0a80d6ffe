/**
 * @file switch_model_test.cc
 * @brief uroce-switch's DPDK-free parts: the RED marking curve (docs/dcqcn-pfc.md §1.2), the
 * token-bucket shaper's rate, PFC XOFF/XON hysteresis on ingress bytes (§4), strict-priority
 * service skipping paused priorities, classification and CE marking with a valid IPv4
 * checksum, option parsing, and the impairment stage (which frames it touches, its rates,
 * its reproducibility from the seed). Time is injected. Units: bytes, bit/s, ns.
 */
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "uroce-switch/control.h"
#include "uroce-switch/egress_queues.h"
#include "uroce-switch/frame_edit.h"
#include "uroce-switch/impair.h"
#include "uroce-switch/options.h"
#include "uroce-switch/pfc_ingress.h"
#include "uroce-switch/red.h"
#include "uroce-switch/shaper.h"

namespace uroce::uswitch {
namespace {

TEST(SwitchRed, ProbabilityCurve) {
  RedParams p{.enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax = 0.2};
  EXPECT_EQ(mark_probability(p, 0), 0.0);
  EXPECT_EQ(mark_probability(p, 20'000), 0.0);
  EXPECT_DOUBLE_EQ(mark_probability(p, 110'000), 0.1);
  EXPECT_DOUBLE_EQ(mark_probability(p, 199'999), 0.2 * 179'999 / 180'000);
  EXPECT_EQ(mark_probability(p, 200'000), 1.0);
  p.enabled = false;
  EXPECT_EQ(mark_probability(p, 1'000'000), 0.0);
}

TEST(SwitchRed, EmpiricalRateMatchesCurve) {
  RedParams p{.enabled = true, .kmin_bytes = 20'000, .kmax_bytes = 200'000, .pmax = 0.2};
  MarkRng rng(42);
  int marked = 0;
  const int n = 200'000;
  for (int i = 0; i < n; ++i) marked += rng.should_mark(p, 110'000);
  EXPECT_NEAR(static_cast<double>(marked) / n, 0.1, 0.005);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(rng.should_mark(p, 200'000));
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(rng.should_mark(p, 20'000));
}

TEST(SwitchShaper, SustainedRateIsTheConfiguredRate) {
  Timestamp t{0};
  TokenBucket tb(500'000'000, 16 * 1024, t);
  uint64_t sent = 0;
  // Greedy sender of 1100-byte frames polled every 1 µs for 100 ms.
  for (int i = 0; i < 100'000; ++i, t = t + Duration::micros(1)) {
    while (tb.conforms(1100, t)) {
      tb.consume(1100);
      sent += 1100;
    }
  }
  double bps = static_cast<double>(sent) * 8 / 0.1;
  // 500 Mb/s plus at most the initial bucket (16 KiB over 100 ms = 1.3 Mb/s).
  EXPECT_GT(bps, 499e6);
  EXPECT_LT(bps, 502e6);
}

TEST(SwitchShaper, EarliestIsWhenCreditSuffices) {
  Timestamp t{1'000};
  TokenBucket tb(1'000'000'000, 1000, t);  // 1 byte/ns... 0.125 byte/ns
  EXPECT_TRUE(tb.conforms(1000, t));
  tb.consume(1000);
  EXPECT_FALSE(tb.conforms(1, t));
  Timestamp e = tb.earliest(500, t);
  EXPECT_EQ((e - t).ns, 4000);  // 500 bytes at 1 Gb/s
  EXPECT_FALSE(tb.conforms(500, e - Duration::nanos(10)));
  EXPECT_TRUE(tb.conforms(500, e));
  TokenBucket off(0, 0, t);
  EXPECT_TRUE(off.conforms(9000, t));
}

TEST(SwitchPfc, XoffAtThresholdXonBelowWithHysteresis) {
  dcqcn::PfcTxConfig cfg;
  cfg.enabled_mask = 1u << 3;
  cfg.xoff_bytes = 400'000;
  cfg.xon_bytes = 300'000;
  PfcIngress in(100'000'000'000ull, cfg);
  Timestamp t{0};
  std::vector<wire::PauseFrame> sent;
  auto step = [&](std::optional<wire::PauseFrame> f) {
    if (f) sent.push_back(*f);
  };
  for (int i = 0; i < 399; ++i) step(in.add(3, 1000, t));
  EXPECT_TRUE(sent.empty());
  step(in.add(3, 1000, t));  // 400 000 bytes: XOFF
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].class_enable, 1u << 3);
  EXPECT_EQ(sent[0].quanta[3], 0xFFFF);
  EXPECT_TRUE(in.asserted(3));
  for (int i = 0; i < 99; ++i) step(in.remove(3, 1000, t));  // 301 000: still above XON
  EXPECT_EQ(sent.size(), 1u);
  EXPECT_TRUE(in.asserted(3));
  step(in.add(3, 50'000, t));  // back above XOFF while asserted: no new frame
  EXPECT_EQ(sent.size(), 1u);
  step(in.remove(3, 51'000, t));  // 300 000: XON
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].quanta[3], 0);
  EXPECT_FALSE(in.asserted(3));
  // Other priorities never pause.
  for (int i = 0; i < 1000; ++i) step(in.add(0, 1000, t));
  EXPECT_EQ(sent.size(), 2u);
}

TEST(SwitchPfc, RefreshBeforeExpiry) {
  dcqcn::PfcTxConfig cfg;
  cfg.xoff_bytes = 1000;
  cfg.xon_bytes = 500;
  PfcIngress in(100'000'000'000ull, cfg);  // 0xFFFF quanta at 100 Gb/s = 335.5 µs
  Timestamp t{0};
  ASSERT_TRUE(in.add(3, 1000, t).has_value());
  Timestamp d = in.next_deadline();
  EXPECT_GT(d.ns, 0);
  EXPECT_LT(d.ns, 335'544);  // refreshed before the pause expires
  auto f = in.on_timer(d);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->quanta[3], 0xFFFF);
}

TEST(SwitchQueues, StrictPrioritySkipsPausedAndEnforcesLimit) {
  EgressQueues q(3000);
  EXPECT_TRUE(q.push({nullptr, 1000, 0, 0, 3, true}));
  EXPECT_TRUE(q.push({nullptr, 1000, 1, 0, 6, false}));
  EXPECT_TRUE(q.push({nullptr, 1000, 1, 0, 0, false}));
  EXPECT_FALSE(q.push({nullptr, 1, 1, 0, 0, false}));  // buffer full
  EXPECT_EQ(q.high_water(), 3000u);
  EXPECT_EQ(q.next_prio(0), 6);
  EXPECT_EQ(q.next_prio(1u << 6), 3);
  EXPECT_EQ(q.next_prio((1u << 6) | (1u << 3)), 0);
  EXPECT_EQ(q.next_prio(0xFF), -1);
  QueuedFrame f = q.pop(3);
  EXPECT_EQ(f.ingress, 0);
  EXPECT_EQ(q.bytes(3), 0u);
  EXPECT_EQ(q.total_bytes(), 2000u);
}

/// Untagged Ethernet + IPv4 (DSCP 26, ECT(0)) + UDP 4791 header bytes, checksum valid.
std::vector<uint8_t> roce_v4_frame() {
  std::vector<uint8_t> f(14 + 20 + 8, 0);
  f[12] = 0x08;
  uint8_t ip[20] = {0x45, (26 << 2) | 2, 0,  28, 0, 0,   0x40, 0, 64, 17, 0,
                    0,    198,           18, 0,  1, 198, 18,   0, 2};
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += static_cast<uint32_t>((ip[i] << 8) | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  ip[10] = static_cast<uint8_t>(~sum >> 8);
  ip[11] = static_cast<uint8_t>(~sum);
  std::copy(ip, ip + 20, f.begin() + 14);
  return f;
}

bool ipv4_checksum_ok(const std::vector<uint8_t>& f) {
  uint32_t sum = 0;
  for (int i = 14; i < 34; i += 2) sum += static_cast<uint32_t>((f[i] << 8) | f[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

TEST(SwitchFrame, ClassifyAndMarkCe) {
  auto f = roce_v4_frame();
  ASSERT_TRUE(ipv4_checksum_ok(f));
  FrameInfo info = classify(f, Classifier{});
  EXPECT_TRUE(info.valid);
  EXPECT_EQ(info.prio, 3);  // DSCP 26 >> 3
  EXPECT_EQ(info.ip_len, f.size() - 14);
  EXPECT_TRUE(info.ect);
  EXPECT_FALSE(info.ce);
  mark_ce(f, info);
  EXPECT_EQ(f[15], (26 << 2) | 3);
  EXPECT_TRUE(ipv4_checksum_ok(f));
  FrameInfo after = classify(f, Classifier{});
  EXPECT_TRUE(after.ce);
  EXPECT_FALSE(after.ect);
}

TEST(SwitchFrame, TrustDecidesBetweenDscpAndPcpAndMacControlIsRecognised) {
  auto f = roce_v4_frame();
  f.insert(f.begin() + 12, {0x81, 0x00, 0xA0, 0x05});  // PCP 5, VID 5
  Classifier dscp;
  FrameInfo info = classify(f, dscp);
  EXPECT_EQ(info.prio, 3);  // trust DSCP: the IP header's DSCP 26, not the tag
  EXPECT_EQ(info.ip_offset, 18u);
  dscp.dscp_to_prio[26] = 4;
  EXPECT_EQ(classify(f, dscp).prio, 4);
  Classifier pcp;
  pcp.trust_pcp = true;
  EXPECT_EQ(classify(f, pcp).prio, 5);
  pcp.pcp_to_prio[5] = 2;
  EXPECT_EQ(classify(f, pcp).prio, 2);
  EXPECT_EQ(classify(roce_v4_frame(), pcp).prio, 0);  // untagged under trust PCP
  std::vector<uint8_t> pfc(60, 0);
  pfc[12] = 0x88;
  pfc[13] = 0x08;
  EXPECT_TRUE(classify(pfc, dscp).mac_control);
}

TEST(SwitchOptions, ParsesUnitsAndRejectsBadValues) {
  Options o;
  std::string err;
  ASSERT_TRUE(parse_options(
      {"--port",     "a",      "--port",    "b",      "--shape",       "1=500M", "--kmin",
       "20K",        "--kmax", "200K",      "--pmax", "0.2",           "--ecn",  "off",
       "--pfc-xoff", "400K",   "--pfc-xon", "300K",   "--stats-every", "500ms"},
      &o, &err))
      << err;
  EXPECT_EQ(o.shape_bps.at(1), 500'000'000u);
  EXPECT_EQ(o.red.kmin_bytes, 20u * 1024);
  EXPECT_FALSE(o.red.enabled);
  EXPECT_EQ(o.pfc_xoff_bytes, 400u * 1024);
  EXPECT_EQ(o.stats_every.ns, 500'000'000);
  auto rejects = [&](std::vector<std::string> args) {
    Options fresh;
    return !parse_options(args, &fresh, &err) && !err.empty();
  };
  EXPECT_TRUE(rejects({"--port", "a"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--shape", "2=1G"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--pfc-xon", "500K"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--kmin", "x"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--bogus", "1"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--share", "0,2"}));
  EXPECT_TRUE(rejects({"--port", "a", "--port", "b", "--share", "1"}));
  Options shared;
  ASSERT_TRUE(
      parse_options({"--port", "a", "--port", "b", "--port", "c", "--share", "1,2"}, &shared, &err))
      << err;
  ASSERT_EQ(shared.shared.size(), 1u);
  EXPECT_EQ(shared.shared[0], (std::vector<uint32_t>{1, 2}));
}

/// A RoCEv2 frame: roce_v4_frame() with a UDP header to 4791, a BTH and `payload` bytes.
std::vector<uint8_t> rocev2_frame(size_t payload = 64) {
  std::vector<uint8_t> f = roce_v4_frame();
  f[34 + 2] = 4791 >> 8;  // UDP destination port
  f[34 + 3] = 4791 & 0xff;
  f.resize(f.size() + 12 + payload + 4, 0x5a);  // BTH, payload, ICRC
  return f;
}

TEST(SwitchImpair, OnlyRoceV2FramesAreTouchedAndOnlyPastTheBth) {
  size_t bth_end = 0;
  std::vector<uint8_t> f = rocev2_frame();
  ASSERT_TRUE(is_rocev2(f, &bth_end));
  EXPECT_EQ(bth_end, 14u + 20 + 8 + 12);
  std::vector<uint8_t> tagged = f;
  tagged.insert(tagged.begin() + 12, {0x81, 0x00, 0x60, 0x2a});
  ASSERT_TRUE(is_rocev2(tagged, &bth_end));
  EXPECT_EQ(bth_end, 18u + 20 + 8 + 12);
  std::vector<uint8_t> other_port = f;
  other_port[37] = 0x35;  // UDP 4661
  EXPECT_FALSE(is_rocev2(other_port, &bth_end));
  std::vector<uint8_t> arp(60, 0);
  arp[12] = 0x08;
  arp[13] = 0x06;
  EXPECT_FALSE(is_rocev2(arp, &bth_end));

  // Everything impaired at probability 1: an ARP frame still passes untouched and unheld.
  ImpairConfig all;
  all.drop = 0;
  all.corrupt = all.dup = all.reorder = 1;
  all.delay = Duration::micros(5);
  Impairment im(all);
  ImpairVerdict a = im.decide(arp, Timestamp{0});
  EXPECT_FALSE(a.drop || a.duplicate || a.reordered);
  EXPECT_EQ(a.corrupt_at, -1);
  EXPECT_EQ(a.hold.ns, 0);
  EXPECT_EQ(im.counters().seen, 0u);
  for (int i = 0; i < 1000; ++i) {
    ImpairVerdict v = im.decide(f, Timestamp{0});
    ASSERT_FALSE(v.drop);
    ASSERT_TRUE(v.duplicate && v.reordered);
    // Corruption lands after the BTH (payload or ICRC): the ICRC check must catch it.
    ASSERT_GE(v.corrupt_at, static_cast<int>(14 + 20 + 8 + 12));
    ASSERT_LT(v.corrupt_at, static_cast<int>(f.size()));
    // Held for the delay plus an extra in (0, reorder_window].
    ASSERT_GT(v.hold.ns, all.delay.ns);
    ASSERT_LE(v.hold.ns, all.delay.ns + all.reorder_window.ns);
  }
  EXPECT_EQ(im.counters().seen, 1000u);
  EXPECT_EQ(im.counters().corrupted, 1000u);
}

TEST(SwitchImpair, RatesMatchTheConfigurationAndTheSeedReplaysTheVerdicts) {
  ImpairConfig c;
  std::string err;
  ASSERT_TRUE(
      parse_impair("drop=0.05,dup=0.01,reorder=0.02,reorder-window=100us,corrupt=0.001,"
                   "delay=10us,seed=42",
                   &c, &err))
      << err;
  EXPECT_EQ(c.drop, 0.05);
  EXPECT_EQ(c.reorder_window.ns, 100'000);
  EXPECT_EQ(c.delay.ns, 10'000);
  EXPECT_EQ(c.seed, 42u);
  std::vector<uint8_t> f = rocev2_frame();
  Impairment a(c), b(c);
  constexpr int kN = 200'000;
  for (int i = 0; i < kN; ++i) {
    ImpairVerdict x = a.decide(f, Timestamp{0}), y = b.decide(f, Timestamp{0});
    ASSERT_EQ(x.drop, y.drop);
    ASSERT_EQ(x.corrupt_at, y.corrupt_at);
    ASSERT_EQ(x.hold.ns, y.hold.ns);
  }
  const ImpairCounters& n = a.counters();
  // Expect: each rate within 10 % of its probability (kN draws; dup/reorder/corrupt apply to
  // the frames not dropped).
  EXPECT_NEAR(static_cast<double>(n.dropped) / kN, 0.05, 0.005);
  EXPECT_NEAR(static_cast<double>(n.duplicated) / (kN - n.dropped), 0.01, 0.001);
  EXPECT_NEAR(static_cast<double>(n.reordered) / (kN - n.dropped), 0.02, 0.002);
  EXPECT_NEAR(static_cast<double>(n.corrupted) / (kN - n.dropped), 0.001, 0.0003);
  c.seed = 43;
  Impairment other(c);
  int same = 0;
  Impairment replay(
      ImpairConfig{c.drop, c.dup, c.corrupt, c.reorder, c.reorder_window, c.delay, 42});
  for (int i = 0; i < 1000; ++i)
    same += other.decide(f, Timestamp{0}).drop == replay.decide(f, Timestamp{0}).drop;
  EXPECT_LT(same, 1000);  // another seed, other verdicts

  EXPECT_FALSE(parse_impair("drop=1.5", &c, &err));
  EXPECT_NE(err.find("bad value"), std::string::npos);
  EXPECT_FALSE(parse_impair("loss=0.1", &c, &err));
  EXPECT_NE(err.find("unknown key \"loss\""), std::string::npos);
  EXPECT_FALSE(parse_impair("delay=5parsecs", &c, &err));
  Options o;
  EXPECT_TRUE(
      parse_options({"--port", "a", "--port", "b", "--impair", "drop=0.01,seed=3"}, &o, &err))
      << err;
  EXPECT_EQ(o.impair.drop, 0.01);
  EXPECT_EQ(o.impair.seed, 3u);
  EXPECT_FALSE(parse_options({"--port", "a", "--port", "b", "--impair", "drop"}, &o, &err));
}

TEST(SwitchImpair, LinkCutDropsEverythingForItsDurationOnly) {
  ImpairConfig c;
  std::string err;
  ASSERT_TRUE(parse_impair("cut-at=1s,cut-for=200ms", &c, &err)) << err;
  Impairment im(c);
  std::vector<uint8_t> f = rocev2_frame();
  const Timestamp t0{5'000'000'000};  // the first frame starts the clock of the cut
  EXPECT_FALSE(im.decide(f, t0).drop);
  EXPECT_FALSE(im.decide(f, t0 + Duration::millis(999)).drop);
  EXPECT_TRUE(im.decide(f, t0 + Duration::millis(1000)).drop);
  EXPECT_TRUE(im.decide(f, t0 + Duration::millis(1199)).drop);
  EXPECT_FALSE(im.decide(f, t0 + Duration::millis(1200)).drop);
  EXPECT_FALSE(im.decide(f, t0 + Duration::seconds(60)).drop);
  EXPECT_EQ(im.counters().cut, 2u);
  EXPECT_EQ(im.counters().dropped, 2u);
}

TEST(SwitchControl, AChangeIsInForceWhenTheLoopHasTakenIt) {
  Control c("leaf1", settings_of(Options{}));
  fabric::Settings next = c.settings();
  next.pfc_priorities = 1u << 4;
  std::atomic<bool> stop{false};
  int applied_by_loop = 0;
  std::thread loop([&] {
    while (!stop.load()) {
      if (!c.pending()) continue;
      if (auto s = c.take()) {
        applied_by_loop = s->pfc_priorities;
        c.applied();
      }
    }
  });
  EXPECT_EQ(c.apply(next), "");
  EXPECT_EQ(c.settings().pfc_priorities, 1u << 4);  // in force when apply() returns
  stop.store(true);
  loop.join();
  EXPECT_EQ(applied_by_loop, 1 << 4);
}

TEST(SwitchControl, ALoopThatDoesNotTakeItGetsItWithdrawn) {
  Control c("leaf1", settings_of(Options{}), std::chrono::milliseconds(20));
  const fabric::Settings before = c.settings();
  fabric::Settings next = before;
  next.ecn = false;
  const std::string err = c.apply(next);
  EXPECT_NE(err.find("nothing changed"), std::string::npos) << err;
  EXPECT_EQ(c.settings(), before);
  EXPECT_FALSE(c.pending());
  EXPECT_FALSE(c.take().has_value());  // withdrawn: a late loop finds nothing
}

TEST(SwitchControl, MetricsFromThePublishedState) {
  Control c("leaf1", settings_of(Options{}));
  EXPECT_TRUE(c.metric_families().empty());  // nothing published yet
  c.publish(R"({"ports": [{"port": 0, "rx_packets": 5, "drops": 2, "queue_high_water": 100,
                          "paused_prios": [3]}, {"port": 1, "rx_packets": 7}]})");
  const std::string m = prometheus::TextSerializer().Serialize(c.metric_families());
  EXPECT_NE(m.find("uroce_switch_rx_packets_total{port=\"0\"} 5\n"), std::string::npos) << m;
  EXPECT_NE(m.find("uroce_switch_rx_packets_total{port=\"1\"} 7\n"), std::string::npos);
  EXPECT_NE(m.find("uroce_switch_drops_total{port=\"0\"} 2\n"), std::string::npos);
  EXPECT_NE(m.find("# TYPE uroce_switch_queue_high_water gauge"), std::string::npos);
  EXPECT_NE(m.find("uroce_switch_paused{port=\"0\",priority=\"3\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("uroce_switch_paused{port=\"1\",priority=\"3\"} 0\n"), std::string::npos);
}

TEST(SwitchOptions, SettingsOfTheCommandLine) {
  Options o;
  std::string err;
  ASSERT_TRUE(parse_options(
      {"--port", "a",         "--port", "b",     "--pfc-prios", "3,4",        "--pfc-xoff",
       "100K",   "--pfc-xon", "50K",    "--ecn", "off",         "--trust",    "pcp",
       "--mtu",  "1500",      "--name", "spine", "--api",       "127.0.0.1:0"},
      &o, &err))
      << err;
  fabric::Settings s = settings_of(o);
  EXPECT_EQ(s.pfc_priorities, (1u << 3) | (1u << 4));
  EXPECT_EQ(s.pfc_xoff_bytes, 100u * 1024);
  EXPECT_FALSE(s.ecn);
  EXPECT_EQ(s.trust, fabric::Trust::kPcp);
  EXPECT_EQ(s.mtu, 1500u);
  EXPECT_EQ(o.name, "spine");
  EXPECT_TRUE(fabric::validate(s, fabric::Role::kSwitch, &err)) << err;
  Options no_pfc;
  ASSERT_TRUE(parse_options({"--port", "a", "--port", "b", "--pfc-xoff", "0"}, &no_pfc, &err));
  EXPECT_EQ(settings_of(no_pfc).pfc_priorities, 0);
  EXPECT_FALSE(parse_options({"--port", "a", "--port", "b", "--mtu", "100"}, &no_pfc, &err));
  EXPECT_FALSE(parse_options({"--port", "a", "--port", "b", "--trust", "vlan"}, &no_pfc, &err));
}

}  // namespace
}  // namespace uroce::uswitch
