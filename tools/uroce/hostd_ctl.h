/**
 * @file hostd_ctl.h
 * @brief Starting and stopping a netdev's uroce-hostd for `uroce link add|del` (as `rdma link
 * add` makes rxe usable by every process): through systemd's uroce-hostd@IF.service where
 * systemd runs, else as a detached process of its own (log: <run dir>/hostd-IF.<netns>.log).
 */
#pragma once

#include <sys/types.h>

#include <string>

namespace uroce::tool {

enum class HostdManager { kAuto, kSystemd, kDirect, kNone };

/// "auto" | "systemd" | "direct" | "none"; false for anything else.
bool parse_hostd_manager(const std::string& s, HostdManager* out);
/// kAuto as it applies here: kSystemd where systemd runs (/run/systemd/system), else kDirect.
HostdManager resolve(HostdManager m);

/// Starts the daemon of `netdev` (nothing when one serves it already) and waits until it
/// serves (at most 10 s). *how says what was done, one line; false with one line in *err.
bool hostd_start(const std::string& netdev, HostdManager m, std::string* how, std::string* err);

/// Stops the daemon of `netdev` (nothing when none runs) and waits until it has gone (10 s).
bool hostd_stop(const std::string& netdev, HostdManager m, std::string* how, std::string* err);

/// The pid of the daemon that serves `netdev` in this network namespace, or 0.
pid_t hostd_pid(const std::string& netdev);

}  // namespace uroce::tool
