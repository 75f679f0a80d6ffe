/**
 * @file hostile.cc
 * @brief hostd.hostile's forger (hostd_e2e.py): a client of uroce-hostd that speaks the
 * control protocol and writes frames into its TX ring itself, as a process that does not use
 * uroce's engine could, and tries to send as someone else. The daemon must drop each forged
 * frame and count it under its reason (TxGuard, HostCm), refuse control requests on what is
 * another client's, and end the session on a message that makes no sense.
 *
 * Usage: hostd_hostile NETDEV OUR_MAC OUR_IP PEER_IP VICTIM_SLOT VICTIM_PORT COUNT
 * Sends COUNT frames of each kind:
 *   src_mac        a UD SEND from one of its own QPs with another source MAC
 *   src_addr       the same with a source IP that is not the netdev's
 *   src_qpn        a UD SEND whose DETH names a QPN of the victim's block
 *   not_connected  RC SENDs to a QP it has no connection with: one at PEER_IP, one of the
 *                  victim's on this host (2 * COUNT)
 *   cm             a DREQ under a communication ID of the victim's prefix
 *   ok             a UD SEND from its own QP to PEER_IP: the one kind that goes out
 * then asks to listen on the victim's RDMA CM port (EADDRINUSE) and to register a connection
 * for a QPN of the victim's block (EPERM), and finally sends a request of an unknown op (the
 * daemon ends the session). Prints one line per step; exit 0 when every answer was as expected.
 *
 * Usage: hostd_hostile --squat NETDEV BLOCK (hostd.squat): says Hello resuming BLOCK, as a
 * client whose daemon restarted would, though the block was another process's: the daemon
 * must refuse it (exit 1 with the daemon's line); were it given, prints "squatting block N"
 * and holds it until its standard input closes.
 */
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "cm/host_cm.h"
#include "shm/control.h"
#include "shm/doorbell.h"
#include "shm/region.h"
#include "shm/ring.h"
#include "transport/wire/build.h"
#include "transport/wire/cm.h"
#include "transport/wire/cm_ip.h"

using namespace uroce;

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "hostd_hostile: %s\n", what.c_str());
  return 1;
}

}  // namespace

/// --squat: takes another client's block by resuming it.
int squat(const char* netdev, uint32_t block) {
  std::string err;
  auto s = shm::connect_daemon(netdev, "squatter", &err, block);
  if (!s) return fail(err);
  if (s->welcome.qpn_block != block) return fail("the daemon gave another block");
  std::printf("squatting block %u\n", block);
  std::fflush(stdout);
  char b[64];
  while (read(0, b, sizeof b) > 0) {
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--squat") == 0)
    return squat(argv[2], static_cast<uint32_t>(std::atoi(argv[3])));
  if (argc != 8)
    return fail("usage: hostd_hostile NETDEV OUR_MAC OUR_IP PEER_IP VICTIM_SLOT VICTIM_PORT COUNT");
  MacAddr mac;
  Gid ours, peer;
  if (!MacAddr::parse(argv[2], &mac) || !Gid::parse(argv[3], &ours) || !Gid::parse(argv[4], &peer))
    return fail("bad MAC or address");
  const uint32_t victim = static_cast<uint32_t>(std::atoi(argv[5]));
  const uint16_t victim_port = static_cast<uint16_t>(std::atoi(argv[6]));
  const int count = std::atoi(argv[7]);

  std::string err;
  auto s = shm::connect_daemon(argv[1], "hostile", &err);
  if (!s) return fail(err);
  auto region = shm::map_region(s->region_fd, s->welcome.region, &err);
  if (!region) return fail(err);
  shm::Producer tx(region->tx());
  shm::Doorbell bell(s->daemon_bell);
  const uint32_t bits = s->welcome.qpn_block_bits;
  const uint32_t own_qpn = s->welcome.qpn_block << bits | 2;
  const uint32_t victim_qpn = victim << bits | 1;
  std::printf("client %u, victim %u\n", s->welcome.client, victim);

  // One frame, as uroce's engine would build it, with the fields a forger changes.
  auto send = [&](const wire::FrameSpec& spec, std::span<const uint8_t> payload) {
    auto b = tx.take();
    if (!b) return false;
    std::span<uint8_t> buf(tx.data(*b), tx.slot_bytes());
    const wire::FrameLayout l = wire::build_headers(spec, buf);
    if (l.payload_offset == 0) return false;
    std::memcpy(buf.data() + l.payload_offset, payload.data(), payload.size());
    const size_t len = wire::finalize(buf, l, payload.size());
    if (len == 0 || !tx.publish(*b, static_cast<uint32_t>(len))) return false;
    if (tx.wake_needed()) bell.kick();
    return true;
  };
  auto ud = [&](uint32_t src_qpn, const Gid& dst) {
    wire::FrameSpec f;
    f.src_mac = mac;
    f.dst_mac = MacAddr{{0x02, 0, 0, 0, 0, 0x01}};
    f.src_ip = ours;
    f.dst_ip = dst;
    f.opcode = wire::Opcode::kUdSendOnly;
    f.dest_qpn = Qpn(0x000abc);
    f.deth.qkey = 0x1234;
    f.deth.src_qpn = Qpn(src_qpn);
    return f;
  };
  const uint8_t data[64] = {};
  std::array<uint8_t, wire::cm::kMadLen> mad{};
  {
    wire::cm::Mad m;
    wire::cm::Dreq d;
    d.local_comm_id = cm::HostCm::first_id(victim) + 5;
    d.remote_comm_id = 0x1234;
    d.remote_qpn = 0x42;
    m.msg = d;
    wire::cm::build_cm_mad(m, mad);
  }
  for (int i = 0; i < count; ++i) {
    wire::FrameSpec f = ud(own_qpn, peer);
    f.src_mac = MacAddr{{0x02, 0xde, 0xad, 0, 0, 0x01}};
    bool ok = send(f, data);  // src_mac
    f = ud(own_qpn, peer);
    Gid foreign;
    Gid::parse("198.18.99.99", &foreign);
    f.src_ip = foreign;
    ok = ok && send(f, data);                     // src_addr
    ok = ok && send(ud(victim_qpn, peer), data);  // src_qpn
    f = ud(own_qpn, peer);
    f.opcode = wire::Opcode::kRcSendOnly;
    f.dest_qpn = Qpn(0x123456);
    ok = ok && send(f, data);  // not_connected, to the wire
    f.dst_mac = mac;
    f.dst_ip = ours;
    f.dest_qpn = Qpn(victim_qpn);
    ok = ok && send(f, data);  // not_connected, to the victim on this host
    f = ud(wire::cm::kGsiQpn, peer);
    f.dest_qpn = Qpn(wire::cm::kGsiQpn);
    f.deth.qkey = wire::cm::kGsiQkey;
    ok = ok && send(f, mad);                   // cm
    ok = ok && send(ud(own_qpn, peer), data);  // ok
    if (!ok) return fail("the TX ring took no frame");
    // The daemon takes them before the next round (the ring holds 256 frames).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (tx.in_flight() != 0) {
      if (std::chrono::steady_clock::now() > deadline) return fail("the daemon took no frames");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // polling with a deadline
    }
  }
  std::printf("sent %d frames of each kind\n", count);

  shm::Request r;
  r.seq = 1;
  r.op = shm::Op::kListen;
  r.ps = wire::cm::kPsTcp;
  r.port = victim_port;
  int e = shm::request(s->sock, r);
  std::printf("listen on the victim's port %u: %s\n", victim_port, std::strerror(e));
  if (e != EADDRINUSE) return fail("listen on the victim's port was not refused with EADDRINUSE");
  r = shm::Request{};
  r.seq = 2;
  r.op = shm::Op::kConnect;
  r.qpn = victim_qpn;
  r.dqpn = 0x42;
  std::memcpy(r.gid, peer.raw.data(), 16);
  e = shm::request(s->sock, r);
  std::printf("connect for the victim's QPN: %s\n", std::strerror(e));
  if (e != EPERM) return fail("a connection of the victim's QPN was not refused with EPERM");
  r = shm::Request{};
  r.seq = 3;
  r.op = static_cast<shm::Op>(99);
  e = shm::request(s->sock, r);
  std::printf("an unknown request: %s\n", std::strerror(e));
  if (e != ECONNRESET) return fail("the daemon kept the session after an unknown request");
  std::printf("hostile: ok\n");
  return 0;
}
