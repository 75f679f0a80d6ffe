/**
 * @file pd_mr.cc
 * @brief Protection domains and memory regions: ibv_alloc_pd(3), ibv_reg_mr(3),
 * ibv_reg_mr_iova(3), ibv_rereg_mr(3), ibv_advise_mr(3), and memory windows.
 *
 * The engine checks every remote and local access against the MR's bounds and access flags
 * (engine.h reg_mr), in the MR's iova space: ibv_reg_mr_iova(3) and IBV_ACCESS_ZERO_BASED give
 * keys an address space of their own, translated to the buffer after the checks. Optional
 * access flags (IBV_ACCESS_OPTIONAL_RANGE, e.g. relaxed ordering) and flags this device does
 * not need (HUGETLB) are ignored as ibv_reg_mr(3) allows. IBV_ACCESS_ON_DEMAND is honoured:
 * uroce never pins, and an on-demand MR's bytes move through the kernel so an unmapped page
 * fails the access (memory_table.h); implicit ODP (addr NULL, length SIZE_MAX) covers the whole
 * address space.
 */
#include <cerrno>
#include <cstring>
#include <vector>

#include "verbs/domain.h"
#include "verbs/objects.h"
#include "verbs/symver.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace uroce::verbs;  // NOLINT: C entry points below

UROCE_EXPORT ibv_pd* uroce_alloc_pd_1_1(ibv_context* c) {
  Context* ctx = ctx_of(c);
  Runtime* rt = ctx->rt;
  if (int err = rt->start()) {  // a deferred open (device::Runtime::open) opens the port here
    errno = err;
    return nullptr;
  }
  std::lock_guard<std::mutex> g(rt->mu);
  auto r = rt->engine->alloc_pd();
  if (!r) {
    errno = r.status().code();
    return nullptr;
  }
  auto* pd = new Pd();
  std::memset(&pd->pd, 0, sizeof pd->pd);
  pd->pd.context = c;
  pd->pd.handle = r.value();
  pd->id = r.value();
  ctx->children++;
  ctx->track(ctx->pds, pd);
  return &pd->pd;
}
UROCE_DEFAULT_VERSION(uroce_alloc_pd_1_1, ibv_alloc_pd, "IBVERBS_1.1");

/// Also frees a parent domain (ibv_alloc_parent_domain(3)). EBUSY: AHs on it; a PD with parent
/// domains made from it; a parent domain with objects created through it (domain.cc).
UROCE_EXPORT int uroce_dealloc_pd_1_1(ibv_pd* p) {
  Pd* pd = from_ibv<Pd>(p);
  Context* ctx = ctx_of(p->context);
  if (pd->ahs.load() > 0 || pd->users.load() > 0) return EBUSY;
  if (pd->protection) {  // a parent domain: the engine PD is its protection domain's
    pd->protection->users--;
    if (pd->td) pd->td->users--;
    ctx->children--;
    ctx->untrack(ctx->pds, pd);
    delete pd;
    return 0;
  }
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    uroce::Status s = ctx->rt->engine->dealloc_pd(pd->id);
    if (!s) return s.code();
  }
  ctx->children--;
  ctx->untrack(ctx->pds, pd);
  delete pd;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_dealloc_pd_1_1, ibv_dealloc_pd, "IBVERBS_1.1");

namespace {

namespace t = uroce::transport;
static_assert(same_value(t::kAccessOnDemand, IBV_ACCESS_ON_DEMAND));
static_assert(same_value(t::kAccessZeroBased, IBV_ACCESS_ZERO_BASED));

/// The engine's Access bits of an ibv_access_flags value; optional and unneeded bits dropped.
uint32_t engine_access(unsigned int access) {
  return access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                   IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |
                   kIbvAccessFlushGlobal);
}

ibv_mr* reg(ibv_pd* p, void* addr, size_t len, uint64_t iova, unsigned int access) {
  if (!p) {
    errno = EINVAL;
    return nullptr;
  }
  access &= ~static_cast<unsigned int>(IBV_ACCESS_OPTIONAL_RANGE);
  if (access & IBV_ACCESS_ZERO_BASED) {
    // ibv_reg_mr(3): offsets from the MR's start, i.e. iova 0; contradicting an explicit
    // non-zero iova is an error.
    if (iova != 0 && iova != reinterpret_cast<uintptr_t>(addr)) {
      errno = EINVAL;
      return nullptr;
    }
    iova = 0;
  }
  // FLUSH to persistence: not a device capability (no persistent memory domain), so EINVAL as
  // the kernel's ib_check_mr_access() answers for a flush type the device lacks.
  if (access & kIbvAccessFlushPersistent) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* pd = from_ibv<Pd>(p);
  Context* ctx = ctx_of(p->context);
  if (refuse_inherited(ctx->rt) || refuse_gone(ctx->rt)) {
    errno = EIO;
    return nullptr;
  }
  const uint32_t acc = engine_access(access);
  uroce::Result<t::MrKeys> r = uroce::Status::invalid();
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    r = ctx->rt->engine->reg_mr(pd->id, reinterpret_cast<uintptr_t>(addr), len, iova, acc);
  }
  if (!r) {
    errno = r.status().code();
    return nullptr;
  }
  auto* mr = new Mr();
  std::memset(&mr->mr, 0, sizeof mr->mr);
  mr->mr.context = p->context;
  mr->mr.pd = p;
  mr->mr.addr = addr;
  mr->mr.length = len;
  mr->mr.handle = r->lkey;
  mr->mr.lkey = r->lkey;
  mr->mr.rkey = r->rkey;
  mr->iova = iova;
  mr->access = acc;
  hold_domain(p);
  ctx->track(ctx->mrs, mr);
  return &mr->mr;
}

}  // namespace

UROCE_EXPORT ibv_mr* uroce_reg_mr_1_1(ibv_pd* pd, void* addr, size_t len, int access) {
  return reg(pd, addr, len, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}
UROCE_DEFAULT_VERSION(uroce_reg_mr_1_1, ibv_reg_mr, "IBVERBS_1.1");

UROCE_EXPORT ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t len, uint64_t iova,
                                     int access) {
  return reg(pd, addr, len, iova, static_cast<unsigned>(access));
}

UROCE_EXPORT ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t len, uint64_t iova,
                                      unsigned int access) {
  return reg(pd, addr, len, iova, access);
}

/// ibv_rereg_mr(3). Every check is made before anything changes, so a failure always leaves the
/// old MR valid and unchanged: IBV_REREG_MR_ERR_INPUT with errno EINVAL (flags 0 or unknown,
/// CHANGE_TRANSLATION without addr and length or those without it, CHANGE_PD without a PD of
/// this context, access rules of ibv_reg_mr), EBUSY (a memory window is bound to the MR) or
/// EOPNOTSUPP (ON_DEMAND where it cannot be served). The keys stay the same. The new iova:
/// with CHANGE_TRANSLATION the new addr (0 with ZERO_BASED); otherwise unchanged, or 0 when
/// CHANGE_ACCESS adds ZERO_BASED.
UROCE_EXPORT int ibv_rereg_mr(ibv_mr* m, int flags, ibv_pd* new_pd, void* addr, size_t len,
                              int access_in) {
  auto input_error = [](int err) {
    errno = err;
    return IBV_REREG_MR_ERR_INPUT;
  };
  if (!m || flags == 0 || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED)) return input_error(EINVAL);
  const bool xlat = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
  if (xlat ? (!addr || !len) : (addr || len)) return input_error(EINVAL);
  if ((flags & IBV_REREG_MR_CHANGE_PD) && (!new_pd || new_pd->context != m->context))
    return input_error(EINVAL);
  Mr* mr = from_ibv<Mr>(m);
  Context* ctx = ctx_of(m->context);
  ibv_pd* pd = (flags & IBV_REREG_MR_CHANGE_PD) ? new_pd : m->pd;
  uint64_t host = reinterpret_cast<uintptr_t>(xlat ? addr : m->addr);
  uint64_t length = xlat ? len : m->length;
  uint64_t iova = xlat ? host : mr->iova;
  uint32_t acc = mr->access;
  if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
    const unsigned a =
        static_cast<unsigned>(access_in) & ~static_cast<unsigned>(IBV_ACCESS_OPTIONAL_RANGE);
    acc = engine_access(a);
    if (a & IBV_ACCESS_ZERO_BASED) iova = 0;
  }
  uroce::Status s;
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    s = ctx->rt->engine->rereg_mr(m->lkey, from_ibv<Pd>(pd)->id, host, length, iova, acc);
  }
  if (!s) return input_error(s.code());
  if (pd != m->pd) {
    hold_domain(pd);
    release_domain(m->pd);
  }
  m->pd = pd;
  m->addr = reinterpret_cast<void*>(host);
  m->length = length;
  mr->iova = iova;
  mr->access = acc;
  return 0;
}

UROCE_EXPORT int uroce_dereg_mr_1_1(ibv_mr* m) {
  Context* ctx = ctx_of(m->context);
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    uroce::Status s = ctx->rt->engine->dereg_mr(m->lkey);
    if (!s) return s.code();
  }
  release_domain(m->pd);
  ctx->untrack(ctx->mrs, from_ibv<Mr>(m));
  delete from_ibv<Mr>(m);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_dereg_mr_1_1, ibv_dereg_mr, "IBVERBS_1.1");

namespace uroce::verbs {

/// ibv_advise_mr(3): the prefetch advices on any MR (uroce pins nothing, so every MR pages on
/// demand): each SGE is checked against its MR, then (PREFETCH, PREFETCH_WRITE) its pages are
/// faulted in, readable or writable, outside the engine lock. Always synchronous, so FLUSH
/// holds. EOPNOTSUPP: another advice; EINVAL: unknown flags, no SGEs; ENOENT: an lkey of no
/// MR of this PD; EFAULT: an SGE outside its MR, or pages there not mapped; EPERM:
/// PREFETCH_WRITE on an MR without local write.
int op_advise_mr(ibv_pd* p, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg,
                 uint32_t num_sge) {
  if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH && advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
      advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
    return EOPNOTSUPP;
  if ((flags & ~static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) || !sg || num_sge == 0)
    return EINVAL;
  const bool write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
  Context* ctx = ctx_of(p->context);
  const uint32_t pd = from_ibv<Pd>(p)->id;
  std::vector<uint64_t> hosts(num_sge);
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    for (uint32_t i = 0; i < num_sge; ++i) {
      auto r = ctx->rt->engine->prefetch_mr(pd, sg[i].lkey, sg[i].addr, sg[i].length, write);
      if (!r) return r.status().code();
      hosts[i] = r.value();
    }
  }
  if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) return 0;
  for (uint32_t i = 0; i < num_sge; ++i) {
    uroce::Status s = t::Engine::populate(hosts[i], sg[i].length, write);
    if (!s) return s.code();
  }
  return 0;
}

}  // namespace uroce::verbs

// ---- Memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)) ---------------------------------------

namespace uroce::verbs {

namespace t = transport;
static_assert(same_value(t::kAccessMwBind, IBV_ACCESS_MW_BIND));
static_assert(static_cast<int>(t::MwType::kType2) == IBV_MW_TYPE_2);

ibv_mw* op_alloc_mw(ibv_pd* p, ibv_mw_type type) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
    errno = EINVAL;
    return nullptr;
  }
  Context* ctx = ctx_of(p->context);
  uroce::Result<uint32_t> r = uroce::Status::invalid();
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    r = ctx->rt->engine->alloc_mw(from_ibv<Pd>(p)->id, static_cast<t::MwType>(type));
  }
  if (!r) {
    errno = r.status().code();
    return nullptr;
  }
  auto* mw = new Mw();
  std::memset(&mw->mw, 0, sizeof mw->mw);
  mw->mw.context = p->context;
  mw->mw.pd = p;
  mw->mw.rkey = r.value();
  mw->mw.handle = r.value();
  mw->mw.type = type;
  hold_domain(p);
  ctx->track(ctx->mws, mw);
  return &mw->mw;
}

int op_dealloc_mw(ibv_mw* m) {
  Context* ctx = ctx_of(m->context);
  {
    std::lock_guard<std::mutex> g(ctx->rt->mu);
    uroce::Status s = ctx->rt->engine->dealloc_mw(m->handle);
    if (!s) return s.code();
  }
  release_domain(m->pd);
  ctx->untrack(ctx->mws, from_ibv<Mw>(m));
  delete from_ibv<Mw>(m);
  return 0;
}

void to_bind_wr(const ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& b, t::SendWr* s) {
  s->opcode = t::WrOpcode::kBindMw;
  s->mw_rkey = mw->rkey;
  s->rkey = rkey;
  s->bind_lkey = b.mr ? b.mr->lkey : 0;
  s->bind_addr = b.addr;
  s->bind_len = b.length;
  // Local write means nothing for a window (the suite passes it); other bits the engine does
  // not grant (ZERO_BASED) fail the bind with MW_BIND_ERR.
  s->bind_access = b.mw_access_flags & ~static_cast<unsigned>(IBV_ACCESS_LOCAL_WRITE);
  s->sg = nullptr;
  s->num_sge = 0;
}

int op_bind_mw(ibv_qp* q, ibv_mw* mw, ibv_mw_bind* bind) {
  // ibv_bind_mw(3): type 1 windows, on RC or UC QPs; the new R_Key is returned in mw->rkey
  // at once, the bind itself completes in order on the send queue (IBV_WC_BIND_MW).
  if (!mw || !bind || mw->type != IBV_MW_TYPE_1 ||
      (q->qp_type != IBV_QPT_RC && q->qp_type != IBV_QPT_UC))
    return EINVAL;
  Qp* qp = from_ibv<Qp>(q);
  Runtime* rt = qp->ctx->rt;
  t::SendWr s;
  s.wr_id = bind->wr_id;
  s.send_flags = bind->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED);
  const uint32_t rkey = ibv_inc_rkey(mw->rkey);
  to_bind_wr(mw, rkey, bind->bind_info, &s);
  std::lock_guard<std::mutex> g(rt->mu);
  Timestamp ts = now();
  uroce::Status st = rt->engine->post_send(qp->qpn, s, ts);
  drive_post_locked(rt, ts);
  if (!st) return st.code();
  mw->rkey = rkey;
  return 0;
}

}  // namespace uroce::verbs
