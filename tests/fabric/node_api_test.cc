/**
 * @file node_api_test.cc
 * @brief NodeApi's routes on a fake backend: reads, a change applied whole with what changed, a
 * dry run that changes nothing, a refused document or a refusing backend leaving the settings
 * as they were, unknown resources and methods.
 */
#include "fabric/node_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace uroce::fabric {
namespace {

using nlohmann::json;

class FakeSwitch : public NodeBackend {
 public:
  Role role() const override { return Role::kSwitch; }
  std::string name() const override { return "leaf1"; }
  Settings settings() const override { return s_; }
  std::string apply(const Settings& s) override {
    ++applies;
    if (!refuse.empty()) return refuse;
    s_ = s;
    return "";
  }
  std::string state_json() const override { return R"({"ports": [{"port": 0}]})"; }

  Settings s_ = defaults(Role::kSwitch);
  int applies = 0;
  std::string refuse;
};

mgmt::Request req(std::string method, std::string path, std::string body = "",
                  std::string query = "") {
  return mgmt::Request{std::move(method), std::move(path), std::move(query), std::move(body)};
}

TEST(NodeApi, ReadsDescribeTheNode) {
  FakeSwitch b;
  NodeApi api(&b);
  mgmt::Response r = api.handle(req("GET", "/v1"));
  ASSERT_EQ(r.status, 200);
  json j = json::parse(r.body);
  EXPECT_EQ(j["role"], "switch");
  EXPECT_EQ(j["node"], "leaf1");
  EXPECT_EQ(j["version"], kApiVersion);
  r = api.handle(req("GET", "/v1/state"));
  ASSERT_EQ(r.status, 200);
  j = json::parse(r.body);
  EXPECT_EQ(j["state"]["ports"][0]["port"], 0);
  EXPECT_EQ(j["settings"]["mtu"], 9000);
  EXPECT_EQ(api.handle(req("GET", "/v2/state")).status, 404);
  EXPECT_EQ(api.handle(req("DELETE", "/v1/settings")).status, 405);
  EXPECT_EQ(api.handle(req("POST", "/v1/state")).status, 405);
}

TEST(NodeApi, PatchAppliesWholeAndSaysWhatChanged) {
  FakeSwitch b;
  NodeApi api(&b);
  mgmt::Response r = api.handle(req("PATCH", "/v1/settings", R"({"profile": "lossless"})"));
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_TRUE(j["applied"]);
  EXPECT_NE(std::find(j["changed"].begin(), j["changed"].end(), "pfc.priorities: [] -> [3]"),
            j["changed"].end());
  EXPECT_EQ(b.s_.pfc_priorities, 1u << 3);
  // The same again changes nothing and does not reach the backend.
  r = api.handle(req("PATCH", "/v1/settings", R"({"profile": "lossless"})"));
  j = json::parse(r.body);
  EXPECT_FALSE(j["applied"]);
  EXPECT_TRUE(j["changed"].empty());
  EXPECT_EQ(b.applies, 1);
}

TEST(NodeApi, DryRunAndRefusalsChangeNothing) {
  FakeSwitch b;
  NodeApi api(&b);
  mgmt::Response r =
      api.handle(req("PATCH", "/v1/settings", R"({"profile": "lossless"})", "dry_run=1"));
  ASSERT_EQ(r.status, 200);
  json j = json::parse(r.body);
  EXPECT_FALSE(j["applied"]);
  EXPECT_FALSE(j["changed"].empty());
  EXPECT_EQ(b.applies, 0);
  EXPECT_EQ(b.s_, defaults(Role::kSwitch));
  r = api.handle(req("PATCH", "/v1/settings", R"({"pfc": {"priorities": [9]}})"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("pfc.priorities[0]"), std::string::npos);
  b.refuse = "datapath did not answer";
  r = api.handle(req("PATCH", "/v1/settings", R"({"ecn": {"enabled": false}})"));
  EXPECT_EQ(r.status, 503);
  EXPECT_TRUE(b.s_.ecn);
}

TEST(NodeApi, MetricsSayWhatTheNodeRuns) {
  FakeSwitch b;
  NodeApi api(&b, [] { return std::string(R"({"in_sync": true})"); });
  ASSERT_EQ(api.handle(req("PATCH", "/v1/settings", R"({"profile": "lossless"})")).status, 200);
  mgmt::Response r = api.handle(req("GET", "/metrics"));
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type.rfind("text/plain", 0), 0u);
  EXPECT_NE(r.body.find("uroce_node_lossless{node=\"leaf1\",role=\"switch\"} 1\n"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("uroce_node_pfc_enabled{node=\"leaf1\",role=\"switch\",priority=\"3\"} 1"),
            std::string::npos);
  EXPECT_NE(r.body.find("uroce_node_desired_in_sync{node=\"leaf1\",role=\"switch\"} 1"),
            std::string::npos);
  EXPECT_NE(r.body.find("uroce_node_info{node=\"leaf1\",role=\"switch\",profile=\"lossless\"} 1"),
            std::string::npos);
  EXPECT_EQ(api.handle(req("POST", "/metrics")).status, 405);
}

TEST(NodeApi, PutStartsFromTheDefaults) {
  FakeSwitch b;
  NodeApi api(&b);
  ASSERT_EQ(
      api.handle(req("PATCH", "/v1/settings", R"({"profile": "lossless", "mtu": 4000})")).status,
      200);
  ASSERT_EQ(api.handle(req("PUT", "/v1/settings", R"({"trust": "pcp"})")).status, 200);
  EXPECT_EQ(b.s_.pfc_priorities, 0);
  EXPECT_EQ(b.s_.mtu, 9000u);
  EXPECT_EQ(b.s_.trust, Trust::kPcp);
}

}  // namespace
}  // namespace uroce::fabric
