/**
 * @file ethdev_io.cc
 * @brief EthdevIo: ethdev set-up, parking and reuse, bursts, start retries and link watching
 * (ethdev_io.h).
 */
#include "dpdk/ethdev_io.h"

#include <dirent.h>
#include <rte_dev.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "dpdk/clock.h"
#include "dpdk/eal.h"
#include "dpdk/eal_args.h"
#include "dpdk/kernel_fds.h"
#include "dpdk/mbuf_pool.h"
#include "dpdk/memif_burst.h"
#include "dpdk/memif_guard.h"

namespace uroce::dpdk {

namespace {

constexpr uint16_t kRingSize = 512;         ///< descriptors per RX/TX queue
constexpr uint32_t kAfPacketFrames = 4096;  ///< net_af_packet ring frames (framecnt devarg)
constexpr unsigned kPoolSize =
    4095;  ///< mbufs per 1-queue port: net_af_xdp alone takes 2048 for its fill queue
constexpr unsigned kPoolCache = 128;  ///< per-lcore mbuf cache

std::mutex g_open_mu;  ///< serialises ethdev set-up and tear-down; guards the two below

/// A closed port is parked, still started, not removed: net_memif (22.11) never closes a
/// server's listening socket when its device is removed, so the same server could not be
/// created again in this process, and stopping/restarting a memif pair inside one process
/// crashed EAL's interrupt thread here. Re-opening with the same port string and MTU reuses
/// the parked ethdev as it is (frames that arrived meanwhile are dropped).
struct Parked {
  std::string devargs;  ///< the port string it was created with
  rte_mempool* pool;    ///< its mbuf pool
  size_t max_frame;     ///< frame size it was set up for (0: set-up failed, stopped)
  MacAddr mac;          ///< its MAC
  uint16_t queues;      ///< RX/TX queue pairs
};
// Never destroyed: a Port held in another library's static may be closed during exit.
std::map<uint16_t, Parked>& g_parked = *new std::map<uint16_t, Parked>;
std::set<uint16_t>& g_open = *new std::set<uint16_t>;  ///< ethdev ports an EthdevIo owns now

/// Frees a pool no mbuf of which is out (an mbuf still in a PMD ring would dangle otherwise;
/// such a pool is left allocated: a bounded leak, one per re-open).
void free_pool_if_idle(rte_mempool* pool) {
  if (pool && rte_mempool_in_use_count(pool) == 0) rte_mempool_free(pool);
}
std::atomic<unsigned> g_pool_seq{0};

/// What net_af_xdp left open of each af_xdp ethdev, closed after the ethdev (remove_port()).
/// DPDK 22.11.5 to 22.11.11 (Debian 12's) never delete the UMEM in eth_dev_close(): the
/// stable backport of "net/af_xdp: fix leak on XSK configuration failure" made its test
/// `__atomic_sub_fetch(&refcnt, 1) - 1 == 0` (the fix was written for __atomic_fetch_sub), true
/// only for a UMEM two sockets share. The UMEM's fd is its first socket, so that socket stays
/// open, bound to the netdev's queue, and the next set-up of the queue in the process fails
/// (bind: EBUSY; rte_eth_rx_queue_setup: EINVAL). And every 22.11 leaves the BPF object of
/// xdp_prog= open (program, maps, BTF: load_custom_xdp_prog() keeps no handle on it). The
/// rings are unmapped; only the fds remain.
std::map<uint16_t, std::vector<KernelFd>>& g_pmd_fds =
    *new std::map<uint16_t, std::vector<KernelFd>>;

bool is_af_xdp_port(std::string_view port) { return port.rfind("net_af_xdp", 0) == 0; }

/// Whether an AF_XDP socket opened since `before` is still open.
bool socket_opened_since(const std::vector<KernelFd>& before) {
  const std::vector<KernelFd> opened = opened_between(before, xdp_fds());
  return std::any_of(opened.begin(), opened.end(),
                     [](const KernelFd& k) { return k.identity.rfind("socket:", 0) == 0; });
}

/// Stops, closes and removes an ethdev and closes what its PMD left open (g_pmd_fds), then
/// frees its pool when no mbuf is out, or, for net_af_xdp once its sockets are closed, at
/// once: the mbufs that were in its fill ring are the kernel's no more, and never come back.
void remove_port(uint16_t port_id, rte_mempool* pool) {
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(port_id, &info);
  rte_eth_dev_stop(port_id);
  rte_eth_dev_close(port_id);
  if (info.device) rte_dev_remove(info.device);
  bool sockets_closed = false;
  if (auto it = g_pmd_fds.find(port_id); it != g_pmd_fds.end()) {
    close_unchanged(it->second);
    sockets_closed = std::any_of(it->second.begin(), it->second.end(), [](const KernelFd& k) {
      return k.identity.rfind("socket:", 0) == 0;
    });
    g_pmd_fds.erase(it);
  }
  if (sockets_closed && pool) {
    rte_mempool_free(pool);
    return;
  }
  free_pool_if_idle(pool);
}

/// The log type of net_memif (-1 when the PMD registered none).
int memif_logtype() {
  static const int type = rte_log_register("pmd.net.memif");
  return type;
}

constexpr uint64_t kDefaultSpeedBps = 10'000'000'000ull;  ///< when the PMD reports none
constexpr Duration kStartRetry = Duration::millis(100);
constexpr Duration kLinkDownRestart = Duration::millis(300);
/// How long closing a memif client waits for its handshake to end (~EthdevIo).
constexpr Duration kMemifSettle = Duration::seconds(1);

/// How a PMD is set up for a device's frame size (measured here, drivers/dpdk/PMDS.md).
struct PmdPlan {
  std::string devargs;          ///< the port string, with size devargs added where needed
  size_t min_data_room = 0;     ///< mbuf data room the PMD requires
  bool limit_advisory = false;  ///< the PMD's reported max frame is not enforced
};

/// The value of devarg `key` in a port string, or 0.
uint32_t devarg_u32(const std::string& port, const std::string& key) {
  size_t pos = port.find("," + key + "=");
  return pos == std::string::npos ? 0
                                  : static_cast<uint32_t>(std::strtoul(
                                        port.c_str() + pos + key.size() + 2, nullptr, 10));
}

/// The value of devarg `key` in a port string, or "".
std::string devarg_str(const std::string& port, const std::string& key) {
  size_t pos = port.find("," + key + "=");
  if (pos == std::string::npos) return {};
  pos += key.size() + 2;
  return port.substr(pos, port.find(',', pos) - pos);
}

/// A memif client's control connection is open: a SOCK_SEQPACKET socket of this process
/// connected to the port's server socket (net_memif's `socket`, default /run/memif.sock, in
/// the abstract namespace unless `socket-abstract=no`). Its server is alive then, and the
/// handshake may still be on its way in EAL's interrupt thread.
bool memif_control_open(const std::string& port) {
  std::string name = devarg_str(port, "socket");
  if (name.empty()) name = "/run/memif.sock";
  const bool abstract = devarg_str(port, "socket-abstract") != "no";
  DIR* d = opendir("/proc/self/fd");
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    const int fd = std::atoi(e->d_name);
    struct stat st {};
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d) || fstat(fd, &st) != 0 ||
        !S_ISSOCK(st.st_mode))
      continue;
    int type = 0;
    socklen_t tl = sizeof type;
    sockaddr_un a{};
    socklen_t al = sizeof a;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) != 0 || type != SOCK_SEQPACKET ||
        getpeername(fd, reinterpret_cast<sockaddr*>(&a), &al) != 0 || a.sun_family != AF_UNIX)
      continue;
    const size_t off = offsetof(sockaddr_un, sun_path);
    if (al <= off) continue;
    std::string_view peer(a.sun_path, al - off);
    if (abstract) {
      if (peer.empty() || peer[0] != '\0') continue;
      peer.remove_prefix(1);
    }
    peer = peer.substr(0, peer.find('\0'));
    if (peer == name) {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

uint32_t pow2_at_least(size_t n, uint32_t from) {
  while (from < n) from *= 2;
  return from;
}

/// net_memif: a buffer size (bsize) that holds a whole frame. With the default 2048-byte
/// buffers a 4224-byte frame spans three descriptors, and DPDK 22.11's memif then lost and
/// corrupted about 2 % of the frames between two processes; one buffer per frame fixed that.
/// memif reports a 1518-byte maximum frame but does not enforce it.
/// net_af_packet: reports 1518 whatever its devargs say, and drops larger frames with the
/// default framesz of 2048; with framesz = blocksz >= frame + 64 and mbufs that hold
/// framesz - 32 bytes, 4224-byte frames pass.
PmdPlan plan_pmd(const config::Device& dev) {
  PmdPlan plan{dev.port};
  const size_t frame = dev.mtu + kRoceOverhead;
  if (is_memif_port(dev.port)) {
    plan.limit_advisory = true;
    if (!devarg_u32(dev.port, "bsize") && frame > 2048)
      plan.devargs += ",bsize=" + std::to_string(pow2_at_least(frame, 2048));
  } else if (dev.port.rfind("net_af_packet", 0) == 0) {
    uint32_t framesz = devarg_u32(dev.port, "framesz");
    if (!framesz && frame > 1514) {
      framesz = pow2_at_least(frame + 64, 2048);
      plan.devargs += ",framesz=" + std::to_string(framesz);
      if (devarg_u32(dev.port, "blocksz") < framesz)
        plan.devargs += ",blocksz=" + std::to_string(framesz);
    }
    // The kernel drops what arrives while the RX ring is full: 512 frames (the PMD's default)
    // is 5 ms of traffic, less than a time slice on a loaded core, and UC and UD do not
    // retransmit. 4096 frames ride out a descheduled receiver (1 MiB at mtu 1024 is 1024 frames).
    if (dev.queues > 1 && !devarg_u32(dev.port, "qpairs"))
      plan.devargs += ",qpairs=" + std::to_string(dev.queues);
    if (!devarg_u32(dev.port, "framecnt"))
      plan.devargs += ",framecnt=" + std::to_string(kAfPacketFrames);
    if (framesz) {
      plan.min_data_room = framesz;
      plan.limit_advisory = framesz >= frame + 64;
    }
  }
  return plan;
}

/// PMDs whose default MAC is the same in every process (derived from the port number).
bool has_shared_default_mac(std::string_view driver) {
  return driver == "net_pcap" || driver == "net_ring" || driver == "net_null";
}

std::string fail(const config::Device& dev, const std::string& what, std::string* err) {
  *err = "device " + dev.name + " (port \"" + dev.port + "\"): " + what;
  return *err;
}

std::string dpdk_error(int rc) { return rte_strerror(rc < 0 ? -rc : rc); }

}  // namespace

EthdevIo::EthdevIo(uint16_t port_id, rte_mempool* pool, MacAddr mac, size_t max_frame,
                   const config::Device& dev)
    : port_id_(port_id),
      pool_(pool),
      devargs_(dev.port),
      mac_(mac),
      max_frame_(max_frame),
      nq_(dev.queues) {
  scratch_.resize(max_frame_);
}

EthdevIo::~EthdevIo() {
  std::lock_guard<std::mutex> lock(g_open_mu);
  g_open.erase(port_id_);
  if (close_ == Close::kOnDestroy) {
    // A memif client's handshake with its server runs in EAL's interrupt thread, and DPDK
    // 22.11 stopping the port meanwhile frees what the running handler uses. Once the link is
    // up the handshake is over and the thread leaves the port alone; a port that never
    // connects is stopped after kMemifSettle all the same.
    const Timestamp settle_until = monotonic_now() + kMemifSettle;
    while (memif_ && reconnect_ && started_ && !link().up && monotonic_now() < settle_until) {
      timespec ts{0, 1'000'000};
      nanosleep(&ts, nullptr);
    }
    remove_port(port_id_, pool_);
    return;
  }
  // A port that never started is parked as "set-up failed": the next open configures it.
  g_parked[port_id_] = Parked{devargs_, pool_, started_ ? max_frame_ : 0, mac_, nq_};
}

std::vector<uint32_t> EthdevIo::parked_programs(const std::string& port) {
  std::lock_guard<std::mutex> lock(g_open_mu);
  std::vector<uint32_t> ids;
  uint16_t port_id;
  const std::string name = port.substr(0, port.find(','));
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) != 0 || !g_parked.count(port_id))
    return ids;
  auto it = g_pmd_fds.find(port_id);
  if (it == g_pmd_fds.end()) return ids;
  constexpr std::string_view kProg = "anon_inode:bpf-prog prog_id:";
  for (const KernelFd& k : it->second)
    if (k.identity.rfind(kProg, 0) == 0)
      ids.push_back(
          static_cast<uint32_t>(std::strtoul(k.identity.c_str() + kProg.size(), nullptr, 10)));
  return ids;
}

void EthdevIo::discard(const std::string& port) {
  std::lock_guard<std::mutex> lock(g_open_mu);
  uint16_t port_id;
  const std::string name = port.substr(0, port.find(','));
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) != 0) return;
  auto it = g_parked.find(port_id);
  if (it == g_parked.end()) return;
  rte_mempool* pool = it->second.pool;
  g_parked.erase(it);
  remove_port(port_id, pool);
}

std::vector<int> EthdevIo::xsk_fds() const {
  std::lock_guard<std::mutex> lock(g_open_mu);
  std::vector<int> out;
  if (auto it = g_pmd_fds.find(port_id_); it != g_pmd_fds.end())
    for (const KernelFd& k : it->second)
      if (k.identity.rfind("socket:", 0) == 0) out.push_back(k.fd);
  return out;
}

void EthdevIo::fill_counters(PortCounters* out) const {
  EthStats st;
  if (stats(&st)) {
    out->rx_packets_phy = st.rx_frames;
    out->tx_packets_phy = st.tx_frames;
    out->rx_discards_phy = st.rx_missed;
    out->tx_errors_phy = st.tx_errors;
  }
  out->link_speed_mbps = link_speed_bps() / 1'000'000;
}

size_t EthdevIo::rx_all(size_t max, RxFn fn, void* ctx) {
  size_t total = 0;
  uint16_t idle = 0;  // queues in a row that had nothing
  while (total < max && idle < nq_) {
    const size_t want = std::min(max - total, kBurst);
    const uint16_t q = rxq_next_;
    rxq_next_ = static_cast<uint16_t>(q + 1 == nq_ ? 0 : q + 1);
    const size_t n = rx_burst(q, want, fn, ctx);
    if (n == 0) {
      ++idle;
      continue;
    }
    idle = 0;
    total += n;
    if (n < want) ++idle;
  }
  return total;
}

void EthdevIo::set_memif() {
  memif_ = true;
  link_up_ = false;
  memif_guard_refresh();
}

void EthdevIo::set_multicast(std::span<const MacAddr> macs) {
  std::vector<rte_ether_addr> mc;
  for (const MacAddr& m : macs) {
    rte_ether_addr a;
    std::memcpy(a.addr_bytes, m.b.data(), 6);
    mc.push_back(a);
  }
  if (rte_eth_dev_set_mc_addr_list(port_id_, mc.data(), static_cast<uint32_t>(mc.size())) != 0)
    rte_eth_allmulticast_enable(port_id_);
}

size_t EthdevIo::rx_burst(uint16_t queue, size_t max, RxFn fn, void* ctx) {
  rte_mbuf* bufs[kBurst];
  const uint16_t want = static_cast<uint16_t>(std::min(max, kBurst));
  const uint16_t n = fenced_rx_burst(memif_, port_id_, queue, bufs, want);
  for (uint16_t i = 0; i < n; ++i) {
    rte_mbuf* m = bufs[i];
    const uint8_t* data = rte_pktmbuf_mtod(m, const uint8_t*);
    size_t len = m->pkt_len;
    if (m->nb_segs > 1) {
      if (len > scratch_.size()) scratch_.resize(len);
      data = static_cast<const uint8_t*>(
          rte_pktmbuf_read(m, 0, static_cast<uint32_t>(len), scratch_.data()));
    }
    if (!data || len < 14) continue;
    fn(ctx, std::span<const uint8_t>(data, len));
  }
  rte_pktmbuf_free_bulk(bufs, n);
  return n;
}

void EthdevIo::drain() {
  rte_mbuf* bufs[kBurst];
  for (uint16_t q = 0; q < nq_; ++q)
    for (int i = 0; i < 1024; ++i) {
      uint16_t n = fenced_rx_burst(memif_, port_id_, q, bufs, kBurst);
      rte_pktmbuf_free_bulk(bufs, n);
      if (n < kBurst) break;
    }
}

bool EthdevIo::alloc(pipeline::Frame* f) {
  rte_mbuf* m = rte_pktmbuf_alloc(pool_);
  if (!m) return false;
  *f = pipeline::Frame{m, rte_pktmbuf_mtod(m, uint8_t*), rte_pktmbuf_tailroom(m)};
  return true;
}

void EthdevIo::free(const pipeline::Frame* frames, size_t n) {
  for (size_t i = 0; i < n; ++i) rte_pktmbuf_free(static_cast<rte_mbuf*>(frames[i].handle));
}

size_t EthdevIo::tx_burst(uint16_t queue, pipeline::Frame* frames, size_t n) {
  size_t done = 0;
  while (done < n) {
    rte_mbuf* bufs[kBurst];
    const uint16_t k = static_cast<uint16_t>(std::min(n - done, kBurst));
    for (uint16_t i = 0; i < k; ++i) {
      rte_mbuf* m = static_cast<rte_mbuf*>(frames[done + i].handle);
      m->data_len = static_cast<uint16_t>(frames[done + i].len);
      m->pkt_len = m->data_len;
      bufs[i] = m;
    }
    const uint16_t sent = fenced_tx_burst(memif_, port_id_, queue, bufs, k);
    done += sent;
    if (sent < k) break;
  }
  return done;
}

bool EthdevIo::tx_ready() { return started_ || ensure_started(monotonic_now()); }

bool EthdevIo::ensure_started(Timestamp now) {
  if (started_) return true;
  if (now < next_start_) return false;
  next_start_ = now + kStartRetry;
  // Each failed memif connect logs an error; while waiting for the server that is noise.
  int level = rte_log_get_level(memif_logtype());
  if (level >= 0) rte_log_set_level(static_cast<uint32_t>(memif_logtype()), RTE_LOG_CRIT);
  int rc = rte_eth_dev_start(port_id_);
  if (level >= 0)
    rte_log_set_level(static_cast<uint32_t>(memif_logtype()), static_cast<uint32_t>(level));
  if (rc != 0) return false;
  started_ = true;
  if (on_up_) on_up_();
  return true;
}

void EthdevIo::check_link(Timestamp now) {
  if (now < next_link_check_) return;
  next_link_check_ = now + kStartRetry;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return;
  bool up = link.link_status == RTE_ETH_LINK_UP;
  if (up && !link_up_) {
    if (memif_) memif_guard_refresh();
    if (on_up_) on_up_();
  }
  link_up_ = up;
  if (up || !reconnect_) {
    link_down_since_ = Timestamp::never();
    return;
  }
  if (link_down_since_.is_never()) {
    link_down_since_ = now;
    return;
  }
  if (now - link_down_since_ < kLinkDownRestart) return;
  // The server is alive while the control connection is open, and the handshake on it runs in
  // EAL's interrupt thread, slowly on a loaded host. Stopping the port now would tear the
  // connection down under that thread: net_memif (22.11) frees its message queue here while
  // the interrupt thread still sends from it (SIGSEGV in librte_net_memif, issue 31:
  // hostd.rping's client crashed), and the server's own interrupt thread panics on a client
  // that leaves mid-handshake. The connection closes when the server goes (net_memif closes
  // it on EOF); the port is restarted then.
  if (memif_control_open(devargs_)) return;
  link_down_since_ = Timestamp::never();
  rte_eth_dev_stop(port_id_);
  started_ = false;
  next_start_ = now;
  ensure_started(now);
}

LinkStatus EthdevIo::link() const {
  LinkStatus s;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) == 0) {
    s.speed_mbps = link.link_speed;
    s.up = link.link_status == RTE_ETH_LINK_UP;
  }
  return s;
}

uint64_t EthdevIo::link_speed_bps() const {
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0 || link.link_speed == 0 ||
      link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN)
    return kDefaultSpeedBps;
  return uint64_t{link.link_speed} * 1'000'000ull;
}

bool EthdevIo::stats(EthStats* out) const {
  rte_eth_stats st{};
  if (rte_eth_stats_get(port_id_, &st) != 0) return false;
  out->rx_frames = st.ipackets;
  out->tx_frames = st.opackets;
  out->rx_missed = st.imissed + st.rx_nombuf;
  out->tx_errors = st.oerrors;
  out->queues = std::min<uint16_t>({nq_, kMaxEthQueues, RTE_ETHDEV_QUEUE_STAT_CNTRS});
  std::copy(st.q_ipackets, st.q_ipackets + out->queues, out->rx_queue_frames.begin());
  std::copy(st.q_opackets, st.q_opackets + out->queues, out->tx_queue_frames.begin());
  return true;
}

std::unique_ptr<EthdevIo> EthdevIo::open(const config::Device& dev, std::string* err, Close close) {
  std::string e;
  if (!ensure_eal(dev, &e)) {
    fail(dev, e, err);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_open_mu);
  uint16_t port_id;
  const std::string name = dev.port.substr(0, dev.port.find(','));
  rte_mempool* old_pool = nullptr;
  if (rte_eth_dev_get_port_by_name(name.c_str(), &port_id) == 0) {
    if (g_open.count(port_id)) {
      fail(dev, "the DPDK port is already open in this process", err);
      return nullptr;
    }
    if (auto it = g_parked.find(port_id); it != g_parked.end()) {
      old_pool = it->second.pool;
      if (it->second.devargs == dev.port && it->second.max_frame == dev.mtu + kRoceOverhead &&
          it->second.queues == dev.queues && (!dev.mac || *dev.mac == it->second.mac)) {
        Parked p = it->second;
        g_parked.erase(it);
        g_open.insert(port_id);
        std::unique_ptr<EthdevIo> io(new EthdevIo(port_id, p.pool, p.mac, p.max_frame, dev));
        io->close_ = close;
        io->reused_ = true;
        if (is_memif_port(dev.port)) {
          io->set_memif();
          if (dev.port.find("role=client") != std::string::npos) io->reconnect_ = true;
        }
        io->drain();
        return io;
      }
      if (it->second.max_frame != 0 || it->second.devargs != dev.port ||
          it->second.queues != dev.queues) {
        // Another set-up of the same device: create it anew.
        remove_port(port_id, old_pool);
        old_pool = nullptr;
      }
      g_parked.erase(it);
    }
  }
  const PmdPlan plan = plan_pmd(dev);
  // What net_af_xdp opens from here on (its sockets at queue set-up), kept for remove_port(),
  // also when the set-up fails below (then the port is parked, and removed later).
  struct RecordPmdFds {
    bool on;
    const uint16_t& port_id;
    std::vector<KernelFd> before = on ? xdp_fds() : std::vector<KernelFd>{};
    bool probed = false;
    ~RecordPmdFds() {
      if (!on || !probed) return;
      auto& fds = g_pmd_fds[port_id];
      for (KernelFd& k : opened_between(before, xdp_fds())) fds.push_back(std::move(k));
    }
  } record{is_af_xdp_port(dev.port), port_id};
  if (!probe_port(plan.devargs, &port_id, &e)) {
    fail(dev, e, err);
    return nullptr;
  }
  record.probed = true;
  rte_eth_dev_info info{};
  int rc = rte_eth_dev_info_get(port_id, &info);
  if (rc != 0) {
    fail(dev, "rte_eth_dev_info_get: " + dpdk_error(rc), err);
    return nullptr;
  }
  // On any failure below the port is parked (stopped), so a later open can set it up again.
  auto give_up = [&](const std::string& what) -> std::unique_ptr<EthdevIo> {
    fail(dev, what, err);
    rte_eth_dev_stop(port_id);
    g_parked[port_id] = Parked{dev.port, old_pool, 0, MacAddr{}};
    return nullptr;
  };

  const size_t max_frame = dev.mtu + kRoceOverhead;
  const uint32_t l3_mtu = static_cast<uint32_t>(max_frame - 14);
  // ethdev's rule: mtu + overhead <= max_rx_pktlen, overhead = max_rx_pktlen - max_mtu when
  // the PMD reports a max_mtu, else Ethernet header + CRC (18).
  const uint32_t overhead = info.max_mtu != UINT16_MAX && info.max_rx_pktlen > info.max_mtu
                                ? info.max_rx_pktlen - info.max_mtu
                                : 18u;
  const uint32_t dev_max_l3 = std::min<uint32_t>(
      info.max_mtu, info.max_rx_pktlen > overhead ? info.max_rx_pktlen - overhead : 0);
  const uint32_t port_max_frame = dev_max_l3 + 14;  // without FCS, untagged
  if (port_max_frame < max_frame && !plan.limit_advisory) {
    uint32_t fits = 256;
    while (fits * 2 + kRoceOverhead <= port_max_frame) fits *= 2;
    return give_up(
        "mtu " + std::to_string(dev.mtu) + " needs frames of " + std::to_string(max_frame) +
        " bytes but " + info.driver_name + " allows at most " + std::to_string(port_max_frame) +
        "; allowed: mtu <= " + std::to_string(port_max_frame >= 256 + kRoceOverhead ? fits : 0));
  }

  const size_t room =
      std::max({size_t{2048}, (max_frame + 127) & ~size_t{127}, plan.min_data_room});
  const uint16_t data_room = static_cast<uint16_t>(RTE_PKTMBUF_HEADROOM + room);
  const uint16_t nq = dev.queues;
  if (nq > info.max_rx_queues || nq > info.max_tx_queues || nq > kMaxEthQueues)
    return give_up("queues " + std::to_string(nq) + " but " + info.driver_name + " has " +
                   std::to_string(info.max_rx_queues) + " RX and " +
                   std::to_string(info.max_tx_queues) + " TX queues; allowed: queues <= " +
                   std::to_string(std::min<unsigned>(
                       {info.max_rx_queues, info.max_tx_queues, kMaxEthQueues})));
  // Every further queue pair keeps up to 2 x kRingSize more mbufs in its rings.
  const unsigned pool_size = kPoolSize + (nq - 1u) * 2u * kRingSize;
  const int pool_socket =
      rte_eth_dev_socket_id(port_id) < 0 ? SOCKET_ID_ANY : rte_eth_dev_socket_id(port_id);
  const bool af_xdp = std::string_view(info.driver_name) == "net_af_xdp";
  auto make_pool = [&] {
    char pool_name[RTE_MEMPOOL_NAMESIZE];
    std::snprintf(pool_name, sizeof pool_name, "uroce_p%u_%u", port_id, g_pool_seq++);
    return af_xdp ? page_per_mbuf_pool(pool_name, pool_size, kPoolCache, pool_socket)
                  : rte_pktmbuf_pool_create(pool_name, pool_size, kPoolCache, 0, data_room,
                                            pool_socket);
  };
  rte_mempool* pool = make_pool();
  if (!pool) return give_up("cannot create the mbuf pool: " + dpdk_error(rte_errno));
  // net_af_xdp: the pool is the UMEM of its sockets; one none of them holds any more (the
  // failed queue set-up closed its UMEM) is nobody's, its fill-ring mbufs included.
  auto pool_unused = [&] { return af_xdp && !socket_opened_since(record.before); };
  auto give_up_pool = [&](const std::string& what) {
    auto r = give_up(what);
    if (pool_unused()) {
      rte_mempool_free(pool);
    } else {
      free_pool_if_idle(pool);
    }
    return r;
  };

  rte_eth_conf conf{};
  conf.rxmode.mtu = std::min<uint32_t>(l3_mtu, dev_max_l3);
  const uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
  if (nq > 1 && rss) {
    // A NIC spreads received flows over the RX queues (RoCEv2: by UDP source port).
    conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
    conf.rx_adv_conf.rss_conf.rss_hf = rss;
  }
  rc = rte_eth_dev_configure(port_id, nq, nq, &conf);
  if (rc != 0)
    return give_up_pool("rte_eth_dev_configure (mtu " + std::to_string(conf.rxmode.mtu) +
                        "): " + dpdk_error(rc));
  uint16_t nb_rxd = kRingSize, nb_txd = kRingSize;
  rte_eth_dev_adjust_nb_rx_tx_desc(port_id, &nb_rxd, &nb_txd);
  int socket = rte_eth_dev_socket_id(port_id);
  if (socket < 0) socket = SOCKET_ID_ANY;
  for (uint16_t q = 0; q < nq; ++q) {
    rc = rte_eth_rx_queue_setup(port_id, q, nb_rxd, static_cast<unsigned>(socket), nullptr, pool);
    if (rc != 0) return give_up_pool("rte_eth_rx_queue_setup: " + dpdk_error(rc));
    rc = rte_eth_tx_queue_setup(port_id, q, nb_txd, static_cast<unsigned>(socket), nullptr);
    if (rc != 0) return give_up_pool("rte_eth_tx_queue_setup: " + dpdk_error(rc));
  }

  rte_ether_addr ea{};
  std::optional<MacAddr> want_mac = dev.mac;
  if (!want_mac && has_shared_default_mac(info.driver_name)) {
    // Two processes would otherwise both be 02:70:63:61:70:00 ("pcap" + port 0).
    rte_eth_random_addr(ea.addr_bytes);
    MacAddr m;
    std::memcpy(m.b.data(), ea.addr_bytes, 6);
    want_mac = m;
  }
  if (want_mac) {
    std::memcpy(ea.addr_bytes, want_mac->b.data(), 6);
    // Not every PMD can change its address; the software filter uses the configured one anyway.
    if (rte_eth_dev_default_mac_addr_set(port_id, &ea) != 0)
      rte_eth_promiscuous_enable(port_id);  // a NIC must then not filter it out
  }
  const bool memif_client = std::string_view(info.driver_name) == "net_memif" &&
                            dev.port.find("role=client") != std::string::npos;
  {
    // A memif client whose server is not up yet logs an error per attempt: not one here.
    int level = memif_client ? rte_log_get_level(memif_logtype()) : -1;
    if (level >= 0) rte_log_set_level(static_cast<uint32_t>(memif_logtype()), RTE_LOG_CRIT);
    rc = rte_eth_dev_start(port_id);
    if (level >= 0)
      rte_log_set_level(static_cast<uint32_t>(memif_logtype()), static_cast<uint32_t>(level));
  }
  // A memif client cannot start before its server listens: it is started on first use then.
  const bool start_later = rc != 0 && memif_client;
  if (rc != 0 && !start_later) return give_up_pool("rte_eth_dev_start: " + dpdk_error(rc));
  if (!want_mac) rte_eth_macaddr_get(port_id, &ea);
  if (!want_mac || rte_eth_promiscuous_get(port_id) != 1) rte_eth_promiscuous_disable(port_id);
  MacAddr mac;
  std::memcpy(mac.b.data(), ea.addr_bytes, 6);

  free_pool_if_idle(old_pool);  // the queues now take mbufs from the new pool
  g_open.insert(port_id);
  std::unique_ptr<EthdevIo> io(new EthdevIo(port_id, pool, mac, max_frame, dev));
  io->close_ = close;
  if (start_later) io->started_ = false;
  if (std::string_view(info.driver_name) == "net_memif") {
    io->set_memif();
    if (dev.port.find("role=client") != std::string::npos) io->reconnect_ = true;
  }
  return io;
}

}  // namespace uroce::dpdk
