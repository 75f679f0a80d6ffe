/**
 * @file xdp_port.cc
 * @brief A uroce DpdkPort on a kernel netdev in host mode, as drivers/host will open one:
 * reap_stale() (a foreign XDP program refuses the start), the netdev lock, net_af_xdp with
 * `xdp_prog=` uroce's program; counts the RoCEv2 frames it receives until SIGTERM, then
 * closes the port and calls detach_if_last(). For tests/xdp/host_mode.sh.
 *
 * Output: "READY" once the port is open; --status FILE is rewritten (atomically) with
 * "RX v4=N v6=N vlan=N other=N" whenever a count changes; at the end "DETACH <message>" and
 * the same RX line on stdout. Exit 0 on a clean stop, 1 on any error.
 *
 * Usage: xdp_port --ifname IF --ip ADDR/LEN [--status FILE] [--queues N] [--mtu M]
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/byteorder.h"
#include "config/config.h"
#include "dpdk/dpdk_port.h"
#include "xdp/xdp.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

struct Counter : uroce::FrameHandler {
  void on_frame(std::span<const uint8_t> f, const uroce::RxMeta&) override {
    if (f.size() < 14) return;
    size_t l3 = 14;
    uint16_t type = uroce::load_be16(f.data() + 12);
    const bool tagged = type == 0x8100 || type == 0x88a8;
    if (tagged && f.size() >= 18) type = uroce::load_be16(f.data() + 16), l3 = 18;
    size_t l4 = 0;
    if (type == 0x0800 && f.size() >= l3 + 20 && f[l3 + 9] == 17)
      l4 = l3 + (f[l3] & 0x0fu) * 4u;
    else if (type == 0x86dd && f.size() >= l3 + 40 && f[l3 + 6] == 17)
      l4 = l3 + 40;
    if (l4 == 0 || f.size() < l4 + 8 || uroce::load_be16(f.data() + l4 + 2) != 4791)
      ++other;
    else if (tagged)
      ++vlan;
    else if (type == 0x0800)
      ++v4;
    else
      ++v6;
  }
  std::string line() const {
    return "RX v4=" + std::to_string(v4) + " v6=" + std::to_string(v6) +
           " vlan=" + std::to_string(vlan) + " other=" + std::to_string(other);
  }
  uint64_t v4 = 0, v6 = 0, vlan = 0, other = 0;
};

void write_status(const std::string& path, const std::string& line) {
  if (path.empty()) return;
  const std::string tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "w")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ifname, ip, status, queues = "1", mtu = "1024";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--ifname")
      ifname = v;
    else if (k == "--ip")
      ip = v;
    else if (k == "--status")
      status = v;
    else if (k == "--queues")
      queues = v;
    else if (k == "--mtu")
      mtu = v;
    else {
      std::fprintf(stderr, "xdp_port: unknown option %s\n", k.c_str());
      return 1;
    }
  }
  namespace x = uroce::xdp;
  // Before the PMD touches the netdev: its close path removes whatever program is attached,
  // a foreign one included, so a foreign program must stop us here.
  x::Outcome reaped = x::reap_stale(ifname);
  if (!reaped.ok()) {
    std::fprintf(stderr, "xdp_port: %s\n", reaped.message.c_str());
    return 1;
  }
  if (reaped.kind == x::Outcome::kRemoved) std::printf("REAP %s\n", reaped.message.c_str());
  std::string err;
  auto use = x::NetdevUse::acquire(ifname, &err);
  if (!use) {
    std::fprintf(stderr, "xdp_port: %s\n", err.c_str());
    return 1;
  }
  const std::string port =
      "net_af_xdp0,iface=" + ifname + ",queue_count=" + queues + ",xdp_prog=" + x::object_path();
  const std::string text = "[[device]]\nname = \"h\"\nport = \"" + port + "\"\naddresses = [\"" +
                           ip + "\"]\nmtu = " + mtu + "\nqueues = " + queues + "\n";
  auto cfg = uroce::config::parse(text, "xdp_port", &err);
  if (!cfg) {
    std::fprintf(stderr, "xdp_port: %s\n", err.c_str());
    return 1;
  }
  auto p = uroce::dpdk::open_dpdk_port(cfg->devices[0], &err);
  if (!p) {
    std::fprintf(stderr, "xdp_port: %s\n", err.c_str());
    x::detach_if_last(std::move(use));
    return 1;
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  std::signal(SIGINT, [](int) { g_stop = 1; });
  Counter rx;
  write_status(status, rx.line());
  std::printf("READY\n");
  std::fflush(stdout);
  while (!g_stop) {
    if (p->rx_burst(rx, 64) > 0) write_status(status, rx.line());
  }
  p.reset();  // the driver parks the ethdev (never closes it): the PMD leaves the program
  x::Outcome o = x::detach_if_last(std::move(use));
  std::printf("DETACH %s\n%s\n", o.message.c_str(), rx.line().c_str());
  return o.ok() ? 0 : 1;
}
