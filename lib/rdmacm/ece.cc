/**
 * @file ece.cc
 * @brief Enhanced Connection Establishment through the CM (rdma_set_local_ece(3),
 * rdma_get_remote_ece(3)), as rdma-core's librdmacm does it: a QP made by rdma_create_qp
 * offers what ibv_query_ece reports (uroce: selective repeat, docs/loss-recovery.md); the REQ
 * carries the offer (vendor id in the REQ, options in the MAD's attribute modifier); the
 * passive side sets the requester's options on its QP when the vendors match (else none) and
 * answers in the REP with the requester's vendor id and what its QP took; the active side sets
 * the REP's options before RTR (none when the REP carries no vendor, as from a kernel peer
 * without ECE). A QP the program made itself takes no part.
 */
#include <cerrno>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"

namespace uroce::rdmacm {

int init_ece(Id* id, ibv_qp* qp) {
  ibv_ece ece{};
  int r = ibv_query_ece(qp, &ece);
  if (r && r != EOPNOTSUPP) return r;
  id->local_ece.vendor_id = ece.vendor_id;
  id->local_ece.options = ece.options;
  if (!id->remote_ece.vendor_id) return 0;  // made for rdma_connect: the offer is set
  // Made for a CONNECT_REQUEST: take the requester's options if we speak its vendor's.
  ibv_ece take{id->local_ece.vendor_id, 0, 0};
  if (id->remote_ece.vendor_id == id->local_ece.vendor_id) take.options = id->remote_ece.options;
  r = ibv_set_ece(qp, &take);
  if (r && r != EOPNOTSUPP) {
    take.options = 0;  // options this QP cannot take: none
    r = ibv_set_ece(qp, &take);
    if (r && r != EOPNOTSUPP) return r;
  }
  r = ibv_query_ece(qp, &ece);
  if (r && r != EOPNOTSUPP) return r;
  id->local_ece.options = ece.options;
  return 0;
}

int conn_resp_ece(Id* id) {
  if (!id->id.qp) return 0;
  ibv_ece take{id->local_ece.vendor_id, 0, 0};
  if (id->remote_ece.vendor_id && id->remote_ece.vendor_id == id->local_ece.vendor_id)
    take.options = id->remote_ece.options & id->local_ece.options;
  const int r = ibv_set_ece(id->id.qp, &take);
  return r == EOPNOTSUPP ? 0 : r;
}

}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;

UROCE_CM_EXPORT int rdma_set_local_ece(rdma_cm_id* cid, ibv_ece* ece) {
  if (!cid || !ece || !ece->vendor_id) return fail(EINVAL);
  std::lock_guard<std::mutex> g(Service::get().mu);
  Id* id = id_of(cid);
  id->local_ece.vendor_id = ece->vendor_id;
  id->local_ece.options = ece->options;
  return 0;
}

UROCE_CM_EXPORT int rdma_get_remote_ece(rdma_cm_id* cid, ibv_ece* ece) {
  if (!cid || !ece) return fail(EINVAL);
  std::lock_guard<std::mutex> g(Service::get().mu);
  const Id* id = id_of(cid);
  ece->vendor_id = id->remote_ece.vendor_id;
  ece->options = id->remote_ece.options;
  ece->comp_mask = 0;
  return 0;
}
