/**
 * @file golden.h
 * @brief Test support: the reference model's golden traces (docs/dcqcn-pfc.md §1.6, generated into
 * golden_traces.inc by gen_golden.py) and a driver that replays CNPs into an RP on injected
 * time and records its events. Units: µs in the table, bit/s, ns for Timestamps.
 */
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "common/time.h"
#include "dcqcn/congestion_control.h"

namespace uroce::dcqcn::testing {

/// One row of the model's log.
struct GoldenRow {
  double t_us;       ///< event time, µs (model float; compare rounded to the ns)
  const char* kind;  ///< "CNP"/"DEC" = cut, "TFR"/"FR" fast recovery, "TAI"/"AI", "HI"/"HAI"
  double rc_bps;     ///< Rc after the event
  double rt_bps;     ///< Rt after the event
  double alpha;      ///< α at the event
};

#include "golden_traces.inc"

/// Model time in µs → our Timestamp, rounded to the ns. The model's nvidia trace puts the
/// decrease check 1 ns after the grid (its tie-break), which we express as an ordering rule
/// instead: `offset_ns` removes it.
inline Timestamp at_us(double t_us, int64_t offset_ns = 0) {
  return Timestamp{static_cast<int64_t>(std::llround(t_us * 1000.0)) - offset_ns};
}

/// Feeds CNPs at `cnps` into `cc`, runs every timer until `end`, returns the events.
inline std::vector<RpEvent> replay(CongestionControl& cc, const std::vector<Timestamp>& cnps,
                                   Timestamp end) {
  std::vector<RpEvent> trace;
  cc.set_trace(&trace);
  size_t i = 0;
  while (true) {
    Timestamp next_cnp = i < cnps.size() ? cnps[i] : Timestamp::never();
    Timestamp next = earliest(next_cnp, cc.next_deadline());
    if (next > end) break;
    if (next_cnp <= cc.next_deadline()) {
      cc.on_cnp(next_cnp);  // runs timers due at the same instant first
      ++i;
    } else {
      cc.on_timer(next);
    }
  }
  cc.set_trace(nullptr);
  return trace;
}

/// |a − b| <= 1e-9 · |b| (the §6 item 1 tolerance); exact for b == 0.
inline bool rel_eq(double a, double b, double tol = 1e-9) {
  return std::fabs(a - b) <= tol * std::fabs(b);
}

/// The model's event name for one of ours.
inline std::string model_kind(RpEventKind k, bool paper) {
  switch (k) {
    case RpEventKind::kCut: return paper ? "CNP" : "DEC";
    case RpEventKind::kFastRecovery: return paper ? "TFR" : "FR";
    case RpEventKind::kAdditive: return paper ? "TAI" : "AI";
    case RpEventKind::kHyper: return paper ? "THI" : "HAI";
    case RpEventKind::kRelease: return "REL";
  }
  return "?";
}

/// Events without the kRelease markers.
inline std::vector<RpEvent> without_release(const std::vector<RpEvent>& v) {
  std::vector<RpEvent> out;
  for (const auto& e : v)
    if (e.kind != RpEventKind::kRelease) out.push_back(e);
  return out;
}

}  // namespace uroce::dcqcn::testing
