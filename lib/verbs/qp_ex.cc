/**
 * @file qp_ex.cc
 * @brief The new post-send API of ibv_wr_post(3): ibv_wr_start, the ibv_wr_<opcode> builders,
 * ibv_wr_set_* and ibv_wr_complete/ibv_wr_abort, reached through struct ibv_qp_ex, and
 * rdma-core 45's ibv_wr_flush through the member after it (ibta15.h).
 *
 * Between wr_start and wr_complete the QP's wr_mu is held and WRs are collected in a batch
 * (with copies of their SGE lists and inline data, so the program may reuse its buffers as
 * soon as a setter returns). wr_complete posts them in order; the first refusal is its return
 * value and the rest of the batch is dropped. Builder errors (bad opcode for the QP type, too
 * many SGEs) are remembered and returned by wr_complete.
 */
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "verbs/objects.h"

namespace uroce::verbs {

namespace t = transport;

namespace {

Qp* qx(ibv_qp_ex* q) { return from_ibv<Qp>(q); }

/// Starts a new WR of the batch with the opcode and the qp_ex's wr_id/wr_flags.
WrBatch::Item* begin(ibv_qp_ex* q, t::WrOpcode op, uint64_t allowed_ops) {
  Qp* qp = qx(q);
  if (!(qp->send_ops_flags & allowed_ops) && !qp->batch.error) qp->batch.error = EINVAL;
  auto& it = qp->batch.items.emplace_back();
  it.wr.wr_id = q->wr_id;
  it.wr.opcode = op;
  it.wr.send_flags =
      q->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE);
  return &it;
}

WrBatch::Item* cur(ibv_qp_ex* q) {
  Qp* qp = qx(q);
  if (qp->batch.items.empty()) {
    if (!qp->batch.error) qp->batch.error = EINVAL;
    return nullptr;
  }
  return &qp->batch.items.back();
}

void wr_start(ibv_qp_ex* q) {
  Qp* qp = qx(q);
  qp->wr_mu.lock();
  qp->batch.items.clear();
  qp->batch.error = 0;
}

int wr_complete(ibv_qp_ex* q) {
  Qp* qp = qx(q);
  int ret = qp->batch.error;
  if (!ret && refuse_inherited(qp->ctx->rt)) ret = EIO;
  if (!ret) {
    Runtime* rt = qp->ctx->rt;
    std::lock_guard<std::mutex> g(rt->mu);
    Timestamp ts = now();
    for (auto& it : qp->batch.items) {
      it.wr.sg = it.sges.data();
      it.wr.num_sge = static_cast<uint32_t>(it.sges.size());
      if (it.wr.ah) it.wr.ah = &it.av;
      Status s = rt->engine->post_send(qp->qpn, it.wr, ts);
      if (!s) {
        ret = s.code();
        break;
      }
    }
    drive_post_locked(rt, ts);
  }
  qp->batch.items.clear();
  qp->batch.error = 0;
  qp->wr_mu.unlock();
  return ret;
}

void wr_abort(ibv_qp_ex* q) {
  Qp* qp = qx(q);
  qp->batch.items.clear();
  qp->batch.error = 0;
  qp->wr_mu.unlock();
}

void wr_atomic_cmp_swp(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t compare,
                       uint64_t swap) {
  auto* it = begin(q, t::WrOpcode::kAtomicCmpAndSwp, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP);
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
  it->wr.compare_add = compare;
  it->wr.swap = swap;
}

void wr_atomic_fetch_add(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, uint64_t add) {
  auto* it = begin(q, t::WrOpcode::kAtomicFetchAndAdd, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD);
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
  it->wr.compare_add = add;
}

void wr_bind_mw(ibv_qp_ex* q, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  auto* it = begin(q, t::WrOpcode::kBindMw, IBV_QP_EX_WITH_BIND_MW);
  Qp* qp = qx(q);
  if (!mw || !info || mw->type != IBV_MW_TYPE_2) {  // as IBV_WR_BIND_MW in ibv_post_send
    if (!qp->batch.error) qp->batch.error = EINVAL;
    return;
  }
  to_bind_wr(mw, rkey, *info, &it->wr);
}

void wr_local_inv(ibv_qp_ex* q, uint32_t rkey) {
  auto* it = begin(q, t::WrOpcode::kLocalInv, IBV_QP_EX_WITH_LOCAL_INV);
  it->wr.invalidate_rkey = rkey;
}

void wr_rdma_read(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
  auto* it = begin(q, t::WrOpcode::kRdmaRead, IBV_QP_EX_WITH_RDMA_READ);
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
}

void wr_rdma_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr) {
  auto* it = begin(q, t::WrOpcode::kRdmaWrite, IBV_QP_EX_WITH_RDMA_WRITE);
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
}

void wr_rdma_write_imm(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, __be32 imm) {
  auto* it = begin(q, t::WrOpcode::kRdmaWriteWithImm, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM);
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
  it->wr.imm_data = imm;
}

void wr_send(ibv_qp_ex* q) { begin(q, t::WrOpcode::kSend, IBV_QP_EX_WITH_SEND); }

void wr_send_imm(ibv_qp_ex* q, __be32 imm) {
  begin(q, t::WrOpcode::kSendWithImm, IBV_QP_EX_WITH_SEND_WITH_IMM)->wr.imm_data = imm;
}

void wr_send_inv(ibv_qp_ex* q, uint32_t rkey) {
  begin(q, t::WrOpcode::kSendWithInv, IBV_QP_EX_WITH_SEND_WITH_INV)->wr.invalidate_rkey = rkey;
}

void wr_send_tso(ibv_qp_ex* q, void*, uint16_t, uint16_t) {
  begin(q, t::WrOpcode::kSend, 0);  // TSO is for raw packet QPs: EINVAL at complete
}

void wr_set_ud_addr(ibv_qp_ex* q, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  auto* it = cur(q);
  if (!it) return;
  if (!ah) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  it->av = from_ibv<Ah>(ah)->av;
  it->wr.ah = &it->av;
  it->wr.remote_qpn = remote_qpn;
  it->wr.remote_qkey = remote_qkey;
}

/// The remote XRC SRQ of the current WR; only on an XRC_SEND QP.
void wr_set_xrc_srqn(ibv_qp_ex* q, uint32_t remote_srqn) {
  auto* it = cur(q);
  if (!it) return;
  if (q->qp_base.qp_type != IBV_QPT_XRC_SEND) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  it->wr.xrc_srqn = remote_srqn;
}

void add_inline(ibv_qp_ex* q, const void* addr, size_t len) {
  auto* it = cur(q);
  if (!it) return;
  if (it->inline_data.size() + len > t::kMaxInline) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  const auto* p = static_cast<const uint8_t*>(addr);
  it->inline_data.insert(it->inline_data.end(), p, p + len);
  it->wr.send_flags |= t::kSendInline;
  // One SGE over the copied bytes (re-pointed below when the vector grows).
  it->sges.assign(1, t::Sge{reinterpret_cast<uintptr_t>(it->inline_data.data()),
                            static_cast<uint32_t>(it->inline_data.size()), 0});
}

void wr_set_inline_data(ibv_qp_ex* q, void* addr, size_t len) {
  if (auto* it = cur(q)) it->inline_data.clear();
  add_inline(q, addr, len);
}

void wr_set_inline_data_list(ibv_qp_ex* q, size_t n, const ibv_data_buf* bufs) {
  if (auto* it = cur(q)) it->inline_data.clear();
  for (size_t i = 0; i < n; ++i) add_inline(q, bufs[i].addr, bufs[i].length);
}

void wr_set_sge(ibv_qp_ex* q, uint32_t lkey, uint64_t addr, uint32_t len) {
  auto* it = cur(q);
  if (!it) return;
  it->sges.assign(1, t::Sge{addr, len, lkey});
}

void wr_set_sge_list(ibv_qp_ex* q, size_t n, const ibv_sge* list) {
  auto* it = cur(q);
  if (!it) return;
  if (n > t::kMaxSge) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  it->sges.clear();
  for (size_t i = 0; i < n; ++i)
    it->sges.push_back(t::Sge{list[i].addr, list[i].length, list[i].lkey});
}

void wr_atomic_write(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, const void* atomic_wr) {
  auto* it = begin(q, t::WrOpcode::kAtomicWrite, IBV_QP_EX_WITH_ATOMIC_WRITE);
  if (!atomic_wr) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
  std::memcpy(&it->wr.compare_add, atomic_wr, 8);  // the 8 bytes, copied now
}

void wr_flush(ibv_qp_ex* q, uint32_t rkey, uint64_t addr, size_t len, uint8_t type, uint8_t level) {
  auto* it = begin(q, t::WrOpcode::kFlush, kIbvQpExWithFlush);
  // The RETH carries 32 bits of length (the engine refuses more than 2^31 at complete).
  if (len > UINT32_MAX) {
    if (!qx(q)->batch.error) qx(q)->batch.error = EINVAL;
    return;
  }
  it->wr.rkey = rkey;
  it->wr.remote_addr = addr;
  it->wr.flush_len = static_cast<uint32_t>(len);
  it->wr.flush_type = type;
  it->wr.flush_level = level;
}

}  // namespace

void fill_qp_ex(Qp* qp) {
  ibv_qp_ex& x = qp->qpx;
  x.comp_mask = 0;
  x.wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  x.wr_atomic_fetch_add = wr_atomic_fetch_add;
  x.wr_bind_mw = wr_bind_mw;
  x.wr_local_inv = wr_local_inv;
  x.wr_rdma_read = wr_rdma_read;
  x.wr_rdma_write = wr_rdma_write;
  x.wr_rdma_write_imm = wr_rdma_write_imm;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_send_inv = wr_send_inv;
  x.wr_send_tso = wr_send_tso;
  x.wr_set_ud_addr = wr_set_ud_addr;
  x.wr_set_xrc_srqn = wr_set_xrc_srqn;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_atomic_write = wr_atomic_write;
  qp->wr_flush = wr_flush;
}

}  // namespace uroce::verbs
