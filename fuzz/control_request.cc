/**
 * @file control_request.cc
 * @brief Fuzz target: drivers/shm's parse_request(), which uroce-hostd runs on every message a
 * client sends after Welcome (control.h, "Trust"). Any bytes: it must never crash or read past
 * them, and what it accepts is a whole Request of this protocol version whose op is known,
 * whose QPNs fit 24 bits and whose fields its op does not use are zero.
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "shm/control.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce::shm;
  auto r = parse_request(std::span<const uint8_t>(data, size));
  if (!r) return 0;
  if (size != sizeof(Request) || std::memcmp(&*r, data, size) != 0) std::abort();
  if (r->h.magic != kMagic || r->h.type != MsgType::kRequest || r->h.version != kProtocolVersion)
    std::abort();
  const auto op = static_cast<uint32_t>(r->op);
  if (op < 1 || op > kOpLast || r->qpn > 0xffffff || r->dqpn > 0xffffff) std::abort();
  const bool listen = r->op == Op::kBind || r->op == Op::kListen || r->op == Op::kRelease;
  if (listen && (r->qpn || r->dqpn || r->sport)) std::abort();
  if (!listen && (r->ps || r->port)) std::abort();
  return 0;
}
