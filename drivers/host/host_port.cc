/**
 * @file host_port.cc
 * @brief HostPort (host_port.h): EthdevIo on net_af_xdp with uroce's XDP program, the shared
 * PortPipeline, and the kernel's view of the netdev (drivers/netlink NetdevView).
 *
 * One af_xdp ethdev per RX queue of the netdev (start_queue=q, queue_count=1): DPDK 22.11's
 * PMD takes queue_count > 1 only from a netdev that reports combined channels (a NIC does; a
 * veth reports separate RX and TX channels, so the PMD refuses a second queue there), and
 * with an ethdev per queue the threads of uroce-hostd's workers each use ethdevs of their own.
 * Each ethdev's PMD loads uroce's program and attaches it with "only if none is attached", so
 * the ethdevs of queues n-1..1 are opened first, each one's program removed again after it
 * (its socket is in that program's map only), then queue 0's, whose program stays; then every
 * other queue's socket is put into that program's map (xdp::bind_socket).
 *
 * Open: netdev state (exists, up, has an address) -> the XDP hook (a stale program of ours is
 * removed, a foreign one refuses, one in use by a live uroce process refuses) -> the netdev
 * lock -> the ethdevs (each tried again for a moment while a queue closed just before is still
 * held) -> netlink Monitor and Resolver.
 * Close (the device's last context, or the daemon's last worker port): the ethdevs are closed
 * (the PMD detaches the program; what it leaves open, ethdev_io.cc closes), then the lock is
 * released and a program still attached with nobody holding the lock is removed. So the
 * process can open the device again, and so can another.
 *
 * RX: frames from the port's queues in turn; PFC/PAUSE go to the pipeline (the XDP program
 * passes them to the kernel, so only a test injecting them on the socket sees this); only
 * frames to our MAC reach the engine (the PMD runs the netdev promiscuous). Units: bytes,
 * bit/s.
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

/// The RX queues the netdev uses now: its channels (ETHTOOL_GCHANNELS combined + rx); 1 when
/// it reports none. IFLA_NUM_RX_QUEUES is the allocated count, larger than the active one on a
/// veth.
unsigned active_rx_queues(const std::string& ifname) {
  ethtool_channels ch{};
  ch.cmd = ETHTOOL_GCHANNELS;
  const unsigned n = netlink::ethtool_get(ifname, &ch) ? ch.combined_count + ch.rx_count : 0;
  return n ? n : 1;
}

/// One af_xdp ethdev name per netdev and queue, so that two devices of one process do not
/// collide.
std::string vdev_name(const std::string& ifname, unsigned queue) {
  return "net_af_xdp_" + ifname + (queue ? "_q" + std::to_string(queue) : "");
}

/// After a failed open of the af_xdp `port` on ifname: the netdev's XDP program is one its
/// PMD loaded (so the set-up failed after attaching it).
bool own_program_attached(const std::string& ifname, const std::string& port) {
  std::string err;
  const auto a = xdp::attached(ifname, &err);
  if (!a || a->id == 0) return false;
  const std::vector<uint32_t> ids = dpdk::EthdevIo::parked_programs(port);
  return std::find(ids.begin(), ids.end(), a->id) != ids.end();
}

std::string who(const config::Device& dev) {
  return "device " + dev.name + " (netdev " + dev.netdev + "): ";
}

/// What the ports of one netdev share: its lock and its ethdevs, by RX queue. Members go in
/// reverse order: the ethdevs close (the PMD detaches the program), then the claim removes the
/// program if unused and releases the lock.
struct Netdev {
  struct Claim {
    std::unique_ptr<xdp::NetdevUse> use;
    ~Claim() {
      if (use) xdp::detach_if_last(std::move(use));
    }
  } claim;
  std::vector<std::unique_ptr<dpdk::EthdevIo>> queues;
};

/// The ethdevs `txq` (queue 0 of each) as a pipeline's TX queues 0..n-1; frames from the
/// first's pool.
class QueueIo final : public pipeline::FrameIo {
 public:
  explicit QueueIo(std::vector<dpdk::EthdevIo*> txq) : txq_(std::move(txq)) {}
  bool alloc(pipeline::Frame* f) override { return txq_[0]->alloc(f); }
  void free(const pipeline::Frame* frames, size_t n) override { txq_[0]->free(frames, n); }
  size_t tx_burst(uint16_t queue, pipeline::Frame* frames, size_t n) override {
    return txq_[queue]->tx_burst(0, frames, n);
  }
  bool tx_ready() override { return txq_[0]->tx_ready(); }

 private:
  std::vector<dpdk::EthdevIo*> txq_;
};

class HostPort final : public netlink::ViewPort {
 public:
  /// Receives from and sends on the ethdevs `queues` of nd (indices into nd->queues).
  HostPort(std::shared_ptr<Netdev> nd, const config::Device& dev, const netlink::NetdevState& st,
           const std::vector<unsigned>& queues)
      : netlink::ViewPort(st),
        nd_(std::move(nd)),
        rxq_(pick(*nd_, queues)),
        io_(rxq_),
        pipeline_(io_, pfc_off(dev),
                  pipeline::PipelineParams{st.mac, rxq_[0]->max_frame(),
                                           static_cast<uint16_t>(rxq_.size()),
                                           rxq_[0]->link_speed_bps(), true},
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
    size_t got = 0;
    // The queues in turn, starting after the last one polled, until each came back short.
    for (size_t idle = 0; got < room && idle < rxq_.size();) {
      const size_t want = std::min(room - got, dpdk::kBurst);
      dpdk::EthdevIo& q = *rxq_[next_];
      next_ = next_ + 1 == rxq_.size() ? 0 : next_ + 1;
      const size_t n = q.rx_burst(0, want, on_frame);
      got += n;
      idle = n == want ? 0 : idle + 1;
    }
    total += got;
    view_.after_poll(now, total);
    pipeline_.after_poll(now, got < room);
    if (pipeline_.queued() || pipeline_.tx_pending()) flush();
    return total;
  }

  size_t max_frame_len() const override { return rxq_[0]->max_frame(); }

  /// The PMD's counters of the port's ethdevs summed, and the pipeline's.
  bool read_counters(PortCounters* out) override {
    PortCounters sum;
    for (dpdk::EthdevIo* q : rxq_) {
      PortCounters c;
      q->fill_counters(&c);
      accumulate(sum, c);
    }
    pipeline_.fill_counters(&sum);  // sets every field an ethdev leaves zero
    *out = sum;
    return true;
  }

 private:
  static std::vector<dpdk::EthdevIo*> pick(const Netdev& nd, const std::vector<unsigned>& queues) {
    std::vector<dpdk::EthdevIo*> out;
    for (unsigned q : queues) out.push_back(nd.queues[q].get());
    return out;
  }
  /// PFC is the NIC's on a shared netdev: the pipeline sends none.
  static config::Device pfc_off(config::Device dev) {
    dev.pfc.xoff_bytes = 0;
    return dev;
  }

  std::shared_ptr<Netdev> nd_;  ///< released last: the pipeline frees its frames through it
  std::vector<dpdk::EthdevIo*> rxq_;
  QueueIo io_;
  size_t next_ = 0;  ///< the index into rxq_ polled first
  pipeline::PortPipeline pipeline_;
};

/// The af_xdp ethdev of RX queue q of d.netdev (d: the device with the netdev's MTU), tried
/// again while the queue is still held by a socket closed a moment ago; null with *err.
std::unique_ptr<dpdk::EthdevIo> open_queue(config::Device d, unsigned q, std::string* err) {
  d.queues = 1;
  d.mac.reset();
  d.port = vdev_name(d.netdev, q) + ",iface=" + d.netdev + ",start_queue=" + std::to_string(q) +
           ",queue_count=1,xdp_prog=" + xdp::object_path();
  auto io = dpdk::EthdevIo::open(d, err, dpdk::EthdevIo::Close::kOnDestroy);
  // The kernel lets go of a closed AF_XDP socket's netdev queue a moment after close()
  // returns (a work item: xp_release_deferred()), so right after a port of the netdev closed,
  // in this process or another, its queue may still be taken: the PMD's program attaches, then
  // its socket's bind fails (EBUSY; the PMD says "Failed to create xsk socket"). Tried again
  // until kQueueRelease has passed, from a new ethdev (the PMD cannot set a failed queue up
  // again: libxdp reuses the fill ring's stale producer index), and only while the failed
  // ethdev's own program is attached: closing it detaches the netdev's program, whichever it is.
  const Timestamp retry_until = monotonic_now() + kQueueRelease;
  for (Duration wait = Duration::millis(1); !io && own_program_attached(d.netdev, d.port);
       wait = wait * 2) {
    dpdk::EthdevIo::discard(d.port);
    if (monotonic_now() + wait >= retry_until) break;
    timespec ts{static_cast<time_t>(wait.ns / 1'000'000'000),
                static_cast<long>(wait.ns % 1'000'000'000)};
    nanosleep(&ts, nullptr);
    io = dpdk::EthdevIo::open(d, err, dpdk::EthdevIo::Close::kOnDestroy);
  }
  return io;
}

/// The netdev of dev opened (checked, claimed, an ethdev on each active RX queue, every
/// queue's socket in the attached program's map) with its state; null with *err.
std::shared_ptr<Netdev> open_netdev(const config::Device& dev, netlink::NetdevState* state,
                                    std::string* err) {
  auto fail = [&](const std::string& what) -> std::shared_ptr<Netdev> {
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
  auto nd = std::make_shared<Netdev>();
  nd->claim.use = xdp::NetdevUse::acquire(dev.netdev, &e);
  if (!nd->claim.use) return fail(e);

  config::Device d = dev;
  d.mtu = mtu;
  const unsigned queues = active_rx_queues(dev.netdev);
  if (queues > dpdk::kMaxEthQueues)
    return fail("the netdev has " + std::to_string(queues) + " RX queues; uroce binds at most " +
                std::to_string(dpdk::kMaxEthQueues) + " (ethtool -L " + dev.netdev + " combined " +
                std::to_string(dpdk::kMaxEthQueues) + ")");
  // Queues n-1..1, each one's program removed after it (see the file comment), then queue 0.
  nd->queues.resize(queues);
  for (unsigned q = queues; q-- > 0;) {
    nd->queues[q] = open_queue(d, q, &e);
    if (!nd->queues[q]) {
      nd->queues.clear();  // closes the ones opened: the netdev's program goes with them
      // The PMD says only "cannot create port"; the kernel's reason for refusing the program
      // (e.g. a veth whose peer MTU is too large for native XDP) comes from trying one.
      for (const xdp::Check& c : xdp::doctor_checks(dev.netdev))
        if (!c.ok) return fail("cannot attach an XDP program: " + c.what + ": " + c.detail);
      return fail(e);
    }
    if (q > 0 && !xdp::detach_ours(dev.netdev, &e)) return fail(e);
  }
  for (unsigned q = 1; q < queues; ++q) {
    const std::vector<int> socks = nd->queues[q]->xsk_fds();
    if (socks.size() != 1) return fail("queue " + std::to_string(q) + ": no AF_XDP socket");
    if (!xdp::bind_socket(dev.netdev, q, socks[0], &e)) return fail(e);
  }
  *state = *st;
  return nd;
}

}  // namespace

std::unique_ptr<Port> open_host_port(const config::Device& dev, std::string* err) {
  auto ports = open_host_ports(dev, 1, err);
  if (ports.empty()) return nullptr;
  return std::move(ports[0]);
}

std::vector<std::unique_ptr<Port>> open_host_ports(const config::Device& dev, unsigned workers,
                                                   std::string* err) {
  netlink::NetdevState st;
  auto nd = open_netdev(dev, &st, err);
  if (!nd) return {};
  const unsigned nq = static_cast<unsigned>(nd->queues.size());
  const unsigned n = std::clamp(workers, 1u, nq);
  std::vector<std::unique_ptr<Port>> ports;
  for (unsigned k = 0; k < n; ++k) {
    std::vector<unsigned> mine;
    for (unsigned q = k; q < nq; q += n) mine.push_back(q);
    auto port = std::make_unique<HostPort>(nd, dev, st, mine);
    std::string e;
    if (!port->start(&e)) {
      if (err) *err = who(dev) + "netlink: " + e;
      return {};
    }
    ports.push_back(std::move(port));
  }
  return ports;
}

}  // namespace uroce::host
