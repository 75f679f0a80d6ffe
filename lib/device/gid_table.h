/**
 * @file gid_table.h
 * @brief The GID table of a device that follows a kernel netdev: slots that keep their index
 * while their address stays, as a RoCE NIC's table does (the kernel's ib_cache), so a QP or AH
 * created with sgid_index i keeps its source address when other addresses come and go.
 */
#pragma once

#include <vector>

#include "common/types.h"

namespace uroce::device {

/// The table after the netdev's addresses became `now` (RoCEv2 GIDs in the kernel's order):
/// entries still present keep their slot, entries gone become zero (free), and new addresses
/// fill the free slots from the lowest index, then extend the table, in the order of `now`.
/// Trailing free slots are dropped. `old` empty: the table is `now`.
std::vector<Gid> merge_gid_table(const std::vector<Gid>& old, const std::vector<Gid>& now);

}  // namespace uroce::device
