/**
 * @file reader.h
 * @brief The reader side of statistics segments (layout.h): list the segments in a run
 * directory, tell live from stale ones (owner dead, or its pid reused by another program),
 * and copy one out consistently while its owner keeps writing.
 *
 * Every failure is one line naming the file and the problem, fit for a command's stderr.
 */
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "stats/layout.h"

namespace uroce::stats {

enum class SegmentState : uint8_t {
  kLive,        ///< the owner runs
  kStale,       ///< the owner is gone (or its pid now belongs to another program)
  kUnreadable,  ///< not a segment this uroce can read (see SegmentInfo::problem)
};

/// One file found by list_segments().
struct SegmentInfo {
  std::string path;
  std::string device;  ///< from the file name
  pid_t pid = 0;       ///< from the file name
  SegmentState state = SegmentState::kUnreadable;
  std::string problem;  ///< for kStale / kUnreadable: one line
};

/// Lists uroce.<device>.<pid> files in `dir`, sorted by device then pid, with their state.
/// A missing directory gives an empty list.
std::vector<SegmentInfo> list_segments(const std::string& dir);

/// Removes the segments in `dir` whose owner is gone, with their baselines, and returns how
/// many. A segment is removed only when its header is valid and its owner (pid and start time
/// from the header) is not alive, as process_alive() decides: the pid is free, or it belongs to
/// a process that started at another time; a segment whose pid exists while its start time is
/// unknown (0, or /proc unreadable) is kept. The name is unlinked only while it still refers
/// to the file that was checked. Files that cannot be removed (another user's, in a sticky
/// folder) stay, and list_segments() reports them as stale.
int reap_stale(const std::string& dir);

/// The one line that reports a reap, "removed 2 stale segments in /dev/shm (their processes
/// are gone)"; empty when none was removed.
std::string reap_summary(int removed, const std::string& dir);

/// A consistent copy of one segment.
struct Snapshot {
  std::string path;
  std::string device;
  pid_t pid = 0;
  uint64_t start_time = 0;
  uint64_t heartbeat = 0;
  bool stale = false;                      ///< the owner was not alive when read
  std::vector<std::string> counter_names;  ///< from the segment's own names table
  std::vector<uint64_t> counters;          ///< parallel to counter_names
  PortStats port{};
  ConfigSummary config{};
  std::vector<QpRecord> qps;  ///< in-use slots, sorted by qpn

  /// Value of an engine counter by name; 0 when the segment has no such counter.
  uint64_t counter(std::string_view name) const;
};

enum class ReadStatus : uint8_t {
  kOk,
  kStale,        ///< read, but the owner is not alive (Snapshot::stale); values are the last
  kOwnerExited,  ///< the owner closed or exited while the copy was made; do not trust it
  kError,        ///< cannot read (err says why)
};

/// Test seam: called after the values are copied and before the owner is checked again.
struct ReadHooks {
  std::function<void()> after_copy;
};

/// Copies the segment at `path`. *err gets one line for every status but kOk.
ReadStatus read_segment(const std::string& path, Snapshot* out, std::string* err,
                        const ReadHooks* hooks = nullptr);

/// "rx_prio_pause", 3 -> "rx_prio3_pause" (the ethtool spelling of a per-priority name).
std::string prio_stat_name(std::string_view name, int prio);

}  // namespace uroce::stats
