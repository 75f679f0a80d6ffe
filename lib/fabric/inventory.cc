/**
 * @file inventory.cc
 * @brief parse_inventory (see inventory.h), on toml++.
 */
#include "fabric/inventory.h"

#include <toml++/toml.h>

#include <set>

namespace uroce::fabric {

std::optional<Inventory> parse_inventory(const std::string& text, const std::string& source,
                                         std::string* err) {
  toml::table t;
  try {
    t = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    *err = source + ": " + std::string(e.description()) + " (line " +
           std::to_string(e.source().begin.line) + ")";
    return std::nullopt;
  }
  auto fail = [&](const std::string& key, const std::string& what) {
    *err = source + ": " + key + ": " + what;
    return std::nullopt;
  };
  Inventory inv;
  inv.source = source;
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (key != "token_file" && key != "timeout_ms" && key != "node")
      return fail(key, "unknown key; allowed: token_file, timeout_ms, [[node]]");
  }
  if (const toml::node* n = t.get("token_file")) {
    if (!n->is_string()) return fail("token_file", "not a string");
    inv.token_file = n->as_string()->get();
  }
  if (const toml::node* n = t.get("timeout_ms")) {
    if (!n->is_integer() || n->as_integer()->get() < 10 || n->as_integer()->get() > 600000)
      return fail("timeout_ms", "not an integer 10..600000");
    inv.timeout_ms = static_cast<uint32_t>(n->as_integer()->get());
  }
  const toml::array* nodes = t.get_as<toml::array>("node");
  if (!nodes || nodes->empty()) return fail("node", "missing; the inventory needs [[node]] tables");
  std::set<std::string> names;
  for (size_t i = 0; i < nodes->size(); ++i) {
    const std::string at = "node[" + std::to_string(i) + "]";
    const toml::table* nt = nodes->get(i)->as_table();
    if (!nt) return fail(at, "not a table");
    for (auto&& [k, v] : *nt) {
      const std::string key(k.str());
      if (key != "name" && key != "role" && key != "api")
        return fail(at + "." + key, "unknown key; allowed: name, role, api");
    }
    Node node;
    auto str = [&](const char* key, std::string* out) {
      const toml::node* v = nt->get(key);
      if (!v || !v->is_string() || v->as_string()->get().empty()) return false;
      *out = v->as_string()->get();
      return true;
    };
    if (!str("name", &node.name)) return fail(at + ".name", "missing or not a string");
    if (!names.insert(node.name).second) return fail(at + ".name", "\"" + node.name + "\" twice");
    std::string role;
    if (!str("role", &role) || !parse_role(role))
      return fail(at + ".role", "not \"host\" or \"switch\"");
    node.role = *parse_role(role);
    if (!str("api", &node.api) || node.api.find(':') == std::string::npos ||
        node.api.find('/') != std::string::npos)
      return fail(at + ".api", "not ADDR:PORT");
    inv.nodes.push_back(std::move(node));
  }
  return inv;
}

}  // namespace uroce::fabric
