/**
 * @file run_path.h
 * @brief Where uroce's run-time files of a netdev live: <dir>/<kind>-<ifname>.<netns inode>,
 * dir $UROCE_RUN_DIR or /run/uroce. The inode of /proc/self/ns/net keeps equal interface names
 * of two network namespaces apart. drivers/xdp's netdev lock and uroce-hostd's socket and lock
 * (drivers/shm/control.h) are named by it.
 */
#pragma once

#include <string>
#include <string_view>

namespace uroce {

/// The run folder: $UROCE_RUN_DIR when set and not empty, else /run/uroce.
std::string netdev_run_dir();

/// netdev_run_dir() + "/<kind>-<ifname>.<inode of /proc/self/ns/net>".
std::string netdev_run_path(std::string_view kind, std::string_view ifname);

}  // namespace uroce
