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
#include <map>
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

/// What the client registered with its daemon, replayed to the next one after a restart.
struct Claim {
  shm::Op op = shm::Op::kBind;  ///< kBind or kListen
  uint16_t ps = 0, port = 0;
  Gid addr{};
};
struct Connection {
  Gid dgid{};
  uint32_t dqpn = 0;
  uint16_t sport = 0;
};

/// How often a port whose daemon went away looks for the next one, and how often a busy port
/// checks that its daemon is still there (a blocked one hears it from the socket at once).
constexpr Duration kResumeEvery = Duration::millis(10);
constexpr Duration kCheckEvery = Duration::millis(1);

class SharedPort final : public netlink::ViewPort {
 public:
  SharedPort(const config::Device& dev, const netlink::NetdevState& st, shm::Session s,
             shm::Region region)
      : netlink::ViewPort(st),
        dev_(pfc_off(dev)),
        block_(s.welcome.qpn_block),
        block_bits_(s.welcome.qpn_block_bits),
        max_frame_(std::min<size_t>(s.welcome.max_frame, region.params().slot_bytes)) {
    att_ = std::make_unique<Attached>(dev_, view_.state(), s, std::move(region), max_frame_);
    discard_.resize(max_frame_);
    enlist(this);
  }

  ~SharedPort() override {
    delist(this);
    att_.reset();  // the daemon frees the client's slot, block and region
    if (ep_ >= 0) ::close(ep_);
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
    ev.data.fd = view_.fd();
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, view_.fd(), &ev);
    watch();
    return true;
  }

  /// In a forked child (the fork handler, one thread): the parent's session and doorbells are
  /// closed here, the rings are not mapped (MADV_DONTFORK); the port stays inert.
  void after_fork_in_child() {
    forked_ = true;
    if (ep_ >= 0) ::close(ep_);
    ep_ = -1;
    if (att_) att_->close_after_fork();
  }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override {
    if (forked_) return nullptr;
    if (!att_) return max_len <= discard_.size() ? discard_.data() : nullptr;
    return att_->pipeline.begin_frame(max_len);
  }
  void end_frame(size_t len, const TxMeta& meta) override {
    if (att_ && !forked_) att_->pipeline.end_frame(len, meta);
  }

  // Port
  void flush() override {
    if (att_ && !forked_) att_->pipeline.flush();
  }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (forked_) return 0;
    if (now.ns == 0) now = clock_now();
    if (att_ && now >= next_check_) {
      next_check_ = now + kCheckEvery;
      check_daemon();
    }
    if (!att_) {
      if (service_ == Service::kLost && now >= next_resume_) {
        next_resume_ = now + kResumeEvery;
        resume();
      }
      view_.after_poll(now, 0);
      if (!att_) return 0;
    }
    const MacAddr mac = view_.state().mac;
    size_t total = 0;
    for (shm::Consumer& c : att_->rx) {
      const uint32_t n = std::min<uint32_t>(c.available(), static_cast<uint32_t>(max - total));
      for (uint32_t k = 0; k < n; ++k) {
        std::span<const uint8_t> f = c.frame(k);
        if (f.size() < 14 || std::memcmp(f.data(), mac.b.data(), 6) != 0) continue;
        att_->pipeline.on_rx_frame(f);
        h.on_frame(f, RxMeta{});
      }
      if (n) c.release(n);
      total += n;
      if (total >= max) break;
    }
    received_ += total;
    view_.after_poll(now, total);
    if (att_->pipeline.queued() || att_->pipeline.tx_pending()) flush();
    return total;
  }

  size_t max_frame_len() const override { return max_frame_; }

  bool read_counters(PortCounters* out) override {
    out->rx_packets_phy = received_;
    out->tx_packets_phy = sent_before_ + (att_ ? att_->io.sent() : 0);
    out->rx_discards_phy = bad_before_ + (att_ ? att_->bad() : 0);
    if (att_ && !forked_) att_->pipeline.fill_counters(out);
    for (int p = 0; p < PortCounters::kPriorities; ++p) {  // earlier sessions' share
      out->tx_prio_packets[p] += before_.tx_prio_packets[p];
      out->tx_prio_bytes[p] += before_.tx_prio_bytes[p];
      out->rx_prio_packets[p] += before_.rx_prio_packets[p];
      out->rx_prio_bytes[p] += before_.rx_prio_bytes[p];
      out->rx_prio_marked[p] += before_.rx_prio_marked[p];
    }
    return true;
  }

  uint64_t link_version() const override { return ViewPort::link_version() + service_changes_; }
  bool link_state(LinkState* out) const override {
    ViewPort::link_state(out);
    if (forked_) out->up = false;
    out->shared_slot = static_cast<int>(block_);
    out->qpn_block_bits = static_cast<uint8_t>(block_bits_);
    return true;
  }

  Service service() const override { return service_; }
  void give_up(const std::string& why) override {
    if (service_ != Service::kGone) gone(why);
  }
  std::string why_gone() const override { return why_gone_; }

  int wake_fd() const override { return ep_; }

  int cm_port(CmPortOp op, uint16_t ps, uint16_t port, const Gid& addr) override {
    if (op == CmPortOp::kRelease) {
      auto it = std::find_if(claims_.begin(), claims_.end(), [&](const Claim& c) {
        return c.ps == ps && c.port == port && c.addr == addr;
      });
      if (it != claims_.end()) claims_.erase(it);
    } else if (service_ == Service::kLost) {
      return EAGAIN;  // the host's port space comes back with the daemon
    }
    shm::Request r;
    r.op = op == CmPortOp::kListen ? shm::Op::kListen
           : op == CmPortOp::kBind ? shm::Op::kBind
                                   : shm::Op::kRelease;
    r.ps = ps;
    r.port = port;
    std::memcpy(r.gid, addr.raw.data(), sizeof r.gid);
    if (op == CmPortOp::kRelease && service_ == Service::kLost) return 0;
    const int e = call(r);
    if (e == 0 && op != CmPortOp::kRelease) claims_.push_back(Claim{r.op, ps, port, addr});
    return e;
  }

  int qp_connection(uint32_t qpn, const Gid* dgid, uint32_t dqpn, uint16_t sport) override {
    if (dgid) {
      connections_[qpn] = Connection{*dgid, dqpn, sport};
    } else {
      connections_.erase(qpn);
    }
    if (service_ == Service::kLost) return 0;  // registered with the next daemon
    shm::Request r;
    r.op = dgid ? shm::Op::kConnect : shm::Op::kDisconnect;
    // What the QP built is in the TX ring before the daemon forgets its connection.
    if (!dgid && att_ && !forked_) att_->pipeline.flush();
    r.qpn = qpn;
    if (dgid) {
      r.dqpn = dqpn;
      r.sport = sport;
      std::memcpy(r.gid, dgid->raw.data(), sizeof r.gid);
    }
    const int e = call(r);
    if (e != 0 && dgid) connections_.erase(qpn);
    return e;
  }

  bool prepare_sleep() override {
    if (forked_ || service_ == Service::kGone) return true;
    if (!att_) return false;  // looking for the next daemon: by time
    for (size_t i = 0; i < att_->rx.size(); ++i) {
      if (!att_->rx[i].prepare_sleep()) {
        for (size_t j = 0; j <= i; ++j) att_->rx[j].end_sleep();
        return false;
      }
    }
    return true;
  }

  void end_sleep() override {
    if (forked_) return;
    if (att_)
      for (shm::Consumer& c : att_->rx) c.end_sleep();
    epoll_event evs[4];
    const int n = ::epoll_wait(ep_, evs, 4, 0);
    for (int i = 0; i < n; ++i) {
      if (att_ && evs[i].data.fd == att_->client_bell.fd()) att_->client_bell.drain();
      if (evs[i].data.fd == view_.fd()) view_.poll_soon();
      if (att_ && evs[i].data.fd == att_->sock) check_daemon();
    }
  }

 private:
  /// One session with a daemon: its socket, its region's rings, the doorbells and the
  /// pipeline over the TX ring. A restarted daemon gives new ones.
  struct Attached {
    Attached(const config::Device& dev, const netlink::NetdevState& st, const shm::Session& s,
             shm::Region r, size_t max_frame)
        : sock(s.sock),
          welcome(s.welcome),
          region(std::move(r)),
          client_bell(s.client_bell),
          io(region.tx(), shm::Doorbell(s.daemon_bell)),
          pipeline(io, dev,
                   pipeline::PipelineParams{st.mac, max_frame, 1,
                                            netlink::netdev_speed_bps(st.name), false},
                   clock_now) {
      for (uint32_t k = 0; k < region.params().rx_rings; ++k) rx.emplace_back(region.rx(k));
    }
    ~Attached() {
      if (sock >= 0) ::close(sock);  // the daemon frees the client's slot, block and region
    }
    Attached(const Attached&) = delete;
    Attached& operator=(const Attached&) = delete;

    uint64_t bad() const {
      uint64_t n = 0;
      for (const shm::Consumer& c : rx) n += c.bad();
      return n;
    }
    void close_after_fork() {
      ::close(sock);
      sock = -1;
      client_bell.close();
      io.close_after_fork();
      region.forget();
    }

    int sock;
    shm::Welcome welcome;
    shm::Region region;
    shm::Doorbell client_bell;
    RingFrameIo io;
    pipeline::PortPipeline pipeline;
    std::vector<shm::Consumer> rx;
  };

  static config::Device pfc_off(config::Device dev) {
    dev.pfc.xoff_bytes = 0;  // PFC is the NIC's on a shared netdev
    return dev;
  }

  /// The session's socket and doorbell into the epoll set.
  void watch() {
    if (!att_ || ep_ < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = att_->client_bell.fd();
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, att_->client_bell.fd(), &ev);
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = att_->sock;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, att_->sock, &ev);
  }

  /// One request to the daemon and its reply (under the engine lock, as check_daemon(), so no
  /// reply is taken by the other).
  int call(shm::Request r) {
    if (forked_ || !att_) return ENODEV;
    r.seq = ++seq_;
    std::string why;
    const int e = shm::request(att_->sock, r, &why);
    if (e == ESHUTDOWN) removed(why);
    return e;
  }

  /// Whether the daemon closed the session: stopped or killed, the session goes and the port
  /// looks for the next daemon (kLost); with Refused first, the device was removed (kGone).
  void check_daemon() {
    alignas(shm::Refused) uint8_t b[sizeof(shm::Refused) + 1];
    const ssize_t r = ::recv(att_->sock, b, sizeof b, MSG_DONTWAIT);
    if (r > 0) {
      if (auto why = shm::parse_refused(std::span<const uint8_t>(b, static_cast<size_t>(r))))
        removed(*why);
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
      lose(Service::kLost);
    }
  }

  /// The daemon ended the session for good (the device was removed): no next daemon to wait
  /// for; the device is gone at once, as a NIC that was unplugged.
  void removed(const std::string& why) { gone("uroce-hostd: " + why); }

  /// The session ends: what it counted is kept, its rings and descriptors go.
  void lose(Service next) {
    if (att_) {
      PortCounters c;
      att_->pipeline.fill_counters(&c);
      for (int p = 0; p < PortCounters::kPriorities; ++p) {
        before_.tx_prio_packets[p] += c.tx_prio_packets[p];
        before_.tx_prio_bytes[p] += c.tx_prio_bytes[p];
        before_.rx_prio_packets[p] += c.rx_prio_packets[p];
        before_.rx_prio_bytes[p] += c.rx_prio_bytes[p];
        before_.rx_prio_marked[p] += c.rx_prio_marked[p];
      }
      sent_before_ += att_->io.sent();
      bad_before_ += att_->bad();
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, att_->sock, nullptr);
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, att_->client_bell.fd(), nullptr);
      att_.reset();
    }
    service_ = next;
    ++service_changes_;
  }

  void gone(const std::string& why) {
    why_gone_ = why;
    lose(Service::kGone);
  }

  /// Looks for the next daemon: a new session for the same QPN block, then every claim and
  /// connection registered again. A daemon that refuses any of it ends the device (kGone);
  /// one that is not there yet, or does not answer, is tried again.
  void resume() {
    if (!shm::hostd_running(dev_.netdev)) return;
    std::string e;
    bool refused = false;
    auto s = shm::connect_daemon(dev_.netdev, dev_.name, &e, block_, &refused);
    if (!s) {
      if (refused) gone("the restarted uroce-hostd " + e);
      return;
    }
    auto close_session = [&] {
      for (int fd : {s->sock, s->client_bell, s->daemon_bell, s->region_fd})
        if (fd >= 0) ::close(fd);
    };
    if (s->welcome.qpn_block != block_ || s->welcome.qpn_block_bits != block_bits_ ||
        std::min<size_t>(s->welcome.max_frame, s->welcome.region.slot_bytes) < max_frame_) {
      close_session();
      return gone("the restarted uroce-hostd gave QPN block " +
                  std::to_string(s->welcome.qpn_block) + " of " +
                  std::to_string(s->welcome.qpn_block_bits) + " bits and frames of " +
                  std::to_string(s->welcome.max_frame) + " bytes, not block " +
                  std::to_string(block_) + " and " + std::to_string(max_frame_));
    }
    auto region = shm::map_region(s->region_fd, s->welcome.region, &e);
    if (!region) {
      close_session();
      return gone("the restarted uroce-hostd's region: " + e);
    }
    region->release_fd();
    att_ = std::make_unique<Attached>(dev_, view_.state(), *s, std::move(*region), max_frame_);
    watch();
    for (const Claim& c : claims_) {
      shm::Request r;
      r.op = c.op;
      r.ps = c.ps;
      r.port = c.port;
      std::memcpy(r.gid, c.addr.raw.data(), sizeof r.gid);
      if (int err = call(r))
        return gone("the restarted uroce-hostd refused RDMA CM port " + std::to_string(c.port) +
                    " it held: " + std::strerror(err));
    }
    for (const auto& [qpn, c] : connections_) {
      shm::Request r;
      r.op = shm::Op::kConnect;
      r.qpn = qpn;
      r.dqpn = c.dqpn;
      r.sport = c.sport;
      std::memcpy(r.gid, c.dgid.raw.data(), sizeof r.gid);
      if (int err = call(r))
        return gone("the restarted uroce-hostd refused the connection of QP " +
                    std::to_string(qpn) + ": " + std::strerror(err));
    }
    service_ = Service::kUp;
    ++service_changes_;
    next_check_ = Timestamp{};
  }

  config::Device dev_;
  uint32_t block_;
  uint32_t block_bits_;
  size_t max_frame_;
  std::unique_ptr<Attached> att_;               ///< null while no daemon serves the port
  std::vector<uint8_t> discard_;                ///< frames built while no daemon serves the port
  std::vector<Claim> claims_;                   ///< RDMA CM ports held, in the order claimed
  std::map<uint32_t, Connection> connections_;  ///< by the client's QPN
  Service service_ = Service::kUp;
  uint64_t service_changes_ = 0;
  std::string why_gone_;
  Timestamp next_check_{}, next_resume_{};
  int ep_ = -1;
  uint64_t received_ = 0;
  uint64_t sent_before_ = 0, bad_before_ = 0;
  PortCounters before_;  ///< the per-priority counts of earlier sessions
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
