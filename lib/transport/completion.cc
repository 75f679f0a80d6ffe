/**
 * @file completion.cc
 * @brief Completions, error-state flushing and checked memory copies.
 *
 * CQ overflow raises kCqErr once and drops the completion (IBA 11.4.2.1: CQ overrun is an
 * affiliated asynchronous error). Every completion carries the engine's time when it was
 * generated (last_now: the step's or the posting call's). An armed CQ signals its event at
 * once, or, with moderation (modify_cq), at the mod_count-th completion that would signal or
 * mod_period after the first of them, whichever comes first (poll_transmit fires the timers). A
 * completion error that takes the QP to ERR raises one affiliated QP error event per trip
 * (kQpFatal, or the responder's kQpReqErr/kQpAccessErr; IBA 11.6.3.1), besides the failed WQE's
 * status. Entering ERR flushes every outstanding WQE of both queues with WR_FLUSH_ERR, in order,
 * signaled or not (IBA 10.3.1 "Error", C10-?: flushed WQEs always complete); a QP on an SRQ raises
 * kQpLastWqeReached (IBA 11.6.3, "Last WQE Reached"). Memory copies check every touched SGE (key,
 * PD, bounds, LOCAL_WRITE) before moving a byte.
 */
#include <algorithm>
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

bool Engine::Impl::push_cqe(uint32_t cq_id, const Cqe& e, bool solicited) {
  Cq* cq = find_cq(cq_id);
  if (!cq) return false;
  if (cq->ring.size() >= cq->depth) {
    if (!cq->overflowed) {
      cq->overflowed = true;
      async_event(AsyncEventType::kCqErr, cq_id);
    }
    return false;
  }
  Cqe* slot = cq->ring.push();
  *slot = e;
  slot->ts = last_now;
  if (cq->armed && (!cq->solicited_only || solicited || e.status != WcStatus::kSuccess)) {
    if (cq->mod_seen++ == 0) cq->mod_first = last_now;
    if (cq_event_due(*cq, last_now))
      signal_cq(cq_id, *cq);
    else if (cq->mod_seen == 1)
      cq_mod_waiting.push_back(cq_id);
  }
  return true;
}

bool Engine::Impl::cq_event_due(const Cq& cq, Timestamp now) {
  if (cq.mod_count == 0 && cq.mod_period.ns == 0) return true;  // not moderated
  if (cq.mod_count != 0 && cq.mod_seen >= cq.mod_count) return true;
  return cq.mod_period.ns != 0 && now - cq.mod_first >= cq.mod_period;
}

void Engine::Impl::signal_cq(uint32_t cq_id, Cq& cq) {
  cq.armed = false;
  if (cq.mod_seen > 0) {
    cq.mod_seen = 0;
    cq.mod_first = Timestamp::never();
    std::erase(cq_mod_waiting, cq_id);
  }
  if (obs) obs->on_cq_event(cq_id);
}

void Engine::Impl::cq_mod_timers(Timestamp now) {
  for (size_t i = 0; i < cq_mod_waiting.size();) {
    const uint32_t id = cq_mod_waiting[i];
    Cq* cq = find_cq(id);
    if (cq && cq_event_due(*cq, now))
      signal_cq(id, *cq);  // erases entry i
    else
      ++i;
  }
}

Timestamp Engine::Impl::cq_mod_deadline() const {
  Timestamp t = Timestamp::never();
  for (uint32_t id : cq_mod_waiting) {
    const Cq& cq = cqs[id - 1];
    if (cq.mod_period.ns != 0) t = std::min(t, cq.mod_first + cq.mod_period);
  }
  return t;
}

namespace {
WcOpcode wc_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm: return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead: return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp: return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd: return WcOpcode::kFetchAdd;
    case WrOpcode::kLocalInv: return WcOpcode::kLocalInv;
    case WrOpcode::kBindMw: return WcOpcode::kBindMw;
    case WrOpcode::kAtomicWrite: return WcOpcode::kAtomicWrite;
    case WrOpcode::kFlush: return WcOpcode::kFlush;
    default: return WcOpcode::kSend;
  }
}
}  // namespace

void Engine::Impl::complete_send(Qp& qp, const SendWqe& w, WcStatus st) {
  if (st == WcStatus::kWrFlushErr) {
    inc(Counter::req_cqe_flush_error);
  } else if (st != WcStatus::kSuccess) {
    inc(Counter::req_cqe_error);
  } else if (!w.signaled) {
    return;
  }
  Cqe e;
  e.wr_id = w.wr_id;
  e.status = st;
  e.opcode = wc_opcode(w.opcode);
  e.byte_len = w.length;
  e.qp_num = qp.qpn;
  e.src_qp = qp.attr.dest_qp_num;
  if (!push_cqe(qp.init.send_cq, e, false) && qp.state != QpState::kErr) {
    raise_qp_error_event(qp);
    qp_error(qp);
  }
}

void Engine::Impl::complete_recv(Qp& qp, uint64_t wr_id, WcStatus st, WcOpcode op,
                                 uint32_t byte_len, uint32_t imm, uint32_t wc_flags,
                                 bool solicited) {
  if (st == WcStatus::kWrFlushErr) {
    inc(Counter::resp_cqe_flush_error);
  } else if (st != WcStatus::kSuccess) {
    inc(Counter::resp_cqe_error);
  }
  Cqe e;
  e.wr_id = wr_id;
  e.status = st;
  e.opcode = op;
  e.byte_len = byte_len;
  e.imm_data = imm;
  e.wc_flags = wc_flags;
  e.qp_num = qp.qpn;
  e.src_qp = qp.attr.dest_qp_num;
  // An XRC_RECV QP's receives complete on the CQ of the XRC SRQ the WQE came from.
  const uint32_t cq = qp.type == QpType::kXrcRecv ? qp.resp.cur_cq : qp.init.recv_cq;
  if (!push_cqe(cq, e, solicited) && qp.state != QpState::kErr) {
    raise_qp_error_event(qp);
    qp_error(qp);
  }
}

void Engine::Impl::flush_sq(Qp& qp) {
  while (!qp.req.sq.empty()) {
    SendWqe w = qp.req.sq.front();
    qp.req.sq.pop();
    complete_send(qp, w, WcStatus::kWrFlushErr);
  }
  qp.req.send_pos = qp.req.started_end = qp.req.sq.head_pos();
  qp.req.send_off = 0;
  qp.req.rd_atomic_out = 0;
  qp.comp.retrans_at = qp.req.rnr_until = qp.req.neigh_retry_at = qp.req.probe_at =
      qp.req.rtt_sent = Timestamp::never();
  qp.req.force_ackreq = false;
}

void Engine::Impl::flush_rq(Qp& qp) {
  if (qp.resp.cur_recv) {
    qp.resp.cur_recv = false;
    complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kWrFlushErr, WcOpcode::kRecv, 0, 0, 0,
                  false);
  }
  while (!qp.resp.rq.empty()) {
    uint64_t id = qp.resp.rq.front().wr_id;
    qp.resp.rq.pop();
    complete_recv(qp, id, WcStatus::kWrFlushErr, WcOpcode::kRecv, 0, 0, 0, false);
  }
}

void Engine::Impl::qp_error(Qp& qp) {
  bool was_err = qp.state == QpState::kErr;
  qp.state = QpState::kErr;
  if (was_err && qp.req.sq.empty() && qp.resp.rq.empty() && !qp.resp.cur_recv) return;
  // Keep only a fatal NAK that still has to go out; drop other queued responses.
  RespItem fatal;
  bool have_fatal = false;
  for (uint32_t i = 0; i < qp.resp.resp_q.size(); ++i) {
    if (qp.resp.resp_q.at(i).fatal) {
      fatal = qp.resp.resp_q.at(i);
      have_fatal = true;
    }
  }
  qp.resp.resp_q.clear();
  qp.resp.resp_rd_atomic = 0;
  if (have_fatal) *qp.resp.resp_q.push() = fatal;
  qp.resp.rx_msg = ResponderState::RxMsg::kNone;
  flush_sq(qp);
  flush_rq(qp);
  // (An XRC_RECV QP has no SRQ of its own: resp.srq is only the one a request names.)
  if (qp.resp.srq && qp.type != QpType::kXrcRecv && !was_err)
    async_event(AsyncEventType::kQpLastWqeReached, qp.qpn);
}

void Engine::Impl::raise_qp_error_event(Qp& qp, AsyncEventType t) {
  if (qp.fatal_raised) return;
  qp.fatal_raised = true;
  async_event(t, qp.qpn);
}

void Engine::Impl::qp_sq_error(Qp& qp) {
  qp.state = QpState::kSqe;
  flush_sq(qp);
}

const Sge* Engine::Impl::sq_sg(const Qp& qp, uint32_t pos) const {
  return qp.req.sq_sges.data() + size_t{qp.req.sq.slot_of(pos)} * qp.init.max_send_sge;
}

const uint8_t* Engine::Impl::sq_inl(const Qp& qp, uint32_t pos) const {
  return qp.req.sq_inline.data() + size_t{qp.req.sq.slot_of(pos)} * qp.init.max_inline_data;
}

namespace {
/// Walks the SGE list over [off, off+len): calls f(sge_index, sge_offset, chunk, done).
template <typename F>
bool walk(const Sge* sg, uint32_t n, uint32_t off, uint32_t len, F&& f) {
  uint32_t i = 0;
  while (i < n && off >= sg[i].length) {
    off -= sg[i].length;
    ++i;
  }
  uint32_t done = 0;
  while (done < len) {
    if (i >= n) return false;  // runs past the list
    uint32_t chunk = std::min(sg[i].length - off, len - done);
    if (!f(i, off, chunk, done)) return false;
    done += chunk;
    off = 0;
    ++i;
  }
  return true;
}
}  // namespace

AccessCheck Engine::Impl::gather(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off, uint8_t* dst,
                                 uint32_t len) const {
  // One pass: each chunk is checked as it is read (dst is a frame the caller drops on error).
  AccessCheck res = AccessCheck::kOk;
  bool fits = walk(sg, n, off, len, [&](uint32_t i, uint32_t o, uint32_t c, uint32_t d) {
    res = mrs.read_local(sg[i].lkey, pd, sg[i].addr + o, dst + d, c);
    return res == AccessCheck::kOk;
  });
  if (res != AccessCheck::kOk) return res;
  return fits ? AccessCheck::kOk : AccessCheck::kBadBounds;
}

AccessCheck Engine::Impl::check_scatter(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off,
                                        uint32_t len) const {
  AccessCheck res = AccessCheck::kOk;
  bool fits = walk(sg, n, off, len, [&](uint32_t i, uint32_t o, uint32_t c, uint32_t) {
    res = mrs.check_local(sg[i].lkey, pd, sg[i].addr + o, c, kAccessLocalWrite);
    return res == AccessCheck::kOk;
  });
  if (res != AccessCheck::kOk) return res;
  return fits ? AccessCheck::kOk : AccessCheck::kBadBounds;
}

AccessCheck Engine::Impl::scatter(const Sge* sg, uint32_t n, uint32_t pd, uint32_t off,
                                  const uint8_t* src, uint32_t len) const {
  AccessCheck res = AccessCheck::kOk;
  bool fits = walk(sg, n, off, len, [&](uint32_t i, uint32_t o, uint32_t c, uint32_t) {
    res = mrs.check_local(sg[i].lkey, pd, sg[i].addr + o, c, kAccessLocalWrite);
    return res == AccessCheck::kOk;
  });
  if (res != AccessCheck::kOk) return res;
  if (!fits) return AccessCheck::kBadBounds;
  walk(sg, n, off, len, [&](uint32_t i, uint32_t o, uint32_t c, uint32_t d) {
    res = mrs.write_local(sg[i].lkey, pd, sg[i].addr + o, src + d, c);
    return res == AccessCheck::kOk;
  });
  return res;
}

}  // namespace uroce::transport
