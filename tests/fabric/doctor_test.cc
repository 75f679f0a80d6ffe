/**
 * @file doctor_test.cc
 * @brief The fabric's view and doctor on built samples: a consistent lossless fabric has no
 * finding; each classic misconfiguration is named with its nodes; counters give rates worst
 * first; node API state documents are read for both roles.
 */
#include "fabric/doctor.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fabric/view.h"

namespace uroce::fabric {
namespace {

NodeSample node(const std::string& name, Role r, const std::string& profile = "lossless") {
  NodeSample s;
  s.node = Node{name, r, "198.18.0.1:7480"};
  s.ok = true;
  s.settings = defaults(r);
  std::string err;
  EXPECT_TRUE(apply_json("{\"profile\": \"" + profile + "\"}", r, &s.settings, &err)) << err;
  return s;
}

std::vector<NodeSample> fabric(const std::string& profile = "lossless") {
  std::vector<NodeSample> v;
  for (const char* h : {"h1", "h2", "h3", "h4"}) v.push_back(node(h, Role::kHost, profile));
  for (const char* s : {"leaf", "spine"}) v.push_back(node(s, Role::kSwitch, profile));
  return v;
}

const Finding* find(const std::vector<Finding>& f, const std::string& check) {
  auto it = std::find_if(f.begin(), f.end(), [&](const Finding& x) { return x.check == check; });
  return it == f.end() ? nullptr : &*it;
}

TEST(FabricDoctor, AConsistentFabricHasNoFinding) {
  EXPECT_TRUE(diagnose(fabric(), {}).empty()) << render_findings(diagnose(fabric(), {}));
  EXPECT_TRUE(diagnose(fabric("lossy"), {}).empty());
}

TEST(FabricDoctor, AHostOnAnotherPriorityWithoutPfcIsNamed) {
  auto v = fabric();
  std::string err;
  ASSERT_TRUE(apply_json(R"({"dscp_to_prio": {"26": 4}, "pfc": {"priorities": []}})", Role::kHost,
                         &v[1].settings, &err));
  auto f = diagnose(v, {});
  const Finding* prio = find(f, "roce-priority");
  ASSERT_NE(prio, nullptr) << render_findings(f);
  EXPECT_EQ(prio->nodes, std::vector<std::string>{"h2"});
  EXPECT_NE(prio->fix.find("\"26\": 3"), std::string::npos) << prio->fix;
  const Finding* pfc = find(f, "pfc-mismatch");
  ASSERT_NE(pfc, nullptr);
  EXPECT_EQ(pfc->nodes, std::vector<std::string>{"h2"});
  EXPECT_NE(pfc->what.find("but not on h2"), std::string::npos) << pfc->what;
}

TEST(FabricDoctor, ASwitchThatPausesAnotherPriority) {
  auto v = fabric();
  v[5].settings.pfc_priorities = 1u << 4;
  auto f = diagnose(v, {});
  const Finding* pfc = find(f, "pfc-mismatch");
  ASSERT_NE(pfc, nullptr);
  EXPECT_EQ(pfc->nodes, std::vector<std::string>{"spine"});
}

TEST(FabricDoctor, EcnOffTrustMtuProfileDrift) {
  auto v = fabric();
  v[4].settings.ecn = false;          // leaf does not mark
  v[5].settings.trust = Trust::kPcp;  // spine trusts PCP
  v[5].settings.mtu = 1500;
  v[0].settings.mtu = 4096;  // h1's RoCE packets do not fit spine
  v[2].drift = {"uroce1"};
  v[3].settings.profile = "hpc";
  auto f = diagnose(v, {});
  ASSERT_NE(find(f, "ecn-off"), nullptr);
  EXPECT_EQ(find(f, "ecn-off")->nodes, std::vector<std::string>{"leaf"});
  ASSERT_NE(find(f, "trust"), nullptr);
  EXPECT_EQ(find(f, "trust")->nodes, std::vector<std::string>{"spine"});
  ASSERT_NE(find(f, "mtu"), nullptr);
  EXPECT_EQ(find(f, "mtu")->nodes, std::vector<std::string>{"h1"});
  ASSERT_NE(find(f, "drift"), nullptr);
  ASSERT_NE(find(f, "profile"), nullptr);
  EXPECT_EQ(find(f, "profile")->nodes, std::vector<std::string>{"h4"});
}

TEST(FabricDoctor, CountersStormsCnpsWithoutMarksDropsWhereLossless) {
  auto v = fabric();
  PortCounters hp;
  hp.port = "uroce0 pid 1";
  hp.cnp_sent = 100;
  hp.storms = 2;
  v[0].ports.push_back(hp);
  PortCounters sp;
  sp.port = "port 1 (net_memif1)";
  sp.drops = 7;
  v[4].ports.push_back(sp);
  auto f = diagnose(v, {});
  ASSERT_NE(find(f, "pfc-storm"), nullptr) << render_findings(f);
  ASSERT_NE(find(f, "cnp-without-ecn"), nullptr);
  ASSERT_NE(find(f, "drops-lossless"), nullptr);
  EXPECT_EQ(find(f, "drops-lossless")->nodes, std::vector<std::string>{"leaf"});
  // Marks on a switch explain the CNPs.
  v[5].ports.push_back(PortCounters{.port = "port 0", .ecn_marked = 50});
  EXPECT_EQ(find(diagnose(v, {}), "cnp-without-ecn"), nullptr);
}

TEST(FabricDoctor, UnreachableNodesAreFindings) {
  auto v = fabric();
  v[2].ok = false;
  v[2].error = "no answer: Connection refused";
  auto f = diagnose(v, {});
  ASSERT_EQ(f.size(), 1u) << render_findings(f);
  EXPECT_EQ(f[0].check, "unreachable");
  EXPECT_EQ(f[0].nodes, std::vector<std::string>{"h3"});
}

TEST(FabricView, StateDocumentsOfBothRolesAndRatesWorstFirst) {
  const Node sw{"leaf", Role::kSwitch, "a:1"};
  const Node h{"h1", Role::kHost, "b:1"};
  auto switch_doc = [](int drops, int xoff) {
    return R"({"node":"leaf","role":"switch","settings":{"profile":"lossless"},"state":{"ports":[)"
           R"({"port":0,"name":"net_memif0","pfc_xoff_sent":)" +
           std::to_string(xoff) +
           R"(,"drops":0,"ecn_marked":5,"paused_prios":[3]},)"
           R"({"port":1,"name":"net_memif1","drops":)" +
           std::to_string(drops) + R"(,"mtu_drops":1}]}})";
  };
  const std::string host_doc =
      R"({"node":"h1","role":"host","settings":{},"state":{"drift":["uroce1"],"running":{"devices":[)"
      R"({"device":"uroce0","pid":7,"state":"running","priorities":[{"tx_prio_pause":3},)"
      R"({"rx_prio_pause":4}],"congestion":{"np_cnp_sent":9},"reliability":{"roce_adp_retrans":2},)"
      R"("pfc":{"tx_pause_storm_warning_events":1}}]}}})";
  NodeSample a = sample_node(sw, 200, switch_doc(10, 100), "");
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.settings.pfc_priorities, 1u << 3);
  ASSERT_EQ(a.ports.size(), 2u);
  EXPECT_EQ(a.ports[1].drops, 11u);
  EXPECT_EQ(a.ports[0].paused_prios, std::vector<int>{3});
  NodeSample b = sample_node(h, 200, host_doc, "");
  ASSERT_TRUE(b.ok) << b.error;
  ASSERT_EQ(b.ports.size(), 1u);
  EXPECT_EQ(b.ports[0].pause_tx, 3u);
  EXPECT_EQ(b.ports[0].pause_rx, 4u);
  EXPECT_EQ(b.ports[0].cnp_sent, 9u);
  EXPECT_EQ(b.drift, std::vector<std::string>{"uroce1"});
  NodeSample a2 = sample_node(sw, 200, switch_doc(30, 500), "");
  auto r = rows({a, b}, {a2, b}, 2.0);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].port, "port 1 (net_memif1)");  // 10 drops/s first
  EXPECT_DOUBLE_EQ(r[0].drops, 10.0);
  EXPECT_EQ(r[1].node, "h1");  // a storm next
  EXPECT_DOUBLE_EQ(r[2].pause_tx, 200.0);
  EXPECT_NE(render_table({a2, b}, r).find("DRIFT: uroce1"), std::string::npos);
  EXPECT_NE(render_json({a2, b}, r).find("\"drops_per_s\":10.0"), std::string::npos);
  // Wrong role, no answer, not a document.
  EXPECT_FALSE(sample_node(Node{"x", Role::kHost, "c:1"}, 200, switch_doc(0, 0), "").ok);
  EXPECT_FALSE(sample_node(sw, 0, "", "refused").ok);
  EXPECT_FALSE(sample_node(sw, 200, "[]", "").ok);
}

}  // namespace
}  // namespace uroce::fabric
