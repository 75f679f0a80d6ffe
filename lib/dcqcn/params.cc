/**
 * @file params.cc
 * @brief DCQCN presets and the lookup of parameters by NVIDIA name (docs/dcqcn-pfc.md §1.1).
 *
 * The name table is one X-macro list so names, fields and ranges cannot drift.
 */
#include "dcqcn/params.h"

#include <cmath>
#include <cstdio>
#include <type_traits>

namespace uroce::dcqcn {
namespace {

// X(name, min, max, unit): every integer/boolean knob of DcqcnParams by its NVIDIA name.
#define UROCE_DCQCN_PARAMS(X)                      \
  X(rate_reduce_monitor_period, 1, 131071, "us")   \
  X(rpg_time_reset, 1, 131071, "us")               \
  X(rpg_byte_reset, 0, 4294967295.0, "bytes")      \
  X(rpg_threshold, 1, 31, "events")                \
  X(rpg_ai_rate, 1, 1000000, "Mb/s")               \
  X(rpg_hai_rate, 1, 1000000, "Mb/s")              \
  X(rpg_gd, 1, 15, "log2")                         \
  X(rpg_min_dec_fac, 0, 100, "percent")            \
  X(rpg_min_rate, 0, 1000000, "Mb/s")              \
  X(rpg_max_rate, 0, 10000000, "Mb/s")             \
  X(dce_tcp_g, 0, 1024, "Q10")                     \
  X(dce_tcp_rtt, 1, 131071, "us")                  \
  X(initial_alpha_value, 0, 1024, "Q10")           \
  X(clamp_tgt_rate, 0, 1, "bool")                  \
  X(clamp_tgt_rate_after_time_inc, 0, 1, "bool")   \
  X(rate_to_set_on_first_cnp, 0, 10000000, "Mb/s") \
  X(min_time_between_cnps, 0, 131071, "us")        \
  X(hai_halves_periods, 0, 1, "bool")              \
  X(qcn_first_increase_quirk, 0, 1, "bool")        \
  X(cap_target_before_average, 0, 1, "bool")       \
  X(paper_clamp_target, 0, 1, "bool")              \
  X(release_at_line_rate, 0, 1, "bool")            \
  X(alpha_order, 0, 1, "enum AlphaOrder")          \
  X(fr_count, 0, 1, "enum FrCount")                \
  X(hai_amount, 0, 2, "enum HaiAmount")

template <typename F>
void assign(F* field, double v) {
  if constexpr (std::is_enum_v<F>)
    *field = static_cast<F>(static_cast<int>(v));
  else
    *field = static_cast<F>(v);
}

template <typename F>
double as_double(F v) {
  if constexpr (std::is_enum_v<F>)
    return static_cast<double>(static_cast<int>(v));
  else
    return static_cast<double>(v);
}

/// Maps the mlx5 debugfs spelling (cong.c) onto the NVIDIA one.
std::string_view canonical(std::string_view name) {
  struct Alias {
    std::string_view kernel, nvidia;
  };
  static constexpr Alias kAliases[] = {
      {"rp_clamp_tgt_rate", "clamp_tgt_rate"},
      {"rp_clamp_tgt_rate_ati", "clamp_tgt_rate_after_time_inc"},
      {"rp_time_reset", "rpg_time_reset"},
      {"rp_byte_reset", "rpg_byte_reset"},
      {"rp_threshold", "rpg_threshold"},
      {"rp_ai_rate", "rpg_ai_rate"},
      {"rp_max_rate", "rpg_max_rate"},
      {"rp_hai_rate", "rpg_hai_rate"},
      {"rp_min_dec_fac", "rpg_min_dec_fac"},
      {"rp_min_rate", "rpg_min_rate"},
      {"rp_rate_to_set_on_first_cnp", "rate_to_set_on_first_cnp"},
      {"rp_dce_tcp_g", "dce_tcp_g"},
      {"rp_dce_tcp_rtt", "dce_tcp_rtt"},
      {"rp_rate_reduce_monitor_period", "rate_reduce_monitor_period"},
      {"rp_initial_alpha_value", "initial_alpha_value"},
      {"rp_gd", "rpg_gd"},
      {"np_min_time_between_cnps", "min_time_between_cnps"},
  };
  for (const auto& a : kAliases)
    if (a.kernel == name) return a.nvidia;
  return name;
}

std::string known_names() {
  std::string s;
#define X(name, lo, hi, unit) s += (s.empty() ? "" : ", ") + std::string(#name);
  UROCE_DCQCN_PARAMS(X)
#undef X
  return s;
}

}  // namespace

DcqcnParams nvidia_firmware_preset() { return DcqcnParams{}; }

DcqcnParams paper_preset() {
  DcqcnParams p;
  p.mode = RpMode::kPaper;
  p.dce_tcp_g = 1020;           // g = 1/256
  p.dce_tcp_rtt = 55;           // K
  p.rpg_time_reset = 55;        // T
  p.rpg_byte_reset = 10000000;  // B = 10 MB
  p.rpg_threshold = 5;          // F
  p.rpg_ai_rate = 40;           // R_AI
  p.rpg_hai_rate = 200;         // R_HAI (ns3-rdma sample)
  p.rpg_min_rate = 10;
  p.rpg_max_rate = 0;
  p.min_time_between_cnps = 50;  // N
  p.initial_alpha_value = 1024;
  return p;
}

DcqcnParams hpcc_dcqcn_preset(double line_rate_bps) {
  DcqcnParams p;
  p.mode = RpMode::kNvidia;
  const double bw_gbps = line_rate_bps / 1e9;
  p.dce_tcp_g = 1020;  // g = 1/256
  p.dce_tcp_rtt = 1;
  p.rate_reduce_monitor_period = 4;
  p.rpg_time_reset = 300;
  p.rpg_byte_reset = 0;  // HPCC issue #66: not implemented
  p.rpg_threshold = 1;
  p.rpg_ai_rate = static_cast<uint32_t>(std::lround(5.0 * bw_gbps / 25.0));
  p.rpg_hai_rate = static_cast<uint32_t>(std::lround(50.0 * bw_gbps / 25.0));
  if (p.rpg_ai_rate == 0) p.rpg_ai_rate = 1;
  if (p.rpg_hai_rate == 0) p.rpg_hai_rate = 1;
  p.rpg_min_rate = 1000;
  p.rpg_min_dec_fac = 0;
  p.initial_alpha_value = 1024;  // α = 1 on the first CNP
  p.clamp_tgt_rate = false;
  p.clamp_tgt_rate_after_time_inc = true;
  p.rate_to_set_on_first_cnp = 0;  // RateOnFirstCnp = 1.0 × current
  p.min_time_between_cnps = 0;     // CNP flag on every ACK of a CE packet
  return p;
}

DcqcnParams hpcc_dcqcn_paper_preset(double line_rate_bps) {
  DcqcnParams p = hpcc_dcqcn_preset(line_rate_bps);
  p.dce_tcp_rtt = 50;
  p.rate_reduce_monitor_period = 50;
  p.rpg_time_reset = 55;
  return p;
}

Result<RpMode> parse_mode(std::string_view text) {
  if (text == "paper") return RpMode::kPaper;
  if (text == "nvidia") return RpMode::kNvidia;
  if (text == "off" || text == "none") return RpMode::kOff;
  return Status::invalid();
}

Status set_param(DcqcnParams* p, std::string_view raw_name, double value, std::string* err) {
  const std::string_view name = canonical(raw_name);
  char buf[256];
#define X(field, lo, hi, unit)                                                                   \
  if (name == #field) {                                                                          \
    if (!(value >= (lo) && value <= (hi)) || std::floor(value) != value) {                       \
      if (err) {                                                                                 \
        std::snprintf(buf, sizeof buf, "dcqcn parameter %s = %g: allowed integer %.0f..%.0f %s", \
                      #field, value, static_cast<double>(lo), static_cast<double>(hi), unit);    \
        *err = buf;                                                                              \
      }                                                                                          \
      return Status::invalid();                                                                  \
    }                                                                                            \
    assign(&p->field, value);                                                                    \
    return Status::ok();                                                                         \
  }
  UROCE_DCQCN_PARAMS(X)
#undef X
  if (is_cp_param(name)) {
    if (err)
      *err = "dcqcn parameter '" + std::string(raw_name) +
             "' is an ECN marking (switch/CP) knob, not a reaction/notification point one";
    return Status::not_found();
  }
  if (err)
    *err = "unknown dcqcn parameter '" + std::string(raw_name) + "'; allowed: " + known_names();
  return Status::not_found();
}

bool is_cp_param(std::string_view name) {
  return name == "kmin" || name == "kmax" || name == "pmax";
}

Result<double> get_param(const DcqcnParams& p, std::string_view raw_name) {
  const std::string_view name = canonical(raw_name);
#define X(field, lo, hi, unit) \
  if (name == #field) return as_double(p.field);
  UROCE_DCQCN_PARAMS(X)
#undef X
  return Status::not_found();
}

Status validate(const DcqcnParams& p, std::string* err) {
  DcqcnParams scratch = p;
#define X(field, lo, hi, unit)                                       \
  {                                                                  \
    Status s = set_param(&scratch, #field, as_double(p.field), err); \
    if (!s) return s;                                                \
  }
  UROCE_DCQCN_PARAMS(X)
#undef X
  return Status::ok();
}

Status apply_overrides(DcqcnParams* p, const std::map<std::string, double>& overrides,
                       std::string* err) {
  for (const auto& [name, value] : overrides) {
    if (is_cp_param(name)) continue;  // the switch model's knobs, carried in the same table
    Status s = set_param(p, name, value, err);
    if (!s) return s;
  }
  return Status::ok();
}

}  // namespace uroce::dcqcn
