/**
 * @file identity.h
 * @brief What identifies a uroce device to programs: its vendor id (ibv_query_device, and the
 * vendor of its ECE options) and the ECE option bits it offers.
 */
#pragma once

#include <cstdint>

namespace uroce::verbs {

/// 0xFFFFFF, as Linux rxe: not an IEEE OUI, so no vendor is claimed (rdma-core's suite wants a
/// non-zero one). Programs keyed on vendor_id treat it as an unknown generic device: perftest's
/// vendor checks (Chelsio 0x1425, Intel 0x8086; newer: 0x209b, 0x1f67, 0x1f0f, Pensando 0x1dd8,
/// Mellanox 0x02c9 for its mlx5 paths) fall through to the part id, which no entry has; UCX
/// matches its device table on the sysfs PCI id and tests vendor_id only for 0x02c9
/// (ConnectX-3's path MTU).
inline constexpr uint32_t kVendorId = 0xFFFFFF;

/// ECE option bits (ibv_ece::options) a uroce QP offers: selective repeat and peer timestamps
/// (uroce's extensions, docs/loss-recovery.md). Linux rxe implements no ECE, so no peer reads
/// these bits otherwise.
inline constexpr uint32_t kEceSelectiveRepeat = 1u << 0;
inline constexpr uint32_t kEcePeerTimestamps = 1u << 1;
inline constexpr uint32_t kEceSupported = kEceSelectiveRepeat | kEcePeerTimestamps;

}  // namespace uroce::verbs
