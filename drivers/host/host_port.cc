/**
 * @file host_port.cc
 * @brief HostPort (host_port.h): EthdevIo on net_af_xdp with uroce's XDP program, the shared
 * PortPipeline, and the kernel's view of the netdev (drivers/netlink NetdevView).
 *
 * Open: netdev state (exists, up, has an address) -> the XDP hook (a stale program of ours is
 * removed, a foreign one refuses, one in use by a live uroce process refuses) -> the netdev
 * lock -> the af_xdp ethdev on queues 0..n-1 with xdp_prog= (tried again for a moment while a
 * queue closed just before is still held) -> netlink Monitor and Resolver.
 * Close (the device's last context): the ethdev is closed (the PMD detaches the program; what
 * it leaves open, ethdev_io.cc closes), then the lock is released and a program still attached
 * with nobody holding the lock is removed. So the process can open the device again, and so can
 * another.
 *
 * RX: frames from every queue; PFC/PAUSE go to the pipeline (the XDP program passes them to
 * the kernel, so only a test injecting them on the socket sees this); only frames to our MAC
 * reach the engine (the PMD runs the netdev promiscuous). Units: bytes, bit/s.
 */
#include "host/host_port.h"

#include <linux/ethtool.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "dpdk/clock.h"
#include "dpdk/ethdev_io.h"
#include "netlink/netdev_view.h"
#include "pipeline/port_pipeline.h"
#include "xdp/xdp.h"

namespace uroce::host {

namespace {

/// How long opening a netdev's port tries again while its queue may still be held by an
/// AF_XDP socket closed just before (open_host_port()): the kernel's work item runs within
/// milliseconds, later on a loaded machine.
constexpr Duration kQueueRelease = Duration::seconds(1);

using dpdk::monotonic_now;

/// The RX queues the netdev uses now: its channels (ETHTOOL_GCHANNELS combined + rx, the
/// count net_af_xdp checks queue_count against); 1 when it reports none. IFLA_NUM_RX_QUEUES
/// is the allocated count, larger than the active one on a veth.
unsigned active_rx_queues(const std::string& ifname) {
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  const unsigned n = netlink::ethtool_get(ifname, &ch) ? ch.combined_count + ch.rx_count : 0;
  return n ? n : 1;
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

class HostPort final : public netlink::ViewPort {
 public:
  HostPort(std::unique_ptr<xdp::NetdevUse> use, std::unique_ptr<dpdk::EthdevIo> io,
           const config::Device& dev, const netlink::NetdevState& st)
      : netlink::ViewPort(st),
        claim_{std::move(use)},
        io_(std::move(io)),
        pipeline_(*io_, pfc_off(dev),
                  pipeline::PipelineParams{st.mac, io_->max_frame(), io_->queues(),
                                           io_->link_speed_bps(), true},
                  monotonic_now) {}

  bool start(std::string* err) { return view_.start(err); }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override { return pipeline_.begin_frame(max_len); }
  void end_frame(size_t len, const TxMeta& meta) override { pipeline_.end_frame(len, meta); }

  // Port
  void flush() override { pipeline_.flush(); }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (now.ns == 0) now = monotonic_now();
    size_t total = pipeline_.has_loopback() ? pipeline_.loop_back(h) : 0;
    const MacAddr mac = view_.state().mac;
    auto on_frame = [&](std::span<const uint8_t> frame) {
      if (pipeline_.on_control_frame(frame, now)) return;
      if (std::memcmp(frame.data(), mac.b.data(), 6) != 0) return;
      pipeline_.on_rx_frame(frame);
      h.on_frame(frame, RxMeta{});
    };
    const size_t room = max - total;
    const size_t got = io_->rx_all(room, on_frame);
    total += got;
    view_.after_poll(now, total);
    pipeline_.after_poll(now, got < room);
    if (pipeline_.queued() || pipeline_.tx_pending()) flush();
    return total;
  }

  size_t max_frame_len() const override { return io_->max_frame(); }

  bool read_counters(PortCounters* out) override {
    io_->fill_counters(out);
    pipeline_.fill_counters(out);
    return true;
  }

 private:
  /// PFC is the NIC's on a shared netdev: the pipeline sends none.
  static config::Device pfc_off(config::Device dev) {
    dev.pfc.xoff_bytes = 0;
    return dev;
  }

  /// The netdev lock; released last (members go in reverse order: the pipeline frees its
  /// frames through io_, io_ closes the ethdev, then the claim removes the program if unused).
  struct Claim {
    std::unique_ptr<xdp::NetdevUse> use;
    ~Claim() {
      if (use) xdp::detach_if_last(std::move(use));
    }
  } claim_;
  std::unique_ptr<dpdk::EthdevIo> io_;
  pipeline::PortPipeline pipeline_;
};

std::string who(const config::Device& dev) {
  return "device " + dev.name + " (netdev " + dev.netdev + "): ";
}

}  // namespace

std::unique_ptr<Port> open_host_port(const config::Device& dev, std::string* err) {
  auto fail = [&](const std::string& what) -> std::unique_ptr<Port> {
    if (err) *err = who(dev) + what;
    return nullptr;
  };
  std::string e;
  auto st = netlink::usable_netdev(dev.netdev, dev.mtu, &e);
  if (!st) return fail(e);
  const uint32_t mtu = std::min(dev.mtu, roce_path_mtu(st->mtu));

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
  auto port = std::make_unique<HostPort>(std::move(use), std::move(io), dev, *st);
  if (!port->start(&e)) return fail("netlink: " + e);
  return port;
}

}  // namespace uroce::host
