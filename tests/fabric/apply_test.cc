/**
 * @file apply_test.cc
 * @brief apply_change on fake nodes (NodeApi over in-memory backends): every node changed or
 * none; a node unreachable or refusing before the change stops it with nothing changed; a node
 * that vanishes during the change gets the others rolled back, each outcome reported; a dry run
 * changes nothing. And the inventory's parser.
 */
#include "fabric/apply.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "fabric/node_api.h"

namespace uroce::fabric {
namespace {

class MemNode : public NodeBackend {
 public:
  MemNode(std::string name, Role r) : name_(std::move(name)), r_(r), s_(defaults(r)) {}
  Role role() const override { return r_; }
  std::string name() const override { return name_; }
  Settings settings() const override { return s_; }
  std::string apply(const Settings& s) override {
    s_ = s;
    return "";
  }
  std::string state_json() const override { return "{}"; }

 private:
  std::string name_;
  Role r_;
  Settings s_;
};

/// Four hosts and two switches behind one fake transport; `down[name]` = the number of calls
/// the node still answers before it stops answering (-1: always answers).
struct FakeFabric {
  Inventory inv;
  std::map<std::string, std::unique_ptr<MemNode>> nodes;
  std::map<std::string, std::unique_ptr<NodeApi>> apis;  // by "addr:port"
  std::map<std::string, int> answers_left;
  int calls = 0;

  FakeFabric() {
    const char* names[] = {"h1", "h2", "h3", "h4", "leaf", "spine"};
    for (int i = 0; i < 6; ++i) {
      Node n{names[i], i < 4 ? Role::kHost : Role::kSwitch,
             "198.18.0." + std::to_string(i + 1) + ":7480"};
      nodes[n.name] = std::make_unique<MemNode>(n.name, n.role);
      apis[n.api] = std::make_unique<NodeApi>(nodes[n.name].get());
      answers_left[n.name] = -1;
      inv.nodes.push_back(n);
    }
  }
  Transport transport() {
    return [this](const std::vector<mgmt::Call>& cs) {
      std::vector<mgmt::Result> out;
      for (const mgmt::Call& c : cs) {
        ++calls;
        const std::string rest = c.url.substr(7);  // "http://"
        const std::string api = rest.substr(0, rest.find('/'));
        std::string path = rest.substr(rest.find('/'));
        std::string query;
        if (auto q = path.find('?'); q != std::string::npos) {
          query = path.substr(q + 1);
          path = path.substr(0, q);
        }
        std::string name;
        for (const Node& n : inv.nodes)
          if (n.api == api) name = n.name;
        int& left = answers_left[name];
        if (left == 0) {
          out.push_back(mgmt::Result{0, "", "Connection refused"});
          continue;
        }
        if (left > 0) --left;
        if (c.method != "GET" && c.token != "tok") {
          out.push_back(mgmt::Result{403, R"({"error":"wrong token"})", ""});
          continue;
        }
        mgmt::Response r = apis[api]->handle({c.method, path, query, c.body});
        out.push_back(mgmt::Result{r.status, r.body, ""});
      }
      return out;
    };
  }
  uint8_t pfc(const std::string& name) { return nodes[name]->settings().pfc_priorities; }
};

TEST(FabricApply, LosslessEverywhere) {
  FakeFabric f;
  ApplyReport r = apply_change(f.inv, profile_change("lossless"), "tok", false, f.transport());
  ASSERT_TRUE(r.ok) << r.stopped;
  for (const NodeReport& n : r.nodes) {
    EXPECT_EQ(n.outcome, Outcome::kChanged) << n.node;
    EXPECT_EQ(f.pfc(n.node), 1u << 3) << n.node;
  }
  // Again: nothing to change, no write.
  const int before = f.calls;
  r = apply_change(f.inv, profile_change("lossless"), "tok", false, f.transport());
  ASSERT_TRUE(r.ok);
  for (const NodeReport& n : r.nodes) EXPECT_EQ(n.outcome, Outcome::kUnchanged);
  EXPECT_EQ(f.calls - before, 12);  // 6 reads + 6 dry runs
}

TEST(FabricApply, AProfileMakesEveryNodeAlikeAChangeFileOnlyItsKeys) {
  FakeFabric f;
  std::string err;
  // h2 has another map and MTU; a change file keeps them, a profile does not.
  ASSERT_EQ(
      f.apis["198.18.0.2:7480"]
          ->handle({"PATCH", "/v1/settings", "", R"({"dscp_to_prio": {"26": 4}, "mtu": 4096})"})
          .status,
      200);
  auto c = parse_change_file(R"({"all": {"ecn": {"enabled": true}, "profile": "lossless"}})", &err);
  ASSERT_TRUE(c) << err;
  ASSERT_TRUE(apply_change(f.inv, *c, "tok", false, f.transport()).ok);
  EXPECT_EQ(f.pfc("h2"), 1u << 4);
  EXPECT_EQ(f.nodes["h2"]->settings().mtu, 4096u);
  ApplyReport r = apply_change(f.inv, profile_change("lossless"), "tok", false, f.transport());
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(f.pfc("h2"), 1u << 3);
  EXPECT_EQ(f.nodes["h2"]->settings().mtu, 1024u);
  EXPECT_EQ(f.nodes["h2"]->settings(), f.nodes["h1"]->settings());
}

TEST(FabricApply, DryRunChangesNothing) {
  FakeFabric f;
  ApplyReport r = apply_change(f.inv, profile_change("lossless"), "tok", true, f.transport());
  ASSERT_TRUE(r.ok);
  for (const NodeReport& n : r.nodes) {
    EXPECT_EQ(n.outcome, Outcome::kWouldChange);
    EXPECT_FALSE(n.changes.empty());
    EXPECT_EQ(f.pfc(n.node), 0);
  }
}

TEST(FabricApply, AnUnreachableNodeStopsItBeforeAnythingChanges) {
  FakeFabric f;
  f.answers_left["h3"] = 0;
  ApplyReport r = apply_change(f.inv, profile_change("lossless"), "tok", false, f.transport());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stopped, "read");
  EXPECT_EQ(r.nodes[2].outcome, Outcome::kFailed);
  EXPECT_NE(r.nodes[2].error.find("Connection refused"), std::string::npos);
  for (const auto& [name, node] : f.nodes) EXPECT_EQ(f.pfc(name), 0) << name;
}

TEST(FabricApply, ARefusalStopsItBeforeAnythingChanges) {
  FakeFabric f;
  // A document one role refuses: kmin is a switch's key.
  Change c{R"({"profile": "lossless", "ecn": {"kmin_bytes": 1}})", R"({"profile": "lossless"})"};
  ApplyReport r = apply_change(f.inv, c, "tok", false, f.transport());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stopped, "check");
  EXPECT_EQ(r.nodes[0].outcome, Outcome::kFailed);
  EXPECT_NE(r.nodes[0].error.find("ecn.kmin_bytes"), std::string::npos) << r.nodes[0].error;
  EXPECT_EQ(r.nodes[4].outcome, Outcome::kNotTried);
  for (const auto& [name, node] : f.nodes) EXPECT_EQ(f.pfc(name), 0) << name;
  // A wrong token is refused at the check too.
  r = apply_change(f.inv, profile_change("lossless"), "bad", false, f.transport());
  EXPECT_EQ(r.stopped, "check");
}

TEST(FabricApply, ANodeThatVanishesDuringTheChangeGetsTheOthersRolledBack) {
  FakeFabric f;
  ASSERT_TRUE(apply_change(f.inv, profile_change("lossy"), "tok", false, f.transport()).ok);
  f.answers_left["spine"] = 2;  // answers the read and the dry run, then is gone
  ApplyReport r = apply_change(f.inv, profile_change("lossless"), "tok", false, f.transport());
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.stopped, "apply");
  for (const NodeReport& n : r.nodes) {
    if (n.node == "spine") {
      EXPECT_EQ(n.outcome, Outcome::kUnknown);  // its write and its roll-back went unanswered
      EXPECT_NE(n.error.find("roll-back failed"), std::string::npos);
    } else {
      EXPECT_EQ(n.outcome, Outcome::kRolledBack) << n.node;
      EXPECT_EQ(f.pfc(n.node), 0) << n.node;
      EXPECT_EQ(f.nodes[n.node]->settings().profile, "lossy") << n.node;
    }
  }
}

TEST(FabricApply, ChangeFileMergesAllWithTheRole) {
  std::string err;
  auto c = parse_change_file(
      R"({"all": {"profile": "lossless", "pfc": {"xoff_bytes": 100000}},
          "switch": {"ecn": {"kmin_bytes": 5000}}})",
      &err);
  ASSERT_TRUE(c) << err;
  EXPECT_EQ(c->host, R"({"pfc":{"xoff_bytes":100000},"profile":"lossless"})");
  EXPECT_NE(c->sw.find("kmin_bytes"), std::string::npos);
  EXPECT_FALSE(parse_change_file(R"({"hosts": {}})", &err));
  EXPECT_FALSE(parse_change_file("[1]", &err));
}

TEST(FabricInventory, ParsesNodesAndRefusesWhatIsWrong) {
  std::string err;
  auto inv = parse_inventory(R"(
token_file = "/etc/uroce/fabric.token"
timeout_ms = 500
[[node]]
name = "h1"
role = "host"
api = "198.18.0.1:7480"
[[node]]
name = "leaf"
role = "switch"
api = "[2001:2::1]:7480"
)",
                             "inv.toml", &err);
  ASSERT_TRUE(inv) << err;
  EXPECT_EQ(inv->nodes.size(), 2u);
  EXPECT_EQ(inv->nodes[1].role, Role::kSwitch);
  EXPECT_EQ(inv->nodes[1].url("/v1"), "http://[2001:2::1]:7480/v1");
  EXPECT_EQ(inv->timeout_ms, 500u);
  for (const char* bad :
       {"", "[[node]]\nname = \"a\"\nrole = \"router\"\napi = \"x:1\"\n",
        "[[node]]\nname = \"a\"\nrole = \"host\"\napi = \"x\"\n",
        "[[node]]\nname = \"a\"\nrole = \"host\"\napi = \"x:1\"\n[[node]]\nname "
        "= \"a\"\nrole = \"host\"\napi = \"y:1\"\n",
        "colour = 1\n[[node]]\nname = \"a\"\nrole = \"host\"\napi = \"x:1\"\n", "[[node]\n"})
    EXPECT_FALSE(parse_inventory(bad, "inv.toml", &err)) << bad;
}

}  // namespace
}  // namespace uroce::fabric
