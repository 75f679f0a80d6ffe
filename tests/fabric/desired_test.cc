/**
 * @file desired_test.cc
 * @brief Zero-touch: the desired state's layers for a node (all, role, the node's own), its
 * refusals; a follower on a loopback server that applies the document at start and again when
 * it changes, reports in, and says out of sync while the document is bad or gone.
 */
#include "fabric/desired.h"

#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>

#include "mgmt/http_server.h"

namespace uroce::fabric {
namespace {

TEST(FabricDesired, LayersAllThenRoleThenNode) {
  const std::string doc = R"({"version": 3, "all": {"profile": "lossless"},
      "host": {"mtu": 4096}, "switch": {"ecn": {"kmin_bytes": 10240}},
      "nodes": {"h5": {"dscp_to_prio": {"26": 4}, "profile": "lossless"}}})";
  std::string err;
  auto h1 = desired_for(doc, "h1", Role::kHost, &err);
  ASSERT_TRUE(h1) << err;
  EXPECT_EQ(h1->mtu, 4096u);
  EXPECT_EQ(h1->pfc_priorities, 1u << 3);
  auto h5 = desired_for(doc, "h5", Role::kHost, &err);
  ASSERT_TRUE(h5) << err;
  EXPECT_EQ(h5->pfc_priorities, 1u << 4);
  auto leaf = desired_for(doc, "leaf", Role::kSwitch, &err);
  ASSERT_TRUE(leaf) << err;
  EXPECT_EQ(leaf->ecn_kmin_bytes, 10240u);
  EXPECT_EQ(leaf->mtu, 9000u);
  for (const char* bad : {"[]", R"({"al": {}})", R"({"all": 1})", R"({"version": "x"})",
                          R"({"host": {"ecn": {"kmin_bytes": 1}}})", R"({"nodes": []})",
                          R"({"nodes": {"h1": {"mtu": 3}}})"})
    EXPECT_FALSE(desired_for(bad, "h1", Role::kHost, &err)) << bad;
}

class MemNode : public NodeBackend {
 public:
  Role role() const override { return Role::kSwitch; }
  std::string name() const override { return "leaf"; }
  Settings settings() const override {
    std::lock_guard<std::mutex> l(mu);
    return s;
  }
  std::string apply(const Settings& x) override {
    std::lock_guard<std::mutex> l(mu);
    s = x;
    ++applies;
    return "";
  }
  std::string state_json() const override { return "{}"; }
  mutable std::mutex mu;
  Settings s = defaults(Role::kSwitch);
  int applies = 0;
};

TEST(FabricDesired, AFollowerAppliesAtStartAndOnChangeAndReportsIn) {
  std::mutex mu;
  std::string doc = R"({"version": 1, "all": {"profile": "lossless"}})";
  std::vector<std::string> reports;
  std::string err;
  auto server = mgmt::Server::start(
      mgmt::ServerOptions{.listen = "127.0.0.1:0", .token = "0123456789abcdef0123"},
      [&](const mgmt::Request& r) {
        std::lock_guard<std::mutex> l(mu);
        if (r.path == "/v1/desired") {
          if (doc.empty()) return mgmt::error(404, "gone");
          return mgmt::Response{200, doc};
        }
        if (r.path == "/v1/report") reports.push_back(r.body);
        return mgmt::Response{200, "{}"};
      },
      &err);
  ASSERT_TRUE(server) << err;
  const std::string base = "http://127.0.0.1:" + std::to_string(server->port());
  MemNode node;
  // A long period: the test drives the polls itself (the first runs at construction).
  DesiredFollower f(&node, base + "/v1/desired", base + "/v1/report", "127.0.0.1:1", 3600 * 1000,
                    "0123456789abcdef0123");
  f.poll_once();
  EXPECT_EQ(node.settings().pfc_priorities, 1u << 3);
  DesiredStatus st = f.status();
  EXPECT_TRUE(st.in_sync);
  EXPECT_EQ(st.version, 1);
  EXPECT_GE(st.applied, 1u);
  {
    std::lock_guard<std::mutex> l(mu);
    ASSERT_FALSE(reports.empty());
    auto j = nlohmann::json::parse(reports.back());
    EXPECT_EQ(j["node"], "leaf");
    EXPECT_TRUE(j["in_sync"]);
    doc = R"({"version": 2, "all": {"profile": "lossy"}})";
  }
  f.poll_once();
  EXPECT_EQ(node.settings().pfc_priorities, 0);
  EXPECT_EQ(f.status().version, 2);
  // Changed by hand: the next poll puts it back.
  Settings hand = node.settings();
  hand.ecn = false;
  node.apply(hand);
  f.poll_once();
  EXPECT_TRUE(node.settings().ecn);
  // A bad document: nothing changes, the status says why.
  {
    std::lock_guard<std::mutex> l(mu);
    doc = R"({"all": {"pfc": {"priorities": [9]}}})";
  }
  const int applies = node.applies;
  f.poll_once();
  EXPECT_EQ(node.applies, applies);
  EXPECT_FALSE(f.status().in_sync);
  EXPECT_NE(f.status().error.find("pfc.priorities"), std::string::npos) << f.status().error;
  EXPECT_NE(f.status_json().find("\"in_sync\":false"), std::string::npos);
}

}  // namespace
}  // namespace uroce::fabric
