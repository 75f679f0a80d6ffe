/**
 * @file eal_args.h
 * @brief The EAL command line uroce builds for itself, as a pure function of what it found
 * (configured devices, hugepages, CPUs, environment), so it is unit-tested without starting
 * EAL (tests/dpdk/eal_args_test.cc).
 *
 * Rules (DPDK 22.11's EAL; drivers/dpdk/PMDS.md, docs/configuration.md):
 *  - `--file-prefix=<unique>` always: two programs on one machine never share EAL files;
 *  - `--no-pci` unless a device's port is a PCI address; then `-a <addr>` for each such port;
 *  - `--vdev=<port string>` for each vdev known at init (the driver passes none and probes
 *    each port at open with rte_dev_probe, so a bad port fails only its own open);
 *  - without usable hugepages `--no-huge -m <MB>` (never `--in-memory`, which EAL refuses
 *    together with `--no-huge`); with hugepages `--in-memory`;
 *  - `--lcores=0@(<all CPUs of the process' affinity>)`: EAL pins the calling thread to the
 *    lcore's CPU set, and pinning it to one CPU would make two processes starve each other;
 *  - `--no-telemetry`, `--log-level=<level>` (quiet: "error" unless UROCE_DPDK_LOG says);
 *  - the devices' own `eal` arguments last; when they give -m/--socket-mem, --no-huge,
 *    --in-memory, -l/-c/--lcores or --log-level, the automatic one is left out.
 * Units: memory in MB (EAL's -m).
 */
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uroce::dpdk {

/// What the EAL command line is built from.
struct EalPlan {
  std::string file_prefix;          ///< unique per process, e.g. "uroce-1234-5f3a"
  std::vector<std::string> vdevs;   ///< vdev strings to create at init
  std::vector<std::string> pci;     ///< PCI addresses to allow (empty: --no-pci)
  std::vector<std::string> extra;   ///< devices' `eal` arguments, in order
  bool hugepages = false;           ///< free hugepages and a hugetlbfs mount exist
  uint32_t memory_mb = 512;         ///< -m with --no-huge (untouched pages cost nothing)
  std::string cpus;                 ///< CPU list for --lcores, e.g. "0-1" ("" = EAL's)
  std::string log_level = "error";  ///< --log-level value
  /// A port is a zero-copy memif client (its mbufs are shared with the server as memif
  /// regions, one file per memseg list: net_memif refuses multi-file segments).
  bool memif_zero_copy = false;
};

/// True for a memif port string (`net_memif...`).
bool is_memif_port(std::string_view port);

/// True for a memif port string in zero-copy mode (`net_memif...,zero-copy=yes`).
bool is_memif_zero_copy(std::string_view port);

/// The argv EAL gets, argv[0] included ("uroce").
std::vector<std::string> build_eal_args(const EalPlan& plan);

/// True for a PCI address port ("0000:03:00.0" or "03:00.0").
bool is_pci_port(std::string_view port);

/// Bytes of free hugepages per /proc/meminfo text (HugePages_Free × Hugepagesize).
uint64_t free_hugepage_bytes(std::string_view meminfo);

/// True when /proc/mounts text lists a hugetlbfs mount.
bool hugetlbfs_mounted(std::string_view mounts);

/// "0-3,6" from a sorted list of CPU numbers.
std::string cpu_list(const std::vector<int>& cpus);

}  // namespace uroce::dpdk
