/**
 * @file proc.h
 * @brief Process identity for statistics segments: a pid plus its start time (clock ticks
 * since boot, /proc/<pid>/stat field 22), so a pid reused by another program is told apart;
 * and the run directory segments live in.
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace uroce::stats {

/// Start time of `pid` in clock ticks since boot; 0 when /proc/<pid>/stat cannot be read.
uint64_t process_start_time(pid_t pid);

/// True while process `pid` exists and (when start_time != 0 and it can be read) started at
/// start_time. A pid that exists but belongs to another start time is not alive.
bool process_alive(pid_t pid, uint64_t start_time);

/// The run directory: `explicit_dir` if not empty, else $UROCE_RUN_DIR, else "/dev/shm".
std::string run_dir(std::string_view explicit_dir = {});

/// The segment file name for a device and pid: "uroce.<device>.<pid>".
std::string segment_name(std::string_view device, pid_t pid);

/// Parses a segment file name; false for anything else (baselines, temp files).
bool parse_segment_name(std::string_view name, std::string* device, pid_t* pid);

}  // namespace uroce::stats
