/**
 * @file settings_test.cc
 * @brief fabric::Settings: profiles as the hosts' configuration applies them, change documents
 * accepted whole or not at all, role-only keys, and the differences reported.
 */
#include "fabric/settings.h"

#include <gtest/gtest.h>

#include <string>

namespace uroce::fabric {
namespace {

TEST(FabricSettings, DefaultsAreTheClassSelectorMapWithoutPfc) {
  Settings h = defaults(Role::kHost);
  EXPECT_EQ(h.roce_prio(), 3);
  EXPECT_EQ(h.dscp_to_prio[48], 6);
  EXPECT_EQ(h.pfc_priorities, 0);
  EXPECT_EQ(h.mtu, 1024u);
  EXPECT_EQ(defaults(Role::kSwitch).mtu, 9000u);
  std::string err;
  EXPECT_TRUE(validate(h, Role::kHost, &err)) << err;
}

TEST(FabricSettings, LosslessPausesTheRoceDataPriorityOfTheMap) {
  Settings s = defaults(Role::kSwitch);
  std::string err;
  ASSERT_TRUE(
      apply_json(R"({"dscp_to_prio": {"26": 4}, "profile": "lossless"})", Role::kSwitch, &s, &err))
      << err;
  EXPECT_EQ(s.pfc_priorities, 1u << 4);  // the map in the same document counts
  EXPECT_EQ(s.pfc_xoff_bytes, 64u * 1024);
  EXPECT_EQ(s.profile, "lossless");
  ASSERT_TRUE(apply_json(R"({"profile": "lossy"})", Role::kSwitch, &s, &err)) << err;
  EXPECT_EQ(s.pfc_priorities, 0);
  EXPECT_TRUE(s.ecn);
  ASSERT_TRUE(apply_json(R"({"profile": "storage"})", Role::kSwitch, &s, &err)) << err;
  EXPECT_EQ(s.pfc_xoff_bytes, 256u * 1024);
}

TEST(FabricSettings, ExplicitKeysFollowTheProfile) {
  Settings s = defaults(Role::kHost);
  std::string err;
  ASSERT_TRUE(apply_json(R"({"pfc": {"xoff_bytes": 100000}, "profile": "lossless"})", Role::kHost,
                         &s, &err))
      << err;
  EXPECT_EQ(s.pfc_xoff_bytes, 100000u);
  EXPECT_EQ(s.pfc_priorities, 1u << 3);
}

TEST(FabricSettings, BadDocumentsChangeNothingAndNameTheKey) {
  Settings s = defaults(Role::kSwitch);
  const Settings before = s;
  struct Case {
    const char* body;
    const char* key;
  } cases[] = {
      {"{", "(document)"},
      {"[1]", "(document)"},
      {R"({"colour": 1})", "colour"},
      {R"({"pfc": {"priorities": [8]}})", "pfc.priorities[0]"},
      {R"({"pfc": {"xof_bytes": 1}})", "pfc.xof_bytes"},
      {R"({"pfc": {"priorities": [3], "xoff_bytes": 0}})", "pfc.xoff_bytes"},
      {R"({"pfc": {"xoff_bytes": 10, "xon_bytes": 20}})", "pfc.xon_bytes"},
      {R"({"roce_dscp": 64})", "roce_dscp"},
      {R"({"roce_dscp": -1})", "roce_dscp"},
      {R"({"roce_dscp": "26"})", "roce_dscp"},
      {R"({"dscp_to_prio": [1, 2]})", "dscp_to_prio"},
      {R"({"dscp_to_prio": {"64": 1}})", "dscp_to_prio.64"},
      {R"({"dscp_to_prio": {"x": 1}})", "dscp_to_prio.x"},
      {R"({"trust": "vlan"})", "trust"},
      {R"({"ecn": {"pmax": 1.5}})", "ecn.pmax"},
      {R"({"ecn": {"kmin_bytes": 300000}})", "ecn.kmin_bytes"},
      {R"({"mtu": 100})", "mtu"},
      {R"({"dcqcn": false})", "dcqcn"},  // a host's setting
      {R"({"profile": "fast"})", "profile"},
  };
  for (const Case& c : cases) {
    std::string err;
    EXPECT_FALSE(apply_json(c.body, Role::kSwitch, &s, &err)) << c.body;
    EXPECT_EQ(err.rfind(c.key, 0), 0u) << c.body << " -> " << err;
    EXPECT_EQ(s, before) << c.body;
  }
  std::string err;
  EXPECT_FALSE(apply_json(std::string(kMaxBodyBytes + 1, ' '), Role::kSwitch, &s, &err));
  Settings h = defaults(Role::kHost);
  EXPECT_FALSE(apply_json(R"({"ecn": {"kmin_bytes": 1}})", Role::kHost, &h, &err));
  EXPECT_FALSE(apply_json(R"({"mtu": 1000})", Role::kHost, &h, &err));
  EXPECT_TRUE(apply_json(R"({"mtu": 4096, "dcqcn": false})", Role::kHost, &h, &err)) << err;
  EXPECT_FALSE(h.dcqcn);
}

TEST(FabricSettings, JsonRoundTripsAndDiffNamesWhatChanged) {
  for (Role r : {Role::kHost, Role::kSwitch}) {
    Settings s = defaults(r);
    std::string err;
    ASSERT_TRUE(
        apply_json(R"({"profile": "hpc", "trust": "pcp", "pcp_to_prio": {"5": 3}})", r, &s, &err))
        << err;
    Settings back = defaults(r);
    ASSERT_TRUE(apply_json(to_json(s, r), r, &back, &err)) << err;
    EXPECT_EQ(back, s);
    std::vector<std::string> d = diff(defaults(r), s, r);
    EXPECT_NE(std::find(d.begin(), d.end(), "pfc.priorities: [] -> [3]"), d.end());
    EXPECT_NE(std::find(d.begin(), d.end(), "trust: \"dscp\" -> \"pcp\""), d.end());
    EXPECT_TRUE(diff(s, back, r).empty());
  }
}

}  // namespace
}  // namespace uroce::fabric
