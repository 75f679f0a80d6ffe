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
 * One thread (one worker): it polls the netdev and every client's TX ring while frames flow;
 * idle, it sleeps on an epoll set (the control sockets and the daemon's doorbell, which a
 * client kicks when it publishes to a sleeping daemon) with a timeout that polls the netdev
 * (50 us, then 1 ms after kDeepIdleAfter without work).
 *
 * The netdev as a whole (per-priority traffic, PFC and ECN marks it received, queue depths) is
 * published in a stats segment of its own, device "hostd-IF", every 100 ms: `uroce show roce`
 * and the exporter list it beside each client's device.
 *
 * Usage: uroce-hostd --netdev IF [--run-dir D] [--max-clients N] [--stats-every SECONDS]
 * [--nice N] (default -10: the daemon runs before the processes it serves).
 * Prints one "serving" line when ready; SIGUSR1 prints "stats" lines (clients, QPN blocks,
 * RSS, the CM's work, per client its frames and refusals); SIGINT/SIGTERM stop it and print
 * the counters ("final ...").
 */
#include <fcntl.h>
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
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
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
#include "uroce-hostd/steer.h"

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
};

/// TxGuard::Verdict values (kOk and the reasons a frame is refused).
constexpr size_t kVerdicts = static_cast<size_t>(TxGuard::Verdict::kSport) + 1;

struct Counters {
  uint64_t to_client = 0;    ///< frames delivered into the client's RX ring
  uint64_t from_client = 0;  ///< frames the client sent
  uint64_t to_wire = 0;      ///< of those, sent to the netdev
  uint64_t switched = 0;     ///< of those, same-host: switched to a client
  uint64_t dropped = 0;      ///< for this client but its ring was full; or a bad descriptor
  uint64_t cm_refused = 0;   ///< CM MADs it sent that HostCm refused (another's ID, malformed)
  /// Frames it sent that TxGuard refused, by TxGuard::Verdict (kOk unused).
  std::array<uint64_t, kVerdicts> refused{};
};

/// A connected client (after Welcome): its session, region and rings.
struct Client {
  int sock = -1;
  uint32_t block = 0;  ///< its QPN block, also its number at the daemon
  pid_t pid = 0;       ///< SO_PEERCRED
  uid_t uid = 0;
  std::string device;
  std::string command;  ///< /proc/<pid>/comm when it came
  shm::Region region;
  shm::Doorbell bell;           ///< the client's: kicked when it sleeps and frames arrive
  shm::Consumer tx;             ///< its TX ring
  shm::Producer rx;             ///< its RX ring of this worker
  bool rx_published = false;    ///< frames published this round (wake check due)
  LocalHold::Sender hold;       ///< its same-host frame waiting for a full receiver
  LocalHold::Receiver hold_in;  ///< its RX ring as a same-host receiver
};

epoll_event tagged(uint64_t tag) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = tag;
  return ev;
}

/// The epoll tags: the listening socket, the daemon's doorbell, a connection (its fd | kConn).
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

uint64_t rss_kb() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024;
}

class Daemon final : public FrameHandler {
 public:
  Daemon(std::unique_ptr<Port> net, std::unique_ptr<stats::StatsSegment> seg, const Options& o)
      : net_(std::move(net)),
        mac_(net_->mac()),
        seg_(std::move(seg)),
        max_clients_(o.max_clients),
        blocks_(kQpnBlockBits),
        clients_(blocks_.count()),
        counters_(blocks_.count()),
        bell_(shm::Doorbell::create()),
        netdev_(o.netdev),
        status_path_(stats::hostd_status_path(stats::run_dir(), o.netdev, ::getpid())) {
    params_.slot_bytes =
        static_cast<uint32_t>((net_->max_frame_len() + shm::kLine - 1) / shm::kLine * shm::kLine);
    params_.tx_slots = kTxSlots;
    params_.rx_rings = 1;
    params_.rx_slots = kRxSlots;
    scratch_.resize(params_.slot_bytes);
    learn_host();
  }

  ~Daemon() {
    files_.flush();  // a queued blocks write uses blocks_fd_, closed below
    for (auto& c : clients_)
      if (c) ::close(c->sock);
    for (auto& [fd, p] : pending_) ::close(fd);
    if (listen_ >= 0) ::close(listen_);
    if (ep_ >= 0) ::close(ep_);
    if (blocks_fd_ >= 0) ::close(blocks_fd_);
  }

  /// Listens on `path` (mode 0666); false with *err.
  bool listen(const std::string& path, std::string* err) {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    if (ep_ < 0 || listen_ < 0 || bell_.fd() < 0 || path.size() >= sizeof sa.sun_path) {
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
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, listen_, &ev);
    ev = tagged(kBellTag);
    ev.events = EPOLLIN;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, bell_.fd(), &ev);
    return true;
  }

  uint32_t slot_bytes() const { return params_.slot_bytes; }

  /// The netdev's MAC and addresses, the only source a client's frame may have (TxGuard).
  void learn_host() {
    link_version_ = net_->link_version();
    LinkState st;
    if (net_->link_state(&st)) guard_.set_host(mac_, st.gids);
  }

  /// Frames from the netdev (the host port delivers only those to our MAC).
  void on_frame(std::span<const uint8_t> frame, const RxMeta&) override {
    ++net_rx_;
    to_clients(frame, frame);
  }

  void run(int stats_every_s) {
    Timestamp next_stats =
        stats_every_s > 0 ? monotonic_now() + Duration::seconds(stats_every_s) : Timestamp::never();
    Timestamp next_publish = monotonic_now();
    Timestamp last_work = monotonic_now();
    last_round_ = last_work;
    unsigned idle = 1, rounds = 0;  // idle 0: the last round moved frames
    while (!g_stop.load(std::memory_order_relaxed)) {
      const Timestamp now = monotonic_now();
      note_round(now);
      if (idle == 0) busy_ns_ += (now - last_work).ns;  // that round, to this one's start
      size_t work = net_->rx_burst(*this, 64, now);
      for (size_t i = 0; i < live_.size(); ++i) work += from_client(*live_[i], now);
      wake_clients();
      net_->flush();
      drop_broken();
      if (work) {
        idle = 0;
        last_work = now;
      } else {
        ++idle;
      }
      if (idle > 16) {
        sleep(now - last_work >= kDeepIdleAfter ? Duration::millis(1) : Duration::micros(50));
      } else if (++rounds % kControlEvery == 0) {
        control();
      }
      if (now >= next_stats) {
        print("stats");
        next_stats = now + Duration::seconds(stats_every_s);
      }
      if (g_report.exchange(false)) print("stats");
      if (now >= unreserve_at_) {  // the previous daemon's clients had their time to resume
        blocks_.unreserve_all();
        save_blocks();
        unreserve_at_ = Timestamp::never();
      }
      if (now >= next_cm_) {  // DREQs of dead clients' connections, due again
        for (const cm::HostCm::Outgoing& o : hostcm_.timers(now)) send_cm(o, now);
        next_cm_ = now + kCmTick;
        if (net_->link_version() != link_version_) learn_host();
      }
      if (now >= next_publish) {
        publish();
        next_publish = now + kPublishEvery;
      }
    }
  }

  void print(const char* tag) {
    using UL = unsigned long;
    std::printf(
        "%s net_rx=%lu net_tx=%lu unknown=%lu clients=%zu qpn_blocks=%u rss_kb=%lu stalls=%lu "
        "longest_stall_us=%ld\n",
        tag, UL(net_rx_), UL(net_tx_), UL(unknown_), live_.size(), blocks_.in_use(), UL(rss_kb()),
        UL(stalls_), static_cast<long>(longest_stall_.ns / 1000));
    const cm::HostCm::Counters& m = hostcm_.counters();
    std::printf(
        "%s cm rej_no_listener=%lu sidr_unsupported=%lu drep_for_gone=%lu dreq_for_dead=%lu "
        "dropped_in=%lu refused_out=%lu malformed=%lu sent=%lu unresolved=%lu connections=%zu\n",
        tag, UL(m.rejected_no_listener), UL(m.sidr_unsupported), UL(m.drep_for_gone),
        UL(m.dreq_for_dead), UL(m.dropped_in), UL(m.refused_out), UL(cm_malformed_), UL(cm_sent_),
        UL(cm_unresolved_), hostcm_.connections_total());
    for (uint32_t k = 0; k < counters_.size(); ++k) {
      const Counters& c = counters_[k];
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

  /// The netdev's counters into the segment (also at exit, so the last figures are complete).
  void publish() {
    write_status();
    PortCounters c;
    if (!seg_ || !net_ || !net_->read_counters(&c)) return;
    stats::publish_port(c, seg_->port());
    seg_->heartbeat();
  }

  /// A round that starts more than kStall after the previous one: the daemon was held up (no
  /// CPU, or a system call that blocked) and every client's frames waited. Counted, with the
  /// longest, in the "stats"/"final" lines: a client's retries that ran out say whether it was
  /// the daemon.
  void note_round(Timestamp now) {
    const Duration gap = now - last_round_;
    last_round_ = now;
    if (gap < kStall) return;
    ++stalls_;
    longest_stall_ = std::max(longest_stall_, gap);
  }

  /// The status file (stats/hostd_status.h): the worker and every client, for `uroce show`
  /// and the exporter.
  void write_status() {
    const Timestamp now = monotonic_now();
    stats::HostdStatus st;
    st.netdev = netdev_;
    st.pid = static_cast<int32_t>(::getpid());
    st.start_time = start_time_;
    stats::HostdWorkerStatus w;
    w.frames_in = net_rx_;
    w.frames_out = net_tx_;
    if (now > status_at_)
      w.busy = static_cast<double>(busy_ns_ - status_busy_ns_) / (now - status_at_).ns;
    status_at_ = now;
    status_busy_ns_ = busy_ns_;
    for (Client* c : live_) {
      const Counters& k = counters_[c->block];
      stats::HostdClientStatus x;
      x.slot = c->block;
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
      x.rx_depth = c->rx.in_flight();
      x.tx_depth = c->tx.available();
      w.rx_backlog += x.rx_depth;
      w.tx_backlog += x.tx_depth;
      st.clients.push_back(std::move(x));
    }
    st.workers.push_back(w);
    files_.post(kStatusFile, [path = status_path_, st = std::move(st)] {
      std::string err;
      return stats::write_hostd_status(path, st, &err) ? std::string() : "status file: " + err;
    });
  }

  /// Removes the status file (the daemon stops), after the writes still queued.
  void remove_status() {
    files_.flush();
    ::unlink(status_path_.c_str());
  }

  /// The device is removed (SIGUSR2, `uroce link del`), as the kernel removes an RDMA device:
  /// each client is told so (Refused: its device is gone at once, no waiting for a next
  /// daemon), each connection its peers know gets a DREQ, and no block is kept for a resume.
  void remove_all() {
    const size_t n = live_.size();
    const uint64_t sent = cm_sent_;
    shm::Refused r;
    std::snprintf(r.reason, sizeof r.reason, "the device on %s was removed (uroce link del)",
                  netdev_.c_str());
    while (!live_.empty()) {
      Client& c = *live_.back();
      shm::send_msg(c.sock, &r, sizeof r);
      drop(c, "the device is removed");
    }
    net_->flush();  // the DREQs leave now
    std::printf("uroce-hostd: removed: %zu clients told, %lu DREQs sent\n", n,
                static_cast<unsigned long>(cm_sent_ - sent));
  }

  /// Ends every session, then closes the netdev (the PMD detaches the program). The clients
  /// live on and resume their blocks with the next daemon: no DREQ for their connections, and
  /// the blocks file keeps their blocks.
  void close() {
    while (!live_.empty()) drop(*live_.back(), nullptr, true);
    net_.reset();
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
  /// A frame for the local clients: by the destination QPN's block, read from `headers` (the
  /// frame itself, or a copy of a client's frame's first bytes); QP1 by HostCm (cm_in).
  void to_clients(std::span<const uint8_t> headers, std::span<const uint8_t> frame) {
    auto qpn = roce_dest_qpn(headers);
    if (!qpn) {
      ++unknown_;
      return;
    }
    if (*qpn == wire::cm::kGsiQpn) {
      // From the netdev the frame is the daemon's own buffer; a client's is copied whole first.
      if (frame.size() > kCmFrameMax) {
        ++unknown_;
        return;
      }
      uint8_t copy[kCmFrameMax];
      std::memcpy(copy, frame.data(), frame.size());
      cm_in(std::span<const uint8_t>(copy, frame.size()), monotonic_now());
      return;
    }
    Client* c = clients_[blocks_.block_of(*qpn)].get();
    if (!c) {  // block 0, or a block nobody holds (a client that left, a forged frame)
      if (unknown_++ < kUnknownReported)
        std::printf("frame for QPN 0x%06x (block %u, no client) dropped, %zu bytes\n", *qpn,
                    blocks_.block_of(*qpn), frame.size());
      return;
    }
    push(*c, frame);
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
  void cm_in(std::span<const uint8_t> frame, Timestamp now) {
    auto p = parse_mad(frame);
    if (!p) {
      ++cm_malformed_;
      return;
    }
    learn(p->src_ip, p->src_mac);
    cm::HostCm::Route r = hostcm_.inbound(p->src_ip, p->dst_ip, p->payload, now);
    if (r.to == cm::HostCm::To::kClient) {
      Client* c = r.client < clients_.size() ? clients_[r.client].get() : nullptr;
      if (c) {
        push(*c, frame);
      } else {
        ++unknown_;
      }
    } else if (r.to == cm::HostCm::To::kAnswered && r.reply) {
      send_cm(*r.reply, now);
    }
  }

  /// Remembers ip's MAC (as its frames came, or went) for the daemon's own MADs to it.
  void learn(const Gid& ip, const MacAddr& mac) {
    if (peer_macs_.size() >= kMaxPeerMacs) peer_macs_.clear();
    peer_macs_[ip.raw] = mac;
  }

  /// A MAD of the daemon's own (HostCm's REJ, SIDR_REP, DREP, DREQ): to the wire, or to the
  /// client it is for when the peer is on this host.
  void send_cm(const cm::HostCm::Outgoing& o, Timestamp now) {
    wire::FrameSpec s;
    if (auto it = peer_macs_.find(o.peer.raw); it != peer_macs_.end()) {
      s.dst_mac = it->second;
    } else if (!net_->resolve(o.peer, &s.dst_mac)) {
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
      cm_in(f, now);
      return;
    }
    uint8_t* q = net_->begin_frame(len);
    if (!q) return;  // the netdev's queues are full: HostCm resends a DREQ; a REJ is lost
    std::memcpy(q, buf, len);
    net_->end_frame(len, TxMeta{frame_priority(f), false});
    ++net_tx_;
  }

  void push(Client& c, std::span<const uint8_t> frame) {
    Counters& k = counters_[c.block];
    auto b = c.rx.take();
    if (!b || frame.size() > c.rx.slot_bytes()) {  // ring full: the transport retransmits
      if (b) c.rx.give_back(*b);
      ++k.dropped;
      return;
    }
    std::memcpy(c.rx.data(*b), frame.data(), frame.size());
    if (!c.rx.publish(*b, static_cast<uint32_t>(frame.size()))) {
      c.rx.give_back(*b);
      ++k.dropped;
      return;
    }
    ++k.to_client;
    if (!c.rx_published) {
      c.rx_published = true;
      woken_.push_back(&c);
    }
  }

  /// Kicks the clients that got frames this round and sleep (one system call per sleep).
  void wake_clients() {
    for (Client* c : woken_) {
      c->rx_published = false;
      if (c->rx.wake_needed()) c->bell.kick();
    }
    woken_.clear();
  }

  /// Up to kClientBurst frames from c's TX ring: to the wire, or switched to a client.
  size_t from_client(Client& c, Timestamp now) {
    const uint32_t n = std::min(c.tx.available(), kClientBurst);
    Counters& k = counters_[c.block];
    uint32_t done = 0;
    for (; done < n; ++done) {
      std::span<const uint8_t> slot = c.tx.frame(done);
      if (slot.size() < 14 || slot.size() > scratch_.size()) {  // a bad descriptor
        ++k.dropped;
        continue;
      }
      // Checked and sent from the daemon's copy: the client may rewrite its slot meanwhile.
      std::memcpy(scratch_.data(), slot.data(), slot.size());
      const std::span<const uint8_t> f(scratch_.data(), slot.size());
      wire::ParsedPacket p;
      const TxGuard::Verdict v = guard_.check(c.block, f, &p);
      if (v != TxGuard::Verdict::kOk) {  // not a frame its own QPs may send
        if (k.refused[static_cast<size_t>(v)]++ == 0) report_refused(c, v, p);
        continue;
      }
      if (p.dest_qpn.value() == wire::cm::kGsiQpn) {
        // A CM MAD: only under the client's own IDs (HostCm).
        if (p.opcode != wire::Opcode::kUdSendOnly || p.payload.size() != wire::cm::kMadLen ||
            hostcm_.outbound(c.block, p.src_ip, p.dst_ip, p.payload, now) !=
                cm::HostCm::Refusal::kNone) {
          ++k.cm_refused;
          continue;
        }
        learn(p.dst_ip, p.dst_mac);
      }
      if (p.dst_mac == mac_) {            // same host
        if (must_wait(c, p, now)) break;  // the rest waits in its ring
        ++k.from_client;
        ++k.switched;
        to_clients(f, f);
        continue;
      }
      uint8_t* q = net_->begin_frame(f.size());
      if (!q) break;  // the netdev's queues are full: the rest waits in the client's ring
      ++k.from_client;
      std::memcpy(q, f.data(), f.size());
      net_->end_frame(f.size(), TxMeta{frame_priority(f), false});
      ++k.to_wire;
      ++net_tx_;
    }
    if (done) c.tx.release(done);
    return done;
  }

  /// True when sender's same-host frame p must wait in its TX ring (LocalHold).
  bool must_wait(Client& sender, const wire::ParsedPacket& p, Timestamp now) {
    if (p.dest_qpn.value() == wire::cm::kGsiQpn) return false;
    Client* r = clients_[blocks_.block_of(p.dest_qpn.value())].get();
    return r && LocalHold::must_wait(sender.hold, r->hold_in, r->rx.has_room(), now);
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

  /// Idle: arms the daemon's doorbell in every client's TX ring and waits for a control event,
  /// a kick or `timeout` (the netdev's next poll).
  void sleep(Duration timeout) {
    bool empty = true;
    size_t armed = 0;
    for (; armed < live_.size() && empty; ++armed) empty = live_[armed]->tx.prepare_sleep();
    epoll_event evs[kEvents];
    const int n = empty ? wait(evs, timeout.ns) : 0;
    for (size_t i = 0; i < armed; ++i) live_[i]->tx.end_sleep();  // before events drop clients
    handle(evs, n);
  }

  /// Handles the control events there are now.
  void control() {
    epoll_event evs[kEvents];
    handle(evs, wait(evs, 0));
  }

  int wait(epoll_event* evs, int64_t timeout_ns) {
    const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                      static_cast<long>(timeout_ns % 1'000'000'000)};
    return ::epoll_pwait2(ep_, evs, kEvents, &ts, nullptr);
  }

  void handle(const epoll_event* evs, int n) {
    for (int i = 0; i < n; ++i) {
      const uint64_t tag = evs[i].data.u64;
      if (tag == kListenTag) {
        accept_all();
      } else if (tag == kBellTag) {
        bell_.drain();
      } else if (tag & kConnTag) {
        on_conn(static_cast<int>(tag & 0xffffffffu), evs[i].events);
      }
    }
  }

  void accept_all() {
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
      ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void on_conn(int fd, uint32_t events) {
    if (auto it = pending_.find(fd); it != pending_.end()) {
      const ucred cred = it->second;
      pending_.erase(it);
      hello(fd, cred);
      return;
    }
    Client* c = nullptr;
    for (Client* x : live_)
      if (x->sock == fd) c = x;
    if (!c) return;
    alignas(shm::Request) uint8_t b[sizeof(shm::Request) + 1];
    const ssize_t r = ::recv(fd, b, sizeof b, MSG_DONTWAIT);
    if (r > 0) {
      auto req = shm::parse_request(std::span<const uint8_t>(b, static_cast<size_t>(r)));
      if (!req) return drop(*c, "a message this protocol version does not have");
      shm::Reply rep;
      rep.seq = req->seq;
      rep.error = serve(*c, *req);
      if (shm::send_msg(fd, &rep, sizeof rep) != 0) drop(*c, "it does not take its replies");
    } else if (r == 0 || (events & (EPOLLHUP | EPOLLRDHUP)) ||
               (errno != EAGAIN && errno != EWOULDBLOCK)) {
      drop(*c, nullptr);  // the process closed its device or exited
    }
  }

  /// A client's Request (checked by parse_request): 0 or an errno for its Reply.
  int serve(Client& c, const shm::Request& r) {
    Gid gid;
    std::memcpy(gid.raw.data(), r.gid, sizeof r.gid);
    switch (r.op) {
      case shm::Op::kBind:
      case shm::Op::kListen:
        if (r.ps != wire::cm::kPsTcp && r.ps != wire::cm::kPsUdp && r.ps != wire::cm::kPsIb &&
            r.ps != wire::cm::kPsIpoib)
          return EINVAL;
        // One binding per Bind or Listen, each given back by its Release (a process may hold a
        // port twice: a bound id that listens, IPv4's and IPv6's wildcard).
        if (int e = hostcm_.bind(c.block, r.ps, r.port, gid)) return e;
        return r.op == shm::Op::kListen ? hostcm_.listen(c.block, r.ps, r.port, gid) : 0;
      case shm::Op::kRelease: hostcm_.release(c.block, r.ps, r.port, gid); return 0;
      case shm::Op::kConnect: return guard_.connect(c.block, r.qpn, gid, r.dqpn, r.sport);
      case shm::Op::kDisconnect: {
        // Frames the QP sent before it left (the client publishes them before it asks) go
        // first, checked against the connection they were sent on.
        const Timestamp now = monotonic_now();
        while (c.tx.available() && from_client(c, now)) {
        }
        guard_.disconnect(c.block, r.qpn);
        return 0;
      }
    }
    return EINVAL;
  }

  void refuse(int fd, const std::string& why) {
    shm::Refused r;
    std::snprintf(r.reason, sizeof r.reason, "%s", why.c_str());
    shm::send_msg(fd, &r, sizeof r);
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
  }

  /// The first message of a connection: Hello, answered by Welcome (a client) or Refused. A
  /// Hello that resumes a block (a client whose previous daemon went away) gets that block or
  /// Refused.
  void hello(int fd, const ucred& cred) {
    alignas(shm::Hello) uint8_t b[sizeof(shm::Hello) + 64];
    size_t nfds = 0;
    const long n = shm::recv_msg(fd, b, sizeof b, {}, &nfds);
    const auto msg = std::span<const uint8_t>(b, n > 0 ? static_cast<size_t>(n) : 0);
    if (auto v = shm::hello_version(msg); v && *v != shm::kProtocolVersion)
      return refuse(fd, "uroce-hostd speaks protocol version " +
                            std::to_string(shm::kProtocolVersion) + ", this process version " +
                            std::to_string(*v) + " (update uroce on one side)");
    auto h = shm::parse_hello(msg);
    if (!h) {
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      return;
    }
    if (live_.size() >= max_clients_)
      return refuse(fd, "all " + std::to_string(max_clients_) +
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
          return refuse(fd, "QPN block " + std::to_string(r) + " is held by another process (pid " +
                                std::to_string(holder.pid) + ")");
        case QpnBlocks::Take::kNotReserved:
          return refuse(fd, "QPN block " + std::to_string(r) +
                                " was not given to this process by the previous uroce-hostd");
      }
      block = r;
    } else {
      block = blocks_.give(who);
    }
    if (!block) return refuse(fd, "no QPN block is free");
    std::string err;
    auto region = shm::create_region(params_, &err);
    shm::Doorbell bell = shm::Doorbell::create();
    if (!region || bell.fd() < 0) {
      blocks_.free(*block);
      return refuse(fd, "cannot create the client's region: " + err);
    }
    shm::Welcome w;
    w.client = *block;
    w.qpn_block = *block;
    w.qpn_block_bits = kQpnBlockBits;
    w.max_frame = static_cast<uint32_t>(net_->max_frame_len());
    w.region = params_;
    const int fds[] = {region->fd(), bell.fd(), bell_.fd()};
    if (shm::send_msg(fd, &w, sizeof w, fds) != 0) {
      blocks_.free(*block);
      ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);
      ::close(fd);
      return;
    }
    region->release_fd();  // the client has it; the mapping stays
    auto c = std::make_unique<Client>();
    c->sock = fd;
    c->block = *block;
    c->pid = cred.pid;
    c->uid = cred.uid;
    c->device = h->device;
    c->command = command_of(cred.pid);
    c->region = std::move(*region);
    c->bell = std::move(bell);
    c->tx = shm::Consumer(c->region.tx());
    c->rx = shm::Producer(c->region.rx(0));
    counters_[*block] = Counters{};
    hostcm_.add_client(*block);
    guard_.add_client(*block, *block << kQpnBlockBits, 1u << kQpnBlockBits);
    std::printf("client slot=%u pid=%d uid=%u device=%s%s\n", c->block, static_cast<int>(c->pid),
                static_cast<unsigned>(c->uid), c->device.c_str(),
                h->resume_block ? " resumed" : "");
    std::fflush(stdout);
    live_.push_back(c.get());
    clients_[*block] = std::move(c);
    save_blocks();
  }

  /// Whom each block is given or reserved to, into the blocks file (keep_blocks()): one
  /// QpnBlocks::Owner per block, pid 0 for a free one.
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

  /// Ends c's session: its slot, QPN block, region and doorbell go at once. why: a protocol
  /// violation to print, or null (it closed the connection). daemon_stops: the client lives
  /// on (close()).
  void drop(Client& c, const char* why, bool daemon_stops = false) {
    std::printf("client slot=%u pid=%d left%s%s\n", c.block, static_cast<int>(c.pid),
                why            ? ": "
                : daemon_stops ? " (the daemon stops)"
                               : "",
                why ? why : "");
    std::fflush(stdout);
    if (!why) {  // closed or exited: what it sent before (its DREQs, last ACKs) goes out first
      const Timestamp now = monotonic_now();
      while (c.tx.available() && from_client(c, now)) {
      }
      net_->flush();
    }
    ::epoll_ctl(ep_, EPOLL_CTL_DEL, c.sock, nullptr);
    ::close(c.sock);
    std::erase(live_, &c);
    std::erase(woken_, &c);
    const uint32_t block = c.block;
    blocks_.free(block);
    clients_[block].reset();
    guard_.drop_client(block);
    if (daemon_stops) return;  // its block stays in the file, its connections with it
    save_blocks();
    // Its ports go; each connection its peer knows gets a DREQ now (and again by the timers).
    const Timestamp now = monotonic_now();
    for (const cm::HostCm::Outgoing& o : hostcm_.drop_client(block, now)) send_cm(o, now);
  }

  /// A client whose indices made no sense (ring.h "Trust") loses its session.
  void drop_broken() {
    for (size_t i = live_.size(); i-- > 0;)
      if (live_[i]->tx.broken() || live_[i]->rx.broken())
        drop(*live_[i], "its ring indices are broken");
  }

  static constexpr Duration kPublishEvery = Duration::millis(100);  // as a device's segment
  /// Rounds further apart than this are stalls (note_round()); an idle daemon wakes every 1 ms.
  static constexpr Duration kStall = Duration::millis(20);
  /// FileWriter keys.
  static constexpr int kStatusFile = 0, kBlocksFile = 1;

  std::unique_ptr<Port> net_;
  MacAddr mac_;
  std::unique_ptr<stats::StatsSegment> seg_;  ///< null when segments are off (UROCE_STATS=0)
  uint32_t max_clients_;
  QpnBlocks blocks_;
  std::vector<std::unique_ptr<Client>> clients_;  ///< by QPN block (the steering table)
  std::vector<Client*> live_;                     ///< the connected clients
  std::vector<Client*> woken_;                    ///< got frames this round
  std::vector<Counters> counters_;                ///< by QPN block; kept after a client left
  std::map<int, ucred> pending_;                  ///< connections before their Hello
  shm::RegionParams params_;
  shm::Doorbell bell_;  ///< the daemon's: clients kick it when they publish to it asleep
  int listen_ = -1;
  int ep_ = -1;
  uint64_t net_rx_ = 0, net_tx_ = 0, unknown_ = 0;
  std::string netdev_;
  std::string status_path_;
  uint64_t start_time_ =
      stats::process_start_time(::getpid());  ///< for the status file  ///< stats/hostd_status.h
  int64_t busy_ns_ = 0;    ///< time from the start of each round that moved frames to the next's
  Timestamp status_at_{};  ///< the last write_status()
  int64_t status_busy_ns_ = 0;  ///< busy_ns_ then
  cm::HostCm hostcm_;  ///< the port space and CM MAD steering; client numbers are QPN blocks
  TxGuard guard_;      ///< what each client may send
  uint64_t link_version_ = 0;
  std::vector<uint8_t> scratch_;  ///< the copy of a client's frame being checked
  std::map<std::array<uint8_t, 16>, MacAddr> peer_macs_;
  Timestamp next_cm_{};
  int blocks_fd_ = -1;  ///< the blocks file (keep_blocks())
  /// Writes the status and blocks files (each write holds copies of what it needs): this
  /// thread moves frames and never waits for a disk.
  FileWriter files_;
  Timestamp unreserve_at_ = Timestamp::never();  ///< the previous daemon's blocks free then
  uint32_t cm_psn_ = 0;
  Timestamp last_round_ = monotonic_now();
  uint64_t stalls_ = 0;
  Duration longest_stall_{};
  uint64_t cm_sent_ = 0, cm_unresolved_ = 0, cm_malformed_ = 0;
};

const char* kUsage =
    "usage: uroce-hostd --netdev IF [--run-dir DIR] [--max-clients N] [--stats-every SECONDS] "
    "[--nice N]";

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
  auto net = host::open_host_port(dev, &err);
  if (!net) {
    std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    return 1;
  }
  // Without a segment the daemon serves all the same; only `uroce show` lacks the netdev.
  auto seg = stats::StatsSegment::create(dev.name, stats::summarize(dev, "uroce-hostd"), &err);
  if (!seg && !err.empty())
    std::fprintf(stderr, "uroce-hostd: no stats segment: %s\n", err.c_str());
  Daemon d(std::move(net), std::move(seg), o);
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
  std::printf("uroce-hostd: serving %s on %s (up to %u clients, %u-byte frames)\n",
              o.netdev.c_str(), socket.c_str(), o.max_clients, d.slot_bytes());
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
