/**
 * @file eal.h
 * @brief EAL bootstrap: once per process, lazily, thread-safe (see eal_args.h for the
 * command line). A process that never opens a DPDK port never starts EAL.
 */
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace uroce::dpdk {

/// Starts EAL if it is not running yet, from `dev` and every DPDK device of config::load().
/// Returns false with *err set when EAL could not start (then it never will in this process:
/// EAL cannot be initialised twice, so later calls return the same error), and in a process
/// forked from the one that started EAL (one line: uroce has no fork support).
bool ensure_eal(const config::Device& dev, std::string* err);

/// The argv EAL was started with (empty before ensure_eal() succeeded).
std::vector<std::string> eal_args_used();

/// Creates the DPDK device of a port string if EAL does not know it yet (rte_dev_probe) and
/// returns its ethdev port id in *port_id.
bool probe_port(const std::string& port, uint16_t* port_id, std::string* err);

}  // namespace uroce::dpdk
