/**
 * @file options.cc
 * @brief parse_options() and the size/rate/duration parsers (see options.h).
 */
#include "uroce-switch/options.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace uroce::uswitch {
namespace {

/// Number with an optional fractional part, then the rest of the string in *suffix.
bool split_number(std::string_view s, double* v, std::string_view* suffix) {
  if (s.empty()) return false;
  std::string str(s);
  char* end = nullptr;
  *v = std::strtod(str.c_str(), &end);
  if (end == str.c_str() || *v < 0) return false;
  *suffix = s.substr(static_cast<size_t>(end - str.c_str()));
  return true;
}

bool scaled(std::string_view s, double base, uint64_t* out) {
  double v = 0;
  std::string_view suf;
  if (!split_number(s, &v, &suf)) return false;
  double m = 1;
  if (suf == "K" || suf == "k")
    m = base;
  else if (suf == "M" || suf == "m")
    m = base * base;
  else if (suf == "G" || suf == "g")
    m = base * base * base;
  else if (!suf.empty())
    return false;
  *out = static_cast<uint64_t>(v * m + 0.5);
  return true;
}

}  // namespace

bool parse_size(std::string_view s, uint64_t* out) { return scaled(s, 1024, out); }
bool parse_rate(std::string_view s, uint64_t* out) { return scaled(s, 1000, out); }

bool parse_duration(std::string_view s, Duration* out) {
  double v = 0;
  std::string_view suf;
  if (!split_number(s, &v, &suf)) return false;
  double ns = 0;
  if (suf == "ns")
    ns = v;
  else if (suf == "us")
    ns = v * 1e3;
  else if (suf == "ms")
    ns = v * 1e6;
  else if (suf == "s" || (suf.empty() && v == 0))
    ns = v * 1e9;
  else
    return false;
  *out = Duration::nanos(static_cast<int64_t>(ns));
  return true;
}

fabric::Settings settings_of(const Options& o) {
  fabric::Settings s = fabric::defaults(fabric::Role::kSwitch);
  s.trust = o.trust_pcp ? fabric::Trust::kPcp : fabric::Trust::kDscp;
  if (o.pfc_xoff_bytes != 0) {
    s.pfc_priorities = o.pfc_prios;
    s.pfc_xoff_bytes = static_cast<uint32_t>(o.pfc_xoff_bytes);
    s.pfc_xon_bytes = static_cast<uint32_t>(o.pfc_xon_bytes);
  }
  s.ecn = o.red.enabled;
  s.ecn_kmin_bytes = o.red.kmin_bytes;
  s.ecn_kmax_bytes = o.red.kmax_bytes;
  s.ecn_pmax = o.red.pmax;
  s.mtu = o.mtu;
  return s;
}

bool parse_options(const std::vector<std::string>& args, Options* o, std::string* err) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (i + 1 >= args.size()) {
      *err = a + " needs a value";
      return false;
    }
    const std::string& v = args[++i];
    bool ok = true;
    if (a == "--port") {
      o->ports.push_back(v);
    } else if (a == "--shape") {
      auto eq = v.find('=');
      uint32_t port = 0;
      uint64_t bps = 0;
      ok = eq != std::string::npos &&
           std::from_chars(v.data(), v.data() + eq, port).ec == std::errc{} &&
           parse_rate(std::string_view(v).substr(eq + 1), &bps);
      if (ok) o->shape_bps[port] = bps;
    } else if (a == "--share") {
      std::vector<uint32_t> group;
      size_t at = 0;
      while (ok && at <= v.size()) {
        size_t comma = std::min(v.find(',', at), v.size());
        uint32_t port = 0;
        ok = std::from_chars(v.data() + at, v.data() + comma, port).ec == std::errc{};
        group.push_back(port);
        at = comma + 1;
      }
      ok = ok && group.size() >= 2;
      if (ok) o->shared.push_back(group);
    } else if (a == "--burst") {
      ok = parse_size(v, &o->burst_bytes);
    } else if (a == "--kmin") {
      ok = parse_size(v, &o->red.kmin_bytes);
    } else if (a == "--kmax") {
      ok = parse_size(v, &o->red.kmax_bytes);
    } else if (a == "--pmax") {
      char* end = nullptr;
      o->red.pmax = std::strtod(v.c_str(), &end);
      ok = end != v.c_str() && *end == 0 && o->red.pmax >= 0 && o->red.pmax <= 1;
    } else if (a == "--ecn") {
      ok = v == "on" || v == "off";
      o->red.enabled = v == "on";
    } else if (a == "--mark") {
      ok = v == "enqueue" || v == "dequeue";
      o->red.at_dequeue = v == "dequeue";
    } else if (a == "--pfc-xoff") {
      ok = parse_size(v, &o->pfc_xoff_bytes);
    } else if (a == "--pfc-xon") {
      ok = parse_size(v, &o->pfc_xon_bytes);
    } else if (a == "--pfc-prios") {
      o->pfc_prios = 0;
      for (char c : v) {
        if (c >= '0' && c <= '7')
          o->pfc_prios = static_cast<uint8_t>(o->pfc_prios | (1u << (c - '0')));
        else if (c != ',')
          ok = false;
      }
    } else if (a == "--buffer") {
      ok = parse_size(v, &o->buffer_bytes);
    } else if (a == "--link-rate") {
      ok = parse_rate(v, &o->link_bps) && o->link_bps > 0;
    } else if (a == "--stats-every") {
      ok = parse_duration(v, &o->stats_every);
    } else if (a == "--max-time") {
      ok = parse_duration(v, &o->max_time);
    } else if (a == "--file-prefix") {
      o->file_prefix = v;
    } else if (a == "--impair") {
      if (!parse_impair(v, &o->impair, err)) return false;
    } else if (a == "--trust") {
      ok = v == "dscp" || v == "pcp";
      o->trust_pcp = v == "pcp";
    } else if (a == "--mtu") {
      uint64_t mtu = 0;
      ok = std::from_chars(v.data(), v.data() + v.size(), mtu).ec == std::errc{} && mtu >= 1280 &&
           mtu <= 9000;
      o->mtu = static_cast<uint32_t>(mtu);
    } else if (a == "--name") {
      ok = !v.empty();
      o->name = v;
    } else if (a == "--api") {
      ok = v.find(':') != std::string::npos;
      o->api_listen = v;
    } else if (a == "--api-token-file") {
      o->api_token_file = v;
    } else if (a == "--desired") {
      ok = v.rfind("http://", 0) == 0;
      o->desired = v;
    } else if (a == "--desired-every") {
      ok = parse_duration(v, &o->desired_every) && o->desired_every.ns >= 1'000'000;
    } else {
      *err = "unknown option " + a;
      return false;
    }
    if (!ok) {
      *err = "bad value for " + a + ": " + v;
      return false;
    }
  }
  if (o->ports.size() < 2) {
    *err = "need at least two --port";
    return false;
  }
  for (const auto& [p, r] : o->shape_bps) {
    if (p >= o->ports.size()) {
      *err = "--shape names port " + std::to_string(p) + " of " + std::to_string(o->ports.size());
      return false;
    }
  }
  std::vector<bool> grouped(o->ports.size(), false);
  for (const auto& g : o->shared) {
    for (uint32_t p : g) {
      if (p >= o->ports.size() || grouped[p]) {
        *err = "--share: port " + std::to_string(p) + " is out of range or in two groups";
        return false;
      }
      grouped[p] = true;
    }
  }
  if (o->red.kmax_bytes <= o->red.kmin_bytes) {
    *err = "--kmax must exceed --kmin";
    return false;
  }
  if (o->pfc_xoff_bytes > (64u << 20) || o->red.kmax_bytes > (1u << 30)) {
    *err = "--pfc-xoff above 64M or --kmax above 1G";
    return false;
  }
  if (o->pfc_xoff_bytes && o->pfc_xon_bytes >= o->pfc_xoff_bytes) {
    *err = "--pfc-xon must be below --pfc-xoff";
    return false;
  }
  return true;
}

}  // namespace uroce::uswitch
