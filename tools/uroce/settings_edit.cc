/**
 * @file settings_edit.cc
 * @brief host_settings and write_host_settings (see settings_edit.h).
 */
#include "settings_edit.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "profile_edit.h"

namespace uroce::tool {

namespace {

constexpr std::string_view kComment = "  # uroce node API (docs/fabric.md)\n";

std::string kv(std::string_view key, const std::string& value) {
  return fmt::format("{} = {}{}", key, value, kComment);
}

/// `{ "26" = 4 }`: the entries that differ from `base`, or "" when none does.
template <size_t N>
std::string map_diff(const std::array<uint8_t, N>& m, const std::array<uint8_t, N>& base) {
  std::string out;
  for (size_t i = 0; i < N; ++i)
    if (m[i] != base[i]) out += fmt::format("{}\"{}\" = {}", out.empty() ? "" : ", ", i, m[i]);
  return out.empty() ? "" : "{ " + out + " }";
}

/// The fields a host's settings consist of (the switch-only ones are not a host's).
bool same_for_host(const fabric::Settings& a, const fabric::Settings& b) {
  fabric::Settings x = a, y = b;
  const fabric::Settings d = fabric::defaults(fabric::Role::kHost);
  x.ecn_kmin_bytes = y.ecn_kmin_bytes = d.ecn_kmin_bytes;
  x.ecn_kmax_bytes = y.ecn_kmax_bytes = d.ecn_kmax_bytes;
  x.ecn_pmax = y.ecn_pmax = d.ecn_pmax;
  return x == y;
}

}  // namespace

fabric::Settings host_settings(const config::Device& d) {
  fabric::Settings s = fabric::defaults(fabric::Role::kHost);
  s.profile = d.profile;
  s.roce_dscp = d.roce_dscp;
  s.cnp_dscp = d.cnp_dscp;
  s.trust = d.trust == config::Device::Trust::kPcp ? fabric::Trust::kPcp : fabric::Trust::kDscp;
  s.dscp_to_prio = d.dscp_to_prio;
  s.pcp_to_prio = d.pcp_to_prio;
  s.pfc_priorities = 0;
  for (int p = 0; p < 8; ++p)
    if (d.pfc.enabled[p]) s.pfc_priorities = static_cast<uint8_t>(s.pfc_priorities | 1u << p);
  s.pfc_xoff_bytes = d.pfc.xoff_bytes;
  s.pfc_xon_bytes = d.pfc.xon_bytes;
  s.ecn = d.ecn;
  s.mtu = d.mtu;
  s.dcqcn = d.dcqcn.enabled;
  return s;
}

bool write_host_settings(const std::string& text, const std::string& source,
                         const fabric::Settings& s, std::string* out, std::string* err) {
  std::string base = text;
  if (!s.profile.empty() && !apply_profile_text(text, source, s.profile, "", &base, err))
    return false;
  const fabric::Settings d = fabric::defaults(fabric::Role::kHost);
  auto edits_for = [&](const config::Device&) {
    std::vector<KeyEdit> e;
    auto set = [&](const char* table, std::string_view key, const std::string& value) {
      e.push_back(KeyEdit{table, std::string(key), value.empty() ? "" : kv(key, value)});
    };
    set("device", "profile", fmt::format("\"{}\"", s.profile));
    set("device", "roce_dscp", std::to_string(s.roce_dscp));
    set("device", "cnp_dscp", std::to_string(s.cnp_dscp));
    set("device", "trust", s.trust == fabric::Trust::kPcp ? "\"pcp\"" : "\"dscp\"");
    set("device", "dscp_to_prio", map_diff(s.dscp_to_prio, d.dscp_to_prio));
    set("device", "pcp_to_prio", map_diff(s.pcp_to_prio, d.pcp_to_prio));
    set("device", "mtu", std::to_string(s.mtu));
    set("device", "ecn", s.ecn ? "true" : "false");
    set("device.pfc", "enabled",
        fmt::format("[{}]", fmt::join(fabric::priorities(s.pfc_priorities), ", ")));
    set("device.pfc", "xoff_bytes", std::to_string(s.pfc_xoff_bytes));
    set("device.pfc", "xon_bytes", std::to_string(s.pfc_xon_bytes));
    set("device.dcqcn", "enabled", s.dcqcn ? "true" : "false");
    return e;
  };
  std::string edited;
  if (!edit_devices(base, source, "", edits_for, &edited, err)) return false;
  std::optional<config::Config> check = config::parse(edited, source, err);
  if (!check) return false;
  for (const config::Device& dev : check->devices)
    if (!same_for_host(host_settings(dev), s)) {
      *err = "internal error: device " + dev.name + " does not get the settings asked for";
      return false;
    }
  *out = std::move(edited);
  return true;
}

}  // namespace uroce::tool
