/**
 * @file apply.cc
 * @brief apply_change (see apply.h).
 */
#include "fabric/apply.h"

#include <nlohmann/json.hpp>

namespace uroce::fabric {

using nlohmann::json;

namespace {

/// The error a failed call carries: the node's {"error"} or the transport's.
std::string why(const mgmt::Result& r) {
  if (r.status == 0) return "no answer: " + r.error;
  json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_string())
    return "HTTP " + std::to_string(r.status) + ": " + j["error"].get<std::string>();
  return "HTTP " + std::to_string(r.status);
}

std::vector<std::string> changes_of(const mgmt::Result& r) {
  std::vector<std::string> out;
  json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("changed") && j["changed"].is_array())
    for (const json& c : j["changed"])
      if (c.is_string()) out.push_back(c.get<std::string>());
  return out;
}

}  // namespace

Change profile_change(const std::string& name) {
  const std::string doc = json{{"profile", name}}.dump();
  return Change{doc, doc, true};
}

std::optional<Change> parse_change_file(const std::string& text, std::string* err) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) {
    *err = "not a JSON object {\"all\": ..., \"host\": ..., \"switch\": ...}";
    return std::nullopt;
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "all" && k != "host" && k != "switch") {
      *err = k + ": unknown key; allowed: all, host, switch";
      return std::nullopt;
    }
    if (!v.is_object()) {
      *err = k + ": not a change document (a JSON object)";
      return std::nullopt;
    }
  }
  auto for_role = [&](const char* role) -> std::string {
    json doc = j.value("all", json::object());
    if (j.contains(role)) doc.merge_patch(j[role]);
    return doc.empty() ? std::string() : doc.dump();
  };
  return Change{for_role("host"), for_role("switch"), false};
}

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::kUnchanged: return "unchanged";
    case Outcome::kChanged: return "changed";
    case Outcome::kWouldChange: return "would change";
    case Outcome::kRolledBack: return "rolled back";
    case Outcome::kFailed: return "failed";
    case Outcome::kUnknown: return "unknown";
    case Outcome::kNotTried: return "not tried";
  }
  return "?";
}

ApplyReport apply_change(const Inventory& inv, const Change& change, const std::string& token,
                         bool dry_run, const Transport& transport) {
  ApplyReport rep;
  const size_t n = inv.nodes.size();
  rep.nodes.resize(n);
  for (size_t i = 0; i < n; ++i) rep.nodes[i].node = inv.nodes[i].name;

  // 1. Read every node's settings (the roll-back point).
  std::vector<mgmt::Call> reads;
  for (const Node& node : inv.nodes) reads.push_back({"GET", node.url("/v1/settings"), "", ""});
  const std::vector<mgmt::Result> before = transport(reads);
  for (size_t i = 0; i < n; ++i)
    if (!before[i].ok()) {
      rep.nodes[i].outcome = Outcome::kFailed;
      rep.nodes[i].error = "cannot read its settings: " + why(before[i]);
      rep.stopped = "read";
    }
  if (!rep.stopped.empty()) return rep;

  // 2. Every node checks its document (dry run).
  const char* method = change.whole ? "PUT" : "PATCH";
  std::vector<mgmt::Call> checks;
  std::vector<size_t> checked;
  for (size_t i = 0; i < n; ++i) {
    const std::string& doc = change.for_role(inv.nodes[i].role);
    if (doc.empty()) {
      rep.nodes[i].outcome = Outcome::kUnchanged;
      continue;
    }
    checks.push_back({method, inv.nodes[i].url("/v1/settings?dry_run=1"), doc, token});
    checked.push_back(i);
  }
  const std::vector<mgmt::Result> dry = transport(checks);
  std::vector<size_t> to_apply;
  for (size_t k = 0; k < checked.size(); ++k) {
    NodeReport& r = rep.nodes[checked[k]];
    if (!dry[k].ok()) {
      r.outcome = Outcome::kFailed;
      r.error = "refused the change: " + why(dry[k]);
      rep.stopped = "check";
      continue;
    }
    r.changes = changes_of(dry[k]);
    r.outcome = r.changes.empty() ? Outcome::kUnchanged : Outcome::kWouldChange;
    if (!r.changes.empty()) to_apply.push_back(checked[k]);
  }
  if (!rep.stopped.empty()) {
    for (NodeReport& r : rep.nodes)
      if (r.outcome == Outcome::kWouldChange) r.outcome = Outcome::kNotTried;
    return rep;
  }
  if (dry_run) {
    rep.ok = true;
    return rep;
  }

  // 3. Apply, all at once.
  std::vector<mgmt::Call> writes;
  for (size_t i : to_apply)
    writes.push_back(
        {method, inv.nodes[i].url("/v1/settings"), change.for_role(inv.nodes[i].role), token});
  const std::vector<mgmt::Result> done = transport(writes);
  bool all_ok = true;
  for (size_t k = 0; k < to_apply.size(); ++k) {
    NodeReport& r = rep.nodes[to_apply[k]];
    if (done[k].ok()) {
      r.outcome = Outcome::kChanged;
      r.changes = changes_of(done[k]);
    } else {
      // A node that answered refused it whole (nothing changed there); no answer: unknown.
      r.outcome = done[k].status == 0 ? Outcome::kUnknown : Outcome::kFailed;
      r.error = why(done[k]);
      all_ok = false;
    }
  }
  if (all_ok) {
    rep.ok = true;
    return rep;
  }

  // 4. Put back every node that changed or may have.
  rep.stopped = "apply";
  std::vector<mgmt::Call> undo;
  std::vector<size_t> undone;
  for (size_t i = 0; i < n; ++i) {
    const Outcome o = rep.nodes[i].outcome;
    if (o != Outcome::kChanged && o != Outcome::kUnknown) continue;
    undo.push_back({"PUT", inv.nodes[i].url("/v1/settings"), before[i].body, token});
    undone.push_back(i);
  }
  const std::vector<mgmt::Result> back = transport(undo);
  for (size_t k = 0; k < undone.size(); ++k) {
    NodeReport& r = rep.nodes[undone[k]];
    if (back[k].ok()) {
      r.outcome = Outcome::kRolledBack;
    } else {
      r.outcome = Outcome::kUnknown;
      r.error = (r.error.empty() ? "" : r.error + "; ") + "roll-back failed: " + why(back[k]);
    }
  }
  return rep;
}

}  // namespace uroce::fabric
