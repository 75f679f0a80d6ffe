/**
 * @file ece.cc
 * @brief Enhanced Connection Establishment (ibv_query_ece(3), ibv_set_ece(3)): how two ends
 * agree on uroce's extensions per QP (selective repeat, peer timestamps). ibv_query_ece reports
 * uroce's vendor id and the options the QP has now (before it is connected: every option uroce
 * offers); the peer's answer, handed to ibv_set_ece before RTR, switches each on or off for
 * this QP.
 * Errors: EINVAL for another vendor's options, unknown option bits, or a QP past INIT.
 */
#include <infiniband/verbs.h>

#include <cerrno>

#include "verbs/identity.h"
#include "verbs/objects.h"
#include "verbs/symver.h"

namespace uroce::verbs {

UROCE_EXPORT int ibv_query_ece(ibv_qp* q, ibv_ece* ece) {
  if (!q || !ece) return EINVAL;
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  transport::QpAttr a;
  transport::QpInitAttr init;
  if (!rt->engine->query_qp(qp->qpn, &a, &init)) return EINVAL;
  ece->vendor_id = kVendorId;
  ece->comp_mask = 0;
  ece->options = 0;
  if (init.type != transport::QpType::kRc) return 0;
  const bool open =
      a.qp_state == transport::QpState::kReset || a.qp_state == transport::QpState::kInit;
  if (open || rt->engine->selective_repeat(qp->qpn)) ece->options |= kEceSelectiveRepeat;
  if (open || rt->engine->peer_timestamps(qp->qpn)) ece->options |= kEcePeerTimestamps;
  return 0;
}

UROCE_EXPORT int ibv_set_ece(ibv_qp* q, ibv_ece* ece) {
  if (!q || !ece) return EINVAL;
  if (ece->vendor_id != kVendorId || (ece->options & ~kEceSupported) || ece->comp_mask)
    return EINVAL;
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  transport::QpInitAttr init;
  if (!rt->engine->query_qp(qp->qpn, nullptr, &init)) return EINVAL;
  if (init.type != transport::QpType::kRc) return ece->options ? EINVAL : 0;
  if (!rt->engine->set_selective_repeat(qp->qpn, (ece->options & kEceSelectiveRepeat) != 0))
    return EINVAL;
  return rt->engine->set_peer_timestamps(qp->qpn, (ece->options & kEcePeerTimestamps) != 0)
             ? 0
             : EINVAL;
}

}  // namespace uroce::verbs
