/**
 * @file ep.cc
 * @brief QPs, SRQs and endpoints of an id (rdma_create_qp(3), rdma_create_srq(3),
 * rdma_create_ep(3), rdma_get_request(3)) and the device list (rdma_get_devices(3)).
 *
 * rdma_create_qp creates the CQs (each with its own completion channel) the program did not
 * give, creates the QP on the id's device and PD (the device's default PD when none), and
 * moves it to INIT (a connected QP) or all the way to RTS (UD with RDMA_UDP_QKEY), as
 * librdmacm does; rdma_accept/rdma_connect's response take a connected one further.
 *
 * XRC (an id of type IBV_QPT_XRC_SEND or _RECV, RDMA_PS_IB, as rdma_xserver/rdma_xclient -c x
 * make them): an XRC_RECV QP or XRC SRQ that names no domain gets the device's (Device::xrcd),
 * an XRC SRQ without a CQ completes on the id's receive CQ (made when there is none), and
 * rdma_create_srq makes an XRC SRQ for an XRC_RECV id; the id keeps the PD it was given (an
 * XRC_RECV QP has none), and its CQs go with the SRQ, not the QP, as librdmacm's.
 */
#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"
#include "rdmacm/qp_attr.h"

using namespace uroce::rdmacm;

namespace {

void destroy_cqs(rdma_cm_id* id) {
  if (id->qp_type == IBV_QPT_XRC_RECV && id->srq) return;  // the XRC SRQ's CQ
  if (id->recv_cq) {
    ibv_destroy_cq(id->recv_cq);
    if (id->send_cq && id->send_cq != id->recv_cq) ibv_destroy_cq(id->send_cq);
  } else if (id->send_cq) {
    ibv_destroy_cq(id->send_cq);
  }
  id->recv_cq = id->send_cq = nullptr;
  if (id->recv_cq_channel) ibv_destroy_comp_channel(id->recv_cq_channel);
  if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
    ibv_destroy_comp_channel(id->send_cq_channel);
  id->recv_cq_channel = id->send_cq_channel = nullptr;
}

int create_cqs(rdma_cm_id* id, uint32_t send_size, uint32_t recv_size) {
  if (recv_size) {
    id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
    if (!id->recv_cq_channel) goto err;
    id->recv_cq = ibv_create_cq(id->verbs, static_cast<int>(recv_size), id, id->recv_cq_channel, 0);
    if (!id->recv_cq) goto err;
  }
  if (send_size) {
    id->send_cq_channel = ibv_create_comp_channel(id->verbs);
    if (!id->send_cq_channel) goto err;
    id->send_cq = ibv_create_cq(id->verbs, static_cast<int>(send_size), id, id->send_cq_channel, 0);
    if (!id->send_cq) goto err;
  }
  return 0;
err:
  destroy_cqs(id);
  return -1;
}

/// INIT (connected) or INIT -> RTR -> RTS (UD), attributes from init_qp_attr.
int init_qp(Id* id, ibv_qp* qp) {
  const bool ud = qp->qp_type == IBV_QPT_UD;
  for (ibv_qp_state st : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr a{};
    a.qp_state = st;
    int mask = 0;
    if (int e = init_qp_attr(*id, &a, &mask)) return e;
    if (int e = ibv_modify_qp(qp, &a, mask)) return e;
    if (!ud) break;
  }
  return 0;
}

/// The XRC domain of the id's device (see @file); nullptr + errno when it cannot be opened.
ibv_xrcd* xrcd_of(rdma_cm_id* cid) {
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  Device* d = s.device_of(cid->verbs);
  if (!d) {
    errno = EINVAL;
    return nullptr;
  }
  if (!d->xrcd) {
    ibv_xrcd_init_attr a{};
    a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    a.fd = -1;
    a.oflags = O_CREAT;
    d->xrcd = ibv_open_xrcd(d->verbs, &a);
  }
  return d->xrcd;
}

}  // namespace

UROCE_CM_EXPORT int rdma_create_qp_ex(rdma_cm_id* cid, ibv_qp_init_attr_ex* attr) {
  if (!cid || !attr) return fail(EINVAL);
  if (cid->qp || !cid->verbs) return fail(EINVAL);
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
    attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    attr->pd = cid->pd;
  } else if (attr->pd->context != cid->verbs) {
    return fail(EINVAL);
  }
  if (!attr->pd) return fail(EINVAL);
  if ((cid->recv_cq && attr->recv_cq && cid->recv_cq != attr->recv_cq) ||
      (cid->send_cq && attr->send_cq && cid->send_cq != attr->send_cq))
    return fail(EINVAL);
  if (cid->qp_type == IBV_QPT_XRC_RECV &&
      (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
    attr->xrcd = xrcd_of(cid);
    if (!attr->xrcd) return -1;
    attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
  }
  if (create_cqs(cid, attr->send_cq || cid->send_cq ? 0 : attr->cap.max_send_wr,
                 attr->recv_cq || cid->recv_cq ? 0 : attr->cap.max_recv_wr))
    return -1;
  if (!attr->send_cq) attr->send_cq = cid->send_cq;
  if (!attr->recv_cq) attr->recv_cq = cid->recv_cq;
  if (cid->srq && !attr->srq) attr->srq = cid->srq;
  ibv_qp* qp = ibv_create_qp_ex(cid->verbs, attr);
  if (!qp) {
    int e = errno;
    destroy_cqs(cid);
    return fail(e);
  }
  int e;
  {
    std::lock_guard<std::mutex> g(Service::get().mu);
    e = init_qp(id_of(cid), qp);
    if (!e) e = init_ece(id_of(cid), qp);
  }
  if (e) {
    ibv_destroy_qp(qp);
    destroy_cqs(cid);
    return fail(e);
  }
  cid->pd = qp->pd ? qp->pd : attr->pd;  // an XRC_RECV QP has no PD of its own
  cid->qp = qp;
  return 0;
}

UROCE_CM_EXPORT int rdma_create_qp(rdma_cm_id* cid, ibv_pd* pd, ibv_qp_init_attr* init) {
  if (!cid || !init) return fail(EINVAL);
  ibv_qp_init_attr_ex ex{};
  std::memcpy(&ex, init, sizeof *init);
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd ? pd : cid->pd;
  int r = rdma_create_qp_ex(cid, &ex);
  std::memcpy(init, &ex, sizeof *init);
  return r;
}

UROCE_CM_EXPORT void rdma_destroy_qp(rdma_cm_id* cid) {
  if (!cid) return;
  if (cid->qp) ibv_destroy_qp(cid->qp);
  cid->qp = nullptr;
  destroy_cqs(cid);
}

UROCE_CM_EXPORT int rdma_create_srq_ex(rdma_cm_id* cid, ibv_srq_init_attr_ex* attr) {
  if (!cid || !attr || !cid->verbs) return fail(EINVAL);
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)) return fail(EINVAL);
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
    attr->pd = cid->pd;
    attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
  }
  bool made_cq = false;
  if (attr->srq_type == IBV_SRQT_XRC) {
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
      attr->xrcd = xrcd_of(cid);
      if (!attr->xrcd) return -1;
    }
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
      if (!cid->recv_cq) {
        if (create_cqs(cid, 0, attr->attr.max_wr)) return -1;
        made_cq = true;
      }
      attr->cq = cid->recv_cq;
    }
    attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
  }
  ibv_srq* srq = ibv_create_srq_ex(cid->verbs, attr);
  if (!srq) {
    int e = errno;
    if (made_cq) destroy_cqs(cid);
    return fail(e);
  }
  if (!cid->pd) cid->pd = attr->pd;
  cid->srq = srq;
  return 0;
}

UROCE_CM_EXPORT int rdma_create_srq(rdma_cm_id* cid, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (!cid || !attr) return fail(EINVAL);
  ibv_srq_init_attr_ex ex{};
  std::memcpy(&ex, attr, sizeof *attr);
  ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
  ex.srq_type = cid->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
  ex.pd = pd;
  int r = rdma_create_srq_ex(cid, &ex);
  std::memcpy(attr, &ex, sizeof *attr);
  return r;
}

UROCE_CM_EXPORT void rdma_destroy_srq(rdma_cm_id* cid) {
  if (!cid) return;
  if (cid->srq) ibv_destroy_srq(cid->srq);
  cid->srq = nullptr;
  destroy_cqs(cid);
}

UROCE_CM_EXPORT int rdma_create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd,
                                   ibv_qp_init_attr* qp_init_attr) {
  if (!out || !res) return fail(EINVAL);
  rdma_cm_id* cid = nullptr;
  if (rdma_create_id(nullptr, &cid, nullptr, static_cast<rdma_port_space>(res->ai_port_space)))
    return -1;
  cid->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
  Id* id = id_of(cid);
  if (res->ai_flags & RAI_PASSIVE) {
    if (rdma_bind_addr(cid, res->ai_src_addr)) goto err;
    if (pd) cid->pd = pd;
    if (qp_init_attr) {
      id->ep_qp_attr = std::make_unique<ibv_qp_init_attr>(*qp_init_attr);
      id->ep_qp_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
    }
    *out = cid;
    return 0;
  }
  if (rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr, 2000)) goto err;
  if (rdma_resolve_route(cid, 2000)) goto err;
  if (qp_init_attr) {
    qp_init_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
    if (rdma_create_qp(cid, pd, qp_init_attr)) goto err;
  }
  if (res->ai_connect_len) {
    auto* c = static_cast<const uint8_t*>(res->ai_connect);
    id->connect_data.assign(c, c + res->ai_connect_len);
  }
  *out = cid;
  return 0;
err : {
  int e = errno;
  rdma_destroy_ep(cid);
  return fail(e);
}
}

UROCE_CM_EXPORT void rdma_destroy_ep(rdma_cm_id* cid) {
  if (!cid) return;
  if (cid->qp) rdma_destroy_qp(cid);
  if (cid->srq) rdma_destroy_srq(cid);
  rdma_destroy_id(cid);
}

UROCE_CM_EXPORT int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** out) {
  if (!listen || !out) return fail(EINVAL);
  Id* l = id_of(listen);
  if (!l->sync) return fail(EINVAL);
  if (listen->event) {
    rdma_ack_cm_event(listen->event);
    listen->event = nullptr;
  }
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(listen->channel, &ev)) return -1;
  if (ev->status || ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
    int e = ev->status ? (ev->status < 0 ? -ev->status : ev->status) : EINVAL;
    listen->event = ev;
    return fail(e);
  }
  if (l->ep_qp_attr) {
    ibv_qp_init_attr attr = *l->ep_qp_attr;
    if (rdma_create_qp(ev->id, listen->pd, &attr)) {
      listen->event = ev;
      return -1;
    }
  }
  *out = ev->id;
  (*out)->event = ev;
  return 0;
}

UROCE_CM_EXPORT ibv_context** rdma_get_devices(int* num) {
  Service& s = Service::get();
  std::lock_guard<std::mutex> g(s.mu);
  std::vector<ibv_context*> v;
  for (const LocalAddr& a : s.addrs())
    if (Device* d = s.open_device(a.device);
        d && std::find(v.begin(), v.end(), d->verbs) == v.end())
      v.push_back(d->verbs);
  auto** list = static_cast<ibv_context**>(calloc(v.size() + 1, sizeof(ibv_context*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  std::copy(v.begin(), v.end(), list);
  if (num) *num = static_cast<int>(v.size());
  return list;
}

UROCE_CM_EXPORT void rdma_free_devices(ibv_context** list) { free(list); }
