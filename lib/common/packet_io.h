/**
 * @file packet_io.h
 * @brief The engine's view of a port: frames go out through a TxSink, come in as byte spans.
 *
 * The transport builds each frame directly in the driver's buffer (a DPDK mbuf, a simulator
 * packet), so no copy is made between the engine and the port:
 *   uint8_t* p = sink.begin_frame(max_len);   // nullptr: no buffer / queue full, try later
 *   ... write up to max_len bytes at p ...
 *   sink.end_frame(len, meta);                // hands the frame to the port
 * A begin_frame() not followed by end_frame() is abandoned by the next begin_frame().
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/types.h"

namespace uroce {

/// Per-frame metadata for the port's scheduler.
struct TxMeta {
  uint8_t priority = 0;  ///< traffic class 0..7 (PFC priority); the port queues by it
  bool is_cnp = false;   ///< congestion notification: bypasses rate limiting
};

/// Where an engine writes outgoing frames (whole Ethernet frames without FCS).
class TxSink {
 public:
  virtual ~TxSink() = default;
  /// Returns a buffer for one frame of at most max_len bytes, or nullptr when the port
  /// cannot take a frame now (the engine keeps the work and retries on its next poll).
  virtual uint8_t* begin_frame(size_t max_len) = 0;
  /// Sends the frame started by the last begin_frame(), len bytes long.
  virtual void end_frame(size_t len, const TxMeta& meta) = 0;
};

/// Maps a peer's IP address (as a GID) to its MAC: static neighbours, ARP or ND.
class NeighborResolver {
 public:
  virtual ~NeighborResolver() = default;
  /// Returns false when unknown; the implementation may start resolving it, so a later call
  /// may succeed.
  virtual bool resolve(const Gid& ip, MacAddr* mac) = 0;
  /// The IP TTL / hop limit of packets to ip when the path decides it, as the kernel's RoCE
  /// address resolution replaces the AV's hop limit with the route's for every destination
  /// that is not link-local (ib_resolve_eth_dmac); 0 keeps the AV's.
  virtual uint8_t hop_limit(const Gid& ip) {
    (void)ip;
    return 0;
  }
};

/// Metadata of a received frame.
struct RxMeta {
  uint16_t port = 0;  ///< which port of the engine received it
};

}  // namespace uroce
