/**
 * @file inventory.h
 * @brief The fabric's inventory (docs/fabric.md "uroce fabric"): its nodes, their roles and API
 * addresses, the token file writes use and the per-request time limit. A TOML file:
 *
 *   token_file = "/etc/uroce/fabric.token"   # optional: without it, read-only commands only
 *   timeout_ms = 3000                        # optional
 *
 *   [[node]]
 *   name = "h1"
 *   role = "host"                            # or "switch"
 *   api = "198.18.0.1:7480"                  # ADDR:PORT, IPv6 as [ADDR]:PORT
 *
 * Names are unique; at least one node.
 */
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fabric/settings.h"

namespace uroce::fabric {

struct Node {
  std::string name;
  Role role = Role::kHost;
  std::string api;  ///< ADDR:PORT
  std::string url(const std::string& path) const { return "http://" + api + path; }
};

struct Inventory {
  std::string source;
  std::string token_file;
  uint32_t timeout_ms = 3000;
  std::vector<Node> nodes;
};

/// Parses the inventory text; nullopt with *err = "<source>: <key>: <problem>".
std::optional<Inventory> parse_inventory(const std::string& text, const std::string& source,
                                         std::string* err);

}  // namespace uroce::fabric
