/**
 * @file segment.h
 * @brief The writer side of a statistics segment (layout.h): created by the process that owns
 * a device, written without locks by its engine and driver, removed when it is destroyed or
 * the process exits normally (atexit: the file is unlinked but stays mapped, so threads that
 * still write at exit write into valid memory). A segment of a process that was killed stays
 * behind until the next process creates its first segment in that run dir, or `uroce show`
 * runs: both remove it (reader.h reap_stale()) and print one summary line.
 *
 * Typical use in the composition root of a device (lib/device runtime.cc):
 *   auto seg = stats::StatsSegment::create(cfg.name, stats::summarize(cfg), &err);
 *   CounterBlock* counters = seg ? seg->counters() : &private_counters;
 *   engine = std::make_unique<transport::Engine>(ec, counters, observer);
 */
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/counters.h"
#include "stats/layout.h"

namespace uroce::stats {

struct CreateOptions {
  std::string run_dir;                        ///< empty: run_dir() ($UROCE_RUN_DIR or /dev/shm)
  uint32_t qp_capacity = kDefaultQpCapacity;  ///< QP slots; add_qp() fails beyond
  pid_t pid = 0;                              ///< 0: this process (tests may name another)
  uint64_t start_time = 0;                    ///< 0: read from /proc for pid
};

class StatsSegment {
 public:
  /// Creates <run dir>/uroce.<device>.<pid> (replacing a leftover of the same name, which can
  /// only be a dead process's), fills header, names and config, and publishes it. The first
  /// call of a process in a run dir first removes that dir's stale segments (reap_stale())
  /// and, when there were any, writes one line on stderr: "uroce: removed N stale segments
  /// in DIR ...".
  /// $UROCE_STATS=0 (or "off") disables segments: create() then always fails.
  /// @return nullptr with *err set to one line (the path and the system error) on failure.
  static std::unique_ptr<StatsSegment> create(std::string_view device, const ConfigSummary& config,
                                              std::string* err, const CreateOptions& opts = {});
  /// Marks the segment closed, unlinks it and its baseline, unmaps it.
  ~StatsSegment();
  StatsSegment(const StatsSegment&) = delete;
  StatsSegment& operator=(const StatsSegment&) = delete;

  /// The engine counters, for transport::Engine's constructor. Valid for the segment's life.
  CounterBlock* counters() { return counters_; }
  /// Per-priority and port statistics (driver / TX scheduler).
  PortStats* port() { return port_; }
  /// Claims a free QP slot for qpn (type 0 RC, 1 UC, 2 UD) in state RESET, counters zero.
  /// @return nullptr when every slot is taken (the QP then simply has no record).
  QpRecord* add_qp(uint32_t qpn, uint32_t type);
  /// Frees a slot claimed by add_qp (null is ignored).
  void remove_qp(QpRecord* rec);
  /// Optional liveness bump (e.g. once per progress loop).
  void heartbeat() { add(header_->heartbeat); }

  const std::string& path() const { return path_; }

 private:
  StatsSegment() = default;
  /// Marks closed and unlinks, but keeps the mapping: at exit other threads (a progress
  /// thread, a driver) may still write counters until the process is gone.
  void retire();
  void close();  ///< retire() and unmap

  std::string path_;
  void* base_ = nullptr;
  size_t size_ = 0;
  SegmentHeader* header_ = nullptr;
  CounterBlock* counters_ = nullptr;
  PortStats* port_ = nullptr;
  QpRecord* qps_ = nullptr;
  uint32_t qp_capacity_ = 0;
  uint32_t next_slot_ = 0;  ///< where add_qp starts looking
  bool retired_ = false;    ///< unlinked (at exit); the mapping stays until the destructor
  friend void close_all_at_exit();
};

}  // namespace uroce::stats
