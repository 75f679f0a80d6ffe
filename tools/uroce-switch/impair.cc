/**
 * @file impair.cc
 * @brief parse_impair(), is_rocev2() and Impairment::decide() (see impair.h).
 */
#include "uroce-switch/impair.h"

#include <cstdlib>
#include <optional>

#include "transport/wire/bth.h"
#include "transport/wire/udp.h"
#include "uroce-switch/options.h"

namespace uroce::uswitch {
namespace {

bool probability(std::string_view v, double* out) {
  std::string s(v);
  char* end = nullptr;
  double p = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !(p >= 0 && p <= 1)) return false;
  *out = p;
  return true;
}

}  // namespace

bool parse_impair(std::string_view spec, ImpairConfig* out, std::string* err) {
  ImpairConfig c;
  size_t at = 0;
  while (at < spec.size()) {
    size_t comma = spec.find(',', at);
    if (comma == std::string_view::npos) comma = spec.size();
    std::string_view kv = spec.substr(at, comma - at);
    at = comma + 1;
    size_t eq = kv.find('=');
    std::string_view k = kv.substr(0, eq),
                     v = eq == std::string_view::npos ? "" : kv.substr(eq + 1);
    bool ok = eq != std::string_view::npos;
    if (!ok) {
    } else if (k == "drop") {
      ok = probability(v, &c.drop);
    } else if (k == "dup") {
      ok = probability(v, &c.dup);
    } else if (k == "corrupt") {
      ok = probability(v, &c.corrupt);
    } else if (k == "reorder") {
      ok = probability(v, &c.reorder);
    } else if (k == "reorder-window") {
      ok = parse_duration(v, &c.reorder_window) && c.reorder_window.ns > 0;
    } else if (k == "delay") {
      ok = parse_duration(v, &c.delay);
    } else if (k == "cut-at") {
      ok = parse_duration(v, &c.cut_at);
    } else if (k == "cut-for") {
      ok = parse_duration(v, &c.cut_for);
    } else if (k == "seed") {
      std::string s(v);
      char* end = nullptr;
      c.seed = std::strtoull(s.c_str(), &end, 10);
      ok = !s.empty() && *end == 0;
    } else {
      *err = "--impair: unknown key \"" + std::string(k) +
             "\"; allowed: drop, dup, corrupt, reorder, reorder-window, delay, cut-at, "
             "cut-for, seed";
      return false;
    }
    if (!ok) {
      *err = "--impair: bad value in \"" + std::string(kv) +
             "\"; probabilities are 0..1, durations like 20us";
      return false;
    }
  }
  *out = c;
  return true;
}

bool is_rocev2(std::span<const uint8_t> f, size_t* bth_end) {
  const std::optional<size_t> bth = wire::rocev2_udp_payload(f);
  if (!bth || f.size() < *bth + sizeof(wire::Bth)) return false;
  *bth_end = *bth + sizeof(wire::Bth);
  return true;
}

ImpairVerdict Impairment::decide(std::span<const uint8_t> frame, Timestamp now) {
  ImpairVerdict v;
  size_t bth_end = 0;
  if (!c_.any() || !is_rocev2(frame, &bth_end)) return v;
  n_.seen++;
  if (first_.is_never()) first_ = now;
  if (c_.cut_for.ns > 0 && now >= first_ + c_.cut_at && now < first_ + c_.cut_at + c_.cut_for) {
    v.drop = true;
    n_.dropped++;
    n_.cut++;
    return v;
  }
  // One draw per decision, always in this order, so a seed replays the same verdicts.
  const double d_drop = rng_.next(), d_corrupt = rng_.next(), d_dup = rng_.next();
  const double d_reorder = rng_.next(), d_where = rng_.next();
  if (d_drop < c_.drop) {
    v.drop = true;
    n_.dropped++;
    return v;
  }
  if (d_corrupt < c_.corrupt && frame.size() > bth_end) {
    v.corrupt_at = static_cast<int>(
        bth_end + static_cast<size_t>(d_where * static_cast<double>(frame.size() - bth_end)));
    if (v.corrupt_at >= static_cast<int>(frame.size()))
      v.corrupt_at = static_cast<int>(frame.size()) - 1;
    n_.corrupted++;
  }
  if (d_dup < c_.dup) {
    v.duplicate = true;
    n_.duplicated++;
  }
  v.hold = c_.delay;
  if (d_reorder < c_.reorder) {
    const double u = rng_.next();  // the extra delay, uniform in (0, window]
    v.hold = v.hold + Duration::nanos(1 + static_cast<int64_t>(
                                              u * static_cast<double>(c_.reorder_window.ns - 1)));
    v.reordered = true;
    n_.reordered++;
  }
  return v;
}

}  // namespace uroce::uswitch
