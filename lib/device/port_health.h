/**
 * @file port_health.h
 * @brief The PFC pause-storm watchdog as an application sees it (docs/dcqcn-pfc.md §4.3): the
 * port's watchdog (lib/dcqcn PfcRx) counts tx_pause_storm_warning_events / _error_events; this
 * turns a rise of those counters into one log line each and, for an error (a priority paused for
 * the whole detection time), a port-error async event (AsyncEventType::kPortErr, which the verbs
 * layer delivers as a port error to every context of the device). Checked by the progress
 * thread every 100 ms. Pure logic, no I/O.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/port.h"

namespace uroce::device {

class PortHealth {
 public:
  struct Report {
    bool port_error = false;         ///< raise a port-error async event
    std::vector<std::string> lines;  ///< log lines (without the "uroce: <device>: " prefix)
  };

  /// Compares c with the counters of the previous call.
  Report update(const PortCounters& c) {
    Report r;
    if (c.tx_pause_storm_warning_events > warnings_)
      r.lines.push_back(
          "PFC pause storm warning: a priority stayed paused by the peer longer "
          "than the warning time (tx_pause_storm_warning_events " +
          std::to_string(c.tx_pause_storm_warning_events) + ")" + paused(c));
    if (c.tx_pause_storm_error_events > errors_) {
      r.port_error = true;
      r.lines.push_back(
          "PFC pause storm: a priority stayed paused by the peer for the whole "
          "detection time; the watchdog acts on it (tx_pause_storm_error_events " +
          std::to_string(c.tx_pause_storm_error_events) + ")" + paused(c));
    }
    warnings_ = c.tx_pause_storm_warning_events;
    errors_ = c.tx_pause_storm_error_events;
    return r;
  }

 private:
  /// "; paused: priority 3 for 2100000 us" for every priority paused at all.
  static std::string paused(const PortCounters& c) {
    std::string s;
    for (int p = 0; p < PortCounters::kPriorities; ++p)
      if (c.rx_prio_pause_duration[p])
        s += (s.empty() ? "; paused: " : ", ") + std::string("priority ") + std::to_string(p) +
             " for " + std::to_string(c.rx_prio_pause_duration[p]) + " us";
    return s;
  }

  uint64_t warnings_ = 0;
  uint64_t errors_ = 0;
};

}  // namespace uroce::device
