/**
 * @file doctor.h
 * @brief `uroce doctor`: checks what a uroce program needs on this host and prints one line
 * per check ("ok", "warn", "FAIL") with, for every problem, the command that fixes it:
 * the configuration file, DPDK PMDs for the configured ports, hugepages (or the driver's
 * --no-huge fallback), network interfaces, memif socket folders, capabilities and folder
 * permissions, left-over statistics segments, and (when UCX is installed) the /dev/infiniband
 * nodes UCX needs to list uroce devices (rdma_ns.h). Exit status 1 when any check FAILs.
 */
#pragma once

#include <string>

namespace uroce::tool {

/// Where the checks look; tests point them at fake trees.
struct DoctorOptions {
  std::string dpdk_lib_dir = "/usr/lib/x86_64-linux-gnu/dpdk";  ///< holds pmds-<abi>/
  std::string sys_class_net = "/sys/class/net";
  std::string meminfo = "/proc/meminfo";
  std::string dpdk_run_dir = "/var/run/dpdk";
  std::string run_dir;  ///< statistics segments; empty: $UROCE_RUN_DIR or /dev/shm
  /// UCX's InfiniBand transport module: when present, the UCX check runs.
  std::string ucx_ib_module = "/usr/lib/x86_64-linux-gnu/ucx/libuct_ib.so.0";
};

int doctor(const DoctorOptions& o);

}  // namespace uroce::tool
