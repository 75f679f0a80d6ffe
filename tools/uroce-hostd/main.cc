/**
 * @file main.cc
 * @brief uroce-hostd: lets several uroce processes use one kernel netdev (docs/host-mode.md,
 * "Several processes on one netdev"). It owns the netdev through the host-mode port
 * (drivers/host: AF_XDP + XDP program + TX pipeline) and serves up to kHostdSlots local
 * processes, one memif interface id each, on one memif server socket
 * (drivers/host/hostd_share.h). Frames are switched by destination QPN, whose top bits are the
 * client slot; QP1 (CM MADs) goes to every client. A client frame to the netdev's own MAC is
 * same-host traffic and goes to the client of its QPN, never to the wire.
 *
 * The netdev as a whole (per-priority traffic, PFC and ECN marks it received, queue depths) is
 * published in a stats segment of its own, device "hostd-IF", every 100 ms: `uroce show roce`
 * and the exporter list it beside each client's device.
 *
 * Usage: uroce-hostd --netdev IF [--run-dir D] [--stats-every SECONDS]. Prints one "serving"
 * line when ready; SIGINT/SIGTERM stop it and print the counters ("final ...").
 */
#include <fcntl.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/port.h"
#include "config/config.h"
#include "dpdk/clock.h"
#include "dpdk/ethdev_io.h"
#include "host/host_port.h"
#include "host/hostd_share.h"
#include "stats/port_publish.h"
#include "stats/segment.h"
#include "stats/summary.h"
#include "uroce-hostd/frame_prio.h"

namespace uroce::hostd {
namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }

using dpdk::monotonic_now;

struct Options {
  std::string netdev;
  std::string run_dir;
  int stats_every_s = 0;
};

struct Counters {
  uint64_t to_client = 0;    ///< frames delivered into the client's memif
  uint64_t from_client = 0;  ///< frames the client sent
  uint64_t to_wire = 0;      ///< of those, sent to the netdev
  uint64_t switched = 0;     ///< of those, same-host: switched to a client
  uint64_t dropped = 0;      ///< for this client but its ring was full or it was gone
};

/// One client slot: its memif server interface and the frames queued for it this poll.
struct Client {
  std::unique_ptr<dpdk::EthdevIo> io;
  std::vector<pipeline::Frame> out;
  Counters c;
  bool up = false;  ///< memif connected, as of the last link check
};

class Daemon final : public FrameHandler {
 public:
  Daemon(std::unique_ptr<Port> net, MacAddr mac, std::unique_ptr<stats::StatsSegment> seg)
      : net_(std::move(net)), mac_(mac), seg_(std::move(seg)) {}

  bool add_client(int slot, const std::string& socket, std::string* err) {
    config::Device d;
    d.name = "hostd-client" + std::to_string(slot);
    d.mtu = host::kHostdMemifMtu;
    d.queues = 1;
    d.port = "net_memif_hostd" + std::to_string(slot) +
             ",role=server,socket-abstract=no,socket=" + socket + ",id=" + std::to_string(slot);
    clients_[slot].io = dpdk::EthdevIo::open(d, err, dpdk::EthdevIo::Close::kOnDestroy);
    return clients_[slot].io != nullptr;
  }

  /// Frames from the netdev (the host port delivers only those to our MAC).
  void on_frame(std::span<const uint8_t> frame, const RxMeta&) override {
    ++net_rx_;
    to_clients(frame);
  }

  void run(int stats_every_s) {
    unsigned idle = 0;
    Timestamp next_stats =
        stats_every_s > 0 ? monotonic_now() + Duration::seconds(stats_every_s) : Timestamp::never();
    Timestamp next_publish = monotonic_now();
    while (!g_stop.load(std::memory_order_relaxed)) {
      const Timestamp now = monotonic_now();
      size_t work = net_->rx_burst(*this, 2 * dpdk::kBurst, now);
      for (int k = 0; k < host::kHostdSlots; ++k) {
        Client& c = clients_[k];
        c.io->check_link(now);
        c.up = c.io->link().up;
        if (!c.up) continue;
        work +=
            c.io->rx_burst(0, dpdk::kBurst, [&](std::span<const uint8_t> f) { from_client(c, f); });
      }
      for (Client& c : clients_) flush(c);
      net_->flush();
      if (now >= next_stats) {
        print("stats");
        next_stats = now + Duration::seconds(stats_every_s);
      }
      if (now >= next_publish) {
        publish();
        next_publish = now + kPublishEvery;
      }
      // Busy while frames flow; after a few empty rounds short sleeps, which give the CPU to
      // the clients (on a host with fewer cores than busy processes that is the throughput).
      idle = work ? 0 : idle + 1;
      if (idle > 16) {
        timespec ts{0, 50'000};
        nanosleep(&ts, nullptr);
      }
    }
  }

  void print(const char* tag) {
    std::printf("%s net_rx=%lu net_tx=%lu unknown=%lu\n", tag, static_cast<unsigned long>(net_rx_),
                static_cast<unsigned long>(net_tx_), static_cast<unsigned long>(unknown_));
    for (int k = 0; k < host::kHostdSlots; ++k) {
      const Counters& c = clients_[k].c;
      if (!c.to_client && !c.from_client && !c.dropped) continue;
      std::printf("%s slot=%d to_client=%lu from_client=%lu to_wire=%lu switched=%lu dropped=%lu\n",
                  tag, k, static_cast<unsigned long>(c.to_client),
                  static_cast<unsigned long>(c.from_client), static_cast<unsigned long>(c.to_wire),
                  static_cast<unsigned long>(c.switched), static_cast<unsigned long>(c.dropped));
    }
    std::fflush(stdout);
  }

  /// The netdev's counters into the segment (also at exit, so the last figures are complete).
  void publish() {
    PortCounters c;
    if (!seg_ || !net_ || !net_->read_counters(&c)) return;
    stats::publish_port(c, seg_->port());
    seg_->heartbeat();
  }

  /// Closes the clients' memif interfaces, then the netdev (the PMD detaches the program).
  void close() {
    for (Client& c : clients_) {
      flush(c);
      c.io.reset();
    }
    net_.reset();
  }

 private:
  /// A frame for the local clients: by destination QPN; QP1 to every connected client.
  void to_clients(std::span<const uint8_t> frame) {
    auto qpn = host::roce_dest_qpn(frame);
    if (!qpn) {
      ++unknown_;
      return;
    }
    if (*qpn == 1) {
      for (Client& c : clients_)
        if (c.up) push(c, frame);
      return;
    }
    const auto slot = host::client_of_qpn(*qpn);
    if (!slot) {  // a QPN tag no client can have: never an index past clients_
      ++unknown_;
      return;
    }
    push(clients_[static_cast<size_t>(*slot)], frame);
  }

  void from_client(Client& c, std::span<const uint8_t> frame) {
    ++c.c.from_client;
    if (std::memcmp(frame.data(), mac_.b.data(), 6) == 0) {  // same host
      ++c.c.switched;
      to_clients(frame);
      return;
    }
    uint8_t* p = net_->begin_frame(frame.size());
    if (!p) {
      ++c.c.dropped;
      return;
    }
    std::memcpy(p, frame.data(), frame.size());
    net_->end_frame(frame.size(), TxMeta{frame_priority(frame), false});
    ++c.c.to_wire;
    ++net_tx_;
  }

  void push(Client& c, std::span<const uint8_t> frame) {
    if (c.out.size() >= dpdk::kBurst) flush(c);
    pipeline::Frame f;
    if (!c.io || !c.io->alloc(&f)) {
      ++c.c.dropped;
      return;
    }
    if (frame.size() > c.io->max_frame()) {
      c.io->free(&f, 1);
      ++c.c.dropped;
      return;
    }
    std::memcpy(f.data, frame.data(), frame.size());
    f.len = static_cast<uint32_t>(frame.size());
    c.out.push_back(f);
  }

  void flush(Client& c) {
    if (c.out.empty()) return;
    const size_t sent = c.io->tx_burst(0, c.out.data(), c.out.size());
    c.c.to_client += sent;
    if (sent < c.out.size()) {  // ring full or the client gone: the transport recovers
      c.io->free(c.out.data() + sent, c.out.size() - sent);
      c.c.dropped += c.out.size() - sent;
    }
    c.out.clear();
  }

  static constexpr Duration kPublishEvery = Duration::millis(100);  // as a device's segment

  std::unique_ptr<Port> net_;
  MacAddr mac_;
  std::unique_ptr<stats::StatsSegment> seg_;  ///< null when segments are off (UROCE_STATS=0)
  std::array<Client, host::kHostdSlots> clients_;
  uint64_t net_rx_ = 0, net_tx_ = 0, unknown_ = 0;
};

bool parse(int argc, char** argv, Options* o, std::string* err) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--netdev" && value(&v)) {
      o->netdev = v;
    } else if (a == "--run-dir" && value(&v)) {
      o->run_dir = v;
    } else if (a == "--stats-every" && value(&v)) {
      o->stats_every_s = std::atoi(v.c_str());
    } else {
      *err = "usage: uroce-hostd --netdev IF [--run-dir DIR] [--stats-every SECONDS]";
      return false;
    }
  }
  if (o->netdev.empty()) {
    *err = "usage: uroce-hostd --netdev IF [--run-dir DIR] [--stats-every SECONDS]";
    return false;
  }
  return true;
}

int run_main(int argc, char** argv) {
  Options o;
  std::string err;
  if (!parse(argc, argv, &o, &err)) {
    std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    return 2;
  }
  // Clients and drivers/xdp's netdev lock find the run folder through the environment.
  if (!o.run_dir.empty()) setenv("UROCE_RUN_DIR", o.run_dir.c_str(), 1);
  std::error_code ec;
  const std::string base = host::hostd_base(o.netdev);
  std::filesystem::create_directories(std::filesystem::path(base).parent_path(), ec);
  // One daemon per netdev: its lock, held to the end (clients test it: hostd_running()).
  int lock = ::open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "uroce-hostd: %s: %s\n", (base + ".lock").c_str(),
                 lock < 0 ? std::strerror(errno) : "another uroce-hostd serves this netdev");
    return 1;
  }
  const std::string socket = base + ".sock";
  std::filesystem::remove(socket, ec);  // left by a daemon that was killed

  config::Device dev;
  dev.name = "hostd-" + o.netdev;
  dev.netdev = o.netdev;
  dev.mtu = 4096;
  auto net = host::open_host_port(dev, &err);
  if (!net) {
    std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    return 1;
  }
  const MacAddr mac = net->mac();
  // Without a segment the daemon serves all the same; only `uroce show` lacks the netdev.
  auto seg = stats::StatsSegment::create(dev.name, stats::summarize(dev, "uroce-hostd"), &err);
  if (!seg && !err.empty())
    std::fprintf(stderr, "uroce-hostd: no stats segment: %s\n", err.c_str());
  Daemon d(std::move(net), mac, std::move(seg));
  for (int k = 0; k < host::kHostdSlots; ++k)
    if (!d.add_client(k, socket, &err)) {
      std::fprintf(stderr, "uroce-hostd: client slot %d: %s\n", k, err.c_str());
      d.close();
      return 1;
    }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::printf("uroce-hostd: serving %s on %s (%d client slots)\n", o.netdev.c_str(), socket.c_str(),
              host::kHostdSlots);
  std::fflush(stdout);
  d.run(o.stats_every_s);
  d.publish();
  d.print("final");
  d.close();
  std::filesystem::remove(socket, ec);
  return 0;
}

}  // namespace
}  // namespace uroce::hostd

int main(int argc, char** argv) { return uroce::hostd::run_main(argc, argv); }
