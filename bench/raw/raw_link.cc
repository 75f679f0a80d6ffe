/**
 * @file raw_link.cc
 * @brief The raw DPDK limit of a link: frames with no transport between two processes.
 *
 * One DPDK port (any vdev: net_memif, net_af_packet, net_af_xdp, ...) and one of four roles:
 *   tx    sends frames of --size bytes as fast as the port takes them for --seconds;
 *   rx    counts them and prints the received rate (frames/s and Gbit/s of frame bytes);
 *   ping  sends one frame, waits for its echo, --count times; prints the one-way latency
 *         (half the round trip) median and p99 in microseconds;
 *   pong  echoes every frame back.
 * The rx and pong sides stop on an end-marker frame or after --seconds + 10 s of no traffic.
 *
 * Frames: Ethernet II to the broadcast address, EtherType 0x88B5 (IEEE local experimental),
 * then a 16-byte header {magic, kind, seq, tsc}; --size counts from the destination MAC to
 * the end of the payload (no FCS), as perftest and uroce's frame sizes do.
 *
 * Output: one line `RAW <role> key=value ...` that bench/compare parses. Units: frames/s,
 * Gbit/s (frame bytes without FCS), microseconds.
 *
 * Usage: raw_link <EAL args> -- --role tx|rx|ping|pong [--size B] [--seconds S] [--count N]
 */
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "dpdk/mbuf_pool.h"

namespace {

constexpr uint16_t kEtherType = 0x88B5;  ///< IEEE 802 local experimental EtherType
constexpr uint32_t kMagic = 0x52415731;  ///< "RAW1"
constexpr uint16_t kBurst = 32;          ///< frames per rx/tx burst
constexpr uint16_t kRingSize = 1024;     ///< descriptors per queue
constexpr int kEndFrames = 64;           ///< end markers sent after a tx run

enum class Kind : uint32_t { kData = 1, kEnd = 2 };

/// The bytes after the Ethernet header (host byte order: both ends are this program).
struct RawHeader {
  uint32_t magic;
  uint32_t kind;
  uint64_t seq_or_tsc;
};

struct Options {
  std::string role;
  uint32_t size = 1082;  ///< frame bytes without FCS (default: a 1024-byte RoCE payload frame)
  double seconds = 5;
  uint32_t count = 20000;
};

bool parse_options(int argc, char** argv, Options* o) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--role")
      o->role = next();
    else if (a == "--size")
      o->size = static_cast<uint32_t>(std::atoi(next()));
    else if (a == "--seconds")
      o->seconds = std::atof(next());
    else if (a == "--count")
      o->count = static_cast<uint32_t>(std::atoi(next()));
    else {
      std::fprintf(stderr, "raw_link: unknown option %s\n", a.c_str());
      return false;
    }
  }
  if (o->role != "tx" && o->role != "rx" && o->role != "ping" && o->role != "pong") {
    std::fprintf(stderr, "raw_link: --role must be tx, rx, ping or pong\n");
    return false;
  }
  if (o->size < 60) o->size = 60;
  return true;
}

/// Configures port 0 with one RX and one TX queue and waits (bounded) for link up.
bool setup_port(uint16_t port, rte_mempool* pool, uint32_t frame_size) {
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(port, &info) != 0) return false;
  rte_eth_conf conf{};
  // Ask for an MTU that fits the frame only as far as the PMD says it can receive: memif
  // (22.11) reports 1518-byte frames yet moves bigger ones as chained buffers; af_packet is
  // bounded by its frame size.
  uint32_t mtu = frame_size > RTE_ETHER_HDR_LEN ? frame_size - RTE_ETHER_HDR_LEN : 0;
  uint32_t max_mtu =
      std::min<uint32_t>(info.max_mtu, info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
  if (mtu > RTE_ETHER_MTU) conf.rxmode.mtu = std::min(mtu, max_mtu);
  if (rte_eth_dev_configure(port, 1, 1, &conf) != 0) return false;
  uint16_t nrx = kRingSize, ntx = kRingSize;
  rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
  int sock = rte_eth_dev_socket_id(port);
  unsigned s = sock < 0 ? 0u : static_cast<unsigned>(sock);
  if (rte_eth_rx_queue_setup(port, 0, nrx, s, nullptr, pool) != 0) return false;
  if (rte_eth_tx_queue_setup(port, 0, ntx, s, nullptr) != 0) return false;
  // A memif client cannot start before its server listens: retry for a while.
  uint64_t start_deadline = rte_get_timer_cycles() + 20 * rte_get_timer_hz();
  while (rte_eth_dev_start(port) != 0) {
    if (rte_get_timer_cycles() > start_deadline) return false;
    rte_delay_ms(100);
  }
  std::printf("RAW port max_rx_pktlen=%u max_mtu=%u mtu=%u\n", info.max_rx_pktlen, info.max_mtu,
              conf.rxmode.mtu);
  rte_eth_promiscuous_enable(port);
  uint64_t deadline = rte_get_timer_cycles() + 30 * rte_get_timer_hz();
  while (rte_get_timer_cycles() < deadline) {
    rte_eth_link link{};
    rte_eth_link_get_nowait(port, &link);
    if (link.link_status == RTE_ETH_LINK_UP) return true;
    rte_delay_ms(10);
  }
  std::fprintf(stderr, "raw_link: link did not come up in 30 s\n");
  return false;
}

/// Builds one frame of `size` bytes, chaining mbufs when it exceeds one segment.
rte_mbuf* make_frame(rte_mempool* pool, uint32_t size, Kind kind, uint64_t seq_or_tsc) {
  rte_mbuf* head = rte_pktmbuf_alloc(pool);
  if (head == nullptr) return nullptr;
  uint32_t left = size;
  while (true) {
    uint32_t n = std::min<uint32_t>(rte_pktmbuf_tailroom(rte_pktmbuf_lastseg(head)), left);
    char* p = rte_pktmbuf_append(head, static_cast<uint16_t>(n));  // into the last segment
    if (p == nullptr) break;
    std::memset(p, 0, n);
    left -= n;
    if (left == 0) break;
    rte_mbuf* more = rte_pktmbuf_alloc(pool);
    if (more == nullptr || rte_pktmbuf_chain(head, more) != 0) {
      if (more != nullptr) rte_pktmbuf_free(more);
      break;
    }
  }
  if (left != 0) {
    rte_pktmbuf_free(head);
    return nullptr;
  }
  auto* eth = rte_pktmbuf_mtod(head, rte_ether_hdr*);
  std::memset(&eth->dst_addr, 0xff, sizeof(eth->dst_addr));
  std::memset(&eth->src_addr, 0, sizeof(eth->src_addr));
  eth->src_addr.addr_bytes[0] = 0x02;
  eth->ether_type = rte_cpu_to_be_16(kEtherType);
  RawHeader h{kMagic, static_cast<uint32_t>(kind), seq_or_tsc};
  std::memcpy(eth + 1, &h, sizeof(h));
  return head;
}

/// Our header in a received frame, or false when the frame is not ours.
bool read_header(rte_mbuf* m, RawHeader* h) {
  if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + sizeof(RawHeader)) return false;
  auto* eth = rte_pktmbuf_mtod(m, rte_ether_hdr*);
  if (eth->ether_type != rte_cpu_to_be_16(kEtherType)) return false;
  std::memcpy(h, eth + 1, sizeof(*h));
  return h->magic == kMagic;
}

int run_tx(uint16_t port, rte_mempool* pool, const Options& o) {
  uint64_t hz = rte_get_timer_hz();
  uint64_t start = rte_get_timer_cycles();
  uint64_t end = start + static_cast<uint64_t>(o.seconds * static_cast<double>(hz));
  uint64_t sent = 0;
  rte_mbuf* burst[kBurst];
  while (rte_get_timer_cycles() < end) {
    uint16_t n = 0;
    for (; n < kBurst; ++n) {
      burst[n] = make_frame(pool, o.size, Kind::kData, sent + n);
      if (burst[n] == nullptr) break;
    }
    uint16_t done = rte_eth_tx_burst(port, 0, burst, n);
    for (uint16_t i = done; i < n; ++i) rte_pktmbuf_free(burst[i]);
    sent += done;
  }
  double secs = static_cast<double>(rte_get_timer_cycles() - start) / static_cast<double>(hz);
  for (int i = 0; i < kEndFrames; ++i) {
    rte_mbuf* m = make_frame(pool, 64, Kind::kEnd, 0);
    if (m != nullptr && rte_eth_tx_burst(port, 0, &m, 1) == 0) rte_pktmbuf_free(m);
    rte_delay_us(100);
  }
  double fps = static_cast<double>(sent) / secs;
  std::printf("RAW tx size=%u frames=%lu seconds=%.3f fps=%.0f gbps=%.3f\n", o.size, sent, secs,
              fps, fps * o.size * 8 / 1e9);
  return 0;
}

int run_rx(uint16_t port, const Options& o) {
  uint64_t hz = rte_get_timer_hz();
  uint64_t idle_limit = static_cast<uint64_t>((o.seconds + 10) * static_cast<double>(hz));
  uint64_t first = 0, last = 0, frames = 0, bytes = 0, last_seen = rte_get_timer_cycles();
  bool ended = false;
  rte_mbuf* burst[kBurst];
  while (!ended) {
    uint16_t n = rte_eth_rx_burst(port, 0, burst, kBurst);
    uint64_t now = rte_get_timer_cycles();
    if (n == 0 && now - last_seen > idle_limit) break;
    for (uint16_t i = 0; i < n; ++i) {
      RawHeader h{};
      if (read_header(burst[i], &h)) {
        if (h.kind == static_cast<uint32_t>(Kind::kEnd)) {
          ended = true;
        } else {
          if (frames == 0) first = now;
          last = now;
          ++frames;
          bytes += rte_pktmbuf_pkt_len(burst[i]);
        }
      }
      rte_pktmbuf_free(burst[i]);
    }
    if (n) last_seen = now;
  }
  // The rate over first..last frame; the first frame starts the clock, so it is not counted.
  double secs = static_cast<double>(last - first) / static_cast<double>(hz);
  double fps = secs > 0 ? static_cast<double>(frames - 1) / secs : 0;
  double gbps = secs > 0 ? static_cast<double>(bytes) * 8 / secs / 1e9 : 0;
  std::printf("RAW rx size=%u frames=%lu seconds=%.3f fps=%.0f gbps=%.3f ended=%d\n", o.size,
              frames, secs, fps, gbps, ended ? 1 : 0);
  return frames > 0 ? 0 : 1;
}

int run_ping(uint16_t port, rte_mempool* pool, const Options& o) {
  uint64_t hz = rte_get_timer_hz();
  std::vector<double> one_way_us;
  one_way_us.reserve(o.count);
  rte_mbuf* burst[kBurst];
  uint32_t lost = 0;
  for (uint32_t i = 0; i < o.count + 100; ++i) {  // the first 100 are warm-up
    uint64_t t0 = rte_get_timer_cycles();
    rte_mbuf* m = make_frame(pool, o.size, Kind::kData, t0);
    if (m == nullptr) return 1;
    while (rte_eth_tx_burst(port, 0, &m, 1) == 0) {
    }
    bool got = false;
    uint64_t give_up = t0 + hz / 10;  // 100 ms: a lost frame
    while (!got && rte_get_timer_cycles() < give_up) {
      uint16_t n = rte_eth_rx_burst(port, 0, burst, kBurst);
      uint64_t t1 = rte_get_timer_cycles();
      for (uint16_t k = 0; k < n; ++k) {
        RawHeader h{};
        if (read_header(burst[k], &h) && h.seq_or_tsc == t0) {
          got = true;
          if (i >= 100) {
            one_way_us.push_back(static_cast<double>(t1 - t0) * 1e6 / static_cast<double>(hz) / 2);
          }
        }
        rte_pktmbuf_free(burst[k]);
      }
    }
    if (!got) ++lost;
  }
  for (int i = 0; i < kEndFrames; ++i) {
    rte_mbuf* m = make_frame(pool, 64, Kind::kEnd, 0);
    if (m != nullptr && rte_eth_tx_burst(port, 0, &m, 1) == 0) rte_pktmbuf_free(m);
    rte_delay_us(100);
  }
  if (one_way_us.empty()) {
    std::printf("RAW ping size=%u samples=0 lost=%u\n", o.size, lost);
    return 1;
  }
  std::sort(one_way_us.begin(), one_way_us.end());
  auto pct = [&](double p) {
    return one_way_us[std::min(one_way_us.size() - 1,
                               static_cast<size_t>(p * static_cast<double>(one_way_us.size())))];
  };
  std::printf("RAW ping size=%u samples=%zu lost=%u median_us=%.2f p99_us=%.2f\n", o.size,
              one_way_us.size(), lost, pct(0.5), pct(0.99));
  return 0;
}

int run_pong(uint16_t port, const Options& o) {
  uint64_t hz = rte_get_timer_hz();
  uint64_t idle_limit = static_cast<uint64_t>((o.seconds + 10) * static_cast<double>(hz));
  uint64_t last_seen = rte_get_timer_cycles(), echoed = 0;
  rte_mbuf* burst[kBurst];
  bool ended = false;
  while (!ended) {
    uint16_t n = rte_eth_rx_burst(port, 0, burst, kBurst);
    uint64_t now = rte_get_timer_cycles();
    if (n == 0 && now - last_seen > idle_limit) break;
    if (n) last_seen = now;
    for (uint16_t k = 0; k < n; ++k) {
      RawHeader h{};
      if (read_header(burst[k], &h) && h.kind == static_cast<uint32_t>(Kind::kData)) {
        while (rte_eth_tx_burst(port, 0, &burst[k], 1) == 0) {
        }
        ++echoed;
        continue;
      }
      if (h.magic == kMagic && h.kind == static_cast<uint32_t>(Kind::kEnd)) ended = true;
      rte_pktmbuf_free(burst[k]);
    }
  }
  std::printf("RAW pong echoed=%lu ended=%d\n", echoed, ended ? 1 : 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int eal = rte_eal_init(argc, argv);
  if (eal < 0) {
    std::fprintf(stderr, "raw_link: EAL init failed\n");
    return 2;
  }
  Options o;
  // EAL consumed its arguments (and the "--"); argv[eal] is the program name again.
  int rest = argc - eal - 1;
  char** rest_argv = argv + eal + 1;
  if (rest > 0 && std::strcmp(rest_argv[0], "--") == 0) {
    --rest;
    ++rest_argv;
  }
  if (!parse_options(rest, rest_argv, &o)) return 2;
  if (rte_eth_dev_count_avail() < 1) {
    std::fprintf(stderr, "raw_link: no DPDK port (give one with --vdev)\n");
    return 2;
  }
  uint16_t port = 0;
  uint16_t p = 0;
  RTE_ETH_FOREACH_DEV(p) {
    port = p;
    break;
  }
  // Buffers of 8 KiB + headroom: one mbuf holds any frame up to memif's bsize=8192 (the
  // memif RX path crashed here on chained 2 KiB mbufs) and af_packet's 8192 framesz.
  constexpr uint16_t kDataRoom = 8192 + RTE_PKTMBUF_HEADROOM;
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(port, &info);
  // net_af_xdp shares the pool with the kernel as its umem: one mbuf per page, as uroce's
  // driver does (drivers/dpdk/mbuf_pool.h); every other PMD gets 8 KiB buffers.
  rte_mempool* pool =
      info.driver_name && std::strcmp(info.driver_name, "net_af_xdp") == 0
          ? uroce::dpdk::page_per_mbuf_pool("raw_pool", 8191, 256,
                                            static_cast<int>(rte_socket_id()))
          : rte_pktmbuf_pool_create("raw_pool", 8191, 256, 0, kDataRoom, rte_socket_id());
  if (pool == nullptr || !setup_port(port, pool, o.size)) {
    std::fprintf(stderr, "raw_link: port setup failed\n");
    return 2;
  }
  std::printf("RAW ready role=%s\n", o.role.c_str());  // the harness starts the peer now
  std::fflush(stdout);
  int rc = 0;
  if (o.role == "tx")
    rc = run_tx(port, pool, o);
  else if (o.role == "rx")
    rc = run_rx(port, o);
  else if (o.role == "ping")
    rc = run_ping(port, pool, o);
  else
    rc = run_pong(port, o);
  std::fflush(stdout);
  rte_eth_dev_stop(port);
  rte_eth_dev_close(port);
  rte_eal_cleanup();
  return rc;
}
