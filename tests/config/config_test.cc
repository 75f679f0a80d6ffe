/**
 * @file config_test.cc
 * @brief lib/config: the happy path of docs/configuration.md's example file, the built-in device,
 * the lookup order, and one test per class of bad entry (each must name file, key and allowed).
 */
#include "config/config.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace uroce::config {
namespace {

constexpr const char* kSource = "test.toml";

/// Parses text that must be refused; returns the error line.
std::string refused(const std::string& text) {
  std::string err;
  auto cfg = parse(text, kSource, &err);
  EXPECT_FALSE(cfg.has_value()) << text;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line: " << err;
  EXPECT_EQ(err.rfind(std::string(kSource) + ": ", 0), 0u) << err;
  EXPECT_NE(err.find("; allowed: "), std::string::npos) << err;
  return err;
}

std::string device(const std::string& extra) {
  return "[[device]]\nname = \"d\"\nport = \"net_ring0\"\naddresses = [\"198.18.0.1/15\"]\n" +
         extra + "\n";
}

TEST(ConfigParse, DesignExampleFile) {
  const std::string text = R"(
[[device]]
name = "uroce0"
port = "net_memif0,role=server,socket=/run/uroce/a.sock"
eal = ["--no-huge", "-m", "1024"]
addresses = ["198.18.0.1/15", "2001:2::1/64"]
mtu = 4096
mac = "02:00:00:00:00:01"
neighbors = { "198.18.0.2" = "02:00:00:00:00:02" }
profile = "lossless"

[[device]]
name = "uroce1"
port = "0000:03:00.0"
addresses = ["198.19.0.1/15"]
roce_dscp = 24
cnp_dscp = 46
dscp_to_prio = { "24" = 5 }
trust = "pcp"
pcp_to_prio = [0, 0, 1, 3, 4, 5, 6, 7]
vlan = 100
ecn = false
[device.pfc]
enabled = [5, 6]
xoff_bytes = 100000
xon_bytes = 50000
watchdog_ignore_pause = true
[device.dcqcn]
mode = "paper"
rpg_ai_rate = 40
dce_tcp_g = 0.00390625
max_burst_bytes = 8192
)";
  std::string err;
  auto cfg = parse(text, kSource, &err);
  ASSERT_TRUE(cfg.has_value()) << err;
  EXPECT_EQ(cfg->source, kSource);
  ASSERT_EQ(cfg->devices.size(), 2u);
  const Device& a = cfg->devices[0];
  EXPECT_EQ(a.name, "uroce0");
  EXPECT_EQ(a.port, "net_memif0,role=server,socket=/run/uroce/a.sock");
  EXPECT_EQ(a.eal, (std::vector<std::string>{"--no-huge", "-m", "1024"}));
  ASSERT_EQ(a.addresses.size(), 2u);
  EXPECT_EQ(a.addresses[0].gid, Gid::from_ipv4(0xc6120001));
  EXPECT_EQ(a.addresses[0].prefix, 15);
  EXPECT_TRUE(a.addresses[0].is_ipv4());
  EXPECT_FALSE(a.addresses[1].is_ipv4());
  EXPECT_EQ(a.addresses[1].gid.to_string(), "2001:2::1");
  EXPECT_EQ(a.addresses[1].prefix, 64);
  EXPECT_EQ(a.mtu, 4096u);
  ASSERT_TRUE(a.mac.has_value());
  EXPECT_EQ(a.mac->to_string(), "02:00:00:00:00:01");
  ASSERT_EQ(a.neighbors.count("198.18.0.2"), 1u);
  EXPECT_EQ(a.neighbors.at("198.18.0.2").to_string(), "02:00:00:00:00:02");
  EXPECT_EQ(a.profile, "lossless");
  // lossless: PFC on the RoCE priority (DSCP 26 >> 3 = 3) only.
  for (int p = 0; p < 8; ++p) EXPECT_EQ(a.pfc.enabled[p], p == 3) << p;
  EXPECT_GT(a.pfc.xoff_bytes, a.pfc.xon_bytes);
  EXPECT_TRUE(a.ecn);
  EXPECT_EQ(a.dscp_to_prio[26], 3);
  EXPECT_EQ(a.dscp_to_prio[63], 7);
  EXPECT_EQ(a.trust, Device::Trust::kDscp);  // defaults: DSCP trust, identity PCP map, no tag
  for (int p = 0; p < 8; ++p) EXPECT_EQ(a.pcp_to_prio[p], p);
  EXPECT_FALSE(a.vlan.has_value());

  const Device& b = cfg->devices[1];
  EXPECT_EQ(b.port, "0000:03:00.0");
  EXPECT_EQ(b.mtu, 1024u);  // default
  EXPECT_FALSE(b.mac.has_value());
  EXPECT_EQ(b.roce_dscp, 24);
  EXPECT_EQ(b.cnp_dscp, 46);
  EXPECT_EQ(b.dscp_to_prio[24], 5);
  EXPECT_EQ(b.dscp_to_prio[25], 3);  // untouched entries keep DSCP >> 3
  EXPECT_EQ(b.trust, Device::Trust::kPcp);
  EXPECT_EQ(b.pcp_to_prio, (std::array<uint8_t, 8>{0, 0, 1, 3, 4, 5, 6, 7}));
  ASSERT_TRUE(b.vlan.has_value());
  EXPECT_EQ(*b.vlan, 100);
  EXPECT_FALSE(b.ecn);
  for (int p = 0; p < 8; ++p) EXPECT_EQ(b.pfc.enabled[p], p == 5 || p == 6) << p;
  EXPECT_EQ(b.pfc.xoff_bytes, 100000u);
  EXPECT_EQ(b.pfc.xon_bytes, 50000u);
  EXPECT_TRUE(b.pfc.watchdog_ignore_pause);
  EXPECT_EQ(b.pfc.watchdog_detect_ms, 200u);
  EXPECT_EQ(b.dcqcn.mode, "paper");
  EXPECT_TRUE(b.dcqcn.enabled);
  EXPECT_DOUBLE_EQ(b.dcqcn.params.at("rpg_ai_rate"), 40.0);
  EXPECT_DOUBLE_EQ(b.dcqcn.params.at("dce_tcp_g"), 0.00390625);
  EXPECT_EQ(b.dcqcn.max_burst_bytes, 8192u);
  EXPECT_EQ(b.dcqcn.params.count("max_burst_bytes"), 0u);  // not a reaction-point parameter
  EXPECT_EQ(Dcqcn{}.max_burst_bytes, 65536u);              // the default: one 64 KiB message
}

TEST(ConfigParse, ExplicitKeysOverrideTheProfile) {
  std::string err;
  auto cfg = parse(device("profile = \"lossless\"\necn = false\n[device.pfc]\nenabled = []"),
                   kSource, &err);
  ASSERT_TRUE(cfg.has_value()) << err;
  EXPECT_FALSE(cfg->devices[0].ecn);
  for (bool on : cfg->devices[0].pfc.enabled) EXPECT_FALSE(on);
}

TEST(ConfigParse, ProfilesSetPfcEcnAndDcqcn) {
  std::string err;
  auto lossy = parse(device("profile = \"lossy\""), kSource, &err);
  ASSERT_TRUE(lossy.has_value()) << err;
  for (bool on : lossy->devices[0].pfc.enabled) EXPECT_FALSE(on);
  EXPECT_TRUE(lossy->devices[0].ecn);
  auto hpc = parse(device("profile = \"hpc\""), kSource, &err);
  ASSERT_TRUE(hpc.has_value()) << err;
  EXPECT_TRUE(hpc->devices[0].pfc.enabled[3]);
  EXPECT_DOUBLE_EQ(hpc->devices[0].dcqcn.params.at("min_time_between_cnps"), 0.0);
  auto storage = parse(device("profile = \"storage\"\nroce_dscp = 40"), kSource, &err);
  ASSERT_TRUE(storage.has_value()) << err;
  EXPECT_TRUE(storage->devices[0].pfc.enabled[5]);  // the RoCE priority follows roce_dscp
  EXPECT_EQ(storage->devices[0].pfc.xoff_bytes, 256u * 1024);
}

TEST(ConfigParse, NeighbourKeysAreNormalised) {
  std::string err;
  auto cfg =
      parse(device("neighbors = { \"2001:0002:0::2\" = \"02:00:00:00:00:02\" }"), kSource, &err);
  ASSERT_TRUE(cfg.has_value()) << err;
  EXPECT_EQ(cfg->devices[0].neighbors.count("2001:2::2"), 1u);
}

TEST(ConfigParse, AllowsEveryPowerOfTwoMtu) {
  for (int mtu : {256, 512, 1024, 2048, 4096}) {
    std::string err;
    auto cfg = parse(device("mtu = " + std::to_string(mtu)), kSource, &err);
    ASSERT_TRUE(cfg.has_value()) << err;
    EXPECT_EQ(cfg->devices[0].mtu, static_cast<uint32_t>(mtu));
  }
}

TEST(ConfigBuiltin, OneLoopbackDevice) {
  Config cfg = builtin();
  EXPECT_EQ(cfg.source, "built-in");
  ASSERT_EQ(cfg.devices.size(), 1u);
  const Device& d = cfg.devices[0];
  EXPECT_EQ(d.name, "uroce0");
  EXPECT_EQ(d.port, "loopback");
  EXPECT_EQ(d.mtu, 1024u);
  ASSERT_EQ(d.addresses.size(), 1u);
  EXPECT_EQ(d.addresses[0].gid.to_string(), "198.18.0.1");
  EXPECT_EQ(d.addresses[0].prefix, 15);
  EXPECT_EQ(d.dscp_to_prio[26], 3);
}

TEST(ConfigLoad, ReadsTheFileUroceConfigNames) {
  std::string path = ::testing::TempDir() + "/uroce_config_test.toml";
  { std::ofstream(path) << device("mtu = 2048"); }
  ::setenv("UROCE_CONFIG", path.c_str(), 1);
  std::string err;
  auto cfg = load(&err);
  ::unsetenv("UROCE_CONFIG");
  ASSERT_TRUE(cfg.has_value()) << err;
  EXPECT_EQ(cfg->source, path);
  EXPECT_EQ(cfg->devices[0].mtu, 2048u);
}

TEST(ConfigLoad, MissingNamedFileIsAnError) {
  ::setenv("UROCE_CONFIG", "/nonexistent/uroce.toml", 1);
  std::string err;
  auto cfg = load(&err);
  ::unsetenv("UROCE_CONFIG");
  EXPECT_FALSE(cfg.has_value());
  EXPECT_NE(err.find("/nonexistent/uroce.toml: UROCE_CONFIG"), std::string::npos) << err;
}

TEST(ConfigLoad, BadFileNamesItsPath) {
  std::string path = ::testing::TempDir() + "/uroce_config_bad.toml";
  { std::ofstream(path) << device("mtu = 1000"); }
  ::setenv("UROCE_CONFIG", path.c_str(), 1);
  std::string err;
  auto cfg = load(&err);
  ::unsetenv("UROCE_CONFIG");
  EXPECT_FALSE(cfg.has_value());
  EXPECT_EQ(err.rfind(path + ": device[0].mtu: ", 0), 0u) << err;
}

// One test per class of bad entry. Each checks the exact key path and the allowed list.

TEST(ConfigErrors, TomlSyntax) {
  std::string err = refused("[[device]\nname = ");
  EXPECT_NE(err.find("TOML syntax"), std::string::npos) << err;
}

TEST(ConfigErrors, NoDevice) {
  std::string err = refused("");
  EXPECT_EQ(err, "test.toml: device: missing; allowed: one or more [[device]] tables");
}

TEST(ConfigErrors, UnknownTopLevelKey) {
  std::string err = refused("devices = 1\n" + device(""));
  EXPECT_EQ(err.rfind("test.toml: devices: unknown key; allowed: device", 0), 0u) << err;
}

TEST(ConfigErrors, UnknownDeviceKey) {
  std::string err = refused(device("mtuu = 1024"));
  EXPECT_EQ(err.rfind("test.toml: device[0].mtuu: unknown key; allowed: name, port, eal,", 0), 0u)
      << err;
}

TEST(ConfigErrors, UnknownKeyInSecondDevice) {
  std::string err = refused(device("") +
                            "[[device]]\nname = \"e\"\nport = \"net_ring1\"\n"
                            "addresses = [\"198.18.0.2/15\"]\ncolour = 1\n");
  EXPECT_EQ(err.rfind("test.toml: device[1].colour: unknown key", 0), 0u) << err;
}

// A quoted key may hold a newline: the message still is one line (found by fuzz_config_parse).
TEST(ConfigErrors, ControlCharactersInAKeyStayOnOneLine) {
  std::string err = refused("\"a\\nb\" = 1\n");
  EXPECT_EQ(err, "test.toml: a\\x0ab: unknown key; allowed: device ([[device]] tables)");
}

TEST(ConfigErrors, UnknownPfcAndDcqcnKeys) {
  EXPECT_EQ(refused(device("[device.pfc]\nxof = 1"))
                .rfind("test.toml: device[0].pfc.xof: unknown key", 0),
            0u);
  std::string err = refused(device("[device.dcqcn]\nrpg_ai = 1"));
  EXPECT_EQ(err.rfind("test.toml: device[0].dcqcn.rpg_ai: unknown key; allowed: enabled, mode, "
                      "max_burst_bytes, rpg_time_reset",
                      0),
            0u)
      << err;
}

TEST(ConfigErrors, MtuNotAPowerOfTwo) {
  EXPECT_EQ(
      refused(device("mtu = 1500")),
      "test.toml: device[0].mtu: 1500 is not a power of two; allowed: 256, 512, 1024, 2048, 4096");
}

TEST(ConfigErrors, MtuOutOfRange) {
  EXPECT_EQ(refused(device("mtu = 8192")),
            "test.toml: device[0].mtu: 8192 is out of range; allowed: 256, 512, 1024, 2048, 4096");
  EXPECT_EQ(refused(device("mtu = 128")),
            "test.toml: device[0].mtu: 128 is out of range; allowed: 256, 512, 1024, 2048, 4096");
}

TEST(ConfigParse, QueuesDefaultToOneAndAreRead) {
  std::string err;
  auto one = parse(device(""), kSource, &err);
  ASSERT_TRUE(one.has_value()) << err;
  EXPECT_EQ(one->devices[0].queues, 1u);
  auto four = parse(device("queues = 4"), kSource, &err);
  ASSERT_TRUE(four.has_value()) << err;
  EXPECT_EQ(four->devices[0].queues, 4u);
}

TEST(ConfigParse, RxeFlushIcrcIsOffUnlessAsked) {
  std::string err;
  auto off = parse(device(""), kSource, &err);
  ASSERT_TRUE(off.has_value()) << err;
  EXPECT_FALSE(off->devices[0].rxe_flush_icrc);
  auto on = parse(device("rxe_flush_icrc = true"), kSource, &err);
  ASSERT_TRUE(on.has_value()) << err;
  EXPECT_TRUE(on->devices[0].rxe_flush_icrc);
  EXPECT_EQ(refused(device("rxe_flush_icrc = 1")),
            "test.toml: device[0].rxe_flush_icrc: is an integer; allowed: true, false");
}

TEST(ConfigParse, RoceV1IsOffUnlessAskedAndRefusedInHostMode) {
  std::string err;
  auto off = parse(device(""), kSource, &err);
  ASSERT_TRUE(off.has_value()) << err;
  EXPECT_FALSE(off->devices[0].roce_v1);
  auto on = parse(device("roce_v1 = true"), kSource, &err);
  ASSERT_TRUE(on.has_value()) << err;
  EXPECT_TRUE(on->devices[0].roce_v1);
  EXPECT_EQ(refused(device("roce_v1 = \"yes\"")),
            "test.toml: device[0].roce_v1: is a string; allowed: true, false");
  EXPECT_EQ(refused("[[device]]\nname = \"h\"\nnetdev = \"eth0\"\nroce_v1 = true\n"),
            "test.toml: device[0].roce_v1: not supported with netdev (host mode receives RoCEv2 "
            "only); allowed: false with netdev");
  // The table a device shows: RoCEv2 entries first, the same addresses as RoCE v1 after them.
  const Gid a = Gid::from_ipv4(0xc6120001), b = Gid::from_ipv4(0xc6120002);
  EXPECT_EQ(gid_table({a, b}, false), (std::vector<Gid>{a, b}));
  EXPECT_EQ(gid_table({a, b}, true), (std::vector<Gid>{a, b, a, b}));
  EXPECT_EQ(gid_type_at(1, 2), GidType::kRoceV2);
  EXPECT_EQ(gid_type_at(2, 2), GidType::kRoceV1);
  EXPECT_EQ(gid_type_at(3, SIZE_MAX), GidType::kRoceV2);
}

TEST(ConfigParse, LossRecoveryDefaultsToGoBackN) {
  std::string err;
  auto d = parse(device(""), kSource, &err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_EQ(d->devices[0].loss_recovery, Device::LossRecovery::kGoBackN);
  auto s = parse(device("loss_recovery = \"selective\""), kSource, &err);
  ASSERT_TRUE(s.has_value()) << err;
  EXPECT_EQ(s->devices[0].loss_recovery, Device::LossRecovery::kSelective);
  // The lossy profile switches it on (every peer must then be a uroce); an explicit key wins.
  auto lossy = parse(device("profile = \"lossy\""), kSource, &err);
  ASSERT_TRUE(lossy.has_value()) << err;
  EXPECT_EQ(lossy->devices[0].loss_recovery, Device::LossRecovery::kSelective);
  auto gbn = parse(device("profile = \"lossy\"\nloss_recovery = \"go-back-n\""), kSource, &err);
  ASSERT_TRUE(gbn.has_value()) << err;
  EXPECT_EQ(gbn->devices[0].loss_recovery, Device::LossRecovery::kGoBackN);
}

TEST(ConfigParse, PeerTimestampsFollowTheLossyProfileUnlessSet) {
  std::string err;
  auto d = parse(device(""), kSource, &err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_FALSE(d->devices[0].peer_timestamps);
  auto lossy = parse(device("profile = \"lossy\""), kSource, &err);
  ASSERT_TRUE(lossy.has_value()) << err;
  EXPECT_TRUE(lossy->devices[0].peer_timestamps);
  auto off = parse(device("profile = \"lossy\"\npeer_timestamps = false"), kSource, &err);
  ASSERT_TRUE(off.has_value()) << err;
  EXPECT_FALSE(off->devices[0].peer_timestamps);
  auto on = parse(device("peer_timestamps = true"), kSource, &err);
  ASSERT_TRUE(on.has_value()) << err;
  EXPECT_TRUE(on->devices[0].peer_timestamps);
  EXPECT_FALSE(parse(device("peer_timestamps = \"yes\""), kSource, &err).has_value());
  EXPECT_NE(err.find("peer_timestamps"), std::string::npos) << err;
}

TEST(ConfigParse, OooPlacementIsOffUnlessSet) {
  std::string err;
  auto d = parse(device("profile = \"lossy\""), kSource, &err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_FALSE(d->devices[0].ooo_placement);
  auto on = parse(device("ooo_placement = true"), kSource, &err);
  ASSERT_TRUE(on.has_value()) << err;
  EXPECT_TRUE(on->devices[0].ooo_placement);
  EXPECT_FALSE(parse(device("ooo_placement = 1"), kSource, &err).has_value());
  EXPECT_NE(err.find("ooo_placement"), std::string::npos) << err;
}

TEST(ConfigParse, ProgressTuningKeysAreCheckedByNameAndRange) {
  std::string err;
  auto d = parse(device("[device.progress]\nspin_rounds = 50\nmax_sleep_us = 16\n"
                        "post_rx_gap_us = 0.5"),
                 kSource, &err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_EQ(d->devices[0].progress,
            (std::map<std::string, double>{
                {"spin_rounds", 50}, {"max_sleep_us", 16}, {"post_rx_gap_us", 0.5}}));
  EXPECT_TRUE(parse(device(""), kSource, &err)->devices[0].progress.empty());
  EXPECT_FALSE(parse(device("[device.progress]\nspin = 1"), kSource, &err).has_value());
  EXPECT_NE(err.find("progress.spin: unknown key"), std::string::npos) << err;
  EXPECT_FALSE(parse(device("[device.progress]\nrx_burst = 0"), kSource, &err).has_value());
  EXPECT_NE(err.find("progress.rx_burst: is out of range"), std::string::npos) << err;
  EXPECT_FALSE(parse(device("[device.progress]\nspin_rounds = 1.5"), kSource, &err).has_value());
  EXPECT_NE(err.find("whole number"), std::string::npos) << err;
  EXPECT_FALSE(parse(device("[device.progress]\nmax_sleep_us = \"4\""), kSource, &err).has_value());
  EXPECT_FALSE(parse(device("progress = 3"), kSource, &err).has_value());
}

TEST(ConfigParse, CongestionControlAndDelayKnobs) {
  std::string err;
  auto d = parse(device(""), kSource, &err);
  ASSERT_TRUE(d.has_value()) << err;
  EXPECT_EQ(d->devices[0].congestion_control, CcAlgorithm::kDcqcn);
  EXPECT_EQ(cc_in_force(d->devices[0]), CcAlgorithm::kDcqcn);
  // The lossy profile: DCQCN where switches mark ECN, the delay-based control otherwise.
  auto lossy = parse(device("profile = \"lossy\""), kSource, &err);
  ASSERT_TRUE(lossy.has_value()) << err;
  EXPECT_EQ(lossy->devices[0].congestion_control, CcAlgorithm::kDcqcnDelay);
  auto c = parse(device("congestion_control = \"delay\"\n[device.delay]\ntarget_queue_us = "
                        "25\nbase_rtt_us = 8.5\nai_mbps = 100\nbeta = 0.5\nmax_mdf = 0.25\n"
                        "min_rate_mbps = 10"),
                 kSource, &err);
  ASSERT_TRUE(c.has_value()) << err;
  const Device& dev = c->devices[0];
  EXPECT_EQ(dev.congestion_control, CcAlgorithm::kDelay);
  EXPECT_DOUBLE_EQ(dev.delay.target_queue_us, 25);
  EXPECT_DOUBLE_EQ(dev.delay.base_rtt_us, 8.5);
  EXPECT_DOUBLE_EQ(dev.delay.ai_mbps, 100);
  EXPECT_DOUBLE_EQ(dev.delay.beta, 0.5);
  EXPECT_DOUBLE_EQ(dev.delay.max_mdf, 0.25);
  EXPECT_DOUBLE_EQ(dev.delay.min_rate_mbps, 10);
  // dcqcn.enabled = false takes DCQCN out of the choice.
  auto off = parse(device("congestion_control = \"dcqcn+delay\"\n[device.dcqcn]\nenabled = false"),
                   kSource, &err);
  ASSERT_TRUE(off.has_value()) << err;
  EXPECT_EQ(cc_in_force(off->devices[0]), CcAlgorithm::kDelay);
  auto none = parse(device("[device.dcqcn]\nenabled = false"), kSource, &err);
  ASSERT_TRUE(none.has_value()) << err;
  EXPECT_EQ(cc_in_force(none->devices[0]), CcAlgorithm::kOff);
}

TEST(ConfigParse, EveryCongestionControlNameParsesToItsValue) {
  std::string err;
  for (size_t i = 0; i < std::size(kCcAlgorithmNames); ++i) {
    auto c = parse(device("congestion_control = \"" + std::string(kCcAlgorithmNames[i]) + "\""),
                   kSource, &err);
    ASSERT_TRUE(c.has_value()) << err;
    EXPECT_EQ(c->devices[0].congestion_control, static_cast<CcAlgorithm>(i));
    EXPECT_EQ(to_string(c->devices[0].congestion_control), kCcAlgorithmNames[i]);
  }
}

TEST(ConfigErrors, CongestionControlValues) {
  EXPECT_EQ(refused(device("congestion_control = \"timely\"")),
            "test.toml: device[0].congestion_control: \"timely\" is not a congestion control; "
            "allowed: \"dcqcn\", \"delay\", \"dcqcn+delay\", \"off\"");
  EXPECT_EQ(refused(device("[device.delay]\nbeta = 0")),
            "test.toml: device[0].delay.beta: is out of range; allowed: a number in (0, 1]");
  EXPECT_EQ(refused(device("[device.delay]\nrtt = 5")),
            "test.toml: device[0].delay.rtt: unknown key; allowed: target_queue_us, base_rtt_us, "
            "ai_mbps, beta, max_mdf, min_rate_mbps");
  EXPECT_EQ(refused(device("[device.delay]\ntarget_queue_us = \"5\"")).substr(0, 46),
            "test.toml: device[0].delay.target_queue_us: is");
}

TEST(ConfigErrors, LossRecoveryValue) {
  EXPECT_EQ(refused(device("loss_recovery = \"sack\"")),
            "test.toml: device[0].loss_recovery: \"sack\" is not a loss recovery; allowed: "
            "\"go-back-n\", \"selective\"");
}

TEST(ConfigErrors, QueuesOutOfRange) {
  EXPECT_EQ(refused(device("queues = 0")),
            "test.toml: device[0].queues: 0 is out of range; allowed: 1..16");
  EXPECT_EQ(refused(device("queues = 17")),
            "test.toml: device[0].queues: 17 is out of range; allowed: 1..16");
}

TEST(ConfigErrors, WrongTypes) {
  EXPECT_EQ(refused(device("mtu = \"4096\"")),
            "test.toml: device[0].mtu: is a string; allowed: 256, 512, 1024, 2048, 4096");
  EXPECT_EQ(refused(device("ecn = 1")),
            "test.toml: device[0].ecn: is an integer; allowed: true, false");
  EXPECT_EQ(refused(device("eal = \"--no-huge\""))
                .rfind("test.toml: device[0].eal: is a string; allowed: an array of strings", 0),
            0u);
  EXPECT_EQ(refused(device("eal = [\"-m\", 1024]"))
                .rfind("test.toml: device[0].eal[1]: is an integer;", 0),
            0u);
  EXPECT_EQ(refused("[[device]]\nname = 3\n").rfind("test.toml: device[0].name: is an integer;", 0),
            0u);
  EXPECT_EQ(refused("device = 3\n").rfind("test.toml: device: is an integer;", 0), 0u);
  EXPECT_EQ(refused(device("neighbors = [\"198.18.0.2\"]"))
                .rfind("test.toml: device[0].neighbors: is an array;", 0),
            0u);
  EXPECT_EQ(
      refused(device("[device.dcqcn]\nrpg_ai_rate = \"5\""))
          .rfind("test.toml: device[0].dcqcn.rpg_ai_rate: is a string; allowed: a number >= 0", 0),
      0u);
}

TEST(ConfigErrors, BadAddress) {
  EXPECT_EQ(
      refused("[[device]]\nname = \"d\"\nport = \"net_ring0\"\naddresses = [\"198.18.0.300/15\"]\n")
          .rfind("test.toml: device[0].addresses[0]: \"198.18.0.300/15\" is not an IP address; "
                 "allowed: ",
                 0),
      0u);
  EXPECT_EQ(refused("[[device]]\nname = \"d\"\nport = \"net_ring0\"\n")
                .rfind("test.toml: device[0].addresses: missing; allowed: ", 0),
            0u);
  EXPECT_EQ(
      refused("[[device]]\nname = \"d\"\nport = \"net_ring0\"\naddresses = [\"224.0.0.1/4\"]\n")
          .rfind("test.toml: device[0].addresses[0]: \"224.0.0.1/4\" is not a unicast address", 0),
      0u);
  EXPECT_EQ(refused(device("").replace(device("").find("\"198.18.0.1/15\""), 15,
                                       "\"198.18.0.1/15\", \"198.18.0.1/16\""))
                .rfind("test.toml: device[0].addresses[1]: \"198.18.0.1/16\" is listed twice", 0),
            0u);
}

TEST(ConfigErrors, BadPrefix) {
  for (const char* bad :
       {"198.18.0.1/33", "198.18.0.1/", "198.18.0.1/x", "198.18.0.1/-1", "2001:2::1/129"}) {
    std::string text = "[[device]]\nname = \"d\"\nport = \"net_ring0\"\naddresses = [\"" +
                       std::string(bad) + "\"]\n";
    EXPECT_EQ(refused(text).rfind("test.toml: device[0].addresses[0]: \"" + std::string(bad) +
                                      "\" has a bad prefix length; allowed: ",
                                  0),
              0u)
        << bad;
  }
}

TEST(ConfigErrors, BadMac) {
  EXPECT_EQ(refused(device("mac = \"02:00:00:00:00\"")),
            "test.toml: device[0].mac: \"02:00:00:00:00\" is not a MAC address; allowed: a unicast "
            "MAC \"02:00:00:00:00:01\"");
  EXPECT_EQ(
      refused(device("mac = \"01:00:5e:00:00:01\""))
          .rfind("test.toml: device[0].mac: \"01:00:5e:00:00:01\" is not a unicast MAC address", 0),
      0u);
  EXPECT_EQ(
      refused(device("neighbors = { \"198.18.0.2\" = \"zz\" }"))
          .rfind("test.toml: device[0].neighbors.\"198.18.0.2\": \"zz\" is not a unicast MAC", 0),
      0u);
  EXPECT_EQ(refused(device("neighbors = { \"host\" = \"02:00:00:00:00:02\" }"))
                .rfind("test.toml: device[0].neighbors.\"host\": \"host\" is not an IP address", 0),
            0u);
}

TEST(ConfigErrors, DuplicateDeviceNames) {
  std::string err = refused(device("") +
                            "[[device]]\nname = \"d\"\nport = \"net_ring1\"\n"
                            "addresses = [\"198.18.0.2/15\"]\n");
  EXPECT_EQ(err,
            "test.toml: device[1].name: \"d\" is already the name of device[0]; allowed: a name "
            "unique in the file");
}

TEST(ConfigErrors, DuplicatePorts) {
  std::string err = refused(device("") +
                            "[[device]]\nname = \"e\"\nport = \"net_ring0,x=1\"\n"
                            "addresses = [\"198.18.0.2/15\"]\n");
  EXPECT_EQ(
      err.rfind(
          "test.toml: device[1].port: DPDK device \"net_ring0\" is already the port of device[0]",
          0),
      0u)
      << err;
}

TEST(ConfigErrors, BadNameAndPort) {
  EXPECT_EQ(refused("[[device]]\nname = \"a b\"\n")
                .rfind("test.toml: device[0].name: \"a b\" is not a valid device name; allowed: "
                       "1..63 characters",
                       0),
            0u);
  EXPECT_EQ(
      refused("[[device]]\nport = \"eth0\"\n")
          .rfind("test.toml: device[0].port: \"eth0\" is not a port; allowed: \"loopback\",", 0),
      0u);
}

TEST(ConfigErrors, FilePrefixBelongsToTheDriver) {
  EXPECT_EQ(refused(device("eal = [\"--file-prefix=x\"]"))
                .rfind("test.toml: device[0].eal[0]: the driver chooses --file-prefix", 0),
            0u);
}

TEST(ConfigErrors, BadEnumsAndRanges) {
  EXPECT_EQ(refused(device("profile = \"fast\"")),
            "test.toml: device[0].profile: \"fast\" is not a profile; allowed: \"\", lossless, "
            "lossy, hpc, storage");
  EXPECT_EQ(refused(device("roce_dscp = 64")),
            "test.toml: device[0].roce_dscp: 64 is out of range; allowed: 0..63");
  EXPECT_EQ(refused(device("dscp_to_prio = { \"26\" = 8 }"))
                .rfind("test.toml: device[0].dscp_to_prio.\"26\": 8 is out of range", 0),
            0u);
  EXPECT_EQ(refused(device("dscp_to_prio = { \"64\" = 1 }"))
                .rfind("test.toml: device[0].dscp_to_prio.\"64\": \"64\" is not a DSCP", 0),
            0u);
  EXPECT_EQ(refused(device("dscp_to_prio = [1, 2]"))
                .rfind("test.toml: device[0].dscp_to_prio: has 2 entries", 0),
            0u);
  EXPECT_EQ(refused(device("pcp_to_prio = { \"8\" = 1 }")),
            "test.toml: device[0].pcp_to_prio.\"8\": \"8\" is not a PCP; allowed: a table { \"<PCP "
            "0..7>\" = <priority 0..7> } or an array of 8 priorities 0..7");
  EXPECT_EQ(refused(device("pcp_to_prio = { \"3\" = 9 }"))
                .rfind("test.toml: device[0].pcp_to_prio.\"3\": 9 is out of range", 0),
            0u);
  EXPECT_EQ(refused(device("trust = \"vlan\"")),
            "test.toml: device[0].trust: \"vlan\" is not a trust mode; allowed: \"dscp\", \"pcp\"");
  EXPECT_EQ(
      refused(device("vlan = 4095")),
      "test.toml: device[0].vlan: 4095 is out of range; allowed: 0..4094 (0 = priority-tagged)");
  EXPECT_EQ(refused(device("[device.pfc]\nenabled = [8]"))
                .rfind("test.toml: device[0].pfc.enabled[0]: 8 is out of range; allowed: an array "
                       "of priorities 0..7",
                       0),
            0u);
  EXPECT_EQ(refused(device("[device.pfc]\nxoff_bytes = 10\nxon_bytes = 20"))
                .rfind("test.toml: device[0].pfc.xon_bytes: 20 is above xoff_bytes 10", 0),
            0u);
  EXPECT_EQ(
      refused(device("[device.dcqcn]\nmode = \"hpcc\"")),
      "test.toml: device[0].dcqcn.mode: \"hpcc\" is not a mode; allowed: \"nvidia\", \"paper\"");
  EXPECT_EQ(refused(device("[device.dcqcn]\nkmin = -1"))
                .rfind("test.toml: device[0].dcqcn.kmin: is negative", 0),
            0u);
  EXPECT_EQ(refused(device("[device.dcqcn]\nmax_burst_bytes = 16777217"))
                .rfind("test.toml: device[0].dcqcn.max_burst_bytes: 16777217 is out of range; "
                       "allowed: 0..16777216 bytes",
                       0),
            0u);
}

}  // namespace
}  // namespace uroce::config
