/**
 * @file main.cc
 * @brief uroce-hostd: the host's RDMA service on one kernel netdev (docs/host-mode.md,
 * "Several processes on one netdev"). It owns the netdev through the host-mode port
 * (drivers/host: AF_XDP + XDP program + TX pipeline) and serves any number of local processes
 * (up to --max-clients) over its control socket (drivers/shm/control.h): each client gets a
 * shared-memory region of frame rings (drivers/shm), two doorbells and a block of QPNs.
 *
 * Steering: a frame from the netdev goes to the client whose block holds its destination QPN
 * (a table lookup); a CM MAD (QP1) to the client cm::HostCm names (the listener of a REQ's
 * service ID, else the client whose number prefixes the comm ID it echoes), or the daemon
 * answers it (REJ, SIDR_REP, DREP); a client that leaves gets DREQs sent for its connections.
 * A client's frame is copied into the daemon's buffer and checked there (hostd::TxGuard: it
 * may only send as itself; HostCm: a MAD only under its own IDs); a frame to the netdev's own
 * MAC is same-host traffic: switched to the client of its QPN, never to the wire; any other
 * leaves through the netdev's TX pipeline at its priority (PCP, else DSCP >> 3). Everything a
 * client writes in its region (indices, descriptors, lengths, frame bytes) and on its control
 * socket is checked or copied before use: a client can break only its own rings, which ends
 * its session, as does a control message that does not parse.
 *
 * Workers (--workers, Worker, loop()): each a thread with its own netdev queues (its Port of
 * host::open_host_ports()), its own clients (their TX rings and control sockets) and its own RX
 * ring in every client's region, so no frame crosses workers. Each polls its queues and its
 * clients' TX rings while frames flow; idle, it sleeps on its epoll set (its clients' control
 * sockets and its doorbell, which a client kicks when it publishes to a sleeping worker; worker
 * 0's also the listening socket) with a timeout that polls its queues (50 us, then 1 ms after
 * kDeepIdleAfter without work). Worker 0 accepts clients (each goes to the worker with the
 * fewest) and runs the timers. The steering table is read without a lock; a client that leaves
 * is freed through the Reclaimer (reclaim.h). What else the workers share is under mu_.
 *
 * The netdev as a whole (per-priority traffic, PFC and ECN marks it received, queue depths) is
 * published in a stats segment of its own, device "hostd-IF", every 100 ms: `uroce show roce`
 * and the exporter list it beside each client's device.
 *
 * Usage: uroce-hostd --netdev IF [--run-dir D] [--max-clients N] [--stats-every SECONDS]
 * [--nice N] (default -10: the daemon runs before the processes it serves) [--workers N].
 * Prints one "serving" line when ready; SIGUSR1 prints "stats" lines (clients, QPN blocks,
 * RSS, the CM's work, per client its frames and refusals); SIGINT/SIGTERM stop it and print
 * the counters ("final ...").
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cm/host_cm.h"
#include "common/port.h"
#include "common/sched_slice.h"
#include "config/config.h"
#include "dpdk/clock.h"
#include "host/host_port.h"
#include "hostd/local_hold.h"
#include "hostd/tx_guard.h"
#include "shm/control.h"
#include "shm/doorbell.h"
#include "shm/region.h"
#include "shm/ring.h"
#include "stats/hostd_status.h"
#include "stats/port_publish.h"
#include "stats/proc.h"
#include "stats/segment.h"
#include "stats/summary.h"
#include "transport/wire/build.h"
#include "transport/wire/cm.h"
#include "transport/wire/cm_ip.h"
#include "transport/wire/parse.h"
#include "uroce-hostd/file_writer.h"
#include "uroce-hostd/frame_prio.h"
#include "uroce-hostd/reclaim.h"
#include "uroce-hostd/steer.h"
#include "uroce-hostd/worker.h"

namespace uroce::hostd {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_report{false};
std::atomic<bool> g_remove{false};
void on_signal(int) { g_stop.store(true); }
void on_report(int) { g_report.store(true); }
void on_remove(int) {
  g_remove.store(true);
  g_stop.store(true);
}

using dpdk::monotonic_now;

/// QPN bits a client numbers its QPs with: 8192 QPs per process, 2047 clients per netdev.
constexpr uint8_t kQpnBlockBits = 13;
// A client's number (its QPN block) is also its comm-ID prefix at HostCm.
static_assert((1u << (24 - kQpnBlockBits)) - 1 <= cm::HostCm::kMaxClient);
constexpr uint32_t kDefaultMaxClients = 1024;
/// Ring sizes of a client's region (frames). The RX ring takes what arrives while its process
/// waits for a CPU: a 1 MiB message at MTU 1024 whole.
constexpr uint32_t kTxSlots = 256;
constexpr uint32_t kRxSlots = 1024;
/// Frames taken from one client's TX ring per round, so that no client starves the others.
constexpr uint32_t kClientBurst = 32;
/// The CPU slice the daemon asks for (lib/common/sched_slice.h; the kernel's least).
constexpr Duration kSlice = Duration::micros(100);
/// Idle: polls of the netdev 50 us apart, 1 ms apart after this long without work.
constexpr Duration kDeepIdleAfter = Duration::millis(10);
/// Control events are looked at every this many busy rounds (every round when idle).
constexpr unsigned kControlEvery = 64;
/// Control events handled per wait.
constexpr int kEvents = 64;
/// The first this many frames for a QPN block no client holds are printed (then only counted).
constexpr uint64_t kUnknownReported = 8;
/// HostCm's timers (DREQ resends, forgetting) run this often.
constexpr Duration kCmTick = Duration::millis(1);
/// A frame to QP1 longer than this is no CM MAD (headers + 256 bytes + ICRC fit).
constexpr size_t kCmFrameMax = 512;
/// The daemon's own MADs: as a client's engine sends them (lib/transport gsi.cc).
constexpr uint16_t kCmUdpSport = 0xc001;
constexpr uint8_t kCmDscp = 26;
/// Peers' MACs the daemon remembers for its own MADs (cleared when full).
constexpr size_t kMaxPeerMacs = 65536;

struct Options {
  std::string netdev;
  std::string run_dir;
  int stats_every_s = 0;
  uint32_t max_clients = kDefaultMaxClients;
  /// The daemon's scheduling priority: above the processes it serves, as the kernel's packet
  /// processing (softirq) runs above them for rxe; a frame it does not move waits for them all.
  int nice = -10;
  /// Workers (threads, each with its own netdev queues); 0: one per CPU the daemon may run
  /// on, at most the netdev's active RX queues.
  unsigned workers = 0;
};

epoll_event tagged(uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = tag;
  return ev;
}

/// The epoll tags: the listening socket, a worker's doorbell, a connection (its fd | kConn).
constexpr uint64_t kListenTag = 1;
constexpr uint64_t kBellTag = 2;
constexpr uint64_t kConnTag = uint64_t{1} << 32;

/// A process's command (/proc/<pid>/comm), "?" when it cannot be read.
std::string command_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/comm");
  std::string c;
  std::getline(in, c);
  return c.empty() ? "?" : c;
}

/// With the kernel's autogroups (kernel.sched_autogroup_enabled, a process outside any CPU
/// cgroup), a process's nice value weighs only against the processes of its own session; each
/// session competes as one. The daemon in a session of its own (systemd's, `uroce link add`'s,
/// the tests') gives that session the nice value too, or its clients' sessions, one each,
/// keep it off the CPU (measured: a 50 us epoll timeout returning after up to 1 s under 16
/// client processes per host). In a shell's session it would raise the shell's other
/// processes as well: there it says so and leaves the session alone.
void session_nice(int nice) {
  std::FILE* f = std::fopen("/proc/self/autogroup", "w");
  if (!f) return;  // no autogroups: the nice value weighs against every process
  if (::getsid(0) != ::getpid()) {
    std::fclose(f);
    std::fprintf(stderr,
                 "uroce-hostd: not in a session of its own (start it with setsid): --nice %d "
                 "weighs only against this session's processes\n",
                 nice);
    return;
  }
  const bool ok = std::fprintf(f, "%d", nice) > 0;
  if (std::fclose(f) != 0 || !ok)
    std::fprintf(stderr, "uroce-hostd: --nice %d for its session (/proc/self/autogroup): %s\n",
                 nice, std::strerror(errno));
}

/// The CPUs this process may run on (its affinity mask); 1 when it cannot tell.
unsigned cpus_allowed() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

uint64_t rss_kb() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

class Daemon {
 public:
  Daemon(std::vector<std::unique_ptr<Port>> ports, std::unique_ptr<stats::StatsSegment> seg,
         const Options& o)
      : mac_(ports[0]->mac()),
        seg_(std::move(seg)),
        max_clients_(o.max_clients),
        blocks_(kQpnBlockBits),
        steer_(new std::atomic<Client*>[blocks_.count()]),
        reclaim_(static_cast<unsigned>(ports.size())),
        netdev_(o.netdev),
        status_path_(stats::hostd_status_path(stats::run_dir(), o.netdev, ::getpid())) {
    params_.slot_bytes = static_cast<uint32_t>((ports[0]->max_frame_len() + shm::kLine - 1) /
                                               shm::kLine * shm::kLine);
    params_.tx_slots = kTxSlots;
    params_.rx_rings = static_cast<uint32_t>(ports.size());
    params_.rx_slots = kRxSlots;
    for (uint32_t b = 0; b < blocks_.count(); ++b) steer_[b].store(nullptr);
    for (size_t k = 0; k < ports.size(); ++k) {
      auto w = std::make_unique<Worker>();
      w->id = static_cast<unsigned>(k);
      w->port = std::move(ports[k]);
      w->bell = shm::Doorbell::create();
      w->counters.reset(new Counters[blocks_.count()]);
      w->scratch.resize(params_.slot_bytes);
      learn_host(*w);
      workers_.push_back(std::move(w));
    }
    prev_busy_ns_.assign(workers_.size(), 0);
  }

  ~Daemon() {
    files_.flush();  // a queued blocks write uses blocks_fd_, closed below
    for (auto& w : workers_)
      for (auto& c : w->owned) ::close(c->sock);
    for (auto& [fd, p] : pending_) ::close(fd);
    if (listen_ >= 0) ::close(listen_);
    if (blocks_fd_ >= 0) ::close(blocks_fd_);
  }

  /// Listens on `path` (mode 0666); false with *err.
  bool listen(const std::string& path, std::string* err) {
    for (auto& w : workers_) {
      w->ep = ::epoll_create1(EPOLL_CLOEXEC);
      if (w->ep < 0 || w->bell.fd() < 0) {
        *err =
            "cannot create a worker's epoll set or doorbell: " + std::string(std::strerror(errno));
        return false;
      }
      epoll_event ev = tagged(kBellTag);
      ev.events = EPOLLIN;
      ::epoll_ctl(w->ep, EPOLL_CTL_ADD, w->bell.fd(), &ev);
    }
    listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (listen_ < 0 || path.size() >= sizeof sa.sun_path) {
      *err = "cannot create the control socket: " + std::string(std::strerror(errno));
      return false;
    }
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::chmod(path.c_str(), 0666) != 0 || ::listen(listen_, 1024) != 0) {
      *err = path + ": " + std::strerror(errno);
      return false;
    }
    epoll_event ev = tagged(kListenTag);
    ::epoll_ctl(workers_[0]->ep, EPOLL_CTL_ADD, listen_, &ev);
    return true;
  }

  uint32_t slot_bytes() const { return params_.slot_bytes; }
  size_t workers() const { return workers_.size(); }

  /// Runs every worker (worker 0 on this thread, the others on threads of their own) until
  /// g_stop; then only this thread is left.
  void run(int stats_every_s) {
    for (size_t k = 1; k < workers_.size(); ++k)
      workers_[k]->thread = std::thread([this, k] {
        const std::string name = "uroce-hostd-w" + std::to_string(k);  // top, ps -L
        ::pthread_setname_np(::pthread_self(), name.c_str());
        loop(*workers_[k], 0);
      });
    loop(*workers_[0], stats_every_s);
    for (size_t k = 1; k < workers_.size(); ++k) workers_[k]->thread.join();
    for (auto& w : workers_) adopt(*w);  // handed over as the daemon stopped
    reclaim_.end_all();
  }

  void print(const char* tag) {
    using UL = unsigned long;
    uint64_t net_rx = 0, net_tx = 0, unknown = 0, stalls = 0, longest = 0;
    for (auto& w : workers_) {
      net_rx += value(w->net_rx);
      net_tx += value(w->net_tx);
      unknown += value(w->unknown);
      stalls += value(w->stalls);
      longest = std::max(longest, value(w->longest_stall_ns));
    }
    std::lock_guard<std::mutex> lock(mu_);
    std::printf(
        "%s net_rx=%lu net_tx=%lu unknown=%lu clients=%zu qpn_blocks=%u rss_kb=%lu stalls=%lu "
        "longest_stall_us=%lu workers=%zu\n",
        tag, UL(net_rx), UL(net_tx), UL(unknown), all_.size(), blocks_.in_use(), UL(rss_kb()),
        UL(stalls), UL(longest / 1000), workers_.size());
    // Per worker: its frames and its thread's CPU time (its cost per frame, polling included).
    for (auto& w : workers_)
      std::printf(
          "%s worker=%u net_rx=%lu net_tx=%lu switched=%lu clients=%u stalls=%lu cpu_us=%lu\n", tag,
          w->id, UL(value(w->net_rx)), UL(value(w->net_tx)), UL(value(w->switched)),
          w->clients.load(), UL(value(w->stalls)), UL(value(w->cpu_ns) / 1000));
    const cm::HostCm::Counters& m = hostcm_.counters();
    std::printf(
        "%s cm rej_no_listener=%lu sidr_unsupported=%lu drep_for_gone=%lu dreq_for_dead=%lu "
        "dropped_in=%lu refused_out=%lu malformed=%lu sent=%lu unresolved=%lu connections=%zu\n",
        tag, UL(m.rejected_no_listener), UL(m.sidr_unsupported), UL(m.drep_for_gone),
        UL(m.dreq_for_dead), UL(m.dropped_in), UL(m.refused_out), UL(cm_malformed_), UL(cm_sent_),
        UL(cm_unresolved_), hostcm_.connections_total());
    for (uint32_t k = 0; k < blocks_.count(); ++k) {
      const Totals c = total(k);
      uint64_t refused = 0;
      for (uint64_t r : c.refused) refused += r;
      if (!c.to_client && !c.from_client && !c.dropped && !c.cm_refused && !refused) continue;
      std::printf(
          "%s slot=%u to_client=%lu from_client=%lu to_wire=%lu switched=%lu dropped=%lu "
          "cm_refused=%lu",
          tag, k, UL(c.to_client), UL(c.from_client), UL(c.to_wire), UL(c.switched), UL(c.dropped),
          UL(c.cm_refused));
      // Refused frames by reason: refused_src_qpn=, refused_not_connected=, ...
      for (size_t v = 1; v < kVerdicts; ++v)
        if (c.refused[v])
          std::printf(" refused_%s=%lu",
                      std::string(TxGuard::name(static_cast<TxGuard::Verdict>(v))).c_str(),
                      UL(c.refused[v]));
      std::printf("\n");
    }
    std::fflush(stdout);
  }

  /// The netdev's counters into the segment (also at exit, so the last figures are complete):
  /// the workers' ethdevs and pipelines summed (each worker's as of its last publish round;
  /// this thread's own read now).
  void publish(Worker& self) {
    snapshot_port(self);
    write_status();
    if (!seg_) return;
    PortCounters sum;
    for (auto& w : workers_) {
      std::lock_guard<std::mutex> lock(w->port_mu);
      accumulate(sum, w->port_counters);
    }
    stats::publish_port(sum, seg_->port());
    seg_->heartbeat();
  }
  void publish() { publish(*workers_[0]); }

  /// Removes the status file (the daemon stops), after the writes still queued.
  void remove_status() {
    files_.flush();
    ::unlink(status_path_.c_str());
  }

  /// The device is removed (SIGUSR2, `uroce link del`), as the kernel removes an RDMA device:
  /// each client is told so (Refused: its device is gone at once, no waiting for a next
  /// daemon), each connection its peers know gets a DREQ, and no block is kept for a resume.
  /// After run(): one thread.
  void remove_all() {
    size_t n = 0;
    const uint64_t sent = cm_sent_;
    shm::Refused r;
    std::snprintf(r.reason, sizeof r.reason, "the device on %s was removed (uroce link del)",
                  netdev_.c_str());
    for (auto& w : workers_) {
      while (!w->owned.empty()) {
        Client& c = *w->owned.back();
        shm::send_msg(c.sock, &r, sizeof r);
        drop(*w, c, "the device is removed");
        ++n;
      }
      w->port->flush();  // the DREQs leave now
    }
    reclaim_.end_all();
    std::printf("uroce-hostd: removed: %zu clients told, %lu DREQs sent\n", n,
                static_cast<unsigned long>(cm_sent_ - sent));
  }

  /// Ends every session, then closes the netdev (the PMD detaches the program). The clients
  /// live on and resume their blocks with the next daemon: no DREQ for their connections, and
  /// the blocks file keeps their blocks. After run(): one thread.
  void close() {
    for (auto& w : workers_)
      while (!w->owned.empty()) drop(*w, *w->owned.back(), nullptr, true);
    reclaim_.end_all();
    for (auto& w : workers_) w->port.reset();
  }

  /// The blocks file (`path`): the blocks a previous daemon had given are reserved for their
  /// clients to resume (Port::kServiceGraceMax: the longest a client waits for this daemon);
  /// from now on the file names the blocks this daemon holds. false with *err.
  bool keep_blocks(const std::string& path, std::string* err) {
    blocks_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (blocks_fd_ < 0) {
      *err = path + ": " + std::strerror(errno);
      return false;
    }
    std::vector<QpnBlocks::Owner> owners(blocks_.count());
    const size_t bytes = owners.size() * sizeof(QpnBlocks::Owner);
    const ssize_t n = ::pread(blocks_fd_, owners.data(), bytes, 0);
    uint32_t kept = 0;
    std::lock_guard<std::mutex> lock(mu_);
    for (uint32_t b = 1; n == static_cast<ssize_t>(bytes) && b < blocks_.count(); ++b) {
      if (owners[b].pid > 0) {
        blocks_.reserve(b, owners[b]);
        ++kept;
      }
    }
    if (kept) {
      unreserve_at_ = monotonic_now() + Port::kServiceGraceMax;
      std::printf(
          "uroce-hostd: %u QPN blocks kept for the clients of the previous daemon for %.0f s\n",
          kept, Port::kServiceGraceMax.secs());
    }
    save_blocks();
    return true;
  }

 private:
  /// Hands a worker's netdev frames to the Daemon with the worker.
  struct NetRx final : FrameHandler {
    Daemon* d;
    Worker* w;
    NetRx(Daemon* daemon, Worker* worker) : d(daemon), w(worker) {}
    void on_frame(std::span<const uint8_t> frame, const RxMeta&) override {
      bump(w->net_rx);
      d->to_clients(*w, frame, frame);
    }
  };

  /// One worker's loop: it polls its netdev queues and its clients' TX rings while frames
  /// flow; idle, it sleeps on its epoll set (its clients' control sockets, its doorbell; for
  /// worker 0 the listening socket) with a timeout that polls its queues (50 us, then 1 ms
  /// after kDeepIdleAfter without work). Worker 0 also runs the daemon's timers (CM, stats,
  /// status file, the previous daemon's blocks). Between two quiescent() calls the worker may
  /// hold clients it read from the steering table; at each it holds none (woken is empty).
  void loop(Worker& w, int stats_every_s) {
    const bool main = w.id == 0;
    w.cpu_base_ns = thread_cpu_ns();
    NetRx rx(this, &w);
    Timestamp next_stats =
        stats_every_s > 0 ? monotonic_now() + Duration::seconds(stats_every_s) : Timestamp::never();
    Timestamp next_publish = monotonic_now();
    Timestamp next_tick{};
    Timestamp last_work = monotonic_now();
    w.last_round = last_work;
    unsigned idle = 1, rounds = 0;  // idle 0: the last round moved frames
    while (!g_stop.load(std::memory_order_relaxed)) {
      reclaim_.quiescent(w.id);
      const Timestamp now = monotonic_now();
      note_round(w, now);
      if (idle == 0) bump(w.busy_ns, static_cast<uint64_t>((now - last_work).ns));
      if (w.has_inbox.load(std::memory_order_relaxed)) adopt(w);
      size_t work = w.port->rx_burst(rx, 64, now);
      for (size_t i = 0; i < w.owned.size(); ++i) work += from_client(w, *w.owned[i], now);
      wake_clients(w);
      w.port->flush();
      drop_broken(w);
      if (work) {
        idle = 0;
        last_work = now;
      } else {
        ++idle;
      }
      if (idle > 16) {
        sleep(w, now - last_work >= kDeepIdleAfter ? Duration::millis(1) : Duration::micros(50));
      } else if (++rounds % kControlEvery == 0) {
        control(w);
      }
      if (now >= next_tick) {
        next_tick = now + kCmTick;
        if (w.port->link_version() != w.link_version) learn_host(w);
        reclaim_.collect();
        if (main) timers(w, now);
      }
      if (now >= next_publish) {
        next_publish = now + kPublishEvery;
        note_cpu(w);
        if (main) {
          publish(w);
        } else {
          snapshot_port(w);
        }
      }
      if (main && now >= next_stats) {
        print("stats");
        next_stats = now + Duration::seconds(stats_every_s);
      }
      if (main && g_report.exchange(false)) print("stats");
      wake_clients(w);  // what control and the timers delivered: none is held past the round
      w.port->flush();
    }
    note_cpu(w);
  }

  /// The calling thread's CPU time (ns).
  static uint64_t thread_cpu_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
  }
  /// w's thread's CPU time in its loop so far into w.cpu_ns (called on w's thread).
  static void note_cpu(Worker& w) {
    w.cpu_ns.store(thread_cpu_ns() - w.cpu_base_ns, std::memory_order_relaxed);
  }

  /// Worker 0's timers: the CM's (DREQs of dead clients' connections, due again) and the
  /// previous daemon's blocks (its clients had their time to resume).
  void timers(Worker& w, Timestamp now) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const cm::HostCm::Outgoing& o : hostcm_.timers(now)) send_cm(w, o, now);
    if (now >= unreserve_at_) {
      blocks_.unreserve_all();
      save_blocks();
      unreserve_at_ = Timestamp::never();
    }
  }

  /// The netdev's MAC and addresses, the only source a client's frame may have (TxGuard).
  void learn_host(Worker& w) {
    w.link_version = w.port->link_version();
    LinkState st;
    if (w.port->link_state(&st)) w.guard.set_host(mac_, st.gids);
  }

  /// w's port counters, for publish(), and the depths of the rings w uses, for the status
  /// file: every client's RX ring of w, its own clients' TX rings.
  void snapshot_port(Worker& w) {
    for (uint32_t b = 1; b < blocks_.count(); ++b) {
      Client* c = steer_[b].load();
      if (!c) continue;
      c->rx[w.id].depth.store(c->rx[w.id].ring.in_flight(), std::memory_order_relaxed);
      if (c->owner == w.id) c->tx_depth.store(c->tx.available(), std::memory_order_relaxed);
    }
    PortCounters c;
    if (!w.port->read_counters(&c)) return;
    std::lock_guard<std::mutex> lock(w.port_mu);
    w.port_counters = c;
  }

  /// Block k's counters summed over the workers.
  Totals total(uint32_t k) const {
    Totals t;
    for (auto& w : workers_) t.add(w->counters[k]);
    return t;
  }

  /// A round that starts more than kStall after the previous one: the worker was held up (no
  /// CPU, or a system call that blocked) and its clients' frames waited. Counted, with the
  /// longest, in the "stats"/"final" lines: a client's retries that ran out say whether it was
  /// the daemon.
  void note_round(Worker& w, Timestamp now) {
    const Duration gap = now - w.last_round;
    w.last_round = now;
    if (gap < kStall) return;
    bump(w.stalls);
    if (static_cast<uint64_t>(gap.ns) > value(w.longest_stall_ns))
      w.longest_stall_ns.store(static_cast<uint64_t>(gap.ns), std::memory_order_relaxed);
  }

  /// The status file (stats/hostd_status.h): each worker and every client, for `uroce show`
  /// and the exporter. Ring depths as each worker saw them at its last status round.
  void write_status() {
    const Timestamp now = monotonic_now();
    stats::HostdStatus st;
    st.netdev = netdev_;
    st.pid = static_cast<int32_t>(::getpid());
    st.start_time = start_time_;
    for (auto& w : workers_) {
      stats::HostdWorkerStatus x;
      x.id = w->id;
      x.frames_in = value(w->net_rx);
      x.frames_out = value(w->net_tx);
      const uint64_t busy = value(w->busy_ns);
      if (now > status_at_)
        x.busy = static_cast<double>(busy - prev_busy_ns_[w->id]) / (now - status_at_).ns;
      prev_busy_ns_[w->id] = busy;
      st.workers.push_back(x);
    }
    status_at_ = now;
    std::lock_guard<std::mutex> lock(mu_);
    for (Client* c : all_) {
      const Totals k = total(c->block);
      stats::HostdClientStatus x;
      x.slot = c->block;
      x.worker = c->owner;
      x.pid = static_cast<int32_t>(c->pid);
      x.uid = static_cast<uint32_t>(c->uid);
      x.command = c->command;
      x.device = c->device;
      x.to_client = k.to_client;
      x.from_client = k.from_client;
      x.to_wire = k.to_wire;
      x.switched = k.switched;
      x.dropped = k.dropped;
      x.cm_refused = k.cm_refused;
      for (size_t v = 1; v < kVerdicts; ++v)
        if (k.refused[v])
          x.refused[std::string(TxGuard::name(static_cast<TxGuard::Verdict>(v)))] = k.refused[v];
      for (size_t j = 0; j < c->rx.size(); ++j) {
        const uint32_t d = c->rx[j].depth.load(std::memory_order_relaxed);
        x.rx_depth += d;
        st.workers[j].rx_backlog += d;
      }
      x.tx_depth = c->tx_depth.load(std::memory_order_relaxed);
      st.workers[c->owner].tx_backlog += x.tx_depth;
      st.clients.push_back(std::move(x));
    }
    files_.post(kStatusFile, [path = status_path_, st = std::move(st)] {
      std::string err;
      return stats::write_hostd_status(path, st, &err) ? std::string() : "status file: " + err;
    });
  }

  /// A frame for the local clients: by the destination QPN's block, read from `headers` (the
  /// frame itself, or a copy of a client's frame's first bytes); QP1 by HostCm (cm_in).
  void to_clients(Worker& w, std::span<const uint8_t> headers, std::span<const uint8_t> frame) {
    auto qpn = roce_dest_qpn(headers);
    if (!qpn) {
      bump(w.unknown);
      return;
    }
    if (*qpn == wire::cm::kGsiQpn) {
      // From the netdev the frame is the worker's own buffer; a client's is copied whole first.
      if (frame.size() > kCmFrameMax) {
        bump(w.unknown);
        return;
      }
      uint8_t copy[kCmFrameMax];
      std::memcpy(copy, frame.data(), frame.size());
      std::lock_guard<std::mutex> lock(mu_);
      cm_in(w, std::span<const uint8_t>(copy, frame.size()), monotonic_now());
      return;
    }
    const uint32_t block = blocks_.block_of(*qpn);
    Client* c = steer_[block].load();
    if (!c) {  // block 0, or a block nobody holds (a client that left, a forged frame)
      if (w.unknown.load(std::memory_order_relaxed) < kUnknownReported)
        std::printf("frame for QPN 0x%06x (block %u, no client) dropped, %zu bytes\n", *qpn, block,
                    frame.size());
      bump(w.unknown);
      return;
    }
    push(w, *c, frame);
  }

  /// A CM MAD as a frame (parsed: UD SEND of one MAD to QP1), or nullopt.
  static std::optional<wire::ParsedPacket> parse_mad(std::span<const uint8_t> frame) {
    wire::ParsedPacket p;
    if (wire::parse_headers(frame, &p) != wire::DropReason::kOk || p.roce_v1 ||
        p.opcode != wire::Opcode::kUdSendOnly || p.payload.size() != wire::cm::kMadLen)
      return std::nullopt;
    return p;
  }

  /// A CM MAD (a frame to QP1, in the daemon's memory) from the netdev or a client of this host:
  /// to the client HostCm names, or answered by the daemon (REJ, SIDR_REP, DREP), or dropped.
  /// With mu_ held.
  void cm_in(Worker& w, std::span<const uint8_t> frame, Timestamp now) {
    auto p = parse_mad(frame);
    if (!p) {
      ++cm_malformed_;
      return;
    }
    learn(p->src_ip, p->src_mac);
    cm::HostCm::Route r = hostcm_.inbound(p->src_ip, p->dst_ip, p->payload, now);
    if (r.to == cm::HostCm::To::kClient) {
      Client* c = r.client < blocks_.count() ? steer_[r.client].load() : nullptr;
      if (c) {
        push(w, *c, frame);
      } else {
        bump(w.unknown);
      }
    } else if (r.to == cm::HostCm::To::kAnswered && r.reply) {
      send_cm(w, *r.reply, now);
    }
  }

  /// Remembers ip's MAC (as its frames came, or went) for the daemon's own MADs to it. With
  /// mu_ held.
  void learn(const Gid& ip, const MacAddr& mac) {
    if (peer_macs_.size() >= kMaxPeerMacs) peer_macs_.clear();
    peer_macs_[ip.raw] = mac;
  }

  /// A MAD of the daemon's own (HostCm's REJ, SIDR_REP, DREP, DREQ): to the wire through w's
  /// queue, or to the client it is for when the peer is on this host. With mu_ held.
  void send_cm(Worker& w, const cm::HostCm::Outgoing& o, Timestamp now) {
    wire::FrameSpec s;
    if (auto it = peer_macs_.find(o.peer.raw); it != peer_macs_.end()) {
      s.dst_mac = it->second;
    } else if (!w.port->resolve(o.peer, &s.dst_mac)) {
      ++cm_unresolved_;
      return;
    }
    s.src_mac = mac_;
    s.src_ip = o.local;
    s.dst_ip = o.peer;
    s.dscp = kCmDscp;
    s.udp_sport = kCmUdpSport;
    s.opcode = wire::Opcode::kUdSendOnly;
    s.pkey = wire::kDefaultPkey;
    s.dest_qpn = Qpn(wire::cm::kGsiQpn);
    s.psn = Psn(cm_psn_);
    cm_psn_ = (cm_psn_ + 1) & 0xffffff;
    s.deth.qkey = wire::cm::kGsiQkey;
    s.deth.src_qpn = Qpn(wire::cm::kGsiQpn);
    uint8_t buf[kCmFrameMax];
    const wire::FrameLayout l = wire::build_headers(s, buf);
    if (l.payload_offset == 0 || l.payload_offset + o.mad.size() + 7 > sizeof buf) return;
    std::memcpy(buf + l.payload_offset, o.mad.data(), o.mad.size());
    const size_t len = wire::finalize(buf, l, o.mad.size());
    if (len == 0) return;
    ++cm_sent_;
    const std::span<const uint8_t> f(buf, len);
    if (s.dst_mac == mac_) {  // a peer on this host: steered as any MAD that arrives
      cm_in(w, f, now);
      return;
    }
    uint8_t* q = w.port->begin_frame(len);
    if (!q) return;  // the netdev's queues are full: HostCm resends a DREQ; a REJ is lost
    std::memcpy(q, buf, len);
    w.port->end_frame(len, TxMeta{frame_priority(f), false});
    bump(w.net_tx);
  }

  /// frame into c's RX ring of worker w.
  void push(Worker& w, Client& c, std::span<const uint8_t> frame) {
    Counters& k = w.counters[c.block];
    RxSide& r = c.rx[w.id];
    auto b = r.ring.take();
    if (!b || frame.size() > r.ring.slot_bytes()) {  // ring full: the transport retransmits
      if (b) r.ring.give_back(*b);
      if (r.ring.broken()) c.rx_broken.store(true, std::memory_order_relaxed);
      bump(k.dropped);
      return;
    }
    std::memcpy(r.ring.data(*b), frame.data(), frame.size());
    if (!r.ring.publish(*b, static_cast<uint32_t>(frame.size()))) {
      r.ring.give_back(*b);
      if (r.ring.broken()) c.rx_broken.store(true, std::memory_order_relaxed);
      bump(k.dropped);
      return;
    }
    bump(k.to_client);
    if (!r.published) {
      r.published = true;
      w.woken.push_back(&c);
    }
  }

  /// Kicks the clients that got frames from w this round and sleep (one system call per
  /// sleep).
  void wake_clients(Worker& w) {
    for (Client* c : w.woken) {
      RxSide& r = c->rx[w.id];
      r.published = false;
      if (r.ring.wake_needed()) c->bell.kick();
    }
    w.woken.clear();
  }

  /// Up to kClientBurst frames from c's TX ring (c is w's): to the wire through w's queue, or
  /// switched to a client.
  size_t from_client(Worker& w, Client& c, Timestamp now) {
    const uint32_t n = std::min(c.tx.available(), kClientBurst);
    Counters& k = w.counters[c.block];
    uint32_t done = 0;
    for (; done < n; ++done) {
      std::span<const uint8_t> slot = c.tx.frame(done);
      if (slot.size() < 14 || slot.size() > w.scratch.size()) {  // a bad descriptor
        bump(k.dropped);
        continue;
      }
      // Checked and sent from the worker's copy: the client may rewrite its slot meanwhile.
      std::memcpy(w.scratch.data(), slot.data(), slot.size());
      const std::span<const uint8_t> f(w.scratch.data(), slot.size());
      wire::ParsedPacket p;
      const TxGuard::Verdict v = w.guard.check(c.block, f, &p);
      if (v != TxGuard::Verdict::kOk) {  // not a frame its own QPs may send
        Count& r = k.refused[static_cast<size_t>(v)];
        if (value(r) == 0) report_refused(c, v, p);
        bump(r);
        continue;
      }
      if (p.dest_qpn.value() == wire::cm::kGsiQpn) {
        // A CM MAD: only under the client's own IDs (HostCm).
        std::unique_lock<std::mutex> lock(mu_);
        if (p.opcode != wire::Opcode::kUdSendOnly || p.payload.size() != wire::cm::kMadLen ||
            hostcm_.outbound(c.block, p.src_ip, p.dst_ip, p.payload, now) !=
                cm::HostCm::Refusal::kNone) {
          lock.unlock();
          bump(k.cm_refused);
          continue;
        }
        learn(p.dst_ip, p.dst_mac);
      }
      if (p.dst_mac == mac_) {               // same host
        if (must_wait(w, c, p, now)) break;  // the rest waits in its ring
        bump(k.from_client);
        bump(k.switched);
        bump(w.switched);
        to_clients(w, f, f);
        continue;
      }
      uint8_t* q = w.port->begin_frame(f.size());
      if (!q) break;  // the netdev's queues are full: the rest waits in the client's ring
      bump(k.from_client);
      std::memcpy(q, f.data(), f.size());
      w.port->end_frame(f.size(), TxMeta{frame_priority(f), false});
      bump(k.to_wire);
      bump(w.net_tx);
    }
    if (done) c.tx.release(done);
    return done;
  }

  /// True when sender's same-host frame p must wait in its TX ring (LocalHold): the receiver's
  /// RX ring of this worker is full.
  bool must_wait(Worker& w, Client& sender, const wire::ParsedPacket& p, Timestamp now) {
    if (p.dest_qpn.value() == wire::cm::kGsiQpn) return false;
    Client* r = steer_[blocks_.block_of(p.dest_qpn.value())].load();
    if (!r) return false;
    RxSide& in = r->rx[w.id];
    return LocalHold::must_wait(sender.hold, in.hold, in.ring.has_room(), now);
  }

  /// The first frame of a client refused for a reason: one line, for its owner to see why.
  void report_refused(const Client& c, TxGuard::Verdict v, const wire::ParsedPacket& p) {
    if (v == TxGuard::Verdict::kMalformed) {
      std::printf("client slot=%u pid=%d: frame refused (malformed)\n", c.block,
                  static_cast<int>(c.pid));
    } else {
      std::printf(
          "client slot=%u pid=%d: frame refused (%s): opcode 0x%02x to %s qpn 0x%06x sport %u\n",
          c.block, static_cast<int>(c.pid), std::string(TxGuard::name(v)).c_str(),
          static_cast<unsigned>(p.opcode), p.dst_ip.to_string().c_str(), p.dest_qpn.value(),
          static_cast<unsigned>(p.udp_sport));
    }
    std::fflush(stdout);
  }

  /// Idle: arms w's doorbell in each of its clients' TX rings and waits for a control event,
  /// a kick or `timeout` (the netdev's next poll).
  void sleep(Worker& w, Duration timeout) {
    bool empty = true;
    size_t armed = 0;
    for (; armed < w.owned.size() && empty; ++armed) empty = w.owned[armed]->tx.prepare_sleep();
    epoll_event evs[kEvents];
    const int n = empty ? wait(w, evs, timeout.ns) : 0;
    for (size_t i = 0; i < armed; ++i) w.owned[i]->tx.end_sleep();  // before events drop clients
    handle(w, evs, n);
  }

  /// Handles the control events there are now.
  void control(Worker& w) {
    epoll_event evs[kEvents];
    handle(w, evs, wait(w, evs, 0));
  }

  int wait(Worker& w, epoll_event* evs, int64_t timeout_ns) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                      static_cast<long>(timeout_ns % 1'000'000'000)};
    return ::epoll_pwait2(w.ep, evs, kEvents, &ts, nullptr);
  }

  void handle(Worker& w, const epoll_event* evs, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = evs[i].data.u64;
      if (tag == kListenTag) {
        accept_all(w);
      } else if (tag == kBellTag) {
        w.bell.drain();
      } else if (tag & kConnTag) {
        on_conn(w, static_cast<int>(tag & 0xffffffffu), evs[i].events);
      }
    }
  }

  /// New connections (worker 0): each waits for its Hello in worker 0's set.
  void accept_all(Worker& w) {
    for (;;) {
      const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      if (pending_.size() >= max_clients_) {  // hellos not said yet: no more than clients
        ::close(fd);
        continue;
      }
      ucred cred{};
      socklen_t len = sizeof cred;
      ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
      pending_[fd] = cred;
      epoll_event ev = tagged(kConnTag | static_cast<uint32_t>(fd));
      ::epoll_ctl(w.ep, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void on_conn(Worker& w, int fd, uint32_t events) {
    if (w.id == 0) {
      if (auto it = pending_.find(fd); it != pending_.end()) {
        const ucred cred = it->second;
        pending_.erase(it);
        hello(w, fd, cred);
        return;
      }
    }
    Client* c = nullptr;
    for (auto& x : w.owned)
      if (x->sock == fd) c = x.get();
    if (!c) return;
    alignas(shm::Request) uint8_t b[sizeof(shm::Request) + 1];
    const ssize_t r = ::recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r > 0) {
      auto req = shm::parse_request(std::span<const uint8_t>(b, static_cast<size_t>(r)));
      if (!req) return drop(w, *c, "a message this protocol version does not have");
      shm::Reply rep;
      rep.seq = req->seq;
      rep.error = serve(w, *c, *req);
      if (shm::send_msg(fd, &rep, sizeof rep) != 0) drop(w, *c, "it does not take its replies");
    } else if (r == 0 || (events & (EPOLLHUP | EPOLLRDHUP)) ||
               (errno != EAGAIN && errno != EWOULDBLOCK)) {
      drop(w, *c, nullptr);  // the process closed its device or exited
    }
  }

  /// A client's Request (checked by parse_request), served by its owner w: 0 or an errno for
  /// its Reply. A connection is registered with the daemon's TxGuard (no two clients hold one
  /// remote QP) and with w's (which checks its frames).
  int serve(Worker& w, Client& c, const shm::Request& r) {
    Gid gid;
    std::memcpy(gid.raw.data(), r.gid, sizeof r.gid);
    switch (r.op) {
      case shm::Op::kBind:
      case shm::Op::kListen: {
        if (r.ps != wire::cm::kPsTcp && r.ps != wire::cm::kPsUdp && r.ps != wire::cm::kPsIb &&
            r.ps != wire::cm::kPsIpoib)
          return EINVAL;
        std::lock_guard<std::mutex> lock(mu_);
        // One binding per Bind or Listen, each given back by its Release (a process may hold a
        // port twice: a bound id that listens, IPv4's and IPv6's wildcard).
        if (int e = hostcm_.bind(c.block, r.ps, r.port, gid)) return e;
        return r.op == shm::Op::kListen ? hostcm_.listen(c.block, r.ps, r.port, gid) : 0;
      }
      case shm::Op::kRelease: {
        std::lock_guard<std::mutex> lock(mu_);
        hostcm_.release(c.block, r.ps, r.port, gid);
        return 0;
      }
      case shm::Op::kConnect: {
        std::lock_guard<std::mutex> lock(mu_);
        if (int e = guard_.connect(c.block, r.qpn, gid, r.dqpn, r.sport)) return e;
        const int e = w.guard.connect(c.block, r.qpn, gid, r.dqpn, r.sport);
        if (e) guard_.disconnect(c.block, r.qpn);
        return e;
      }
      case shm::Op::kDisconnect: {
        // Frames the QP sent before it left (the client publishes them before it asks) go
        // first, checked against the connection they were sent on.
        const Timestamp now = monotonic_now();
        while (c.tx.available() && from_client(w, c, now)) {
        }
        std::lock_guard<std::mutex> lock(mu_);
        guard_.disconnect(c.block, r.qpn);
        w.guard.disconnect(c.block, r.qpn);
        return 0;
      }
    }
    return EINVAL;
  }

  /// Refuses a connection before its Hello was answered (it is in worker 0's set).
  void refuse(Worker& w, int fd, const std::string& why) {
    shm::Refused r;
    std::snprintf(r.reason, sizeof r.reason, "%s", why.c_str());
    shm::send_msg(fd, &r, sizeof r);
    ::epoll_ctl(w.ep, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
  }

  /// The worker with the fewest clients.
  Worker& least_loaded() {
    Worker* best = workers_[0].get();
    for (auto& x : workers_)
      if (x->clients.load() < best->clients.load()) best = x.get();
    return *best;
  }

  /// The first message of a connection (worker 0): Hello, answered by Welcome (a client) or
  /// Refused. A Hello that resumes a block (a client whose previous daemon went away) gets
  /// that block or Refused. The client goes to the worker with the fewest clients, whose
  /// doorbell it gets; that worker adopts it (adopt()).
  void hello(Worker& w, int fd, const ucred& cred) {
    alignas(shm::Hello) uint8_t b[sizeof(shm::Hello) + 64];
    size_t nfds = 0;
    const long n = shm::recv_msg(fd, b, sizeof b, {}, &nfds);
    const auto msg = std::span<const uint8_t>(b, n > 0 ? static_cast<size_t>(n) : 0);
    if (auto v = shm::hello_version(msg); v && *v != shm::kProtocolVersion)
      return refuse(w, fd,
                    "uroce-hostd speaks protocol version " + std::to_string(shm::kProtocolVersion) +
                        ", this process version " + std::to_string(*v) +
                        " (update uroce on one side)");
    auto h = shm::parse_hello(msg);
    if (!h) {
      ::epoll_ctl(w.ep, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      return;
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (all_.size() >= max_clients_)
      return refuse(w, fd,
                    "all " + std::to_string(max_clients_) +
                        " client slots of uroce-hostd are taken (--max-clients)");
    std::optional<uint32_t> block;
    const QpnBlocks::Owner who{static_cast<int32_t>(cred.pid), static_cast<uint32_t>(cred.uid)};
    if (h->resume_block) {
      const uint32_t r = h->resume_block;
      const QpnBlocks::Owner holder = blocks_.owner(r);
      switch (blocks_.take(r, who)) {
        case QpnBlocks::Take::kOk: break;
        case QpnBlocks::Take::kGiven:
        case QpnBlocks::Take::kNotYours:
          return refuse(w, fd,
                        "QPN block " + std::to_string(r) + " is held by another process (pid " +
                            std::to_string(holder.pid) + ")");
        case QpnBlocks::Take::kNotReserved:
          return refuse(w, fd,
                        "QPN block " + std::to_string(r) +
                            " was not given to this process by the previous uroce-hostd");
      }
      block = r;
    } else {
      block = blocks_.give(who);
    }
    if (!block) return refuse(w, fd, "no QPN block is free");
    std::string err;
    auto region = shm::create_region(params_, &err);
    shm::Doorbell bell = shm::Doorbell::create();
    if (!region || bell.fd() < 0) {
      blocks_.free(*block);
      return refuse(w, fd, "cannot create the client's region: " + err);
    }
    Worker& owner = least_loaded();
    shm::Welcome wel;
    wel.client = *block;
    wel.qpn_block = *block;
    wel.qpn_block_bits = kQpnBlockBits;
    wel.max_frame = static_cast<uint32_t>(w.port->max_frame_len());
    wel.region = params_;
    // Out of worker 0's set before the Welcome: its owner's set takes its requests.
    ::epoll_ctl(w.ep, EPOLL_CTL_DEL, fd, nullptr);
    const int fds[] = {region->fd(), bell.fd(), owner.bell.fd()};
    if (shm::send_msg(fd, &wel, sizeof wel, fds) != 0) {
      blocks_.free(*block);
      ::close(fd);
      return;
    }
    region->release_fd();  // the client has it; the mapping stays
    auto c = std::make_unique<Client>();
    c->sock = fd;
    c->block = *block;
    c->owner = owner.id;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->device = h->device;
    c->command = command_of(cred.pid);
    c->region = std::move(*region);
    c->bell = std::move(bell);
    c->tx = shm::Consumer(c->region.tx());
    for (uint32_t k = 0; k < params_.rx_rings; ++k) c->rx.emplace_back(c->region.rx(k));
    for (auto& x : workers_) x->counters[*block].reset();
    hostcm_.add_client(*block);
    guard_.add_client(*block, *block << kQpnBlockBits, 1u << kQpnBlockBits);
    std::printf("client slot=%u pid=%d uid=%u device=%s worker=%u%s\n", c->block,
                static_cast<int>(c->pid), static_cast<unsigned>(c->uid), c->device.c_str(),
                owner.id, h->resume_block ? " resumed" : "");
    std::fflush(stdout);
    all_.push_back(c.get());
    save_blocks();
    lock.unlock();
    owner.clients.fetch_add(1);
    {
      std::lock_guard<std::mutex> in(owner.inbox_mu);
      owner.inbox.push_back(std::move(c));
      owner.has_inbox.store(true);
    }
    if (&owner != &w) owner.bell.kick();  // asleep, it would look only at its next poll
  }

  /// Takes the clients handed to w: their sockets into w's set, their block into the steering
  /// table (from now on every worker delivers to them).
  void adopt(Worker& w) {
    std::vector<std::unique_ptr<Client>> in;
    {
      std::lock_guard<std::mutex> lock(w.inbox_mu);
      in.swap(w.inbox);
      w.has_inbox.store(false);
    }
    for (auto& c : in) {
      epoll_event ev = tagged(kConnTag | static_cast<uint32_t>(c->sock));
      ::epoll_ctl(w.ep, EPOLL_CTL_ADD, c->sock, &ev);
      w.guard.add_client(c->block, c->block << kQpnBlockBits, 1u << kQpnBlockBits);
      steer_[c->block].store(c.get());
      w.owned.push_back(std::move(c));
    }
  }

  /// Whom each block is given or reserved to, into the blocks file (keep_blocks()): one
  /// QpnBlocks::Owner per block, pid 0 for a free one. With mu_ held.
  void save_blocks() {
    if (blocks_fd_ < 0) return;
    std::vector<QpnBlocks::Owner> owners(blocks_.count());
    for (uint32_t b = 1; b < blocks_.count(); ++b) owners[b] = blocks_.owner(b);
    files_.post(kBlocksFile, [fd = blocks_fd_, owners = std::move(owners)] {
      const size_t bytes = owners.size() * sizeof(QpnBlocks::Owner);
      if (::pwrite(fd, owners.data(), bytes, 0) == static_cast<ssize_t>(bytes))
        return std::string();
      return std::string("blocks file: ") + std::strerror(errno);
    });
  }

  /// Ends c's session (c is w's): its slot and socket go at once; its region, doorbell and
  /// QPN block once no worker can be using them (Reclaimer). why: a protocol violation to
  /// print, or null (it closed the connection). daemon_stops: the client lives on (close()).
  void drop(Worker& w, Client& c, const char* why, bool daemon_stops = false) {
    std::printf("client slot=%u pid=%d left%s%s\n", c.block, static_cast<int>(c.pid),
                why            ? ": "
                : daemon_stops ? " (the daemon stops)"
                               : "",
                why ? why : "");
    std::fflush(stdout);
    if (!why) {  // closed or exited: what it sent before (its DREQs, last ACKs) goes out first
      const Timestamp now = monotonic_now();
      while (c.tx.available() && from_client(w, c, now)) {
      }
      w.port->flush();
    }
    ::epoll_ctl(w.ep, EPOLL_CTL_DEL, c.sock, nullptr);
    ::close(c.sock);
    std::erase(w.woken, &c);
    const uint32_t block = c.block;
    steer_[block].store(nullptr);
    w.guard.drop_client(block);
    auto it = std::find_if(w.owned.begin(), w.owned.end(),
                           [&](const std::unique_ptr<Client>& x) { return x.get() == &c; });
    std::shared_ptr<Client> gone = std::move(*it);
    w.owned.erase(it);
    w.clients.fetch_sub(1);
    std::lock_guard<std::mutex> lock(mu_);
    std::erase(all_, gone.get());
    guard_.drop_client(block);
    if (daemon_stops) return;  // its block stays in the file, its connections with it
    // Its ports go; each connection its peer knows gets a DREQ now (and again by the timers).
    const Timestamp now = monotonic_now();
    for (const cm::HostCm::Outgoing& o : hostcm_.drop_client(block, now)) send_cm(w, o, now);
    reclaim_.retire([this, gone = std::move(gone), block]() mutable {
      gone.reset();  // unmaps its region
      std::lock_guard<std::mutex> l(mu_);
      blocks_.free(block);
      save_blocks();
    });
  }

  /// A client whose indices made no sense (ring.h "Trust") loses its session.
  void drop_broken(Worker& w) {
    for (size_t i = w.owned.size(); i-- > 0;) {
      Client& c = *w.owned[i];
      if (c.tx.broken() || c.rx_broken.load(std::memory_order_relaxed))
        drop(w, c, "its ring indices are broken");
    }
  }

  static constexpr Duration kPublishEvery = Duration::millis(100);  // as a device's segment
  /// Rounds further apart than this are stalls (note_round()); an idle worker wakes every 1 ms.
  static constexpr Duration kStall = Duration::millis(20);
  /// FileWriter keys.
  static constexpr int kStatusFile = 0, kBlocksFile = 1;

  MacAddr mac_;
  std::unique_ptr<stats::StatsSegment> seg_;  ///< null when segments are off (UROCE_STATS=0)
  uint32_t max_clients_;
  shm::RegionParams params_;
  std::vector<std::unique_ptr<Worker>> workers_;

  /// Guards what the workers share that is not atomic: the blocks, the CM, the daemon's
  /// TxGuard, the peers' MACs, the client list, the blocks file's contents. Taken for control
  /// messages and CM MADs, never per data frame.
  std::mutex mu_;
  QpnBlocks blocks_;  ///< block_of() reads only what construction set: no lock for it
  /// The steering table, by QPN block: read by every worker without a lock, written by a
  /// client's owner (adopt(), drop()); a client leaves it before the Reclaimer frees it.
  std::unique_ptr<std::atomic<Client*>[]> steer_;
  Reclaimer reclaim_;
  std::vector<Client*> all_;  ///< the connected clients (owned by their workers)
  cm::HostCm hostcm_;         ///< the port space and CM MAD steering; client numbers are QPN blocks
  TxGuard guard_;             ///< every connection of every client: no remote QP is held twice
  std::map<std::array<uint8_t, 16>, MacAddr> peer_macs_;
  uint32_t cm_psn_ = 0;
  uint64_t cm_sent_ = 0, cm_unresolved_ = 0, cm_malformed_ = 0;
  Timestamp unreserve_at_ = Timestamp::never();  ///< the previous daemon's blocks free then
  int blocks_fd_ = -1;                           ///< the blocks file (keep_blocks())

  // Worker 0's (the accepting and publishing worker).
  std::map<int, ucred> pending_;  ///< connections before their Hello
  int listen_ = -1;
  std::string netdev_;
  std::string status_path_;
  uint64_t start_time_ = stats::process_start_time(::getpid());  ///< stats/hostd_status.h
  Timestamp status_at_{};                                        ///< the last write_status()
  std::vector<uint64_t> prev_busy_ns_;                           ///< each worker's busy_ns then
  /// Writes the status and blocks files (each write holds copies of what it needs): no worker
  /// waits for a disk.
  FileWriter files_;
};

const char* kUsage =
    "usage: uroce-hostd --netdev IF [--run-dir DIR] [--max-clients N] [--stats-every SECONDS] "
    "[--nice N] [--workers N]";

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
    } else if (a == "--max-clients" && value(&v)) {
      const long n = std::atol(v.c_str());
      const long most = (1l << (24 - kQpnBlockBits)) - 1;
      if (n < 1 || n > most) {
        *err = "--max-clients: 1.." + std::to_string(most) + " (QPN blocks of " +
               std::to_string(1u << kQpnBlockBits) + ")";
        return false;
      }
      o->max_clients = static_cast<uint32_t>(n);
    } else if (a == "--nice" && value(&v)) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < -20 || n > 19) {
        *err = "--nice: -20..19";
        return false;
      }
      o->nice = static_cast<int>(n);
    } else if (a == "--workers" && value(&v)) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < 1 || n > static_cast<long>(shm::kMaxRxRings)) {
        *err = "--workers: 1.." + std::to_string(shm::kMaxRxRings);
        return false;
      }
      o->workers = static_cast<unsigned>(n);
    } else {
      *err = kUsage;
      return false;
    }
  }
  if (o->netdev.empty()) {
    *err = kUsage;
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
  // Before any thread starts (DPDK's), so that every thread of the daemon has it.
  if (o.nice != 0 && ::setpriority(PRIO_PROCESS, 0, o.nice) != 0)
    std::fprintf(stderr, "uroce-hostd: --nice %d: %s (the default priority then)\n", o.nice,
                 std::strerror(errno));
  if (o.nice != 0) session_nice(o.nice);
  // The shortest slice (as the clients' progress threads ask): woken by a frame or a kick, the
  // daemon preempts a busy process at once instead of after that process' slice.
  std::string why;
  request_slice(kSlice, &why);
  // drivers/xdp's netdev lock finds the run folder through the environment.
  if (!o.run_dir.empty()) setenv("UROCE_RUN_DIR", o.run_dir.c_str(), 1);
  std::error_code ec;
  const std::string base = shm::hostd_base(o.netdev);
  std::filesystem::create_directories(std::filesystem::path(base).parent_path(), ec);
  // One daemon per netdev: its lock, held to the end (clients test it: hostd_running()).
  int lock = ::open((base + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "uroce-hostd: %s: %s\n", (base + ".lock").c_str(),
                 lock < 0 ? std::strerror(errno) : "another uroce-hostd serves this netdev");
    return 1;
  }
  // The lock file names the daemon's pid (uroce link del and show read it).
  if (::ftruncate(lock, 0) == 0) ::dprintf(lock, "%d\n", static_cast<int>(::getpid()));
  const std::string socket = base + ".sock";
  std::filesystem::remove(socket, ec);  // left by a daemon that was killed

  config::Device dev;
  dev.name = "hostd-" + o.netdev;
  dev.netdev = o.netdev;
  dev.mtu = 4096;
  const unsigned want = o.workers ? o.workers : std::min(cpus_allowed(), shm::kMaxRxRings);
  auto ports = host::open_host_ports(dev, want, &err);
  if (ports.empty()) {
    std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    return 1;
  }
  if (o.workers && ports.size() < o.workers)
    std::fprintf(stderr,
                 "uroce-hostd: --workers %u: %s has %zu active RX queue(s): %zu worker(s) (ethtool "
                 "-L %s combined %u for more)\n",
                 o.workers, o.netdev.c_str(), ports.size(), ports.size(), o.netdev.c_str(),
                 o.workers);
  // Without a segment the daemon serves all the same; only `uroce show` lacks the netdev.
  auto seg = stats::StatsSegment::create(dev.name, stats::summarize(dev, "uroce-hostd"), &err);
  if (!seg && !err.empty())
    std::fprintf(stderr, "uroce-hostd: no stats segment: %s\n", err.c_str());
  Daemon d(std::move(ports), std::move(seg), o);
  if (!d.keep_blocks(base + ".blocks", &err) || !d.listen(socket, &err)) {
    std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    d.close();
    return 1;
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::signal(SIGUSR1, on_report);
  std::signal(SIGUSR2, on_remove);
  std::signal(SIGPIPE, SIG_IGN);
  std::printf("uroce-hostd: serving %s on %s (up to %u clients, %u-byte frames, %zu worker%s)\n",
              o.netdev.c_str(), socket.c_str(), o.max_clients, d.slot_bytes(), d.workers(),
              d.workers() == 1 ? "" : "s");
  d.print("start");
  d.run(o.stats_every_s);
  if (g_remove.load()) d.remove_all();
  d.publish();
  d.remove_status();
  d.print("final");
  d.close();
  std::filesystem::remove(socket, ec);
  return 0;
}

}  // namespace
}  // namespace uroce::hostd

int main(int argc, char** argv) { return uroce::hostd::run_main(argc, argv); }
