/**
 * @file host_port.cc
 * @brief HostPort (host_port.h): EthdevIo on net_af_xdp with uroce's XDP program, the shared
 * PortPipeline, and the kernel's view of the netdev through drivers/netlink.
 *
 * Open: netdev state (exists, up, has an address) -> when uroce-hostd serves the netdev, a
 * memif client to it in a claimed slot (shared mode, hostd_share.h) and nothing below;
 * otherwise the XDP hook (a stale program of ours is
 * removed, a foreign one refuses, one in use by a live uroce process refuses) -> the netdev
 * lock -> the af_xdp ethdev on queues 0..n-1 with xdp_prog= (tried again for a moment while a
 * queue closed just before is still held) -> netlink Monitor and Resolver.
 * Close (the device's last context): the ethdev is closed (the PMD detaches the program; what
 * it leaves open, ethdev_io.cc closes), then the lock is released and a program still attached
 * with nobody holding the lock is removed; in shared mode the memif client is closed and the
 * slot released. So the process can open the device again, and so can another.
 *
 * RX: frames from every queue; PFC/PAUSE go to the pipeline (the XDP program passes them to
 * the kernel, so only a test injecting them on the socket sees this); only frames to our MAC
 * reach the engine (the PMD runs the netdev promiscuous). The Monitor is read at most every
 * kNetlinkPoll on an idle poll or every 16 polls otherwise, so the data path makes no netlink
 * syscall per frame. Units: bytes, bit/s.
 */
#include "host/host_port.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "dpdk/clock.h"
#include "dpdk/ethdev_io.h"
#include "host/hostd_share.h"
#include "netlink/monitor.h"
#include "netlink/netdev.h"
#include "netlink/resolver.h"
#include "pipeline/port_pipeline.h"
#include "xdp/xdp.h"

namespace uroce::host {

namespace {

constexpr Duration kNetlinkPoll = Duration::millis(10);

/// How long opening a netdev's port tries again while its queue may still be held by an
/// AF_XDP socket closed just before (open_host_port()): the kernel's work item runs within
/// milliseconds, later on a loaded machine.
constexpr Duration kQueueRelease = Duration::seconds(1);

using dpdk::monotonic_now;

/// The RX queues the netdev uses now: its channels (ETHTOOL_GCHANNELS combined + rx, the
/// count net_af_xdp checks queue_count against); 1 when it reports none. IFLA_NUM_RX_QUEUES
/// is the allocated count, larger than the active one on a veth.
unsigned active_rx_queues(const std::string& ifname) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 1;
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&ch);
  const bool ok = ioctl(fd, SIOCETHTOOL, &ifr) == 0;
  close(fd);
  const unsigned n = ok ? ch.combined_count + ch.rx_count : 0;
  return n ? n : 1;
}

constexpr uint64_t kUnknownSpeedBps = 10'000'000'000ull;

/// A small number from procfs (a TTL); 64 when it cannot be read.
uint8_t read_sysctl_u8(const std::string& path) {
  std::ifstream in(path);
  unsigned v = 0;
  return in >> v && v > 0 && v < 256 ? static_cast<uint8_t>(v) : 64;
}

/// One af_xdp ethdev name per netdev, so that two devices of one process do not collide.
std::string vdev_name(const std::string& ifname) { return "net_af_xdp_" + ifname; }

/// After a failed open of the af_xdp `port` on ifname: the netdev's XDP program is one its
/// PMD loaded (so the set-up failed after attaching it).
bool own_program_attached(const std::string& ifname, const std::string& port) {
  std::string err;
  const auto a = xdp::attached(ifname, &err);
  if (!a || a->id == 0) return false;
  const std::vector<uint32_t> ids = dpdk::EthdevIo::parked_programs(port);
  return std::find(ids.begin(), ids.end(), a->id) != ids.end();
}

class HostPort final : public Port {
 public:
  /// use: the netdev lock (exclusive mode), or null with a claimed slot (a client of
  /// uroce-hostd; slot.slot < 0 in exclusive mode).
  HostPort(std::unique_ptr<xdp::NetdevUse> use, SlotClaim slot, std::unique_ptr<dpdk::EthdevIo> io,
           const config::Device& dev, const netlink::NetdevState& st)
      : claim_{std::move(use), slot.fd},
        io_(std::move(io)),
        pipeline_(*io_, pfc_off(dev),
                  pipeline::PipelineParams{st.mac, io_->max_frame(), io_->queues(),
                                           io_->link_speed_bps(), slot.slot < 0},
                  monotonic_now),
        slot_(slot.slot),
        state_(st),
        resolver_(st.ifindex),
        monitor_(st.ifindex, &resolver_) {}

  /// Whether the Monitor subscribed; its pending notifications (attaching the XDP program
  /// may bounce a veth's carrier) are applied, so the runtime starts from the state after it.
  bool monitor_ok(std::string* err) {
    if (!monitor_.ok()) {
      *err = monitor_.error();
      return false;
    }
    monitor_.poll(&state_);
    return true;
  }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override { return pipeline_.begin_frame(max_len); }
  void end_frame(size_t len, const TxMeta& meta) override { pipeline_.end_frame(len, meta); }

  // Port
  void flush() override { pipeline_.flush(); }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (now.ns == 0) now = monotonic_now();
    size_t total = pipeline_.has_loopback() ? pipeline_.loop_back(h) : 0;
    // The daemon's memif (shared mode): connect, and reconnect after a daemon restart;
    // check_link() may stop the port (link down for long), which is started again below.
    if (io_->memif()) {
      io_->check_link(now);
      if (!io_->ensure_started(now)) return total;
    }
    const MacAddr mac = state_.mac;
    auto on_frame = [&](std::span<const uint8_t> frame) {
      if (pipeline_.on_control_frame(frame, now)) return;
      if (std::memcmp(frame.data(), mac.b.data(), 6) != 0) return;
      pipeline_.on_rx_frame(frame);
      h.on_frame(frame, RxMeta{});
    };
    total += io_->rx_all(max - total, on_frame);
    if ((total == 0 || ++busy_polls_ % 16 == 0) && now >= next_netlink_) {
      next_netlink_ = now + kNetlinkPoll;
      if (monitor_.poll(&state_)) ++version_;
    }
    pipeline_.after_poll(now);
    if (pipeline_.queued() || pipeline_.tx_pending()) flush();
    return total;
  }

  MacAddr mac() const override { return state_.mac; }
  size_t max_frame_len() const override { return io_->max_frame(); }
  /// The netdev's (ethtool), not the PMD's: net_af_xdp and memif report a fixed figure.
  uint64_t link_speed_bps() const override { return netdev_speed_bps(state_.name); }

  /// Our own addresses are our MAC (the pipeline loops those frames back); otherwise the
  /// kernel's next hop (link-local: on-link) and its neighbour entry.
  bool resolve(const Gid& ip, MacAddr* out) override {
    if (std::find(state_.gids.begin(), state_.gids.end(), ip) != state_.gids.end()) {
      *out = state_.mac;
      return true;
    }
    Gid next = ip;
    int ifindex = state_.ifindex;
    if (!ip.is_link_local()) {
      std::string err;
      auto hop = resolver_.route(ip, &err);
      if (!hop) return false;
      next = hop->gateway_or_dst;
      ifindex = hop->ifindex;
    }
    switch (resolver_.neighbour(ifindex, next, out)) {
      case netlink::Resolve::kFound: last_mac_[next.raw] = *out; return true;
      case netlink::Resolve::kPending:
        // The kernel lost the entry (a carrier loss flushes the table) and resolves it again:
        // the last MAC it gave keeps traffic going meanwhile, as a NIC keeps its cached L2
        // address; a changed answer replaces it.
        if (auto it = last_mac_.find(next.raw); it != last_mac_.end()) {
          *out = it->second;
          return true;
        }
        return false;
      case netlink::Resolve::kFailed: last_mac_.erase(next.raw); return false;
    }
    return false;
  }

  bool route_source(const Gid& dst, Gid* src, std::string* err) override {
    if (dst.is_link_local()) {
      for (const Gid& g : state_.gids)
        if (g.is_link_local()) {
          *src = g;
          return true;
        }
      *err = "no IPv6 link-local address on " + state_.name;
      return false;
    }
    auto hop = resolver_.route(dst, err);
    if (!hop) return false;
    if (!hop->src.is_zero()) {
      *src = hop->src;
      return true;
    }
    for (const Gid& g : state_.gids)  // no preferred source: the first of the same family
      if (g.is_ipv4_mapped() == dst.is_ipv4_mapped() && !g.is_link_local()) {
        *src = g;
        return true;
      }
    *err = "no address of the destination's family on " + state_.name;
    return false;
  }

  /// The kernel's default TTL / hop limit for every destination that is not link-local (the
  /// AV's hop limit, 1 in ibv_rc_pingpong, would die at the first router).
  uint8_t hop_limit(const Gid& ip) override {
    if (ip.is_link_local()) return 0;
    return ip.is_ipv4_mapped() ? ttl4_ : hop6_;
  }

  bool read_counters(PortCounters* out) override {
    io_->fill_counters(out);
    pipeline_.fill_counters(out);
    return true;
  }

  uint64_t link_version() const override { return version_; }
  bool link_state(LinkState* out) const override {
    out->ifindex = state_.ifindex;
    out->up = state_.up;
    out->mtu = state_.mtu;
    out->gids = state_.gids;
    out->shared_slot = slot_;
    return true;
  }

 private:
  /// PFC is the NIC's on a shared netdev: the pipeline sends none.
  static config::Device pfc_off(config::Device dev) {
    dev.pfc.xoff_bytes = 0;
    return dev;
  }

  /// What the port holds of the netdev, released last (members go in reverse order: the
  /// pipeline frees its frames through io_, io_ closes the ethdev, then the claim goes): the
  /// netdev lock, after which uroce's program is removed if no process uses it (exclusive
  /// mode), or the lock of the daemon's client slot (shared mode).
  struct Claim {
    std::unique_ptr<xdp::NetdevUse> use;
    int slot_fd = -1;
    ~Claim() {
      if (use) xdp::detach_if_last(std::move(use));
      if (slot_fd >= 0) ::close(slot_fd);
    }
  } claim_;
  std::unique_ptr<dpdk::EthdevIo> io_;
  pipeline::PortPipeline pipeline_;
  int slot_;  ///< client slot of uroce-hostd; -1: exclusive
  netlink::NetdevState state_;
  netlink::Resolver resolver_;
  netlink::Monitor monitor_;
  uint8_t ttl4_ = read_sysctl_u8("/proc/sys/net/ipv4/ip_default_ttl");
  uint8_t hop6_ = read_sysctl_u8("/proc/sys/net/ipv6/conf/" + state_.name + "/hop_limit");
  std::map<std::array<uint8_t, 16>, MacAddr> last_mac_;  ///< next hop -> the kernel's last answer
  uint64_t version_ = 1;  ///< link_version(): never 0 for a host port
  uint64_t busy_polls_ = 0;
  Timestamp next_netlink_{};
};

}  // namespace

namespace {

/// The port of a process sharing the netdev through uroce-hostd: frames through a memif
/// client in the process' slot, everything else (GIDs, link, routes, neighbours) as in
/// exclusive mode.
std::unique_ptr<Port> open_shared(const config::Device& dev, const netlink::NetdevState& st,
                                  std::string* err) {
  auto claim = claim_slot(dev.netdev, err);
  if (!claim) return nullptr;
  config::Device d = dev;
  d.mtu = kHostdMemifMtu;
  d.queues = 1;
  d.mac.reset();
  d.port = "net_memif_hostd_" + dev.netdev +
           ",role=client,socket-abstract=no,socket=" + hostd_base(dev.netdev) +
           ".sock,id=" + std::to_string(claim->slot);
  std::string e;
  // Closed and removed with the port, and the slot released, so that a process that closed the
  // device holds nothing of the daemon's.
  auto io = dpdk::EthdevIo::open(d, &e, dpdk::EthdevIo::Close::kOnDestroy);
  if (!io) {
    ::close(claim->fd);
    *err = e;
    return nullptr;
  }
  auto port = std::make_unique<HostPort>(nullptr, *claim, std::move(io), dev, st);
  if (!port->monitor_ok(&e)) {
    *err = "netlink: " + e;
    return nullptr;
  }
  return port;
}

}  // namespace

namespace {

std::string who(const config::Device& dev) {
  return "device " + dev.name + " (netdev " + dev.netdev + "): ";
}

/// The netdev of dev, checked as the port needs it (exists, up, an address, an MTU that
/// carries RoCE); nullopt with one line in *err (without who()) otherwise.
std::optional<netlink::NetdevState> usable_netdev(const config::Device& dev, std::string* err) {
  std::string e;
  auto st = netlink::query(dev.netdev, &e);
  if (!st) {
    *err = e + "; ip link show lists the netdevs";
    return std::nullopt;
  }
  if (!st->up) {
    *err = "the netdev is down (ip link set " + dev.netdev + " up; or no carrier)";
    return std::nullopt;
  }
  if (st->gids.empty()) {
    *err = "the netdev has no IP address, so the device would have no GID (ip addr add " +
           std::string("ADDRESS/PREFIX dev ") + dev.netdev + ")";
    return std::nullopt;
  }
  if (std::min(dev.mtu, roce_path_mtu(st->mtu)) == 0) {
    *err = "netdev MTU " + std::to_string(st->mtu) + " carries no RoCE path MTU (>= 352)";
    return std::nullopt;
  }
  return st;
}

}  // namespace

uint64_t netdev_speed_bps(const std::string& ifname) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return kUnknownSpeedBps;
  ethtool_cmd cmd{};
  cmd.cmd = ETHTOOL_GSET;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&cmd);
  const bool ok = ioctl(fd, SIOCETHTOOL, &ifr) == 0;
  close(fd);
  const uint32_t mbps = ok ? ethtool_cmd_speed(&cmd) : 0;
  if (mbps == 0 || mbps == static_cast<uint32_t>(SPEED_UNKNOWN)) return kUnknownSpeedBps;
  return uint64_t{mbps} * 1'000'000ull;
}

std::optional<HostView> view_host_port(const config::Device& dev, std::string* err) {
  std::string e;
  auto st = usable_netdev(dev, &e);
  if (!st) {
    if (err) *err = who(dev) + e;
    return std::nullopt;
  }
  HostView v;
  v.link.ifindex = st->ifindex;
  v.link.up = st->up;
  v.link.mtu = st->mtu;
  v.link.gids = st->gids;
  v.link_speed_bps = netdev_speed_bps(dev.netdev);
  v.shared = hostd_running(dev.netdev);
  return v;
}

std::unique_ptr<Port> open_host_port(const config::Device& dev, std::string* err) {
  auto fail = [&](const std::string& what) -> std::unique_ptr<Port> {
    if (err) *err = who(dev) + what;
    return nullptr;
  };
  std::string e;
  auto st = usable_netdev(dev, &e);
  if (!st) return fail(e);
  const uint32_t mtu = std::min(dev.mtu, roce_path_mtu(st->mtu));

  if (hostd_running(dev.netdev)) {
    auto port = open_shared(dev, *st, &e);
    if (!port) return fail("through uroce-hostd: " + e);
    return port;
  }
  xdp::Outcome reaped = xdp::reap_stale(dev.netdev);
  if (reaped.kind == xdp::Outcome::kInUse)
    return fail(
        "in use by another uroce process (one process per netdev; several share it "
        "through uroce-hostd --netdev " +
        dev.netdev + "; " + reaped.message + ")");
  if (!reaped.ok()) return fail(reaped.message);
  auto use = xdp::NetdevUse::acquire(dev.netdev, &e);
  if (!use) return fail(e);

  config::Device d = dev;
  d.mtu = mtu;
  const unsigned queues = active_rx_queues(dev.netdev);
  if (queues > dpdk::kMaxEthQueues)
    return fail("the netdev has " + std::to_string(queues) + " RX queues; uroce binds at most " +
                std::to_string(dpdk::kMaxEthQueues) + " (ethtool -L " + dev.netdev + " combined " +
                std::to_string(dpdk::kMaxEthQueues) + ")");
  d.queues = static_cast<uint16_t>(queues);
  d.mac.reset();
  d.port = vdev_name(dev.netdev) + ",iface=" + dev.netdev +
           ",start_queue=0,queue_count=" + std::to_string(d.queues) +
           ",xdp_prog=" + xdp::object_path();
  auto io = dpdk::EthdevIo::open(d, &e, dpdk::EthdevIo::Close::kOnDestroy);
  // The kernel lets go of a closed AF_XDP socket's netdev queue a moment after close()
  // returns (a work item: xp_release_deferred()), so right after a port of the netdev closed,
  // in this process or another, its queue may still be taken: the PMD's program attaches, then
  // its socket's bind fails (EBUSY; the PMD says "Failed to create xsk socket"). Tried again
  // until kQueueRelease has passed, from a new ethdev (the PMD cannot set a failed queue up
  // again: libxdp reuses the fill ring's stale producer index), and only while the failed
  // ethdev's own program is attached: closing it detaches the netdev's program, whichever it is.
  const Timestamp retry_until = monotonic_now() + kQueueRelease;
  for (Duration wait = Duration::millis(1); !io && own_program_attached(dev.netdev, d.port);
       wait = wait * 2) {
    dpdk::EthdevIo::discard(d.port);
    if (monotonic_now() + wait >= retry_until) break;
    timespec ts{static_cast<time_t>(wait.ns / 1'000'000'000),
                static_cast<long>(wait.ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);
    io = dpdk::EthdevIo::open(d, &e, dpdk::EthdevIo::Close::kOnDestroy);
  }
  if (!io) {
    xdp::detach_if_last(std::move(use));
    // The PMD says only "cannot create port"; the kernel's reason for refusing the program
    // (e.g. a veth whose peer MTU is too large for native XDP) comes from trying one.
    for (const xdp::Check& c : xdp::doctor_checks(dev.netdev))
      if (!c.ok) return fail("cannot attach an XDP program: " + c.what + ": " + c.detail);
    return fail(e);
  }
  auto port = std::make_unique<HostPort>(std::move(use), SlotClaim{}, std::move(io), dev, *st);
  if (!port->monitor_ok(&e)) return fail("netlink: " + e);
  return port;
}

}  // namespace uroce::host
