/**
 * @file devnodes.h
 * @brief `uroce devnodes`: the /dev/infiniband character devices that UCX looks for.
 *
 * UCX (1.13, Debian 12's libucx0) lists an ibv device only when /dev/infiniband/<dev_name>
 * exists, is a character device and is readable and writable (it stat()s and access()es it,
 * never opens it). uroce names device i of the configuration `uverbs<i>` (ibv_device.dev_name,
 * lib/verbs/device.cc), and without a kernel RDMA driver there is no /dev/infiniband at all.
 *
 *   uroce devnodes                 which nodes exist, and the commands that create them
 *   uroce devnodes -- CMD ARGS...  runs CMD in a private mount namespace in which every missing
 *                                  node exists (an overlay on /dev; the host's /dev is untouched)
 *
 * The nodes made here are aliases of /dev/null (char 1:3). Nodes that already exist (a real
 * RDMA driver's) are left as they are.
 */
#pragma once

#include <string>
#include <vector>

namespace uroce::tool {

struct DevnodesOptions {
  int count = -1;                 ///< nodes uverbs0..count-1; -1: one per configured device
  std::vector<std::string> argv;  ///< the command to run; empty: report only
};

/// The node paths for `count` devices: /dev/infiniband/uverbs0 ...
std::vector<std::string> devnode_paths(int count);

/// Runs the subcommand. Returns the exit status (with a command: only on failure, since the
/// command replaces this process).
int devnodes(const DevnodesOptions& o);

}  // namespace uroce::tool
