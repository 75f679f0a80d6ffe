/**
 * @file open_loop.h
 * @brief Open-loop short messages: RDMA WRITEs from host A to host B arriving by a Poisson
 * process, each posted when it arrives whatever is still outstanding (unlike RcStream, which
 * posts the next message when one completes), for message completion times under a given
 * offered load.
 *
 * Arrivals: gaps drawn from an exponential distribution (inverse transform on the seeded Rng,
 * so the same seed gives the same arrivals everywhere) with mean mean(sizes) * 8 / (load *
 * rate_bps); each arrival's size is drawn uniformly from `sizes`. Arrival k is posted on QP
 * k % qps (several connections, as several applications or threads would use), signaled; its
 * completion time is the send completion's time minus the arrival time. A full send queue
 * refuses the arrival (counted, never completes). Payload bytes are not checked (RcStream does
 * that). Units: bytes, bit/s, ns.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine_host.h"
#include "sim/rng.h"
#include "sim/testbed.h"

namespace uroce::sim {

struct OpenLoopConfig {
  double load = 0.1;                      ///< offered load as a fraction of rate_bps, > 0
  uint64_t rate_bps = 40'000'000'000ull;  ///< the rate `load` refers to
  std::vector<uint32_t> sizes = {4096, 8192, 16384, 32768, 65536};  ///< drawn uniformly
  uint32_t qps = 8;       ///< connections the arrivals rotate over
  uint32_t depth = 1024;  ///< send queue depth of each
  uint64_t seed = 1;
  Duration stop = Duration::millis(10);  ///< no arrival later than this after start()
};

struct OpenLoopMessage {
  Timestamp arrival{0};
  uint32_t bytes = 0;
  Timestamp done = Timestamp::never();  ///< send completion; never: refused or outstanding
};

class OpenLoopWrites {
 public:
  /// Creates and connects the QP pairs (host indices give the addresses, testbed.h) and
  /// registers the buffers; error() says what failed.
  OpenLoopWrites(const OpenLoopConfig& cfg, EngineHost& a, int a_index, EngineHost& b, int b_index,
                 const ConnParams& conn);

  /// Adds the completion poller to A and schedules the first arrival.
  void start();

  const std::vector<OpenLoopMessage>& messages() const { return msgs_; }
  /// Completion times of the messages that arrived in [from, to) and completed.
  std::vector<Duration> completion_times(Timestamp from, Timestamp to = Timestamp::never()) const;
  /// Messages that arrived in [from, to) and did not complete (outstanding or refused).
  size_t unfinished(Timestamp from, Timestamp to = Timestamp::never()) const;
  uint64_t refused() const { return refused_; }
  Duration mean_gap() const { return mean_gap_; }
  const std::string& error() const { return error_; }

 private:
  void arrive();
  Duration gap();
  bool poll(Timestamp now);

  OpenLoopConfig cfg_;
  EngineHost& a_;
  std::vector<Endpoint> qa_, qb_;
  std::vector<Region> src_, dst_;
  Rng gap_rng_, size_rng_;
  Duration mean_gap_{};
  Timestamp stop_{0};
  std::vector<OpenLoopMessage> msgs_;
  uint64_t refused_ = 0;
  std::string error_;
};

}  // namespace uroce::sim
