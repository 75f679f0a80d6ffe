/**
 * @file gsi.h
 * @brief The engine's QP1, the General Services Interface (IBA Vol 1 §13.5.1): the queue pair
 * that carries management datagrams, here the CM MADs that librdmacm's connection manager
 * exchanges (issue #9). Internal to lib/transport; the contract is Engine::enable_gsi /
 * poll_gsi / post_gsi in engine.h.
 *
 * On RoCEv2 a MAD travels as a UD SEND_ONLY to BTH DestQP 1 with DETH Q_Key 0x80010000 and
 * source QP 1, P_Key 0xffff, in a UDP/4791 datagram; the payload is the 256-byte MAD
 * (IBA Annex 17 §A17.4, IBA §13.4.1). Receive: the gate hands every packet for QP 1 to
 * Gsi::on_packet, which keeps well-formed MADs in a bounded queue until poll_gsi takes them.
 * Transmit: post_gsi queues a MAD; Engine::poll_transmit sends it once the peer's MAC is
 * known (ARP/ND through the NeighborResolver), or drops it after kGsiResolveFor.
 *
 * Both queues are bounded (kGsiQueueDepth) and live on the control path; MADs beyond them are
 * counted (gsi_rx_dropped, gsi_tx_dropped) and dropped: the CM resends, as over any lossy
 * datagram service. Units: bytes, ns.
 */
#pragma once

#include <cstdint>
#include <deque>
#include <span>

#include "common/counters.h"
#include "common/packet_io.h"
#include "common/time.h"
#include "common/types.h"
#include "transport/engine.h"
#include "transport/wire/parse.h"

namespace uroce::transport {

inline constexpr uint32_t kGsiQpn = 1;         ///< the GSI's QP number (IBA §13.5.1)
inline constexpr size_t kGsiQueueDepth = 256;  ///< MADs held per direction
/// How long a MAD waits for its peer's MAC before it is dropped.
inline constexpr Duration kGsiResolveFor = Duration::seconds(1);
/// Retry period of a MAD whose peer's MAC is unknown.
inline constexpr Duration kGsiResolveRetry = Duration::millis(1);

class Gsi {
 public:
  /// obs (may be null) hears on_gsi_mad() for every MAD queued.
  Gsi(const EngineConfig& cfg, CounterBlock* ctr, EngineObserver* obs)
      : cfg_(cfg), ctr_(ctr), obs_(obs) {}

  void enable(bool on);
  bool enabled() const { return enabled_; }

  /// A packet the gate parsed whose DestQP is 1. Drops (counted) what is not a MAD for QP1.
  void on_packet(const wire::ParsedPacket& p);
  size_t poll(std::span<GsiMad> out);
  /// Queues m for sending. EINVAL: m.local is not in the GID table; ENOMEM: queue full;
  /// EAGAIN: not enabled.
  Status post(const GsiMad& m, Timestamp now);

  /// Sends queued MADs whose peer MAC is known; returns frames written.
  size_t transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now);
  /// now-or-earlier when a MAD is ready, the next resolve retry, or never.
  Timestamp next_deadline(Timestamp now) const;
  bool has_tx_work() const { return !tx_.empty() && tx_.front().retry_at.is_never(); }

 private:
  struct Out {
    GsiMad mad;
    uint8_t sgid_index = 0;
    Timestamp give_up_at;
    Timestamp retry_at = Timestamp::never();  ///< never: try at once
  };
  void inc(Counter c) { ctr_->inc(c, 1); }

  const EngineConfig& cfg_;
  CounterBlock* ctr_;
  EngineObserver* obs_;
  bool enabled_ = false;
  std::deque<GsiMad> rx_;
  std::deque<Out> tx_;
  uint32_t psn_ = 0;  ///< PSN of the next MAD sent (UD: any value; counts up)
};

}  // namespace uroce::transport
