/**
 * @file sampler.h
 * @brief Periodic time series for scenarios: every `period` of simulated time until `until`,
 * evaluates named probes (queue depth, per-flow bytes, CNP or pause counters) and writes one
 * CSV row "t_us,<probe>,..." (the input of bench/plot). Rows are also kept in memory for
 * tests. Units: t in microseconds of simulated time; probe values in the probe's own units.
 */
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/time.h"
#include "sim/simulator.h"

namespace uroce::sim {

class Sampler {
 public:
  using Probe = std::function<double()>;

  /// path empty: keep rows in memory only.
  Sampler(Simulator& sim, Duration period, Timestamp until, std::string path = {})
      : sim_(sim), period_(period), until_(until), path_(std::move(path)) {}
  ~Sampler() {
    if (f_) std::fclose(f_);
  }
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void add(std::string name, Probe p) { probes_.emplace_back(std::move(name), std::move(p)); }

  /// Writes the header and schedules the first sample at now().
  void start() {
    if (!path_.empty()) {
      f_ = std::fopen(path_.c_str(), "w");
      if (f_) {
        std::fputs("t_us", f_);
        for (auto& [n, p] : probes_) std::fprintf(f_, ",%s", n.c_str());
        std::fputc('\n', f_);
      }
    }
    sim_.call_at(sim_.now(), [this] { sample(); });
  }

  const std::vector<std::vector<double>>& rows() const { return rows_; }

 private:
  void sample() {
    Timestamp now = sim_.now();
    std::vector<double> row{static_cast<double>(now.ns) / 1e3};
    for (auto& [n, p] : probes_) row.push_back(p());
    if (f_) {
      for (size_t i = 0; i < row.size(); ++i) std::fprintf(f_, i ? ",%.6g" : "%.3f", row[i]);
      std::fputc('\n', f_);
    }
    rows_.push_back(std::move(row));
    if (now + period_ <= until_) sim_.call_at(now + period_, [this] { sample(); });
  }

  Simulator& sim_;
  Duration period_;
  Timestamp until_;
  std::string path_;
  std::FILE* f_ = nullptr;
  std::vector<std::pair<std::string, Probe>> probes_;
  std::vector<std::vector<double>> rows_;
};

}  // namespace uroce::sim
