/**
 * @file settings_edit_test.cc
 * @brief A host's fabric settings written into its configuration text (tools/uroce
 * settings_edit.h): the profile's keys and each setting explicit, every device, the user's
 * other lines kept, the map's differences only, and what cannot be edited refused.
 */
#include "settings_edit.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "config/config.h"

namespace uroce::tool {
namespace {

constexpr char kTwoDevices[] = R"(# my fabric host
[[device]]
name = "uroce0"
port = "loopback"   # keep me
addresses = ["198.18.0.1/15"]
mtu = 2048

[[device]]
name = "uroce1"
port = "loopback"
addresses = ["198.18.0.2/15"]

[device.pfc]
watchdog_detect_ms = 300
)";

config::Config parse(const std::string& text) {
  std::string err;
  std::optional<config::Config> c = config::parse(text, "t.toml", &err);
  EXPECT_TRUE(c) << err;
  return c.value_or(config::Config{});
}

TEST(HostSettings, LosslessWithAnotherMapOnEveryDevice) {
  fabric::Settings s = host_settings(parse(kTwoDevices).devices[0]);
  EXPECT_EQ(s.mtu, 2048u);
  std::string err;
  ASSERT_TRUE(fabric::apply_json(R"({"dscp_to_prio": {"26": 4}, "profile": "lossless"})",
                                 fabric::Role::kHost, &s, &err))
      << err;
  std::string out;
  ASSERT_TRUE(write_host_settings(kTwoDevices, "t.toml", s, &out, &err)) << err;
  config::Config c = parse(out);
  ASSERT_EQ(c.devices.size(), 2u);
  for (const config::Device& d : c.devices) {
    EXPECT_EQ(d.profile, "lossless");
    EXPECT_TRUE(d.pfc.enabled[4]);
    EXPECT_FALSE(d.pfc.enabled[3]);
    EXPECT_EQ(d.dscp_to_prio[26], 4);
    EXPECT_EQ(d.mtu, 2048u);
    EXPECT_EQ(host_settings(d).pfc_priorities, 1u << 4);
  }
  EXPECT_EQ(c.devices[1].pfc.watchdog_detect_ms, 300u);  // the user's key stays
  EXPECT_NE(out.find("# my fabric host"), std::string::npos);
  EXPECT_NE(out.find("port = \"loopback\"   # keep me"), std::string::npos);
  EXPECT_NE(out.find("dscp_to_prio = { \"26\" = 4 }"), std::string::npos);
}

TEST(HostSettings, LossyBringsTheProfilesOtherKeysAndBackAgain) {
  fabric::Settings s = host_settings(parse(kTwoDevices).devices[0]);
  std::string err, out;
  ASSERT_TRUE(fabric::apply_json(R"({"profile": "lossy", "mtu": 1024, "dcqcn": false})",
                                 fabric::Role::kHost, &s, &err));
  ASSERT_TRUE(write_host_settings(kTwoDevices, "t.toml", s, &out, &err)) << err;
  config::Config c = parse(out);
  EXPECT_EQ(c.devices[0].loss_recovery, config::Device::LossRecovery::kSelective);
  EXPECT_FALSE(c.devices[0].dcqcn.enabled);
  EXPECT_EQ(c.devices[0].mtu, 1024u);
  // Back to no profile, a map equal to the default: the key goes.
  fabric::Settings back = host_settings(c.devices[0]);
  ASSERT_TRUE(fabric::apply_json(R"({"profile": "", "dscp_to_prio": {"26": 3}})",
                                 fabric::Role::kHost, &back, &err));
  std::string again;
  ASSERT_TRUE(write_host_settings(out, "t.toml", back, &again, &err)) << err;
  EXPECT_EQ(again.find("dscp_to_prio"), std::string::npos);
  EXPECT_EQ(parse(again).devices[1].profile, "");
}

TEST(HostSettings, InlineTablesAndBadTextAreRefused) {
  fabric::Settings s = fabric::defaults(fabric::Role::kHost);
  std::string out, err;
  EXPECT_FALSE(write_host_settings(
      "[[device]]\nname = \"a\"\naddresses = [\"198.18.0.1/15\"]\npfc = { xoff_bytes = 1 }\n",
      "t.toml", s, &out, &err));
  EXPECT_NE(err.find("inline"), std::string::npos) << err;
  EXPECT_FALSE(write_host_settings("[[device]\n", "t.toml", s, &out, &err));
}

}  // namespace
}  // namespace uroce::tool
