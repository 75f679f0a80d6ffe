/**
 * @file srq_ah.cc
 * @brief Shared receive queues (ibv_create_srq(3), ibv_modify_srq(3), ibv_post_srq_recv(3))
 * and address handles (ibv_create_ah(3), ibv_init_ah_from_wc(3), ibv_create_ah_from_wc(3)).
 *
 * A UD receive buffer starts with 40 bytes of GRH. For RoCEv2 over IPv6 it is the IPv6 header;
 * over IPv4 the first 20 bytes are unused and bytes 20..39 hold the IPv4 header (the layout
 * rdma-core and rxe use), which init_ah_from_wc recognises by a valid IPv4 header checksum.
 *
 * ibv_create_ah and ibv_resolve_eth_l2_from_gid resolve the destination's MAC and, on an ARP/ND
 * cache miss, wait up to 1 s for the reply with the engine's progress running
 * (device::Runtime::resolve_neighbor, lib/device neighbor_wait.h); then EHOSTUNREACH.
 */
#include <cerrno>
#include <cstring>

#include "common/byteorder.h"
#include "verbs/domain.h"
#include "verbs/objects.h"
#include "verbs/recv_chain.h"
#include "verbs/symver.h"

namespace uroce::verbs {

namespace t = transport;

int op_post_srq_recv(ibv_srq* s, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Srq* srq = from_ibv<Srq>(s);
  Runtime* rt = srq->ctx->rt;
  return post_recv_chain(rt, wr, bad,
                         [&](const t::RecvWr& r) { return rt->engine->post_srq_recv(srq->id, r); });
}

namespace {

/// A basic SRQ, or with xrcd an XRC SRQ of that domain whose receives complete on cq.
ibv_srq* create_srq(ibv_pd* p, void* srq_context, ibv_srq_attr* attr, Xrcd* xrcd = nullptr,
                    Cq* cq = nullptr) {
  if (!p || !attr || attr->max_wr == 0 || attr->max_sge == 0 || attr->max_sge > t::kMaxSge) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* pd = from_ibv<Pd>(p);
  Context* ctx = ctx_of(p->context);
  Runtime* rt = ctx->rt;
  auto* srq = new_obj<Srq>(pd, kResSrq);
  if (!srq) return nullptr;
  std::memset(&srq->srq, 0, sizeof srq->srq);
  {
    std::lock_guard<std::mutex> g(rt->mu);
    auto r = xrcd ? rt->engine->create_xrc_srq(pd->id, xrcd->id, cq->id, attr->max_wr,
                                               attr->max_sge, attr->srq_limit)
                  : rt->engine->create_srq(pd->id, attr->max_wr, attr->max_sge, attr->srq_limit);
    if (!r) {
      delete_obj(srq, kResSrq);
      errno = r.status().code();
      return nullptr;
    }
    srq->id = r.value();
    rt->srqs[srq->id] = srq;
    uint32_t max_wr = attr->max_wr, max_sge = attr->max_sge, limit = attr->srq_limit;
    if (rt->engine->query_srq(srq->id, &max_wr, &max_sge, &limit)) {
      attr->max_wr = max_wr;
      attr->max_sge = max_sge;
    }
  }
  srq->ctx = ctx;
  srq->pd = pd;
  srq->xrcd = xrcd;
  srq->cq = cq;
  if (cq) cq->qps++;  // ibv_destroy_cq: EBUSY while the SRQ completes on it
  srq->srq.context = p->context;
  srq->srq.srq_context = srq_context;
  srq->srq.pd = p;
  srq->srq.handle = srq->id;
  hold_domain(p);
  pthread_mutex_init(&srq->srq.mutex, nullptr);
  pthread_cond_init(&srq->srq.cond, nullptr);
  ctx->children++;
  return &srq->srq;
}

}  // namespace

ibv_srq* op_create_srq_ex(ibv_context* c, ibv_srq_init_attr_ex* a) {
  if (!a || !(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != c) {
    errno = EINVAL;
    return nullptr;
  }
  constexpr uint32_t kKnown =
      IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  if (a->comp_mask & ~kKnown) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  const bool xrc = (a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type == IBV_SRQT_XRC;
  if ((a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && a->srq_type != IBV_SRQT_BASIC && !xrc) {
    errno = EOPNOTSUPP;  // tag matching
    return nullptr;
  }
  if (!xrc) return create_srq(a->pd, a->srq_context, &a->attr);
  // An XRC SRQ needs its domain and the CQ its receives complete on (ibv_create_srq_ex(3)).
  if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !(a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
      !a->xrcd || !a->cq || a->xrcd->context != c || a->cq->context != c) {
    errno = EINVAL;
    return nullptr;
  }
  return create_srq(a->pd, a->srq_context, &a->attr, from_ibv<Xrcd>(a->xrcd), cq_of(a->cq));
}

}  // namespace uroce::verbs

using namespace uroce::verbs;  // NOLINT: C entry points below
namespace t = uroce::transport;

UROCE_EXPORT ibv_srq* uroce_create_srq_1_1(ibv_pd* pd, ibv_srq_init_attr* a) {
  if (!a) {
    errno = EINVAL;
    return nullptr;
  }
  return create_srq(pd, a->srq_context, &a->attr);
}
UROCE_DEFAULT_VERSION(uroce_create_srq_1_1, ibv_create_srq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_modify_srq_1_1(ibv_srq* s, ibv_srq_attr* a, int mask) {
  Srq* srq = from_ibv<Srq>(s);
  if (!a || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) || mask == 0) return EINVAL;
  Runtime* rt = srq->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  return rt->engine->modify_srq(srq->id, a->max_wr, a->srq_limit, static_cast<uint32_t>(mask))
      .code();
}
UROCE_DEFAULT_VERSION(uroce_modify_srq_1_1, ibv_modify_srq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_query_srq_1_1(ibv_srq* s, ibv_srq_attr* a) {
  Srq* srq = from_ibv<Srq>(s);
  Runtime* rt = srq->ctx->rt;
  uint32_t max_wr = 0, max_sge = 0, limit = 0;
  std::lock_guard<std::mutex> g(rt->mu);
  uroce::Status st = rt->engine->query_srq(srq->id, &max_wr, &max_sge, &limit);
  if (!st) return st.code();
  a->max_wr = max_wr;
  a->max_sge = max_sge;
  a->srq_limit = limit;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_srq_1_1, ibv_query_srq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_destroy_srq_1_1(ibv_srq* s) {
  Srq* srq = from_ibv<Srq>(s);
  if (srq->qps.load() > 0) return EBUSY;
  Runtime* rt = srq->ctx->rt;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    uroce::Status st = rt->engine->destroy_srq(srq->id);
    if (!st) return st.code();
    rt->srqs.erase(srq->id);
  }
  srq->ctx->settle_async(s, &s->mutex, &s->cond, &s->events_completed);
  release_domain(s->pd);
  if (srq->cq) srq->cq->qps--;
  srq->ctx->children--;
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond);
  delete_obj(srq, kResSrq);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_destroy_srq_1_1, ibv_destroy_srq, "IBVERBS_1.1");

// ---- Address handles ----------------------------------------------------------------------

namespace {

/// Resolves the MAC of g, waiting up to device::kNeighborWaitBudget for an ARP/ND reply while
/// the engine's progress runs (RX bursts learn the reply). EHOSTUNREACH when it never came.
int resolve_blocking(Runtime* rt, const uroce::Gid& g, uroce::MacAddr* mac) {
  return rt->resolve_neighbor(g, mac) ? 0 : EHOSTUNREACH;
}

}  // namespace

UROCE_EXPORT ibv_ah* uroce_create_ah_1_1(ibv_pd* p, ibv_ah_attr* attr) {
  if (!p || !attr) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* pd = from_ibv<Pd>(p);
  Context* ctx = ctx_of(p->context);
  t::AddressVector av;
  int r = to_av(ctx->rt, *attr, &av);
  if (r) {
    errno = r;
    return nullptr;
  }
  // As rdma-core on RoCE: the destination's L2 address must resolve (the port keeps it
  // cached for the UD sends that follow).
  uroce::MacAddr mac;
  r = resolve_blocking(ctx->rt, av.dgid, &mac);
  if (r) {
    errno = r;
    return nullptr;
  }
  auto* ah = new Ah();
  ah->ah.context = p->context;
  ah->ah.pd = p;
  ah->ah.handle = 0;
  ah->av = av;
  pd->ahs++;
  ctx->track(ctx->ahs, ah);
  return &ah->ah;
}
UROCE_DEFAULT_VERSION(uroce_create_ah_1_1, ibv_create_ah, "IBVERBS_1.1");

UROCE_EXPORT int uroce_destroy_ah_1_1(ibv_ah* a) {
  Ah* ah = from_ibv<Ah>(a);
  from_ibv<Pd>(a->pd)->ahs--;
  ctx_of(a->context)->untrack(ctx_of(a->context)->ahs, ah);
  delete ah;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_destroy_ah_1_1, ibv_destroy_ah, "IBVERBS_1.1");

namespace {

bool ipv4_header_ok(const uint8_t* h) {
  if ((h[0] >> 4) != 4 || (h[0] & 0xf) != 5) return false;
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += uroce::load_be16(h + i);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

/// The index of GID g of the given type in rt's table, or -1.
int find_gid(Runtime* rt, const uroce::Gid& g, uroce::GidType type) {
  std::lock_guard<std::mutex> lock(rt->mu);
  for (size_t i = 0; i < rt->gids.size(); ++i)
    if (rt->gids[i] == g && uroce::gid_type_at(i, rt->gid_v1_base) == type)
      return static_cast<int>(i);
  return -1;
}

}  // namespace

UROCE_EXPORT int ibv_init_ah_from_wc(ibv_context* c, uint8_t port, ibv_wc* wc, ibv_grh* grh,
                                     ibv_ah_attr* ah) {
  if (port != 1 || !wc || !ah) return EINVAL;
  Runtime* rt = ctx_of(c)->rt;
  std::memset(ah, 0, sizeof *ah);
  ah->port_num = port;
  ah->sl = wc->sl;
  if (!(wc->wc_flags & IBV_WC_GRH) || !grh) return EINVAL;  // RoCE: the GRH is the address
  uroce::Gid sgid, dgid;                                    // of the received packet
  uint8_t tclass = 0, hop = 64;
  uint32_t flow = 0;
  const auto* raw = reinterpret_cast<const uint8_t*>(grh);
  // A RoCE v1 packet's GRH names the IBA transport as its next header (0x1B); RoCEv2's IPv6
  // header names UDP. The reply goes from the GID of the same type.
  auto type = uroce::GidType::kRoceV2;
  if (ipv4_header_ok(raw + 20)) {
    const uint8_t* ip = raw + 20;
    sgid = uroce::Gid::from_ipv4(uroce::load_be32(ip + 12));
    dgid = uroce::Gid::from_ipv4(uroce::load_be32(ip + 16));
    tclass = ip[1];
    hop = ip[8];
  } else {
    uint32_t vtf = be32toh(grh->version_tclass_flow);
    tclass = static_cast<uint8_t>(vtf >> 20);
    flow = vtf & 0xfffff;
    hop = grh->hop_limit;
    if (grh->next_hdr == 0x1b) type = uroce::GidType::kRoceV1;
    std::memcpy(sgid.raw.data(), grh->sgid.raw, 16);
    std::memcpy(dgid.raw.data(), grh->dgid.raw, 16);
  }
  int idx = find_gid(rt, dgid, type);
  if (idx < 0) return EINVAL;
  ah->is_global = 1;
  std::memcpy(ah->grh.dgid.raw, sgid.raw.data(), 16);
  ah->grh.sgid_index = static_cast<uint8_t>(idx);
  ah->grh.flow_label = flow;
  ah->grh.hop_limit = 0xff;  // as rdma-core: reply with the maximum hop limit
  ah->grh.traffic_class = tclass;
  (void)hop;
  return 0;
}

UROCE_EXPORT ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port) {
  ibv_ah_attr attr;
  int r = ibv_init_ah_from_wc(pd->context, port, wc, grh, &attr);
  if (r) {
    errno = r;
    return nullptr;
  }
  return uroce_create_ah_1_1(pd, &attr);
}

UROCE_EXPORT int ibv_resolve_eth_l2_from_gid(ibv_context* c, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                             uint16_t* vid) {
  Runtime* rt = ctx_of(c)->rt;
  if (!attr || !attr->is_global) return EINVAL;
  uroce::Gid g;
  std::memcpy(g.raw.data(), attr->grh.dgid.raw, 16);
  uroce::MacAddr mac;
  if (int r = resolve_blocking(rt, g, &mac)) return r;
  std::memcpy(eth_mac, mac.b.data(), 6);
  if (vid) *vid = 0xffff;
  return 0;
}
