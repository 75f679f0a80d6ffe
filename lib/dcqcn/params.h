/**
 * @file params.h
 * @brief DCQCN reaction-point and notification-point parameters, named as NVIDIA names them,
 * with presets and a lookup by name for the config's `[device.dcqcn]` overrides.
 *
 * Units: each field states its own (µs, bytes, Mb/s, Q10 fixed point = value/1024, percent).
 * References: docs/dcqcn-pfc.md §1.1 (parameter table), §1.4 (paper RP and the choices
 * the references disagree on), §1.5 (NVIDIA firmware RP), §1.3 (NP).
 *
 * One struct serves both RP modes. In `paper` mode the NVIDIA names carry the paper's symbols:
 * dce_tcp_g → g, dce_tcp_rtt → K, rpg_time_reset → T, rpg_byte_reset → B, rpg_threshold → F,
 * rpg_ai_rate → R_AI, rpg_hai_rate → R_HAI, rpg_min_rate → R_min, rpg_max_rate → C;
 * rate_reduce_monitor_period, rpg_gd, rpg_min_dec_fac, initial_alpha_value,
 * rate_to_set_on_first_cnp and the clamp flags are nvidia-only (the paper cuts on every CNP
 * by α/2 from α = 1 and always clamps Rt ← Rc).
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/status.h"

namespace uroce::dcqcn {

/// Which reaction-point algorithm runs.
enum class RpMode : uint8_t {
  kOff,     ///< no congestion control (NoCc): the QP sends at line rate
  kPaper,   ///< SIGCOMM'15 form, docs/dcqcn-pfc.md §1.4
  kNvidia,  ///< ConnectX firmware form (HPCC "Mellanox version"), docs/dcqcn-pfc.md §1.5
};

/// Paper mode: order of the α update and the rate cut on a CNP (docs/dcqcn-pfc.md §1.4 choice 1).
enum class AlphaOrder : uint8_t {
  kCutThenUpdate,  ///< cut with the old α, then update α (paper, htsim) — default
  kUpdateThenCut,  ///< update α first, then cut (ns3-rdma rpr_cnm_received)
};

/// Paper mode: which increase events are fast recovery (docs/dcqcn-pfc.md §1.4 choice 2).
enum class FrCount : uint8_t {
  kInclusive,  ///< events 1..F are FR: max(Tcnt, BCcnt) <= F (htsim) — default
  kExclusive,  ///< events 1..F-1 are FR: max(Tcnt, BCcnt) < F (QCN / ns3-rdma)
};

/// Paper mode: the amount added to Rt per hyper-increase event (docs/dcqcn-pfc.md §1.4 choice 3).
enum class HaiAmount : uint8_t {
  kLinear,         ///< (min(Tcnt,BCcnt) − F) · R_HAI (htsim) — default
  kLinearPlusOne,  ///< (min(Tcnt,BCcnt) − F + 1) · R_HAI (ns3-rdma)
  kConstant,       ///< R_HAI (HPCC / NVIDIA model)
};

/// Every knob of one QP's DCQCN. Defaults are the NVIDIA ConnectX-6 Dx firmware values
/// (docs/dcqcn-pfc.md §1.1, nvidia preset); use the preset functions below for the others.
struct DcqcnParams {
  RpMode mode = RpMode::kNvidia;  ///< algorithm; default nvidia

  // ---- NVIDIA-named parameters (ranges as the lookup enforces them) ----
  uint32_t rate_reduce_monitor_period = 4;  ///< µs; nvidia: CNPs are applied (one cut at most)
                                            ///< on this grid, started at the first CNP. 1..131071
  uint32_t rpg_time_reset = 300;    ///< µs; rate-increase timer period (paper T). 1..131071
  uint32_t rpg_byte_reset = 32767;  ///< bytes sent per byte-counter increase event
                                    ///< (paper B); 0 = byte counter off. NB: the unit
                                    ///< on real firmware is unverified (docs/dcqcn-pfc.md §1.5)
  uint32_t rpg_threshold = 1;       ///< increase events spent in fast recovery (paper F). 1..31
  uint32_t rpg_ai_rate = 5;         ///< Mb/s; additive increase step (paper R_AI). 1..1e6
  uint32_t rpg_hai_rate = 50;       ///< Mb/s; hyper increase step (paper R_HAI). 1..1e6
  uint32_t rpg_gd = 11;             ///< cut = α / 2^(rpg_gd−10): 11 → α/2, 10 → α. 1..15
  uint32_t rpg_min_dec_fac = 50;    ///< percent; one cut keeps at least this share of
                                    ///< the rate (nvidia). 0..100 (0 = no limit)
  uint32_t rpg_min_rate = 1;        ///< Mb/s; floor of Rc. 0..1e6
  uint32_t rpg_max_rate = 0;        ///< Mb/s; ceiling C of Rc and Rt; 0 = port speed. 0..1e7
  uint32_t dce_tcp_g = 1019;        ///< Q10 retention of α per update: α ← (G/1024)·α
                                    ///< (+ (1 − G/1024) with a CNP), i.e. the EWMA gain
                                    ///< g = (1024 − G)/1024; 1019 → 5/1024, 1020 → 1/256.
                                    ///< Reading of NVIDIA community doc v19 (docs/dcqcn-pfc.md
                                    ///< §1.1 note). 0..1024
  uint32_t dce_tcp_rtt = 1;         ///< µs; α update period (paper K). 1..131071
  uint32_t initial_alpha_value = 1023;        ///< Q10 α set on the first CNP (nvidia). 0..1024
                                              ///< (1024 = exactly 1.0, as HPCC's model)
  bool clamp_tgt_rate = false;                ///< nvidia: Rt ← Rc on every cut
  bool clamp_tgt_rate_after_time_inc = true;  ///< nvidia: Rt ← Rc on a cut only if an increase
                                              ///< event happened since the last cut
  uint32_t rate_to_set_on_first_cnp = 0;      ///< Mb/s; nvidia: Rc = Rt = this on the first CNP;
                                              ///< 0 = keep the current rate. 0..1e7
  uint32_t min_time_between_cnps = 4;         ///< µs; NP: at most one CNP per QP per interval
                                              ///< (paper N = 50). 0..131071

  // ---- Choices the references disagree on (paper mode; docs/dcqcn-pfc.md §1.4) ----
  AlphaOrder alpha_order = AlphaOrder::kCutThenUpdate;  ///< §1.4 choice 1
  FrCount fr_count = FrCount::kInclusive;               ///< §1.4 choice 2
  HaiAmount hai_amount = HaiAmount::kLinear;            ///< §1.4 choice 3
  bool hai_halves_periods = false;  ///< paper: in hyper stage the timer period is T/2 and the byte
                                    ///< threshold B/2, as QCN and ns3-rdma do (§1.4 choice 3)
  bool cap_target_before_average = false;  ///< paper: false = Rc ← (Rt+Rc)/2 with the uncapped
                                           ///< Rt, then cap both at C (the reference model
                                           ///< dcqcn_golden.py, §1.6 G1: 39.7075 at 330 µs);
                                           ///< true = cap Rt first (§1.4 pseudo-code: 39.6875)
  bool paper_clamp_target = true;  ///< paper: Rt ← Rc on every CNP (paper, htsim); false = Rt
                                   ///< kept (ns3-rdma ClampTargetRate = false, its default)
  bool qcn_first_increase_quirk = false;  ///< paper: on the first increase after a cut, if
                                          ///< Rt > 10·Rc then Rt /= 8 (ns3-rdma; §1.4 choice 4)

  // ---- Both modes ----
  bool release_at_line_rate = true;  ///< when Rc == Rt == C after an increase, stop the timers
                                     ///< and release the limiter (the next CNP is a first CNP
                                     ///< again in nvidia mode)
};

/// The NVIDIA ConnectX firmware defaults (mstconfig dump, docs/dcqcn-pfc.md §1.1). Same as
/// DcqcnParams{}.
DcqcnParams nvidia_firmware_preset();

/// SIGCOMM'15 paper values (docs/dcqcn-pfc.md §1.1, paper preset): g 1/256, K = T = 55 µs,
/// B 10 MB, F 5, R_AI 40 Mb/s, R_HAI 200 Mb/s (ns3-rdma sample; the paper's is unconfirmed),
/// R_min 10 Mb/s, N 50 µs; mode paper.
DcqcnParams paper_preset();

/// HPCC simulator `run.py --cc dcqcn` at the given line rate (docs/dcqcn-pfc.md §2.2 R2): nvidia
/// mode, t_alpha 1 µs, t_dec 4 µs, t_inc 300 µs, g 1/256, F 1, AI 5·bw/25 Mb/s, HAI 50·bw/25 Mb/s,
/// min rate 1000 Mb/s, α₀ = 1.0, byte counter off, no min_dec_fac, CNP on every CE (N = 0).
DcqcnParams hpcc_dcqcn_preset(double line_rate_bps);

/// HPCC `run.py --cc dcqcn_paper`: as hpcc_dcqcn_preset but t_alpha 50 µs, t_dec 50 µs,
/// t_inc 55 µs (docs/dcqcn-pfc.md §1.1, §1.6 G4).
DcqcnParams hpcc_dcqcn_paper_preset(double line_rate_bps);

/// Parses "paper", "nvidia" or "off".
Result<RpMode> parse_mode(std::string_view text);

/// Sets one parameter by its NVIDIA name (the names of DcqcnParams, also accepted with the
/// kernel's "rp_"/"np_" spelling, e.g. "rp_time_reset" for rpg_time_reset). Booleans take 0/1;
/// the §1.4 choices (alpha_order, fr_count, hai_amount) take their enumerator's number.
/// `mode` is not a parameter here (see parse_mode).
/// @return Status::ok(); Status::not_found() for an unknown name; Status::invalid() for a
///         value out of range or not an integer. *err (if not null) gets one line naming the
///         parameter and what is allowed.
Status set_param(DcqcnParams* p, std::string_view name, double value, std::string* err);

/// Reads one parameter by name (as set_param). Returns not_found for an unknown name.
Result<double> get_param(const DcqcnParams& p, std::string_view name);

/// Checks every field against the ranges set_param enforces (for structs filled in code).
/// @return Status::ok() or Status::invalid() with *err naming the first bad field.
Status validate(const DcqcnParams& p, std::string* err);

/// True for the ECN marking (CP) knobs kmin, kmax, pmax that the config accepts in the same
/// `[device.dcqcn]` table; they configure a switch model, not the RP/NP, so they are skipped.
bool is_cp_param(std::string_view name);

/// Applies every override of a `[device.dcqcn]` table (skipping is_cp_param names); stops at
/// the first error (see set_param).
Status apply_overrides(DcqcnParams* p, const std::map<std::string, double>& overrides,
                       std::string* err);

/// α EWMA gain g = (1024 − dce_tcp_g)/1024.
inline double alpha_gain(const DcqcnParams& p) {
  return (1024.0 - static_cast<double>(p.dce_tcp_g)) / 1024.0;
}

}  // namespace uroce::dcqcn
