/**
 * @file ext_api.cc
 * @brief uroce's public verbs extensions (uroce/uroce_ext.h, version node UROCE_1).
 */
#include <infiniband/verbs.h>
#include <uroce/uroce_ext.h>

#include <cerrno>

#include "verbs/objects.h"
#include "verbs/symver.h"

namespace uroce::verbs {

UROCE_EXPORT int uroce_qp_set_ooo_placement(ibv_qp* q, int on) {
  if (!q) return EINVAL;
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  return rt->engine->set_ooo_placement(qp->qpn, on != 0) ? 0 : EINVAL;
}

}  // namespace uroce::verbs
