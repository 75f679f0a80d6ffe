/**
 * @file settings.cc
 * @brief Settings as JSON, profiles, validation and differences (see settings.h). Units: bytes.
 */
#include "fabric/settings.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "config/config.h"

namespace uroce::fabric {

using nlohmann::json;

namespace {

/// A change document's problem, "<key>: <what>".
struct Refused {
  std::string what;
};

[[noreturn]] void refuse(const std::string& key, const std::string& what) {
  throw Refused{key + ": " + what};
}

uint64_t need_uint(const json& v, const std::string& key, uint64_t lo, uint64_t hi) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    refuse(key, "not a non-negative integer");
  const uint64_t x = v.get<uint64_t>();
  if (x < lo || x > hi)
    refuse(key, "out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

bool need_bool(const json& v, const std::string& key) {
  if (!v.is_boolean()) refuse(key, "not true or false");
  return v.get<bool>();
}

/// One map entry list: an array of exactly N priorities, or an object {"index": priority}.
template <size_t N>
void read_map(const json& v, const std::string& key, std::array<uint8_t, N>* m) {
  if (v.is_array()) {
    if (v.size() != N) refuse(key, "needs " + std::to_string(N) + " priorities");
    for (size_t i = 0; i < N; ++i)
      (*m)[i] = static_cast<uint8_t>(need_uint(v[i], key + "[" + std::to_string(i) + "]", 0, 7));
    return;
  }
  if (!v.is_object()) refuse(key, "not an array of priorities or an object {\"index\": prio}");
  for (const auto& [k, p] : v.items()) {
    size_t idx = 0;
    size_t used = 0;
    try {
      idx = std::stoul(k, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != k.size() || idx >= N)
      refuse(key + "." + k, "not an index 0.." + std::to_string(N - 1));
    (*m)[idx] = static_cast<uint8_t>(need_uint(p, key + "." + k, 0, 7));
  }
}

void check_keys(const json& obj, const std::string& where, const std::set<std::string>& known) {
  for (const auto& [k, v] : obj.items())
    if (!known.count(k)) refuse(where.empty() ? k : where + "." + k, "unknown key");
}

void only_for(Role have, Role want, const std::string& key) {
  if (have != want) refuse(key, "a " + std::string(to_string(want)) + "'s setting only");
}

void apply_doc(const json& doc, Role r, Settings* s) {
  if (!doc.is_object()) refuse("(document)", "not a JSON object");
  check_keys(doc, "",
             {"profile", "roce_dscp", "cnp_dscp", "trust", "dscp_to_prio", "pcp_to_prio", "pfc",
              "ecn", "mtu", "dcqcn"});
  if (auto it = doc.find("profile"); it != doc.end()) {
    if (!it->is_string()) refuse("profile", "not a string");
    const std::string name = it->get<std::string>();
    // The profile follows the map in the same document (its PFC priority is the RoCE one's).
    if (auto m = doc.find("dscp_to_prio"); m != doc.end())
      read_map(*m, "dscp_to_prio", &s->dscp_to_prio);
    if (auto d = doc.find("roce_dscp"); d != doc.end())
      s->roce_dscp = static_cast<uint8_t>(need_uint(*d, "roce_dscp", 0, 63));
    if (name.empty()) {
      s->profile.clear();
    } else if (!apply_profile(name, r, s)) {
      refuse("profile", "unknown \"" + name + "\"; known: lossless, lossy, hpc, storage");
    }
  }
  for (const auto& [k, v] : doc.items()) {
    if (k == "roce_dscp") {
      s->roce_dscp = static_cast<uint8_t>(need_uint(v, k, 0, 63));
    } else if (k == "cnp_dscp") {
      s->cnp_dscp = static_cast<uint8_t>(need_uint(v, k, 0, 63));
    } else if (k == "trust") {
      if (v == "dscp")
        s->trust = Trust::kDscp;
      else if (v == "pcp")
        s->trust = Trust::kPcp;
      else
        refuse(k, "not \"dscp\" or \"pcp\"");
    } else if (k == "dscp_to_prio") {
      read_map(v, k, &s->dscp_to_prio);
    } else if (k == "pcp_to_prio") {
      read_map(v, k, &s->pcp_to_prio);
    } else if (k == "pfc") {
      if (!v.is_object()) refuse(k, "not an object");
      check_keys(v, k, {"priorities", "xoff_bytes", "xon_bytes"});
      if (auto p = v.find("priorities"); p != v.end()) {
        if (!p->is_array()) refuse("pfc.priorities", "not an array of priorities");
        uint8_t mask = 0;
        for (size_t i = 0; i < p->size(); ++i)
          mask = static_cast<uint8_t>(
              mask | 1u << need_uint((*p)[i], "pfc.priorities[" + std::to_string(i) + "]", 0, 7));
        s->pfc_priorities = mask;
      }
      if (auto x = v.find("xoff_bytes"); x != v.end())
        s->pfc_xoff_bytes = static_cast<uint32_t>(need_uint(*x, "pfc.xoff_bytes", 0, 64u << 20));
      if (auto x = v.find("xon_bytes"); x != v.end())
        s->pfc_xon_bytes = static_cast<uint32_t>(need_uint(*x, "pfc.xon_bytes", 0, 64u << 20));
    } else if (k == "ecn") {
      if (!v.is_object()) refuse(k, "not an object");
      check_keys(v, k, {"enabled", "kmin_bytes", "kmax_bytes", "pmax"});
      if (auto x = v.find("enabled"); x != v.end()) s->ecn = need_bool(*x, "ecn.enabled");
      if (auto x = v.find("kmin_bytes"); x != v.end()) {
        only_for(r, Role::kSwitch, "ecn.kmin_bytes");
        s->ecn_kmin_bytes = need_uint(*x, "ecn.kmin_bytes", 0, 1ull << 30);
      }
      if (auto x = v.find("kmax_bytes"); x != v.end()) {
        only_for(r, Role::kSwitch, "ecn.kmax_bytes");
        s->ecn_kmax_bytes = need_uint(*x, "ecn.kmax_bytes", 1, 1ull << 30);
      }
      if (auto x = v.find("pmax"); x != v.end()) {
        only_for(r, Role::kSwitch, "ecn.pmax");
        if (!x->is_number()) refuse("ecn.pmax", "not a number");
        const double p = x->get<double>();
        if (!(p >= 0.0 && p <= 1.0)) refuse("ecn.pmax", "out of range 0..1");
        s->ecn_pmax = p;
      }
    } else if (k == "mtu") {
      s->mtu = static_cast<uint32_t>(r == Role::kHost ? need_uint(v, k, 256, 4096)
                                                      : need_uint(v, k, 1280, 9000));
      if (r == Role::kHost && (s->mtu & (s->mtu - 1)) != 0)
        refuse(k, "not 256, 512, 1024, 2048 or 4096");
    } else if (k == "dcqcn") {
      only_for(r, Role::kHost, k);
      s->dcqcn = need_bool(v, k);
    }
  }
}

json to_json_value(const Settings& s, Role r) {
  json ecn = {{"enabled", s.ecn}};
  if (r == Role::kSwitch) {
    ecn["kmin_bytes"] = s.ecn_kmin_bytes;
    ecn["kmax_bytes"] = s.ecn_kmax_bytes;
    ecn["pmax"] = s.ecn_pmax;
  }
  json j = {{"profile", s.profile},
            {"roce_dscp", s.roce_dscp},
            {"cnp_dscp", s.cnp_dscp},
            {"trust", s.trust == Trust::kDscp ? "dscp" : "pcp"},
            {"dscp_to_prio", s.dscp_to_prio},
            {"pcp_to_prio", s.pcp_to_prio},
            {"pfc",
             {{"priorities", priorities(s.pfc_priorities)},
              {"xoff_bytes", s.pfc_xoff_bytes},
              {"xon_bytes", s.pfc_xon_bytes}}},
            {"ecn", ecn},
            {"mtu", s.mtu}};
  if (r == Role::kHost) j["dcqcn"] = s.dcqcn;
  return j;
}

/// Dotted key -> value text, arrays kept whole ("pfc.priorities" -> "[3]").
void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    (*out)[prefix] = j.dump();
  }
}

}  // namespace

std::vector<int> priorities(uint8_t mask) {
  std::vector<int> out;
  for (int p = 0; p < 8; ++p)
    if (mask & (1u << p)) out.push_back(p);
  return out;
}

std::string_view to_string(Role r) { return r == Role::kHost ? "host" : "switch"; }

std::optional<Role> parse_role(std::string_view s) {
  if (s == "host") return Role::kHost;
  if (s == "switch") return Role::kSwitch;
  return std::nullopt;
}

Settings defaults(Role r) {
  Settings s;
  s.dscp_to_prio = config::default_dscp_to_prio();
  for (uint8_t p = 0; p < 8; ++p) s.pcp_to_prio[p] = p;
  s.mtu = r == Role::kHost ? 1024 : 9000;
  return s;
}

const std::vector<std::string_view>& profile_names() {
  static const std::vector<std::string_view> kNames = {"lossless", "lossy", "hpc", "storage"};
  return kNames;
}

bool apply_profile(std::string_view name, Role r, Settings* s) {
  const auto lossless = [&](uint32_t xoff, uint32_t xon) {
    s->pfc_priorities = static_cast<uint8_t>(1u << (s->roce_prio() & 7));
    s->pfc_xoff_bytes = xoff;
    s->pfc_xon_bytes = xon;
  };
  if (name == "lossless" || name == "hpc") {
    lossless(64 * 1024, 32 * 1024);
  } else if (name == "storage") {
    lossless(256 * 1024, 128 * 1024);
  } else if (name == "lossy") {
    s->pfc_priorities = 0;
    s->pfc_xoff_bytes = 0;
    s->pfc_xon_bytes = 0;
  } else {
    return false;
  }
  s->ecn = true;
  s->dcqcn = true;
  if (r == Role::kSwitch) {
    const Settings d = defaults(r);
    s->ecn_kmin_bytes = name == "hpc" ? 10 * 1024 : d.ecn_kmin_bytes;
    s->ecn_kmax_bytes = d.ecn_kmax_bytes;
    s->ecn_pmax = d.ecn_pmax;
  }
  s->profile = std::string(name);
  return true;
}

bool validate(const Settings& s, Role r, std::string* err) {
  if (s.pfc_priorities != 0 && s.pfc_xoff_bytes == 0) {
    *err =
        "pfc.xoff_bytes: 0 with PFC on a priority (a priority with PFC must pause at some "
        "backlog)";
    return false;
  }
  if (s.pfc_xon_bytes > s.pfc_xoff_bytes) {
    *err = "pfc.xon_bytes: above pfc.xoff_bytes (" + std::to_string(s.pfc_xon_bytes) + " > " +
           std::to_string(s.pfc_xoff_bytes) + ")";
    return false;
  }
  if (r == Role::kSwitch && s.ecn_kmin_bytes > s.ecn_kmax_bytes) {
    *err = "ecn.kmin_bytes: above ecn.kmax_bytes";
    return false;
  }
  return true;
}

std::string to_json(const Settings& s, Role r) { return to_json_value(s, r).dump(); }

bool apply_json(std::string_view body, Role r, Settings* s, std::string* err) {
  if (body.size() > kMaxBodyBytes) {
    *err = "(document): larger than " + std::to_string(kMaxBodyBytes) + " bytes";
    return false;
  }
  json doc = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    *err = "(document): not valid JSON";
    return false;
  }
  Settings next = *s;
  try {
    apply_doc(doc, r, &next);
  } catch (const Refused& e) {
    *err = e.what;
    return false;
  } catch (const json::exception& e) {
    *err = std::string("(document): ") + e.what();
    return false;
  }
  if (!validate(next, r, err)) return false;
  *s = std::move(next);
  return true;
}

std::vector<std::string> diff(const Settings& before, const Settings& after, Role r) {
  std::map<std::string, std::string> a, b;
  flatten(to_json_value(before, r), "", &a);
  flatten(to_json_value(after, r), "", &b);
  std::vector<std::string> out;
  for (const auto& [k, v] : b) {
    auto it = a.find(k);
    if (it == a.end() || it->second != v)
      out.push_back(k + ": " + (it == a.end() ? "-" : it->second) + " -> " + v);
  }
  return out;
}

}  // namespace uroce::fabric
