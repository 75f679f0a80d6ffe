/**
 * @file port_tool.cc
 * @brief A small program that drives one uroce DpdkPort, for two-process tests and the raw
 * frame-rate measurement through the Port interface (compare testpmd's figure in
 * drivers/dpdk/PMDS.md and bench/raw).
 *
 * Roles:
 *   rx       receives test frames, checks sequence and payload byte for byte, stops at an end
 *            frame, after --seconds or 3 s after the last frame; answers ARP meanwhile. Exit 0
 *            when frames arrived and none was bad (the scripts compare the counts).
 *   info     prints what the PMD reports (PortInfo) and exits.
 *   tx       resolves --peer by ARP (≤ 10 s), sends frames of --size bytes for --seconds as
 *            fast as the port takes them, then end frames.
 * Output: one line "PORT <role> frames=N bad=B fps=F gbps=G mac=M" (frames/s; Gbit/s of frame
 * bytes without FCS). Exit status 0 on success, 1 on any error.
 *
 * Usage: port_tool --role rx|tx|info --port <vdev> --ip <addr/len> [--peer <addr>] [--mtu M]
 *                  [--size B] [--seconds S] [--pace frames_per_s]
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/byteorder.h"
#include "config/config.h"
#include "dpdk/dpdk_port.h"
#include "dpdk/memif_guard.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint16_t kEtherType = 0x88b5;  ///< IEEE 802 local experimental
constexpr uint32_t kEndSeq = 0xffffffff;

struct Options {
  std::string role, port, ip, peer;
  uint32_t mtu = 1024;
  size_t size = 1082;
  double seconds = 2;
  double pace = 0;  ///< frames/s the sender keeps to (0: as fast as the port takes them)
};

struct Rx : uroce::FrameHandler {
  void on_frame(std::span<const uint8_t> f, const uroce::RxMeta&) override {
    if (f.size() < 18 || uroce::load_be16(f.data() + 12) != kEtherType) return;
    uint32_t seq = uroce::load_be32(f.data() + 14);
    if (seq == kEndSeq) {
      ended = true;
      return;
    }
    if (seq == 0) next = 0;  // a new sender (the peer process was replaced) starts over
    bool ok = seq >= next;   // a gap is loss; going back is reordering or duplication
    for (size_t i = 18; ok && i < f.size(); ++i) ok = f[i] == static_cast<uint8_t>(seq + i);
    if (!ok) ++bad;
    if (seq > next) lost += seq - next;
    next = seq + 1;
    ++frames;
    bytes += f.size();
  }
  uint32_t next = 0;
  uint64_t frames = 0, bad = 0, lost = 0, bytes = 0;
  bool ended = false;
};

bool send(uroce::Port& p, const uroce::MacAddr& dst, uint32_t seq, size_t len) {
  uint8_t* b = p.begin_frame(len);
  if (!b) return false;
  std::memcpy(b, dst.b.data(), 6);
  std::memcpy(b + 6, p.mac().b.data(), 6);
  uroce::store_be16(b + 12, kEtherType);
  uroce::store_be32(b + 14, seq);
  for (size_t i = 18; i < len; ++i) b[i] = static_cast<uint8_t>(seq + i);
  p.end_frame(len, uroce::TxMeta{});
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--role")
      o.role = v;
    else if (k == "--port")
      o.port = v;
    else if (k == "--ip")
      o.ip = v;
    else if (k == "--peer")
      o.peer = v;
    else if (k == "--mtu")
      o.mtu = static_cast<uint32_t>(std::atoi(v.c_str()));
    else if (k == "--size")
      o.size = static_cast<size_t>(std::atoi(v.c_str()));
    else if (k == "--seconds")
      o.seconds = std::atof(v.c_str());
    else if (k == "--pace")
      o.pace = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "port_tool: unknown option %s\n", k.c_str());
      return 1;
    }
  }
  std::string text = "[[device]]\nname = \"t\"\nport = \"" + o.port + "\"\naddresses = [\"" + o.ip +
                     "\"]\nmtu = " + std::to_string(o.mtu) + "\n";
  std::string err;
  auto cfg = uroce::config::parse(text, "port_tool", &err);
  if (!cfg) {
    std::fprintf(stderr, "port_tool: %s\n", err.c_str());
    return 1;
  }
  auto port = uroce::dpdk::open_dpdk_port(cfg->devices[0], &err);
  if (!port) {
    std::fprintf(stderr, "port_tool: %s\n", err.c_str());
    return 1;
  }
  if (o.size < 60) o.size = 60;
  if (o.size > port->max_frame_len()) o.size = port->max_frame_len();
  Rx rx;
  const auto limit = std::chrono::duration<double>(o.seconds);
  if (o.role == "rx") {
    auto start = Clock::now(), first = start, last = start;
    // Stops at an end frame, after --seconds, or 3 s after the last frame (a lossy link may
    // drop the end frames too).
    for (auto now = start; !rx.ended && now - start < limit; now = Clock::now()) {
      uint64_t before = rx.frames;
      port->rx_burst(rx, 64);
      if (rx.frames != before) {
        last = Clock::now();
        if (before == 0) first = last;
      } else if (rx.frames > 0 && now - last > std::chrono::seconds(3)) {
        break;
      }
    }
    double secs = std::chrono::duration<double>(last - first).count();
    std::printf("PORT rx frames=%llu bad=%llu lost=%llu fps=%.0f gbps=%.3f mac=%s ended=%d\n",
                static_cast<unsigned long long>(rx.frames), static_cast<unsigned long long>(rx.bad),
                static_cast<unsigned long long>(rx.lost), secs > 0 ? rx.frames / secs : 0.0,
                secs > 0 ? rx.bytes * 8 / secs / 1e9 : 0.0, port->mac().to_string().c_str(),
                rx.ended ? 1 : 0);
    return rx.bad == 0 && rx.frames > 0 ? 0 : 1;
  }
  if (o.role == "info") {
    uroce::dpdk::PortInfo info;
    uroce::dpdk::port_info(*port, &info);
    std::printf(
        "PORT info driver=%s max_rx_pktlen=%u min_mtu=%u max_mtu=%u rxq=%u txq=%u "
        "speed_mbps=%u link_up=%d configured_mtu=%u max_frame=%zu speed_bps=%llu mac=%s\n",
        info.driver.c_str(), info.max_rx_pktlen, info.min_mtu, info.max_mtu, info.max_rx_queues,
        info.max_tx_queues, info.link_speed_mbps, info.link_up ? 1 : 0, info.configured_mtu,
        port->max_frame_len(), static_cast<unsigned long long>(port->link_speed_bps()),
        port->mac().to_string().c_str());
    return 0;
  }
  if (o.role != "tx") {
    std::fprintf(stderr, "port_tool: --role must be rx, tx or info\n");
    return 1;
  }
  uroce::Gid peer;
  if (!uroce::Gid::parse(o.peer, &peer)) {
    std::fprintf(stderr, "port_tool: --peer %s is not an address\n", o.peer.c_str());
    return 1;
  }
  uroce::MacAddr dst;
  auto start = Clock::now();
  while (!port->resolve(peer, &dst)) {
    port->rx_burst(rx, 64);
    // 10 s: the peer may still be starting EAL on a loaded machine.
    if (Clock::now() - start > std::chrono::seconds(10)) {
      std::fprintf(stderr, "port_tool: %s did not answer ARP within 10 s\n", o.peer.c_str());
      return 1;
    }
  }
  uint32_t seq = 0;
  start = Clock::now();
  auto end = start + std::chrono::duration_cast<Clock::duration>(limit);
  for (auto now = Clock::now(); now < end; now = Clock::now()) {
    uint64_t allowed =
        o.pace > 0
            ? static_cast<uint64_t>(std::chrono::duration<double>(now - start).count() * o.pace)
            : UINT64_MAX;
    port->resolve(peer, &dst);  // as the engine does per packet: follows a changed MAC
    for (int i = 0; i < 32 && seq < allowed && send(*port, dst, seq, o.size); ++i) ++seq;
    port->flush();
    port->rx_burst(rx, 32);  // keep answering ARP
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  // Push out what is pending, then the end frames (several: the receiver needs just one).
  for (int sent = 0; sent < 16 && Clock::now() < end + std::chrono::seconds(2);) {
    if (send(*port, dst, kEndSeq, 60)) ++sent;
    port->flush();
  }
  // Linger 1 s so the receiver drains its ring before our exit tears the link down.
  for (auto t = Clock::now(); Clock::now() - t < std::chrono::seconds(1);) {
    port->flush();
    port->rx_burst(rx, 32);
  }
  uroce::dpdk::PortInfo info;
  uroce::dpdk::port_info(*port, &info);
  std::printf(
      "PORT tx frames=%u fps=%.0f gbps=%.3f mac=%s driver=%s max_rx_pktlen=%u mtu=%u "
      "speed_mbps=%u txq=%u rxq=%u memif_guard_faults=%llu memif_guard_fenced=%llu\n",
      seq, seq / secs, seq * o.size * 8 / secs / 1e9, port->mac().to_string().c_str(),
      info.driver.c_str(), info.max_rx_pktlen, info.configured_mtu, info.link_speed_mbps,
      info.max_tx_queues, info.max_rx_queues,
      static_cast<unsigned long long>(uroce::dpdk::memif_guard_faults()),
      static_cast<unsigned long long>(uroce::dpdk::memif_guard_fenced()));
  return 0;
}
