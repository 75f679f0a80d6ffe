/**
 * @file hostd_status.h
 * @brief What uroce-hostd publishes about itself beside its statistics segment: each worker
 * (frames each way, CPU busy share, ring backlogs) and each client (pid, command, QPN block,
 * frames, drops by reason, ring depths), as one JSON file per daemon in the run directory,
 * `uroce-hostd.<netdev>.<pid>.json`, replaced whole (written aside, then renamed) every
 * publication. `uroce show roce` and the exporter read every such file whose daemon is alive,
 * and remove those of daemons that are gone (killed: it could not), as stale segments are
 * (docs/host-mode.md, "Visible").
 *
 * The reader trusts nothing: a file that does not parse, or whose fields have other types,
 * is skipped with one line in `errors` (anyone may write into /dev/shm).
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uroce::stats {

struct HostdWorkerStatus {
  uint32_t id = 0;
  uint64_t frames_in = 0;   ///< from the netdev
  uint64_t frames_out = 0;  ///< to the netdev
  double busy = 0;          ///< share of the last interval spent in rounds that moved frames
  uint64_t tx_backlog = 0;  ///< frames waiting in its clients' TX rings
  uint64_t rx_backlog = 0;  ///< frames its clients have not yet taken from their RX rings
};

struct HostdClientStatus {
  uint32_t slot = 0;    ///< its QPN block
  uint32_t worker = 0;  ///< the worker that serves its TX ring and control socket
  int32_t pid = 0;
  uint32_t uid = 0;
  std::string command;  ///< /proc/<pid>/comm when it came
  std::string device;
  uint64_t to_client = 0, from_client = 0, to_wire = 0, switched = 0;
  uint64_t dropped = 0;     ///< for it, but its RX ring was full; or a bad descriptor
  uint64_t cm_refused = 0;  ///< CM MADs it sent under another's IDs
  std::map<std::string, uint64_t> refused;  ///< frames it sent that TxGuard refused, by reason
  uint64_t rx_depth = 0;                    ///< frames in its RX ring now
  uint64_t tx_depth = 0;                    ///< frames in its TX ring now
};

struct HostdStatus {
  std::string netdev;
  int32_t pid = 0;
  uint64_t start_time = 0;  ///< the daemon's (process_start_time(): a reused pid is not it)
  std::vector<HostdWorkerStatus> workers;
  std::vector<HostdClientStatus> clients;
};

/// "<run_dir>/uroce-hostd.<netdev>.<pid>.json".
std::string hostd_status_path(const std::string& run_dir, std::string_view netdev, pid_t pid);

std::string to_json(const HostdStatus& s);
/// nullopt (and *err) for text that is not a status as to_json() writes it.
std::optional<HostdStatus> hostd_status_from_json(std::string_view text, std::string* err);

/// Writes `s` to `path` whole (a temporary file renamed over it). false with *err.
bool write_hostd_status(const std::string& path, const HostdStatus& s, std::string* err);

/// Every status file in `run_dir` (empty: run_dir()) whose daemon is alive, by netdev; the
/// files of daemons that are gone are removed (where this process may); one line in *errors
/// per file that cannot be read.
std::vector<HostdStatus> read_hostd_statuses(const std::string& run_dir,
                                             std::vector<std::string>* errors);

}  // namespace uroce::stats
