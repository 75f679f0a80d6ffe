/**
 * @file switch.h
 * @brief An output-queued Ethernet switch: forwarding by destination MAC (static table),
 * per-port egress Links with 8 priority queues, a shared buffer with per-ingress-priority
 * accounting, RED/ECN marking (Kmin/Kmax/Pmax at enqueue or dequeue) and PFC XOFF/XON per
 * ingress priority with headroom.
 *
 * Classification: the 802.1Q PCP when tagged, else dscp_to_priority[DSCP] (default DSCP >> 3,
 * which gives RoCE DSCP 26 -> 3 and CNP DSCP 48 -> 6 as docs/dcqcn-pfc.md §3.4), else 0.
 * Buffer: lossy priorities are admitted while the shared buffer has room; lossless priorities
 * (PFC enabled) may also use headroom_bytes per ingress port; anything else is dropped and
 * counted. ECN (RFC 3168 / DCQCN RED): the instantaneous egress queue of the frame's priority
 * gives P(mark) on lib/dcqcn's curve (dcqcn/red.h: 0 up to kmin, linear to pmax, 1 from kmax);
 * only ECT frames are marked CE. PFC (IEEE 802.1Qbb): when an ingress port's bytes of a
 * lossless priority reach xoff_bytes the switch sends XOFF (quanta 0xffff) to that port's
 * peer, refreshes it at half the pause time until it sends XON (quanta 0), when they fall to
 * xon_bytes: on a frame arriving above xoff_bytes, and by a timer when none arrives (the peer
 * is paused, so none does; without the timer a pause that cannot drain would expire).
 * Received PFC frames pause the egress of the port they came in on. PFC frames are built and
 * read by lib/transport/wire's codec (transport/wire/pfc.h). Units: bytes, ns, bit/s.
 */
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "common/types.h"
#include "sim/link.h"
#include "sim/rng.h"
#include "sim/simulator.h"

namespace uroce::sim {

struct EcnConfig {
  bool enabled = false;
  uint64_t kmin_bytes = 5 * 1024;
  uint64_t kmax_bytes = 200 * 1024;
  double pmax = 0.01;
  bool at_dequeue = false;  ///< mark when the frame leaves the queue instead of on arrival
  uint64_t seed = 7;
};

struct PfcConfig {
  bool enabled = false;
  uint8_t lossless_mask = 1u << 3;   ///< priorities with PFC (bit p)
  uint64_t xoff_bytes = 256 * 1024;  ///< per ingress port and priority
  uint64_t xon_bytes = 128 * 1024;
  uint64_t headroom_bytes = 128 * 1024;  ///< per ingress port, lossless only
};

struct SwitchConfig {
  MacAddr mac = {{0x02, 0x00, 0x00, 0x00, 0xff, 0x00}};  ///< source of PFC frames
  uint64_t buffer_bytes = 12ull * 1024 * 1024;           ///< shared buffer
  EcnConfig ecn;
  PfcConfig pfc;
  std::array<uint8_t, 64> dscp_to_priority = default_dscp_map();

  static constexpr std::array<uint8_t, 64> default_dscp_map() {
    std::array<uint8_t, 64> m{};
    for (int d = 0; d < 64; ++d) m[d] = static_cast<uint8_t>(d >> 3);
    return m;
  }
};

struct SwitchStats {
  uint64_t received = 0;
  uint64_t forwarded = 0;
  uint64_t no_route = 0;        ///< unknown destination MAC
  uint64_t buffer_drops = 0;    ///< lossy frame, shared buffer full
  uint64_t headroom_drops = 0;  ///< lossless frame, headroom exhausted
  uint64_t ecn_marked = 0;
  uint64_t pfc_rx = 0;
  uint64_t xoff_sent = 0;
  uint64_t xon_sent = 0;
  uint64_t max_buffer_bytes = 0;
};

class Switch final : public FrameReceiver {
 public:
  Switch(Simulator& sim, const SwitchConfig& cfg);
  ~Switch() override;

  /// Adds a port whose egress link delivers to peer->receive(peer_port, ...). Returns the
  /// port number (0, 1, ...), the port argument of receive() for frames coming in on it.
  uint32_t add_port(const LinkParams& egress, FrameReceiver* peer, uint32_t peer_port);
  /// Frames for `mac` leave on `port`.
  void add_route(const MacAddr& mac, uint32_t port);

  Link& egress(uint32_t port) { return *ports_[port]->link; }
  size_t port_count() const { return ports_.size(); }
  uint64_t buffer_used() const { return used_; }
  uint64_t ingress_bytes(uint32_t port, int priority) const {
    return ports_[port]->ingress_bytes[priority];
  }
  const SwitchStats& stats() const { return stats_; }
  const SwitchConfig& config() const { return cfg_; }

  void receive(uint32_t port, Frame&& frame, Timestamp now) override;

 private:
  struct Port : LinkObserver {
    Switch* sw = nullptr;
    uint32_t index = 0;
    std::unique_ptr<Link> link;
    std::array<uint64_t, kPriorities> ingress_bytes{};
    std::array<bool, kPriorities> xoff{};
    std::array<Timestamp, kPriorities> last_xoff{};
    std::array<bool, kPriorities> refresh_armed{};  ///< a refresh timer is scheduled
    void on_dequeue(Frame& frame, Timestamp now) override { sw->on_dequeue(index, frame, now); }
  };
  struct MacHash {
    size_t operator()(const MacAddr& m) const {
      uint64_t v = 0;
      for (auto x : m.b) v = (v << 8) | x;
      return std::hash<uint64_t>{}(v);
    }
  };

  int classify(const Frame& f) const;
  void maybe_mark(Frame& f, uint64_t queue_bytes);
  void send_pfc(uint32_t port, int priority, uint16_t quanta, Timestamp now);
  /// Half the pause time of an XOFF sent on `port`: the refresh interval.
  Duration half_pause(uint32_t port) const;
  /// Schedules refresh() at the port's last XOFF plus half_pause(), unless one is scheduled.
  void arm_refresh(uint32_t port, int priority);
  /// Sends XOFF again if the port is still in XOFF and its last one is half a pause old.
  void refresh(uint32_t port, int priority);
  void on_dequeue(uint32_t port, Frame& f, Timestamp now);

  Simulator& sim_;
  SwitchConfig cfg_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::unordered_map<MacAddr, uint32_t, MacHash> fdb_;
  uint64_t used_ = 0;
  Rng ecn_rng_;
  SwitchStats stats_;
};

}  // namespace uroce::sim
