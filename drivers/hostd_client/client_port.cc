/**
 * @file client_port.cc
 * @brief SharedPort (client_port.h): PortPipeline over the TX ring, RX from the worker rings,
 * NetdevView for everything the kernel decides, and the fork handler.
 */
#include "hostd_client/client_port.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <vector>

#include "netlink/netdev_view.h"
#include "pipeline/port_pipeline.h"
#include "shm/control.h"
#include "shm/doorbell.h"
#include "shm/region.h"
#include "shm/ring.h"

namespace uroce::hostd_client {

namespace {

Timestamp clock_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec};
}

std::string who(const config::Device& dev) {
  return "device " + dev.name + " (netdev " + dev.netdev + "): ";
}

/// The TX ring as the pipeline's frame buffers: a frame's handle is its buffer number + 1.
class RingFrameIo final : public pipeline::FrameIo {
 public:
  RingFrameIo(const shm::RingView& tx, shm::Doorbell daemon_bell)
      : tx_(tx), bell_(std::move(daemon_bell)) {}

  bool alloc(pipeline::Frame* f) override {
    auto b = tx_.take();
    if (!b) return false;
    f->handle = reinterpret_cast<void*>(uintptr_t{*b} + 1);
    f->data = tx_.data(*b);
    f->len = tx_.slot_bytes();
    return true;
  }
  void free(const pipeline::Frame* frames, size_t n) override {
    for (size_t i = 0; i < n; ++i) tx_.give_back(buf(frames[i]));
  }
  size_t tx_burst(uint16_t, pipeline::Frame* frames, size_t n) override {
    size_t k = 0;
    for (; k < n; ++k)
      if (!tx_.publish(buf(frames[k]), frames[k].len)) break;
    sent_ += k;
    if (k && tx_.wake_needed()) bell_.kick();
    return k;
  }

  uint64_t sent() const { return sent_; }
  void close_after_fork() { bell_.close(); }

 private:
  static uint32_t buf(const pipeline::Frame& f) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(f.handle) - 1);
  }

  shm::Producer tx_;
  shm::Doorbell bell_;
  uint64_t sent_ = 0;
};

class SharedPort;

/// Open shared ports, for the fork handler. Lock-free, so that the handler takes no lock that
/// a thread opening a port (under its engine lock) might hold: a fork takes the engine locks
/// first (lib/device runtime.cc). A process has a port per device; past kMaxPorts a port is
/// not listed, and a child of the process keeps its descriptors open (never uses them).
constexpr size_t kMaxPorts = 64;
std::array<std::atomic<SharedPort*>, kMaxPorts> g_ports{};

void enlist(SharedPort* p) {
  for (auto& slot : g_ports) {
    SharedPort* none = nullptr;
    if (slot.compare_exchange_strong(none, p)) return;
  }
}

void delist(SharedPort* p) {
  for (auto& slot : g_ports) {
    SharedPort* me = p;
    if (slot.compare_exchange_strong(me, nullptr)) return;
  }
}

class SharedPort final : public netlink::ViewPort {
 public:
  SharedPort(const config::Device& dev, const netlink::NetdevState& st, shm::Session s,
             shm::Region region)
      : netlink::ViewPort(st),
        sock_(s.sock),
        welcome_(s.welcome),
        region_(std::move(region)),
        client_bell_(s.client_bell),
        io_(region_.tx(), shm::Doorbell(s.daemon_bell)),
        pipeline_(io_, pfc_off(dev),
                  pipeline::PipelineParams{st.mac, max_frame(), 1,
                                           netlink::netdev_speed_bps(st.name), false},
                  clock_now) {
    for (uint32_t k = 0; k < region_.params().rx_rings; ++k) rx_.emplace_back(region_.rx(k));
    enlist(this);
  }

  ~SharedPort() override {
    delist(this);
    if (ep_ >= 0) ::close(ep_);
    if (sock_ >= 0) ::close(sock_);  // the daemon frees the client's slot, block and region
  }

  /// The Monitor and the epoll set wake_fd() returns; false with *err.
  bool start(std::string* err) {
    if (!view_.start(err)) return false;
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) {
      *err = std::string("epoll_create1: ") + std::strerror(errno);
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = client_bell_.fd();
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, client_bell_.fd(), &ev);
    ev.data.fd = view_.fd();
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, view_.fd(), &ev);
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = sock_;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, sock_, &ev);
    return true;
  }

  /// In a forked child (the fork handler, one thread): the parent's session and doorbells are
  /// closed here, the rings are not mapped (MADV_DONTFORK); the port stays inert.
  void after_fork_in_child() {
    forked_ = true;
    for (int* fd : {&ep_, &sock_}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
    client_bell_.close();
    io_.close_after_fork();
    region_.forget();
  }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override {
    return forked_ ? nullptr : pipeline_.begin_frame(max_len);
  }
  void end_frame(size_t len, const TxMeta& meta) override {
    if (!forked_) pipeline_.end_frame(len, meta);
  }

  // Port
  void flush() override {
    if (!forked_) pipeline_.flush();
  }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (forked_) return 0;
    if (now.ns == 0) now = clock_now();
    const MacAddr mac = view_.state().mac;
    size_t total = 0;
    for (shm::Consumer& c : rx_) {
      const uint32_t n = std::min<uint32_t>(c.available(), static_cast<uint32_t>(max - total));
      for (uint32_t k = 0; k < n; ++k) {
        std::span<const uint8_t> f = c.frame(k);
        if (f.size() < 14 || std::memcmp(f.data(), mac.b.data(), 6) != 0) continue;
        pipeline_.on_rx_frame(f);
        h.on_frame(f, RxMeta{});
      }
      if (n) c.release(n);
      total += n;
      if (total >= max) break;
    }
    received_ += total;
    view_.after_poll(now, total);
    if (pipeline_.queued() || pipeline_.tx_pending()) flush();
    return total;
  }

  size_t max_frame_len() const override { return max_frame(); }

  bool read_counters(PortCounters* out) override {
    out->rx_packets_phy = received_;
    out->tx_packets_phy = io_.sent();
    uint64_t bad = 0;
    for (const shm::Consumer& c : rx_) bad += c.bad();
    out->rx_discards_phy = bad;
    pipeline_.fill_counters(out);
    return true;
  }

  uint64_t link_version() const override {
    return ViewPort::link_version() + (daemon_gone_ ? 1 : 0);
  }
  bool link_state(LinkState* out) const override {
    ViewPort::link_state(out);
    if (forked_ || daemon_gone_) out->up = false;
    out->shared_slot = static_cast<int>(welcome_.qpn_block);
    out->qpn_block_bits = static_cast<uint8_t>(welcome_.qpn_block_bits);
    return true;
  }

  int wake_fd() const override { return ep_; }

  int cm_port(CmPortOp op, uint16_t ps, uint16_t port, const Gid& addr) override {
    shm::Request r;
    r.op = op == CmPortOp::kListen ? shm::Op::kListen
           : op == CmPortOp::kBind ? shm::Op::kBind
                                   : shm::Op::kRelease;
    r.ps = ps;
    r.port = port;
    std::memcpy(r.gid, addr.raw.data(), sizeof r.gid);
    return call(r);
  }

  int qp_connection(uint32_t qpn, const Gid* dgid, uint32_t dqpn, uint16_t sport) override {
    shm::Request r;
    r.op = dgid ? shm::Op::kConnect : shm::Op::kDisconnect;
    // What the QP built is in the TX ring before the daemon forgets its connection.
    if (!dgid && !forked_) pipeline_.flush();
    r.qpn = qpn;
    if (dgid) {
      r.dqpn = dqpn;
      r.sport = sport;
      std::memcpy(r.gid, dgid->raw.data(), sizeof r.gid);
    }
    return call(r);
  }

  bool prepare_sleep() override {
    if (forked_) return true;
    for (size_t i = 0; i < rx_.size(); ++i) {
      if (!rx_[i].prepare_sleep()) {
        for (size_t j = 0; j <= i; ++j) rx_[j].end_sleep();
        return false;
      }
    }
    return true;
  }

  void end_sleep() override {
    if (forked_) return;
    for (shm::Consumer& c : rx_) c.end_sleep();
    epoll_event evs[4];
    const int n = ::epoll_wait(ep_, evs, 4, 0);
    for (int i = 0; i < n; ++i) {
      if (evs[i].data.fd == client_bell_.fd()) client_bell_.drain();
      if (evs[i].data.fd == view_.fd()) view_.poll_soon();
      if (evs[i].data.fd == sock_) check_daemon();
    }
  }

 private:
  static config::Device pfc_off(config::Device dev) {
    dev.pfc.xoff_bytes = 0;  // PFC is the NIC's on a shared netdev
    return dev;
  }

  size_t max_frame() const {
    return std::min<size_t>(welcome_.max_frame, region_.params().slot_bytes);
  }

  /// One request to the daemon and its reply (under the engine lock, as check_daemon(), so no
  /// reply is taken by the other).
  int call(shm::Request r) {
    if (forked_ || daemon_gone_ || sock_ < 0) return ENODEV;
    r.seq = ++seq_;
    return shm::request(sock_, r);
  }

  /// The control socket woke us: the daemon closed it (it stopped or was killed): the link is
  /// down from now on, and the socket leaves the epoll set.
  void check_daemon() {
    char b[256];
    const ssize_t r = ::recv(sock_, b, sizeof b, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      daemon_gone_ = true;
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, sock_, nullptr);
    }
  }

  int sock_;
  shm::Welcome welcome_;
  shm::Region region_;
  shm::Doorbell client_bell_;
  RingFrameIo io_;
  pipeline::PortPipeline pipeline_;
  std::vector<shm::Consumer> rx_;
  int ep_ = -1;
  uint64_t received_ = 0;
  bool daemon_gone_ = false;
  bool forked_ = false;
  uint32_t seq_ = 0;
};

/// In a forked child (one thread): every port the parent had open goes inert.
void fork_child() {
  for (auto& slot : g_ports)
    if (SharedPort* p = slot.exchange(nullptr)) p->after_fork_in_child();
}

}  // namespace

std::optional<HostView> view_host_port(const config::Device& dev, std::string* err) {
  std::string e;
  auto st = netlink::usable_netdev(dev.netdev, dev.mtu, &e);
  if (!st) {
    if (err) *err = who(dev) + e;
    return std::nullopt;
  }
  HostView v;
  v.link.ifindex = st->ifindex;
  v.link.up = st->up;
  v.link.mtu = st->mtu;
  v.link.gids = st->gids;
  v.link_speed_bps = netlink::netdev_speed_bps(dev.netdev);
  v.shared = shm::hostd_running(dev.netdev);
  return v;
}

std::unique_ptr<Port> open_shared_port(const config::Device& dev, std::string* err) {
  auto fail = [&](const std::string& what) -> std::unique_ptr<Port> {
    if (err) *err = who(dev) + what;
    return nullptr;
  };
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(nullptr, nullptr, fork_child); });
  std::string e;
  auto st = netlink::usable_netdev(dev.netdev, dev.mtu, &e);
  if (!st) return fail(e);
  auto s = shm::connect_daemon(dev.netdev, dev.name, &e);
  if (!s) return fail("through uroce-hostd: " + e);
  auto close_session = [&] {
    for (int fd : {s->sock, s->client_bell, s->daemon_bell})
      if (fd >= 0) ::close(fd);
  };
  if (s->welcome.max_frame < 64) {
    close_session();
    ::close(s->region_fd);
    return fail("through uroce-hostd: the daemon offers no usable frame size");
  }
  auto region = shm::map_region(s->region_fd, s->welcome.region, &e);
  if (!region) {
    close_session();
    return fail("through uroce-hostd: " + e);
  }
  region->release_fd();  // mapped: the descriptor is no longer needed
  auto port = std::make_unique<SharedPort>(dev, *st, *s, std::move(*region));
  if (!port->start(&e)) return fail("netlink: " + e);
  return port;
}

}  // namespace uroce::hostd_client
