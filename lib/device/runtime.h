/**
 * @file runtime.h
 * @brief One opened device inside a process: the port, the engine, the engine lock and the
 * progress thread that runs ProgressPolicy (docs/design.md, "Threads and progress").
 *
 * The composition root below the ABI: start() (from open(), or later for a deferred open)
 * opens the port its configuration names, builds the congestion control and the engine on it,
 * creates the statistics segment and starts the thread. Progress comes from two places, both under
 * the engine lock (mu):
 *  - the application's own calls: drive_locked() (a poll) and drive_post_locked() (a post) run
 *    a few progress steps, bounded by progress_policy.h (kDriveRounds, kPostRxGap);
 *  - the background thread `uroce-progress`, so that a passive side (the target of WRITE/READ,
 *    a process blocked waiting for a completion event) still answers. What it does when is
 *    decided by ProgressPolicy from the clock and the application's calls (last_app_call); the
 *    thread reads the clock and the process's CPU use, and steps, spins, yields or sleeps as
 *    told.
 *
 * No libibverbs type appears here. The ABI layer (lib/verbs) derives from Runtime: it receives
 * the engine's completion-channel and async events through the transport::EngineObserver
 * methods (the runtime raises its own port events, GID change, port active/error, the same
 * way), keeps its objects by engine id, and adds its per-QP statistics in
 * refresh_stats_locked(). A derived class calls shut_down() first in its destructor, because
 * the thread calls those methods.
 *
 * Locking: mu is the engine lock (the engine is not thread-safe); every engine call happens
 * under it. Units: nanoseconds (Timestamp/Duration).
 */
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cc/congestion.h"
#include "common/counters.h"
#include "common/port.h"
#include "common/time.h"
#include "common/types.h"
#include "config/config.h"
#include "device/port_health.h"
#include "device/progress_policy.h"
#include "transport/engine.h"
#ifdef UROCE_HAVE_STATS
#include "stats/capture.h"
#include "stats/segment.h"
#endif

namespace uroce::device {

/// CLOCK_MONOTONIC as a Timestamp. The only clock the stack reads for progress.
Timestamp now();

/// The IBA MTU code of an MTU in bytes (1 = 256, 2 = 512, 3 = 1024, 4 = 2048, 5 = 4096; the
/// verbs MTU enum has these values); anything else is 1024's code.
uint8_t mtu_code(uint32_t bytes);

class Runtime : public transport::EngineObserver, public FrameHandler {
 public:
  /// A device not yet open, configured by cfg (from `source`: a file, or "built-in").
  Runtime(const config::Device& cfg, std::string source);
  ~Runtime() override;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Opens the device: start() at once, or, for a port that may open later (ports.h
  /// defer_port(): a host-mode device that uroce-hostd serves), only what the queries need
  /// (GID table, link, MTU, speed, read without DPDK), leaving start() to the first call that
  /// needs the engine. So a program that opens, queries and closes a device starts no DPDK,
  /// and may fork afterwards (DPDK does not survive fork: dpdk/eal.h). Returns 0, or ENODEV
  /// (no port) or EINVAL (bad congestion-control parameters) with one line on stderr. Once.
  int open();
  /// Opens the port, builds the congestion control and the engine (this object its observer),
  /// creates the statistics segment and starts the progress thread, unless done already.
  /// Returns 0 or open()'s errors (a failed start may be tried again). Takes mu.
  int start();
  /// start() has succeeded: port and engine exist.
  bool started() const { return started_.load(std::memory_order_acquire); }
  /// Opened by a process this one was forked from (fork as rdma-core, docs/limits.md): its
  /// engine is a copy of the parent's and its port the parent's (inert in this process); the
  /// verbs layer refuses every call that would use it (EIO) after report_inherited().
  bool inherited() const;
  /// Once per runtime, the line on stderr that says why a call on an inherited context fails.
  void report_inherited();
  /// The device is gone: its port's service (uroce-hostd) went away and did not come back
  /// within the grace (the longest RC retry budget of its QPs, Port::kServiceGraceMin..Max),
  /// or the next daemon refused it. The device-fatal async event was raised and every QP flushed;
  /// calls that create or modify objects fail with EIO, as the kernel's after a device's
  /// removal (docs/host-mode.md, "The daemon restarting").
  bool gone() const { return gone_.load(std::memory_order_acquire); }
  /// Stops the progress thread and reports the counters (print_counters("close")). Idempotent.
  void shut_down();

  /// The counters the engine writes: the stats segment's when there is one, else `counters`.
  CounterBlock* engine_counters();
  /// UROCE_PRINT_COUNTERS=1: the device's non-zero counters on stderr, one line
  /// "uroce: <dev>: counters at <when>: name=value ..."; once per runtime.
  void print_counters(const char* when);

  /// What one progress step did: frames received and frames sent.
  struct Progress {
    size_t rx = 0;
    size_t tx = 0;
    size_t total() const { return rx + tx; }
  };
  /// One progress step: RX burst, timers + transmit, flush. Requires mu.
  Progress progress_locked(Timestamp now);
  /// The transmit half of a step: timers + transmit, flush. Requires mu. Returns frames sent.
  size_t transmit_locked(Timestamp now);
  /// Application-driven progress at t (a poll): up to kDriveRounds steps while they find work.
  /// Requires mu.
  void drive_locked(Timestamp t);
  /// Progress after a post at t: sends what is ready; receives too unless the RX queue was
  /// polled less than kPostRxGap ago. Requires mu.
  void drive_post_locked(Timestamp t);
  /// The MAC of g from the port's neighbour cache, waiting up to kNeighborWaitBudget for an
  /// ARP/ND reply with progress running (neighbor_wait.h). Takes mu (not held by the caller).
  bool resolve_neighbor(const Gid& g, MacAddr* mac);

  const config::Device cfg;  ///< the device's configuration (fixed while open)
  const ProgressTuning tuning = progress_tuning(cfg.progress);  ///< [device.progress]
  const std::string source;  ///< the file it came from, or "built-in"

  std::mutex mu;  ///< the engine lock
  std::unique_ptr<Port> port;
  std::unique_ptr<cc::CongestionFactory> cc;  ///< null: no congestion control; outlives engine
  CounterBlock counters;                      ///< used when there is no stats segment
#ifdef UROCE_HAVE_STATS
  std::unique_ptr<stats::StatsSegment> stats;     ///< shared-memory counters for `uroce show`
  std::unique_ptr<stats::CaptureWriter> capture;  ///< `uroce capture` ring while one runs
#endif
  std::unique_ptr<transport::Engine> engine;
  std::vector<Gid> gids;          ///< GID table (index = address index; zero = free slot)
  size_t gid_v1_base = SIZE_MAX;  ///< gids from this index on are RoCE v1 (gid_table())
  uint8_t active_mtu = 3;         ///< mtu_code() of the MTU in force
  uint64_t view_speed_bps = 0;    ///< the port's speed before start() (defer_port())
  bool link_up = true;            ///< the netdev's link (host mode; others always up)
  int ifindex = 0;                ///< the netdev's ifindex (host mode), else 0
  uint64_t link_version = 0;      ///< Port::link_version() last applied (mu)

  Timestamp rx_now{};   ///< time of the RX burst in progress
  Timestamp last_rx{};  ///< when the RX queue was last polled (mu)
  PortHealth health;    ///< pause-storm watchdog reports (mu)

  /// When the application last made progress itself (a post or poll; Timestamp ns): the
  /// progress thread stays out of its way while it calls, and polls right after it stops.
  std::atomic<int64_t> last_app_call{0};
  bool exiting = false;  ///< process exit began: no more progress (mu)

  // FrameHandler (port RX; called with mu held)
  void on_frame(std::span<const uint8_t> frame, const RxMeta& meta) override;
  /// transport::EngineObserver: a connected QP's path, to the port (Port::qp_connection: a
  /// port shared through uroce-hostd registers it with the daemon). Engine lock held.
  int on_qp_connect(uint32_t qpn, const Gid& dgid, uint32_t dqpn, uint16_t sport) override;
  void on_qp_disconnect(uint32_t qpn) override;

 protected:
  /// Every kStatsRatePeriod, on the progress thread under mu, before the port's statistics:
  /// what the layer above publishes (its per-QP records).
  virtual void refresh_stats_locked() {}

 private:
  /// At process exit, before lib/stats unmaps the segments the engines write: stop_at_exit()
  /// on every runtime whose thread started.
  static void stop_all_at_exit();

  /// Applies a changed Port::link_state(): GID table (kGidChange), link (kPortErr /
  /// kPortActive), active MTU. Requires mu.
  void follow_link_locked();
  /// Follows Port::service(): a lost service gets its grace, one that came back is reported,
  /// one gone (or past its grace) makes the device gone. Requires mu.
  void follow_service_locked(Timestamp t);
  /// Logs pause storms the port's watchdog counted and raises kPortErr for an error
  /// (port_health.h). Requires mu.
  void check_port_health();
  /// Copies the port's counters (PMD, PFC, per-priority TX) into the segment (port_stats.cc).
  void refresh_port_stats_locked();
  /// Attaches to a `uroce capture` ring created for this device and process, or lets go of one
  /// the tool removed (capture_tap.h, port_stats.cc). Requires mu.
  void refresh_capture_locked();
  /// Starts the background progress thread.
  void start_thread();
  /// The progress thread, idle for kBlockIdle on a port with a doorbell: blocks on it (and on
  /// wake_efd_) until the engine's next deadline, at most kBlockMax; false when it did not
  /// (frames or TX work were waiting).
  bool block_on_port();
  /// An application call while the progress thread blocks: wakes it, so it follows the
  /// application (and the deadlines its calls set). Requires mu.
  void wake_thread_locked();
  /// Wakes the progress thread from a block on the port (shut-down, exit, an application call).
  void kick_thread();
  /// The progress thread's loop.
  void run();
  /// At process exit: stops the thread, then application-driven progress; reports counters.
  void stop_at_exit();

  std::thread thread_;
  const uint64_t fork_generation_;  ///< the process's fork generation when constructed
  const pid_t owner_pid_;           ///< the process that opened it
  std::atomic<bool> inherited_reported_{false};
  int wake_efd_ = -1;     ///< eventfd: application calls wake the blocked thread (-1: no doorbell)
  bool blocked_ = false;  ///< the thread blocks on the port's doorbell (mu)
  pid_t thread_pid_ = 0;  ///< the process that started thread_ (a forked child has no thread)
  std::atomic<bool> stop_{false};
  std::atomic<bool> gone_{false};
  Timestamp lost_at_ = Timestamp::never();  ///< the port's service went away then (mu)
  Duration grace_{};                        ///< how long it may take to come back (mu)
  std::mutex start_mu_;                     ///< one start() at a time
  std::atomic<bool> started_{false};
  bool counters_printed_ = false;  ///< print_counters ran
  bool live_ = false;              ///< in the list stop_all_at_exit() walks (its lock)
};

}  // namespace uroce::device
