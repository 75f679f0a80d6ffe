/**
 * @file domain.cc
 * @brief Thread domains and parent domains: ibv_alloc_td(3), ibv_dealloc_td,
 * ibv_alloc_parent_domain(3) (ibv_dealloc_pd frees one: pd_mr.cc).
 *
 * A parent domain is a Pd whose engine PD is its protection domain's, so every verb that takes
 * an ibv_pd treats the two alike (the man page: "completely interchangeable"). It counts what
 * is created through it (Pd::users) and is EBUSY to ibv_dealloc_pd until those are gone; the
 * PD and the thread domain it names are EBUSY while it exists. Its allocator, when given, holds
 * the objects of the QPs, CQs and SRQs created through it (domain.h).
 *
 * A thread domain changes no locking in uroce: a QP's or CQ's verbs take the device's engine
 * lock, which serialises them with the device's progress thread and with every other context
 * on the device, not only with the application's own threads, so a promise about the
 * application's threads does not make it removable (docs/limits.md, "Completion options").
 */
#include "verbs/domain.h"

#include <cerrno>
#include <cstring>

#include "verbs/objects.h"

namespace uroce::verbs {

ibv_td* op_alloc_td(ibv_context* c, ibv_td_init_attr* attr) {
  if (!attr || attr->comp_mask) {
    errno = EINVAL;
    return nullptr;
  }
  Context* ctx = ctx_of(c);
  auto* td = new Td();
  td->td.context = c;
  ctx->children++;
  ctx->track(ctx->tds, td);
  return &td->td;
}

int op_dealloc_td(ibv_td* t) {
  Td* td = from_ibv<Td>(t);
  if (td->users.load() > 0) return EBUSY;
  Context* ctx = ctx_of(t->context);
  ctx->children--;
  ctx->untrack(ctx->tds, td);
  delete td;
  return 0;
}

ibv_pd* op_alloc_parent_domain(ibv_context* c, ibv_parent_domain_init_attr* attr) {
  constexpr uint32_t kKnown =
      IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  if (!attr || !attr->pd || attr->pd->context != c || (attr->comp_mask & ~kKnown) ||
      (attr->td && attr->td->context != c)) {
    errno = EINVAL;
    return nullptr;
  }
  const bool allocators = attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
  if (allocators && (!attr->alloc || !attr->free)) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* given = from_ibv<Pd>(attr->pd);
  // A parent domain given as the PD stands for its protection domain, as everywhere else.
  Pd* protection = given->protection ? given->protection : given;
  Context* ctx = ctx_of(c);
  auto* pd = new Pd();
  std::memset(&pd->pd, 0, sizeof pd->pd);
  pd->pd.context = c;
  pd->pd.handle = protection->pd.handle;
  pd->id = protection->id;
  pd->protection = protection;
  protection->users++;
  if (attr->td) {
    pd->td = from_ibv<Td>(attr->td);
    pd->td->users++;
  }
  if (allocators) {
    pd->alloc = attr->alloc;
    pd->free = attr->free;
  }
  if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) pd->pd_context = attr->pd_context;
  ctx->children++;
  ctx->track(ctx->pds, pd);
  return &pd->pd;
}

}  // namespace uroce::verbs
