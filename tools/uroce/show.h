/**
 * @file show.h
 * @brief `uroce show roce | counters | qp` and `uroce clear counters`: read the statistics
 * segments (lib/stats) of running programs and print them for people (tables) or scripts
 * (`--json`). Return the process exit status: 0, or 1 when a segment could not be read or
 * its owner exited while it was read (one line on stderr each). Stale segments (owner gone)
 * are removed first (lib/stats reap_stale()), reported by one summary line on stderr; one
 * that cannot be removed is reported with the command that removes it. Neither fails the
 * command.
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace uroce::tool {

struct ShowOptions {
  std::string run_dir;  ///< empty: $UROCE_RUN_DIR or /dev/shm
  std::string device;   ///< only this device (empty: all)
  pid_t pid = 0;        ///< only this process (0: all)
  int64_t qp = -1;      ///< show counters: only this QP (-1: device counters)
  bool json = false;
  bool watch = false;  ///< repeat every interval_s until interrupted
  int interval_s = 1;
  bool raw = false;  ///< ignore `clear counters` baselines
  bool all = false;  ///< show counters: include zero per-priority values
};

int show_roce(const ShowOptions& o);
/// `show roce --json`'s document for the running programs only (the node API's host state).
std::string roce_state_json(const ShowOptions& o);
int show_counters(const ShowOptions& o);
int show_qp(const ShowOptions& o);
int clear_counters(const ShowOptions& o);

}  // namespace uroce::tool
