/**
 * @file netdev_view.h
 * @brief What a host-mode port reports of its netdev, followed live: the kernel's view that
 * both host-mode ports use, the exclusive one (drivers/host, AF_XDP) and a client of
 * uroce-hostd (drivers/hostd_client). No DPDK.
 *
 * NetdevView holds the netdev's state (MAC, MTU, link, GIDs) and keeps it current from a
 * Monitor, read at most every kPoll while the port is idle (or every 16 busy polls), so the
 * data path makes no netlink call per frame; it answers the port's resolve() (own addresses:
 * the netdev's MAC; otherwise the kernel's next hop and its neighbour entry, the last MAC kept
 * while the kernel re-resolves it), route_source() and hop_limit() (the kernel's defaults).
 * usable_netdev() is the check both ports (and a deferred open) make before anything else;
 * netdev_speed_bps() the speed they report.
 *
 * Thread-safety: one thread at a time (the port's). Units: bytes, bit/s, ns.
 */
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "common/port.h"
#include "common/time.h"
#include "common/types.h"
#include "netlink/monitor.h"
#include "netlink/netdev.h"
#include "netlink/resolver.h"

namespace uroce::netlink {

/// The netdev's link speed as ethtool reports it (what the kernel's RoCE devices report as
/// their port's speed); 10 Gbit/s when it reports none (a veth's 10000 Mb/s is reported).
uint64_t netdev_speed_bps(const std::string& ifname);
/// One ethtool query (SIOCETHTOOL) of ifname: cmd is the ethtool struct, its .cmd set; false
/// when the kernel refused.
bool ethtool_get(const std::string& ifname, void* cmd);

class NetdevView {
 public:
  /// Longest time an idle port goes without reading the Monitor.
  static constexpr Duration kPoll = Duration::millis(10);

  /// Follows the netdev st describes (its ifindex); start() subscribes.
  explicit NetdevView(const NetdevState& st);

  /// Whether the Monitor subscribed (else *err says why); its pending notifications (attaching
  /// an XDP program may bounce a veth's carrier) are applied, so the port starts from the state
  /// after them.
  bool start(std::string* err);
  /// After a port's poll at now that found `frames`: reads the Monitor when due.
  void after_poll(Timestamp now, size_t frames);
  /// Reads the Monitor at the next after_poll() (its fd became readable).
  void poll_soon() { next_poll_ = Timestamp{}; }
  /// Readable when the netdev changed (the Monitor's socket); -1 when it did not subscribe.
  int fd() const { return monitor_.fd(); }

  const NetdevState& state() const { return state_; }
  /// Counts every change of link_state(); never 0.
  uint64_t version() const { return version_; }
  /// The netdev's ifindex, link, MTU and GIDs (shared_slot left as it is).
  void link_state(LinkState* out) const;

  /// Port::resolve(): our own addresses are our MAC; otherwise the kernel's next hop (link-local:
  /// on-link) and its neighbour entry.
  bool resolve(const Gid& ip, MacAddr* out);
  /// Port::route_source().
  bool route_source(const Gid& dst, Gid* src, std::string* err);
  /// Port's hop limit: the kernel's default TTL / hop limit for every destination that is not
  /// link-local (an AV's hop limit of 1, as ibv_rc_pingpong sets, would die at the first
  /// router); 0 (the AV's) for link-local ones.
  uint8_t hop_limit(const Gid& ip) const;

 private:
  NetdevState state_;
  Resolver resolver_;
  Monitor monitor_;
  uint8_t ttl4_;
  uint8_t hop6_;
  std::map<std::array<uint8_t, 16>, MacAddr> last_mac_;  ///< next hop -> the kernel's last answer
  uint64_t version_ = 1;
  uint64_t busy_polls_ = 0;
  Timestamp next_poll_{};
};

/// A Port whose netdev facts are a NetdevView's, the base of both host-mode ports: its MAC, speed,
/// link state, next hops, source addresses and TTL are what the kernel says. The derived port
/// moves the frames and calls view_.after_poll() after each poll.
class ViewPort : public Port {
 public:
  explicit ViewPort(const NetdevState& st) : view_(st) {}

  MacAddr mac() const override { return view_.state().mac; }
  /// The netdev's (ethtool), not a PMD's (net_af_xdp reports a fixed figure).
  uint64_t link_speed_bps() const override { return netdev_speed_bps(view_.state().name); }
  bool resolve(const Gid& ip, MacAddr* out) override { return view_.resolve(ip, out); }
  bool route_source(const Gid& dst, Gid* src, std::string* err) override {
    return view_.route_source(dst, src, err);
  }
  uint8_t hop_limit(const Gid& ip) override { return view_.hop_limit(ip); }
  uint64_t link_version() const override { return view_.version(); }
  bool link_state(LinkState* out) const override {
    view_.link_state(out);
    return true;
  }

 protected:
  NetdevView view_;
};

/// The netdev `ifname`, checked as a host-mode port needs it: it exists, is up, has an address,
/// and its MTU carries a RoCE path MTU (at most `mtu`); nullopt with one line in *err otherwise.
std::optional<NetdevState> usable_netdev(const std::string& ifname, uint32_t mtu, std::string* err);

}  // namespace uroce::netlink
