/**
 * @file control_request.cc
 * @brief Fuzz target: drivers/shm's parse_request(), which uroce-hostd runs on every message a
 * client sends after Welcome, and parse_hello() / hello_version(), which it runs on the first
 * (control.h). Any bytes: they must never crash or read past them; what parse_request accepts
 * is a whole Request of this protocol version whose op is known, whose QPNs fit 24 bits and
 * whose fields its op does not use are zero; what parse_hello accepts is a whole Hello of this
 * version with its reserved fields zero, a NUL-terminated device name and a 24-bit block.
 * parse_refused(), which a client runs on what its daemon sends unasked, accepts a whole
 * Refused with a NUL-terminated reason, and returns that reason.
 */
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "shm/control.h"

namespace {

void check_hello(const uint8_t* data, size_t size) {
  using namespace uroce::shm;
  const std::span<const uint8_t> msg(data, size);
  const auto v = hello_version(msg);
  auto h = parse_hello(msg);
  if (!h) return;
  if (size != sizeof(Hello) || std::memcmp(&*h, data, size) != 0) std::abort();
  if (!v || *v != kProtocolVersion || h->h.magic != kMagic || h->h.type != MsgType::kHello ||
      h->h.reserved || h->reserved || h->resume_block > 0xffffff ||
      std::memchr(h->device, 0, sizeof h->device) == nullptr)
    std::abort();
}

void check_refused(const uint8_t* data, size_t size) {
  using namespace uroce::shm;
  auto why = parse_refused(std::span<const uint8_t>(data, size));
  if (!why) return;
  Refused r;
  if (size != sizeof r) std::abort();
  std::memcpy(&r, data, size);
  if (r.h.magic != kMagic || r.h.type != MsgType::kRefused || *why != r.reason) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce::shm;
  check_hello(data, size);
  check_refused(data, size);
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
