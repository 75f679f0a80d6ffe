/**
 * @file host_cm.cc
 * @brief Fuzz target: lib/cm's HostCm (uroce-hostd's share of the RDMA CM: the host's port
 * space and the steering of CM MADs between processes) fed arbitrary MADs in both directions
 * from three clients and a remote peer, with clients dying and time moving. It must never
 * crash; every MAD it sends must parse as CM, and it only steers to a client that is there.
 * Input: chunks [1 byte: bit 0 inbound/outbound, bits 1..2 client (0: drop that client next),
 * bits 3..7 time step in ms] + 256 MAD bytes; a short last chunk is zero-padded.
 */
#include "cm/host_cm.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transport/wire/cm.h"
#include "transport/wire/cm_ip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce;
  namespace w = wire::cm;
  const Gid local = Gid::from_ipv4(0xc6120001u), peer = Gid::from_ipv4(0xc6120002u);
  cm::HostCm hc;
  bool alive[4] = {false, true, true, true};
  for (uint32_t c = 1; c <= 3; ++c) {
    hc.add_client(c);
    hc.bind(c, w::kPsTcp, static_cast<uint16_t>(7470 + c), Gid{});
    hc.listen(c, w::kPsTcp, static_cast<uint16_t>(7470 + c), Gid{});
  }
  hc.bind(1, w::kPsUdp, 7174, local);
  hc.listen(1, w::kPsUdp, 7174, local);
  auto check = [](const cm::HostCm::Outgoing& o) {
    if (!w::parse_cm_mad(o.mad)) std::abort();  // it only ever sends what it can read
  };
  Timestamp now{1'000'000'000};
  uint32_t victim = 1;
  while (size > 0) {
    const uint8_t ctl = data[0];
    std::array<uint8_t, w::kMadLen> mad{};
    const size_t n = std::min(size - 1, mad.size());
    std::memcpy(mad.data(), data + 1, n);
    data += 1 + n;
    size -= 1 + n;
    now = now + Duration::millis(ctl >> 3);
    const uint32_t client = (ctl >> 1) & 3;
    if (client == 0) {
      for (const auto& o : hc.drop_client(victim, now)) check(o);
      alive[victim] = false;
      victim = victim % 3 + 1;
    } else if (ctl & 1) {
      hc.outbound(client, local, peer, mad, now);
    } else {
      cm::HostCm::Route r = hc.inbound(peer, local, mad, now);
      if (r.to == cm::HostCm::To::kClient && (r.client > 3 || !alive[r.client])) std::abort();
      if (r.reply) check(*r.reply);
    }
    for (const auto& o : hc.timers(now)) check(o);
  }
  for (const auto& o : hc.timers(now + Duration::seconds(120))) check(o);
  return 0;
}
