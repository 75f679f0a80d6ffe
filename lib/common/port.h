/**
 * @file port.h
 * @brief A network port as the verbs layer and the engine see it.
 *
 * lib/ declares this interface; drivers/ implement it (drivers/loopback, drivers/dpdk,
 * drivers/host), and drivers/ports (ports.h open_port()) opens the one a device's
 * configuration names. No lib/ code below lib/verbs includes a driver header.
 */
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/packet_io.h"
#include "common/time.h"
#include "common/types.h"

namespace uroce {

/// Receives frames from Port::rx_burst().
class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  /// One received Ethernet frame (no FCS). The bytes are valid only during the call.
  virtual void on_frame(std::span<const uint8_t> frame, const RxMeta& meta) = 0;
};

/// What a port counts below the engine, for the stats segment (`uroce show`, the exporter).
/// Names as mlx5's ethtool spells them. Units: frames, bytes, µs, Mb/s.
struct PortCounters {
  uint64_t rx_packets_phy = 0;   ///< frames the PMD received
  uint64_t tx_packets_phy = 0;   ///< frames the PMD sent
  uint64_t rx_discards_phy = 0;  ///< frames the PMD dropped for lack of buffers or ring room
  uint64_t tx_errors_phy = 0;    ///< frames the PMD failed to send
  uint64_t link_speed_mbps = 0;
  static constexpr int kPriorities = 8;
  uint64_t rx_prio_pause[kPriorities] = {};             ///< PFC frames received naming p
  uint64_t rx_prio_pause_duration[kPriorities] = {};    ///< µs p was paused by the peer
  uint64_t rx_prio_pause_transition[kPriorities] = {};  ///< XOFF -> XON transitions
  uint64_t tx_prio_pause[kPriorities] = {};             ///< PFC frames sent naming p
  uint64_t tx_prio_pause_duration[kPriorities] = {};    ///< µs this host held p in XOFF
  uint64_t tx_prio_packets[kPriorities] = {};           ///< frames sent on p
  uint64_t tx_prio_bytes[kPriorities] = {};             ///< bytes sent on p
  uint64_t tx_prio_queue_depth[kPriorities] = {};       ///< bytes waiting in p's TX queue now
  uint64_t rx_prio_packets[kPriorities] = {};           ///< RoCE/IP frames received on p
  uint64_t rx_prio_bytes[kPriorities] = {};             ///< their bytes (whole frames)
  uint64_t rx_prio_marked[kPriorities] = {};            ///< of those, ECN CE-marked
  uint64_t rx_global_pause = 0;                         ///< 802.3x PAUSE frames received
  uint64_t tx_pause_storm_warning_events = 0;
  uint64_t tx_pause_storm_error_events = 0;
};

/// Adds c to *sum, counter by counter (the counters of ports, or of queues, that carry
/// disjoint traffic: their sum is the whole's); the link speed is the larger.
inline void accumulate(PortCounters& sum, const PortCounters& c) {
  sum.rx_packets_phy += c.rx_packets_phy;
  sum.tx_packets_phy += c.tx_packets_phy;
  sum.rx_discards_phy += c.rx_discards_phy;
  sum.tx_errors_phy += c.tx_errors_phy;
  sum.link_speed_mbps = std::max(sum.link_speed_mbps, c.link_speed_mbps);
  for (int p = 0; p < PortCounters::kPriorities; ++p) {
    sum.rx_prio_pause[p] += c.rx_prio_pause[p];
    sum.rx_prio_pause_duration[p] += c.rx_prio_pause_duration[p];
    sum.rx_prio_pause_transition[p] += c.rx_prio_pause_transition[p];
    sum.tx_prio_pause[p] += c.tx_prio_pause[p];
    sum.tx_prio_pause_duration[p] += c.tx_prio_pause_duration[p];
    sum.tx_prio_packets[p] += c.tx_prio_packets[p];
    sum.tx_prio_bytes[p] += c.tx_prio_bytes[p];
    sum.tx_prio_queue_depth[p] += c.tx_prio_queue_depth[p];
    sum.rx_prio_packets[p] += c.rx_prio_packets[p];
    sum.rx_prio_bytes[p] += c.rx_prio_bytes[p];
    sum.rx_prio_marked[p] += c.rx_prio_marked[p];
  }
  sum.rx_global_pause += c.rx_global_pause;
  sum.tx_pause_storm_warning_events += c.tx_pause_storm_warning_events;
  sum.tx_pause_storm_error_events += c.tx_pause_storm_error_events;
}

/// Bytes after the BTH that roce_path_mtu() keeps for extended headers: XRCETH 4 + AtomicETH 28
/// (a data packet has fewer, which is the room uroce's extension headers use).
inline constexpr uint32_t kRoceHeaderRoom = 4 + 28;

/// The largest RoCE path MTU (bytes: 256..4096) that a netdev MTU carries after the RoCEv2
/// headers (IPv6 40 + UDP 8 + BTH 12 + kRoceHeaderRoom + ICRC 4 = 96 bytes), as the kernel's
/// eth_mtu_int_to_enum(); 0 when not even 256 bytes fit.
constexpr uint32_t roce_path_mtu(uint32_t netdev_mtu) {
  constexpr uint32_t kOverhead = 40 + 8 + 12 + kRoceHeaderRoom + 4;
  uint32_t best = 0;
  for (uint32_t b = 256; b <= 4096; b *= 2)
    if (netdev_mtu >= b + kOverhead) best = b;
  return best;
}
static_assert(roce_path_mtu(1500) == 1024 && roce_path_mtu(351) == 0 && roce_path_mtu(352) == 256 &&
              roce_path_mtu(9000) == 4096);

/// The link of a port that follows a kernel netdev (host mode), as it is now.
struct LinkState {
  int ifindex = 0;        ///< the netdev's interface index
  bool up = true;         ///< the netdev is up with carrier
  uint32_t mtu = 0;       ///< the netdev's MTU (IP bytes); 0 = unknown
  std::vector<Gid> gids;  ///< the netdev's addresses as RoCEv2 GIDs, in the kernel's order
  /// Shared through uroce-hostd: this process' client number at the daemon, which is also its
  /// QPN block (EngineConfig::qpn_block); -1: exclusive.
  int shared_slot = -1;
  /// With shared_slot >= 0: the low QPN bits the engine numbers QPs with inside the block.
  uint8_t qpn_block_bits = 0;
};

/// A port: TX through the TxSink interface, RX by polling.
///
/// Thread-safety: one thread at a time (the engine's lock holder).
class Port : public TxSink, public NeighborResolver {
 public:
  /// Polls up to max frames and hands each to h; returns how many were received. Frames the
  /// port handles itself (ARP, neighbour discovery, PFC) are not passed on. `now` is the
  /// caller's CLOCK_MONOTONIC reading for this poll (the engine's clock): the port times its
  /// own work (link checks, pause timers, neighbour ageing) with it instead of reading the
  /// clock again on the data path.
  virtual size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) = 0;
  /// The same for callers without a clock reading (tools, tests): the port reads the clock.
  size_t rx_burst(FrameHandler& h, size_t max) { return rx_burst(h, max, Timestamp{}); }
  /// Pushes out frames queued by end_frame() that are not yet on the wire.
  virtual void flush() = 0;
  /// The port's MAC address.
  virtual MacAddr mac() const = 0;
  /// Largest frame (without FCS) the port can send and receive, in bytes.
  virtual size_t max_frame_len() const = 0;
  /// Link speed in bits per second (for pause quanta and pacing).
  virtual uint64_t link_speed_bps() const = 0;
  /// Fills *out with the port's counters; false (and *out untouched) when it keeps none.
  virtual bool read_counters(PortCounters* out) {
    (void)out;
    return false;
  }
  /// Ports that follow a kernel netdev count every change of their LinkState here (read it
  /// with link_state()); 0 for ports whose link and GIDs are fixed by the configuration.
  virtual uint64_t link_version() const { return 0; }
  /// Fills *out when link_version() != 0; false otherwise.
  virtual bool link_state(LinkState* out) const {
    (void)out;
    return false;
  }
  /// Ports that follow the kernel's routes: the source address the kernel picks for dst when
  /// its route leaves through this port (*src), or false with one line in *err (no route, the
  /// route leaves through another interface). Other ports: false with *err empty.
  virtual bool route_source(const Gid& dst, Gid* src, std::string* err) {
    (void)dst;
    (void)src;
    err->clear();
    return false;
  }
  /// Ports whose frames arrive through a doorbell (a client of uroce-hostd): a descriptor that
  /// becomes readable when a frame arrives or the link changes while the port is armed
  /// (prepare_sleep() returned true), so its poller may block on it instead of polling; -1
  /// when the port has none (its poller sleeps by time).
  virtual int wake_fd() const { return -1; }
  /// Arms the doorbell before the poller blocks on wake_fd(): false when frames already wait
  /// (then do not block). Requires the engine lock.
  virtual bool prepare_sleep() { return false; }
  /// After the block (woken or timed out): disarms the doorbell and drains wake_fd().
  /// Requires the engine lock.
  virtual void end_sleep() {}
  /// Ports shared through uroce-hostd, which keeps the host's RDMA CM port space:
  /// rdma_bind_addr or rdma_listen on (ps, port, addr; zero: any) claims the port from the
  /// daemon, kRelease gives one claim back. 0, or an errno (EADDRINUSE: another process holds
  /// it); EOPNOTSUPP for ports that own their netdev alone. Requires the engine lock.
  enum class CmPortOp : uint8_t { kRelease = 0, kListen = 1, kBind = 2 };
  virtual int cm_port(CmPortOp op, uint16_t ps, uint16_t port, const Gid& addr) {
    (void)op;
    (void)ps;
    (void)port;
    (void)addr;
    return EOPNOTSUPP;
  }
  /// Ports shared through uroce-hostd, which lets a connected QP send only to its connection:
  /// QP qpn reached RTR towards (dgid, dqpn) from UDP port sport (dgid null: it left its
  /// connection). 0 or an errno; 0 for other ports. Requires the engine lock.
  virtual int qp_connection(uint32_t qpn, const Gid* dgid, uint32_t dqpn, uint16_t sport) {
    (void)qpn;
    (void)dgid;
    (void)dqpn;
    (void)sport;
    return 0;
  }
  /// Ports that reach the wire through a local service that may restart (a client of
  /// uroce-hostd): kUp; kLost while the service is away and the port tries to reach the next
  /// one (frames sent meanwhile are lost, as on a wire whose switch restarts; the link state
  /// stays the netdev's); kGone when it gave up or was refused (give_up(), or the next
  /// service would not take it back): the device is gone. A change counts in link_version().
  enum class Service : uint8_t { kUp, kLost, kGone };
  virtual Service service() const { return Service::kUp; }
  /// The device gives up on a lost service (its grace passed): kGone from now on; `why` is
  /// the line the port keeps for why_gone().
  virtual void give_up(const std::string& why) { (void)why; }
  /// kGone: one line saying why.
  virtual std::string why_gone() const { return {}; }
  /// How long a lost service may take to come back before the device is gone: the longest
  /// RC retry budget of the device's QPs, within these bounds (device::Runtime). The least is
  /// what a restart of uroce-hostd takes on a busy host with room to spare (0.8-1.3 s here,
  /// EAL and the XDP program: docs/host-mode.md), so idle processes and listeners, which lose
  /// nothing by waiting, survive it.
  static constexpr Duration kServiceGraceMin = Duration::seconds(5);
  static constexpr Duration kServiceGraceMax = Duration::seconds(60);
  // resolve(ip, mac) from NeighborResolver: static neighbours, then the port's ARP/ND cache.
};

}  // namespace uroce
