/**
 * @file cm_manager.cc
 * @brief Fuzz target: lib/cm's Manager (the CM state machine librdmacm runs on QP1) fed
 * arbitrary MADs from two peers, with time moving between them, while it listens on two
 * services and has an outgoing REQ and SIDR_REQ of its own. It must never crash, every MAD it
 * sends must parse as CM, and whatever it reports must be about a connection it has.
 * Input: a sequence of chunks [1 byte: peer (bit 0) and time step (bits 1..7, ms)] + 256 MAD
 * bytes; a short last chunk is zero-padded.
 */
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "cm/manager.h"
#include "transport/wire/cm.h"
#include "transport/wire/cm_ip.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce;
  namespace w = wire::cm;
  Gid peers[2];
  for (int i = 0; i < 2; ++i) peers[i] = Gid::from_ipv4(0xc6120002u + static_cast<uint32_t>(i));
  cm::Config cfg;
  cfg.first_comm_id = 7;
  cm::Manager m(cfg, [](const Gid&, std::span<const uint8_t, w::kMadLen> mad) {
    if (!w::parse_cm_mad(mad)) std::abort();  // it only ever sends what it can read
  });
  Timestamp now{1'000'000'000};
  m.listen(w::ip_service_id(w::kPsTcp, 7471));
  m.listen(w::ip_service_id(w::kPsUdp, 7174));
  cm::ConnectParams cp;
  cp.remote = peers[0];
  cp.service_id = w::ip_service_id(w::kPsTcp, 1);
  m.connect(cp, now);
  m.sidr_request(peers[1], w::ip_service_id(w::kPsUdp, 2), {}, now);
  while (size > 0) {
    const uint8_t ctl = data[0];
    std::array<uint8_t, w::kMadLen> mad{};
    const size_t n = std::min(size - 1, mad.size());
    std::memcpy(mad.data(), data + 1, n);
    data += 1 + n;
    size -= 1 + n;
    now = now + Duration::millis(ctl >> 1);
    m.on_mad(peers[ctl & 1], mad, now);
    m.on_timer(now);
    while (auto e = m.poll_event()) {
      // Answer as librdmacm would; refusals are fine, crashes are not.
      if (e->type == cm::EventType::kConnectRequest) m.accept(e->conn, {}, now);
      if (e->type == cm::EventType::kConnectResponse) m.ready_to_use(e->conn, now);
      if (e->type == cm::EventType::kSidrRequest) m.sidr_reply(e->conn, 0, 5, 6, {}, now);
      if (e->type == cm::EventType::kEstablished) m.disconnect(e->conn, now);
    }
  }
  m.on_timer(now + Duration::seconds(60));
  return 0;
}
