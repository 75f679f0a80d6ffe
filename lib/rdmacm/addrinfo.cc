/**
 * @file addrinfo.cc
 * @brief rdma_getaddrinfo(3) / rdma_freeaddrinfo(3) for IP addresses: getaddrinfo(3) does
 * the name and service lookup; RAI_PASSIVE makes the address (the wildcard when node is
 * NULL) the source a listener binds, otherwise it is the destination; ai_src_addr of the
 * hints is kept as the source of an active endpoint. Port space and QP type default to
 * RDMA_PS_TCP / IBV_QPT_RC (RDMA_PS_UDP / IBV_QPT_UD when the hints ask for UDP). Without node
 * and service, the hints' addresses are the answer (rdma-core). No route (ai_route) is
 * returned: rdma_resolve_route fills it.
 */
#include <netdb.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"

using namespace uroce::rdmacm;

namespace {

sockaddr* copy_addr(const sockaddr* sa, socklen_t len) {
  auto* p = static_cast<sockaddr*>(calloc(1, len));
  if (p) std::memcpy(p, sa, len);
  return p;
}

}  // namespace

UROCE_CM_EXPORT void rdma_freeaddrinfo(rdma_addrinfo* res) {
  while (res) {
    rdma_addrinfo* next = res->ai_next;
    free(res->ai_src_addr);
    free(res->ai_dst_addr);
    free(res->ai_src_canonname);
    free(res->ai_dst_canonname);
    free(res->ai_route);
    free(res->ai_connect);
    free(res);
    res = next;
  }
}

UROCE_CM_EXPORT int rdma_getaddrinfo(const char* node, const char* service,
                                     const rdma_addrinfo* hints, rdma_addrinfo** res) {
  if (!res || (!node && !service && !hints)) return fail(EINVAL);
  if (!node && !service) {
    // As rdma-core: the hints' own addresses, flags, family, QP type and port space, as given
    // (libfabric's verbs provider asks so with the sockaddrs it has already).
    auto* r = static_cast<rdma_addrinfo*>(calloc(1, sizeof(rdma_addrinfo)));
    if (!r) return fail(ENOMEM);
    r->ai_flags = hints->ai_flags;
    r->ai_family = hints->ai_family;
    r->ai_qp_type = hints->ai_qp_type;
    r->ai_port_space = hints->ai_port_space;
    bool ok = true;
    if (hints->ai_dst_addr && hints->ai_dst_len) {
      r->ai_dst_addr = copy_addr(hints->ai_dst_addr, hints->ai_dst_len);
      r->ai_dst_len = hints->ai_dst_len;
      ok = r->ai_dst_addr != nullptr;
    }
    if (hints->ai_src_addr && hints->ai_src_len) {
      r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
      r->ai_src_len = hints->ai_src_len;
      ok = ok && r->ai_src_addr != nullptr;
    }
    if (!ok) {
      rdma_freeaddrinfo(r);
      return fail(ENOMEM);
    }
    *res = r;
    return 0;
  }
  const int flags = hints ? hints->ai_flags : 0;
  addrinfo h{};
  h.ai_family = hints && hints->ai_family ? hints->ai_family : AF_UNSPEC;
  h.ai_socktype = SOCK_STREAM;
  h.ai_flags =
      (flags & RAI_PASSIVE ? AI_PASSIVE : 0) | (flags & RAI_NUMERICHOST ? AI_NUMERICHOST : 0);
  addrinfo* ai = nullptr;
  if (int r = getaddrinfo(node, service, &h, &ai)) {
    errno = r == EAI_SYSTEM ? errno : EADDRNOTAVAIL;
    return r;  // rdma-core hands getaddrinfo's code back
  }
  // The first IPv4 or IPv6 result (uroce's addresses are of these families).
  const addrinfo* a = ai;
  while (a && a->ai_family != AF_INET && a->ai_family != AF_INET6) a = a->ai_next;
  if (!a) {
    freeaddrinfo(ai);
    return fail(EADDRNOTAVAIL);
  }
  auto* r = static_cast<rdma_addrinfo*>(calloc(1, sizeof(rdma_addrinfo)));
  if (!r) {
    freeaddrinfo(ai);
    return fail(ENOMEM);
  }
  r->ai_flags = flags;
  r->ai_family = a->ai_family;
  const bool udp =
      hints && (hints->ai_port_space == RDMA_PS_UDP || hints->ai_qp_type == IBV_QPT_UD);
  r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type : (udp ? IBV_QPT_UD : IBV_QPT_RC);
  r->ai_port_space =
      hints && hints->ai_port_space ? hints->ai_port_space : (udp ? RDMA_PS_UDP : RDMA_PS_TCP);
  sockaddr* addr = copy_addr(a->ai_addr, a->ai_addrlen);
  if (flags & RAI_PASSIVE) {
    r->ai_src_addr = addr;
    r->ai_src_len = a->ai_addrlen;
  } else {
    r->ai_dst_addr = addr;
    r->ai_dst_len = a->ai_addrlen;
    if (hints && hints->ai_src_addr && hints->ai_src_len) {
      r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
      r->ai_src_len = hints->ai_src_len;
    }
  }
  freeaddrinfo(ai);
  if (!addr) {
    rdma_freeaddrinfo(r);
    return fail(ENOMEM);
  }
  *res = r;
  return 0;
}
