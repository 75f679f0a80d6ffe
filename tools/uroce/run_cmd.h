/**
 * @file run_cmd.h
 * @brief `uroce run [--config F] -- PROGRAM ARGS...`: runs an unmodified RDMA program over
 * uroce. It puts uroce's private library folder (libibverbs.so.1, librdmacm.so.1) first in
 * LD_LIBRARY_PATH, exports UROCE_CONFIG when --config is given, and provides the kernel RDMA
 * files UCX reads as `uroce rdma-ns --` does (rdma_ns.h); then the program replaces uroce.
 */
#pragma once

#include <string>
#include <vector>

namespace uroce::tool {

struct RunOptions {
  std::string config;             ///< --config: the configuration file (empty: as found)
  std::vector<std::string> argv;  ///< the program and its arguments
};

/// The folder that holds uroce's libibverbs.so.1 for the `uroce` program at `exe`:
/// <bin>/../lib/uroce when installed (cmake --install, the Debian package), <bin>/../lib in
/// the build tree; empty when neither has it.
std::string private_lib_dir(const std::string& exe);

/// Runs the subcommand; returns only on failure, with the exit status.
int run(const RunOptions& o);

}  // namespace uroce::tool
