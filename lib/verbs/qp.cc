/**
 * @file qp.cc
 * @brief Queue pairs: ibv_create_qp(3), ibv_create_qp_ex(3), ibv_modify_qp(3),
 * ibv_query_qp(3), ibv_destroy_qp(3), ibv_post_send(3), ibv_post_recv(3) for RC, UC and UD.
 *
 * Work requests are converted one by one to the engine's SendWr/RecvWr (their numeric values
 * equal rdma-core's; static_asserts below). On the first refused WR, *bad_wr points at it and
 * its errno is returned; the WRs before it stay posted (ibv_post_send(3)).
 */
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/domain.h"
#include "verbs/objects.h"
#include "verbs/recv_chain.h"
#include "verbs/scratch.h"
#include "verbs/symver.h"

namespace uroce::verbs {

namespace t = transport;

static_assert(static_cast<int>(t::QpType::kUd) == IBV_QPT_UD &&
              static_cast<int>(t::QpType::kXrcSend) == IBV_QPT_XRC_SEND &&
              static_cast<int>(t::QpType::kXrcRecv) == IBV_QPT_XRC_RECV);
static_assert(static_cast<int>(t::QpState::kErr) == IBV_QPS_ERR);
static_assert(same_value(t::kAttrDestQpn, IBV_QP_DEST_QPN) && same_value(t::kAttrCap, IBV_QP_CAP) &&
              same_value(t::kAttrAv, IBV_QP_AV) &&
              same_value(t::kAttrMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC) &&
              same_value(t::kAttrMinRnrTimer, IBV_QP_MIN_RNR_TIMER));
static_assert(same_value(t::kAccessRemoteAtomic, IBV_ACCESS_REMOTE_ATOMIC) &&
              same_value(t::kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE));
static_assert(static_cast<int>(t::WrOpcode::kSendWithInv) == IBV_WR_SEND_WITH_INV);
static_assert(static_cast<int>(t::WrOpcode::kAtomicFetchAndAdd) == IBV_WR_ATOMIC_FETCH_AND_ADD);
static_assert(static_cast<int>(t::WrOpcode::kAtomicWrite) == IBV_WR_ATOMIC_WRITE &&
              static_cast<int>(t::WrOpcode::kFlush) == kIbvWrFlush);
static_assert(same_value(t::kAccessFlushGlobal, kIbvAccessFlushGlobal) &&
              same_value(t::kAccessFlushPersistent, kIbvAccessFlushPersistent));
static_assert(same_value(t::kSendInline, IBV_SEND_INLINE) &&
              same_value(t::kSendSolicited, IBV_SEND_SOLICITED) &&
              same_value(t::kSendSignaled, IBV_SEND_SIGNALED) &&
              same_value(t::kSendFence, IBV_SEND_FENCE));
static_assert(sizeof(t::Sge) == sizeof(ibv_sge));

namespace {

constexpr uint32_t kKnownAttrMask = (1u << 21) - 1;  // IBV_QP_STATE .. IBV_QP_DEST_QPN

/// The opcode as the integer a C program stored (any value; an out-of-range one must not be
/// read as the C++ enum type).
int raw_opcode(const ibv_send_wr* wr) {
  int v;
  static_assert(sizeof wr->opcode == sizeof v);
  std::memcpy(&v, &wr->opcode, sizeof v);
  return v;
}

bool opcode_ok(ibv_qp_type type, int op) {
  if (type == IBV_QPT_XRC_RECV) return false;  // no send queue
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM: return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_XRC_SEND;
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV: return type == IBV_QPT_RC || type == IBV_QPT_XRC_SEND;
    case IBV_WR_LOCAL_INV:
    case IBV_WR_BIND_MW:
      return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_XRC_SEND;
    // IBV_WR_ATOMIC_WRITE and IBV_WR_FLUSH: ibv_send_wr has no field for the 8 bytes or the
    // placement type and level; ibv_wr_atomic_write(3) and ibv_wr_flush(3) post them.
    default: return false;
  }
}

}  // namespace

int to_av(Runtime* rt, const ibv_ah_attr& a, t::AddressVector* av) {
  // RoCE has no LIDs: the GRH is the address (IBA Annex 17).
  if (!a.is_global) return EINVAL;
  if (a.grh.sgid_index >= rt->gids.size()) return EINVAL;
  if (a.port_num > 1) return EINVAL;
  std::memcpy(av->dgid.raw.data(), a.grh.dgid.raw, 16);
  av->sgid_index = a.grh.sgid_index;
  av->traffic_class = a.grh.traffic_class;
  av->hop_limit = a.grh.hop_limit ? a.grh.hop_limit : 64;
  av->flow_label = a.grh.flow_label;
  av->sl = a.sl;
  av->udp_sport = 0;
  return 0;
}

void from_av(const t::AddressVector& av, ibv_ah_attr* a) {
  std::memset(a, 0, sizeof *a);
  a->is_global = 1;
  std::memcpy(a->grh.dgid.raw, av.dgid.raw.data(), 16);
  a->grh.sgid_index = av.sgid_index;
  a->grh.traffic_class = av.traffic_class;
  a->grh.hop_limit = av.hop_limit;
  a->grh.flow_label = av.flow_label;
  a->sl = av.sl;
  a->port_num = 1;
}

namespace {

/// The stats segment's type number (lib/stats layout.h): 0 RC, 1 UC, 2 UD, 3 XRC_SEND,
/// 4 XRC_RECV.
uint32_t stats_type(ibv_qp_type t) {
  switch (t) {
    case IBV_QPT_XRC_SEND: return 3;
    case IBV_QPT_XRC_RECV: return 4;
    default: return static_cast<uint32_t>(t - IBV_QPT_RC);
  }
}

/// Creates a QP: RC, UC, UD with p and both CQs; XRC_SEND with p and a send CQ (no receive
/// side); XRC_RECV with xrcd only (no PD, CQs or queues: requests name its domain's XRC SRQs).
ibv_qp* create_qp_common(ibv_pd* p, ibv_qp_init_attr_ex* ia, bool with_ex, Xrcd* xrcd = nullptr) {
  if (!ia) {
    errno = EINVAL;
    return nullptr;
  }
  const ibv_qp_type type = ia->qp_type;
  if (type != IBV_QPT_RC && type != IBV_QPT_UC && type != IBV_QPT_UD && type != IBV_QPT_XRC_SEND &&
      type != IBV_QPT_XRC_RECV) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  const bool xrc_recv = type == IBV_QPT_XRC_RECV;
  const bool xrc_send = type == IBV_QPT_XRC_SEND;
  if (xrc_recv ? !xrcd : (!p || !ia->send_cq || (!xrc_send && !ia->recv_cq))) {
    errno = EINVAL;
    return nullptr;
  }
  if (xrc_recv) p = nullptr;
  Context* ctx = ctx_of(xrc_recv ? xrcd->xrcd.context : p->context);
  if (refuse_inherited(ctx->rt) || refuse_gone(ctx->rt)) {
    errno = EIO;
    return nullptr;
  }
  Pd* pd = p ? from_ibv<Pd>(p) : nullptr;
  Cq* scq = xrc_recv ? nullptr : cq_of(ia->send_cq);
  Cq* rcq = xrc_recv || xrc_send ? nullptr : cq_of(ia->recv_cq);
  Srq* srq = ia->srq && !xrc_recv && !xrc_send ? from_ibv<Srq>(ia->srq) : nullptr;
  t::QpInitAttr e;
  e.type = static_cast<t::QpType>(type);
  e.pd = pd ? pd->id : 0;
  e.xrcd = xrcd ? xrcd->id : 0;
  e.send_cq = scq ? scq->id : 0;
  e.recv_cq = rcq ? rcq->id : 0;
  e.srq = srq ? srq->id : 0;
  e.max_send_wr = ia->cap.max_send_wr;
  e.max_recv_wr = srq ? 0 : ia->cap.max_recv_wr;
  e.max_send_sge = ia->cap.max_send_sge;
  e.max_recv_sge = srq ? 0 : ia->cap.max_recv_sge;
  e.max_inline_data = ia->cap.max_inline_data;
  e.sq_sig_all = ia->sq_sig_all != 0;
  auto* qp = new_obj<Qp>(pd, kResQp);
  if (!qp) return nullptr;
  std::memset(&qp->qpx, 0, sizeof qp->qpx);
  Runtime* rt = ctx->rt;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    auto r = rt->engine->create_qp(e);
    if (!r) {
      delete_obj(qp, kResQp);
      errno = r.status().code();
      return nullptr;
    }
    qp->qpn = r.value();
    rt->qps[qp->qpn] = qp;
    qp->qpx.qp_base.qp_type = type;  // stats_add_qp reads it
    stats_add_qp(rt, qp, stats_type(type));
  }
  ia->cap.max_send_wr = e.max_send_wr;
  ia->cap.max_send_sge = e.max_send_sge;
  ia->cap.max_inline_data = e.max_inline_data;
  if (!srq) {
    ia->cap.max_recv_wr = e.max_recv_wr;
    ia->cap.max_recv_sge = e.max_recv_sge;
  }
  qp->ctx = ctx;
  qp->pd = pd;
  qp->send_cq = scq;
  qp->recv_cq = rcq;
  qp->srq = srq;
  qp->xrcd = xrcd;
  if (scq) scq->qps++;
  if (rcq) rcq->qps++;
  if (srq) srq->qps++;
  if (p) hold_domain(p);
  ibv_qp* b = qp->base();
  b->context = ctx->ibv();
  b->qp_context = ia->qp_context;
  b->pd = p;
  b->send_cq = scq ? ia->send_cq : nullptr;
  b->recv_cq = rcq ? ia->recv_cq : nullptr;
  b->srq = srq ? ia->srq : nullptr;
  b->handle = qp->qpn;
  b->qp_num = qp->qpn;
  b->state = IBV_QPS_RESET;
  b->qp_type = type;
  pthread_mutex_init(&b->mutex, nullptr);
  pthread_cond_init(&b->cond, nullptr);
  if (with_ex) {
    qp->has_ex = true;
    qp->send_ops_flags = ia->send_ops_flags;
    fill_qp_ex(qp);
  }
  ctx->children++;
  return b;
}

}  // namespace

ibv_qp* op_create_qp_ex(ibv_context* c, ibv_qp_init_attr_ex* ia) {
  constexpr uint32_t kKnown = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                              IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  // An XRC_RECV QP has a domain instead of a PD (ibv_create_qp_ex(3)).
  Xrcd* xrcd = nullptr;
  if (ia && ia->qp_type == IBV_QPT_XRC_RECV) {
    if (!(ia->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !ia->xrcd || ia->xrcd->context != c) {
      errno = EINVAL;
      return nullptr;
    }
    xrcd = from_ibv<Xrcd>(ia->xrcd);
  } else if (!ia || !(ia->comp_mask & IBV_QP_INIT_ATTR_PD) || !ia->pd || ia->pd->context != c) {
    errno = EINVAL;
    return nullptr;
  }
  if (ia->comp_mask & ~kKnown) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if ((ia->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && ia->create_flags) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  bool with_ex = (ia->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
  if (with_ex) {
    constexpr uint64_t kOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                              IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                              IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                              IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
                              IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW |
                              IBV_QP_EX_WITH_ATOMIC_WRITE | kIbvQpExWithFlush;
    if (ia->send_ops_flags & ~kOps) {
      errno = EOPNOTSUPP;
      return nullptr;
    }
  }
  if (with_ex && ia->qp_type == IBV_QPT_XRC_RECV) {
    errno = EINVAL;  // no send queue to post to
    return nullptr;
  }
  return create_qp_common(xrcd ? nullptr : ia->pd, ia, with_ex, xrcd);
}

int op_post_send(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad) {
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  Scratch<t::Sge, t::kMaxSge> scratch;
  t::Sge* sges = scratch.v;
  int ret = 0;
  if (refuse_inherited(rt)) {
    *bad = wr;
    return EIO;
  }
  std::lock_guard<std::mutex> g(rt->mu);
  Timestamp ts = now();
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > t::kMaxSge ||
        !opcode_ok(q->qp_type, raw_opcode(wr))) {
      ret = EINVAL;
      break;
    }
    t::SendWr s;
    s.wr_id = wr->wr_id;
    s.opcode = static_cast<t::WrOpcode>(wr->opcode);
    s.send_flags = wr->send_flags &
                   (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
    for (int i = 0; i < wr->num_sge; ++i)
      sges[i] = t::Sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
    s.sg = sges;
    s.num_sge = static_cast<uint32_t>(wr->num_sge);
    if (wr->opcode == IBV_WR_SEND_WITH_INV || wr->opcode == IBV_WR_LOCAL_INV)
      s.invalidate_rkey = wr->invalidate_rkey;
    else
      s.imm_data = wr->imm_data;
    if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
      s.remote_addr = wr->wr.atomic.remote_addr;
      s.rkey = wr->wr.atomic.rkey;
      s.compare_add = wr->wr.atomic.compare_add;
      s.swap = wr->wr.atomic.swap;
    } else if (q->qp_type != IBV_QPT_UD) {
      s.remote_addr = wr->wr.rdma.remote_addr;
      s.rkey = wr->wr.rdma.rkey;
    }
    if (wr->opcode == IBV_WR_BIND_MW) {
      // ibv_bind_mw(3): a type 2 window is bound by this WR (a type 1 by ibv_bind_mw).
      const ibv_mw* mw = wr->bind_mw.mw;
      if (!mw || mw->type != IBV_MW_TYPE_2 || mw->context != q->context) {
        ret = EINVAL;
        break;
      }
      to_bind_wr(mw, wr->bind_mw.rkey, wr->bind_mw.bind_info, &s);
    }
    if (q->qp_type == IBV_QPT_XRC_SEND) s.xrc_srqn = wr->qp_type.xrc.remote_srqn;
    if (q->qp_type == IBV_QPT_UD) {
      if (!wr->wr.ud.ah) {
        ret = EINVAL;
        break;
      }
      s.ah = &from_ibv<Ah>(wr->wr.ud.ah)->av;
      s.remote_qpn = wr->wr.ud.remote_qpn;
      s.remote_qkey = wr->wr.ud.remote_qkey;
    }
    Status st = rt->engine->post_send(qp->qpn, s, ts);
    if (!st) {
      ret = st.code();
      break;
    }
  }
  if (ret && bad) *bad = wr;
  drive_post_locked(rt, ts);
  return ret;
}

int op_post_recv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  return post_recv_chain(rt, wr, bad,
                         [&](const t::RecvWr& r) { return rt->engine->post_recv(qp->qpn, r); });
}

}  // namespace uroce::verbs

using namespace uroce::verbs;  // NOLINT: C entry points below
namespace t = uroce::transport;

UROCE_EXPORT ibv_qp* uroce_create_qp_1_1(ibv_pd* pd, ibv_qp_init_attr* ia) {
  if (!ia) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_init_attr_ex ex;
  std::memset(&ex, 0, sizeof ex);
  std::memcpy(&ex, ia, sizeof *ia);
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = create_qp_common(pd, &ex, false);
  if (qp) ia->cap = ex.cap;
  return qp;
}
UROCE_DEFAULT_VERSION(uroce_create_qp_1_1, ibv_create_qp, "IBVERBS_1.1");

UROCE_EXPORT ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* q) {
  Qp* qp = qp_of(q);
  if (!qp->has_ex) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return &qp->qpx;
}

UROCE_EXPORT int uroce_modify_qp_1_1(ibv_qp* q, ibv_qp_attr* a, int mask_in) {
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  uint32_t mask = static_cast<uint32_t>(mask_in);
  if (!a) return EINVAL;
  // What the kernel does with a mask before its checks: bits past IBV_QP_DEST_QPN are
  // EOPNOTSUPP (rdma-core's ibv_cmd_modify_qp, the kernel's ib_uverbs_modify_qp), and an XRC
  // QP's mask loses the attributes of the side it lacks (uverbs_cmd.c modify_qp_mask).
  if (mask & ~kKnownAttrMask) return EOPNOTSUPP;
  if (refuse_inherited(rt) || refuse_gone(rt)) return EIO;
  if (q->qp_type == IBV_QPT_XRC_SEND)
    mask &= ~static_cast<uint32_t>(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  if (q->qp_type == IBV_QPT_XRC_RECV)
    mask &= ~static_cast<uint32_t>(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
  t::QpAttr e;
  e.qp_state = static_cast<t::QpState>(a->qp_state);
  e.cur_qp_state = static_cast<t::QpState>(a->cur_qp_state);
  e.path_mtu = static_cast<uint8_t>(a->path_mtu);
  e.qkey = a->qkey;
  e.rq_psn = a->rq_psn;
  e.sq_psn = a->sq_psn;
  e.dest_qp_num = a->dest_qp_num & 0xffffff;  // 24 bits, as rxe's BTH and mlx5's QP context
  // Bits that mean something for MRs only (MW_BIND, ZERO_BASED, ON_DEMAND, HUGETLB, the
  // optional range) are ignored, as the kernel's providers do: rdma-core's suite passes its
  // MRs' access flags, ON_DEMAND included, to its QPs.
  e.qp_access_flags =
      static_cast<uint32_t>(a->qp_access_flags) &
      ~static_cast<uint32_t>(IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |
                             IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE);
  if (mask & IBV_QP_AV) {
    int r = to_av(rt, a->ah_attr, &e.av);
    if (r) return r;
  }
  if (mask & IBV_QP_ALT_PATH) return EINVAL;  // no alternate paths (APM) on RoCE here
  if ((mask & IBV_QP_PORT) && a->port_num != 1) return EINVAL;
  e.pkey_index = a->pkey_index;
  e.port_num = a->port_num;
  e.max_rd_atomic = a->max_rd_atomic;
  e.max_dest_rd_atomic = a->max_dest_rd_atomic;
  // IBA's fields are 5 (RNR timer) and 3 bits (retry counts). The kernel refuses no larger
  // value: rxe keeps it (its RNR NAK takes the timer's low 5 bits), mlx5 truncates it into
  // the QP context. A larger timer becomes its low 5 bits here, a larger count 7, what the
  // RDMA CM makes of one (cma_connect_ib: min_t(u8, 7, retry_count)).
  e.min_rnr_timer = a->min_rnr_timer & 0x1f;
  e.timeout = a->timeout;
  e.retry_cnt = std::min<uint8_t>(a->retry_cnt, 7);
  e.rnr_retry = std::min<uint8_t>(a->rnr_retry, 7);
  e.sq_draining = a->sq_draining;
  e.en_sqd_async_notify = a->en_sqd_async_notify;
  e.max_send_wr = a->cap.max_send_wr;
  e.max_recv_wr = a->cap.max_recv_wr;
  e.max_send_sge = a->cap.max_send_sge;
  e.max_recv_sge = a->cap.max_recv_sge;
  e.max_inline_data = a->cap.max_inline_data;
  std::lock_guard<std::mutex> g(rt->mu);
  rt->engine->advance_clock(now());  // the time of the completions a move to ERR flushes
  uroce::Status s = rt->engine->modify_qp(qp->qpn, e, mask);
  if (!s) return s.code();
  stats_update_qp(rt, qp);
  if (mask & IBV_QP_STATE) q->state = a->qp_state;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_modify_qp_1_1, ibv_modify_qp, "IBVERBS_1.1");

UROCE_EXPORT int uroce_query_qp_1_1(ibv_qp* q, ibv_qp_attr* a, int, ibv_qp_init_attr* init) {
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  // As every uverbs command after the kernel removed the device (or on a context this process
  // inherited, docs/limits.md "fork").
  if (refuse_inherited(rt) || refuse_gone(rt)) return EIO;
  t::QpAttr e;
  t::QpInitAttr ie;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    uroce::Status s = rt->engine->query_qp(qp->qpn, &e, &ie);
    if (!s) return s.code();
  }
  std::memset(a, 0, sizeof *a);
  a->qp_state = static_cast<ibv_qp_state>(e.qp_state);
  a->cur_qp_state = static_cast<ibv_qp_state>(e.qp_state);
  a->path_mtu = static_cast<ibv_mtu>(e.path_mtu);
  a->path_mig_state = IBV_MIG_MIGRATED;
  a->qkey = e.qkey;
  a->rq_psn = e.rq_psn;
  a->sq_psn = e.sq_psn;
  a->dest_qp_num = e.dest_qp_num;
  a->qp_access_flags = static_cast<unsigned int>(e.qp_access_flags);
  a->cap.max_send_wr = e.max_send_wr ? e.max_send_wr : ie.max_send_wr;
  a->cap.max_recv_wr = e.max_recv_wr ? e.max_recv_wr : ie.max_recv_wr;
  a->cap.max_send_sge = e.max_send_sge ? e.max_send_sge : ie.max_send_sge;
  a->cap.max_recv_sge = e.max_recv_sge ? e.max_recv_sge : ie.max_recv_sge;
  a->cap.max_inline_data = e.max_inline_data ? e.max_inline_data : ie.max_inline_data;
  if (q->qp_type != IBV_QPT_UD) from_av(e.av, &a->ah_attr);
  a->pkey_index = e.pkey_index;
  a->sq_draining = e.sq_draining;
  a->max_rd_atomic = e.max_rd_atomic;
  a->max_dest_rd_atomic = e.max_dest_rd_atomic;
  a->min_rnr_timer = e.min_rnr_timer;
  a->port_num = 1;
  a->timeout = e.timeout;
  a->retry_cnt = e.retry_cnt;
  a->rnr_retry = e.rnr_retry;
  a->en_sqd_async_notify = e.en_sqd_async_notify;
  if (init) {
    std::memset(init, 0, sizeof *init);
    init->qp_context = q->qp_context;
    init->send_cq = q->send_cq;
    init->recv_cq = q->recv_cq;
    init->srq = q->srq;
    init->cap = a->cap;
    init->qp_type = q->qp_type;
    init->sq_sig_all = ie.sq_sig_all ? 1 : 0;
  }
  q->state = a->qp_state;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_query_qp_1_1, ibv_query_qp, "IBVERBS_1.1");

UROCE_EXPORT int uroce_destroy_qp_1_1(ibv_qp* q) {
  Qp* qp = qp_of(q);
  Runtime* rt = qp->ctx->rt;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    uroce::Status s = rt->engine->destroy_qp(qp->qpn);
    if (!s) return s.code();
    stats_remove_qp(rt, qp);
    rt->qps.erase(qp->qpn);
  }
  qp->ctx->settle_async(q, &q->mutex, &q->cond, &q->events_completed);
  if (qp->send_cq) qp->send_cq->qps--;
  if (qp->recv_cq) qp->recv_cq->qps--;
  if (qp->srq) qp->srq->qps--;
  if (q->pd) release_domain(q->pd);
  qp->ctx->children--;
  pthread_mutex_destroy(&q->mutex);
  pthread_cond_destroy(&q->cond);
  delete_obj(qp, kResQp);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_destroy_qp_1_1, ibv_destroy_qp, "IBVERBS_1.1");

UROCE_EXPORT int ibv_query_qp_data_in_order(ibv_qp*, ibv_wr_opcode, uint32_t) {
  return 0;  // no in-order data guarantee is reported
}
