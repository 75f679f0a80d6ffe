/**
 * @file responder.cc
 * @brief The responder: RC request validation and execution (ATOMIC_WRITE and FLUSH of IBA 1.5
 * Annex A19 too), duplicate handling, ACK/NAK
 * generation (IBA Vol 1 §9.7.5 "Responder side behavior"); UC receive with message drop on
 * loss (§9.7.5 for UC, C9-? "a packet out of sequence drops the message"); UD receive with
 * the 40-byte GRH and the Q_Key check (§9.6.2, §10.2.5; rdma-core/rxe GRH layout for RoCEv2).
 *
 * RC check order for an in-order request (IBA 9.7.5.1.2-9.7.5.1.6): PSN, opcode sequence,
 * operation enabled on the QP, payload length vs path MTU, receive WQE (RNR NAK), R_Key /
 * bounds / rights, execute, advance ePSN, ACK when AckReq. Error classes map to NAKs:
 *   PSN sequence error      -> NAK 0, once per episode, packet dropped (class B)
 *   no receive WQE          -> RNR NAK with min_rnr_timer (class B)
 *   invalid request         -> NAK 1, QP to ERR, kQpReqErr (class C)
 *   remote access error     -> NAK 2, QP to ERR, kQpAccessErr (class C)
 *   responder local error   -> NAK 3 (remote operational error), QP to ERR (class D)
 * Responses (ACK, read responses, atomic ACKs) leave in PSN order through resp_q; consecutive
 * ACK/NAK entries coalesce into the newest one (ACKs are cumulative, IBA 9.7.5.1.1).
 */
#include <algorithm>
#include <atomic>
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::OpFlag;

namespace {
constexpr uint8_t nak(uint8_t code) { return wire::aeth_syndrome(wire::kAethTypeNak, code); }

/// The access bits a FLUSH of this placement type needs of the QP and of the region; 0 for a
/// type with no bit or a reserved bit set (IBA 1.5 Annex A19: global visibility, persistence).
constexpr uint32_t flush_access(uint8_t placement) {
  if (placement == 0 || (placement & ~(kFlushGlobal | kFlushPersistent))) return 0;
  return ((placement & kFlushGlobal) ? uint32_t{kAccessFlushGlobal} : 0u) |
         ((placement & kFlushPersistent) ? uint32_t{kAccessFlushPersistent} : 0u);
}
}  // namespace

void Engine::Impl::queue_read_zero(Qp& qp, Psn psn) {
  RespItem* it = qp.resp.resp_q.push();
  if (!it) return;  // full: the requester's timer recovers
  *it = RespItem{};
  it->kind = RespItem::Kind::kRead;
  it->psn = psn;
  it->msn = qp.resp.msn;
  it->npkts = 1;  // RDMA READ Response Only, no payload
  qp.resp.resp_rd_atomic++;
  activate(qp);
}

void Engine::Impl::responder_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  switch (qp.type) {
    case QpType::kRc:
      if (p.has_tseth) {
        qp.resp.ts_echo = p.tseth.stamp;
        qp.resp.ts_arrived = now;
      }
      rc_responder(qp, p, now);
      break;
    case QpType::kUc: uc_responder(qp, p); break;
    case QpType::kUd: ud_responder(qp, p); break;
    case QpType::kXrcRecv: xrc_responder(qp, p, now); break;
    case QpType::kXrcSend: break;  // rx.cc sends it responses only
  }
}

void Engine::Impl::xrc_responder(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  // The XRCETH names the SRQ every packet of the message uses (IBA 9.3.9 and §11.2.5.2: its
  // PD, its receive WQEs, its CQ); it must be an XRC SRQ of the QP's domain. Checked for
  // duplicates too: they are answered from that SRQ's PD (a READ is read again). A bad one is
  // counted in resp_remote_invalid_request.
  Srq* s = find_srq(p.xrc_srqn);
  // The packets after the first of a SEND go to the WQE the first one took: the same SRQ.
  const bool other_srq = diff(p.psn, qp.resp.epsn) == 0 && qp.resp.cur_recv &&
                         qp.resp.rx_msg == ResponderState::RxMsg::kSend && s &&
                         s->id != qp.resp.cur_srqn;
  if (!s || s->xrcd == 0 || s->xrcd != qp.init.xrcd || other_srq) {
    if (diff(p.psn, qp.resp.epsn) > 0) {
      // Ahead of the expected PSN the packet is dropped unread (a sequence NAK).
      rc_responder(qp, p, now);
      return;
    }
    responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                    WcStatus::kRemInvReqErr);
    return;
  }
  qp.resp.srq = s;
  rc_responder(qp, p, now);
  qp.resp.srq = nullptr;
}

bool Engine::Impl::pop_recv(Qp& qp) {
  const Sge* sg;
  if (qp.resp.srq) {
    Srq& s = *qp.resp.srq;
    if (s.ring.empty()) return false;
    qp.resp.cur_rwqe = s.ring.front();
    qp.resp.cur_cq = s.cq;
    qp.resp.cur_srqn = s.id;
    sg = s.sges.data() + size_t{s.ring.slot_of(s.ring.head_pos())} * s.max_sge;
    std::copy_n(sg, qp.resp.cur_rwqe.num_sge, qp.resp.cur_sg.data());
    s.ring.pop();
    if (s.limit && s.ring.size() < s.limit) {
      s.limit = 0;  // one-shot (ibv_modify_srq(3))
      async_event(AsyncEventType::kSrqLimitReached, s.id);
    }
  } else {
    if (qp.resp.rq.empty()) return false;
    qp.resp.cur_rwqe = qp.resp.rq.front();
    sg = qp.resp.rq_sges.data() +
         size_t{qp.resp.rq.slot_of(qp.resp.rq.head_pos())} * qp.init.max_recv_sge;
    std::copy_n(sg, qp.resp.cur_rwqe.num_sge, qp.resp.cur_sg.data());
    qp.resp.rq.pop();
  }
  qp.resp.cur_recv = true;
  qp.resp.cur_off = 0;
  qp.resp.sr.recv_popped++;
  return true;
}

namespace {
uint32_t recv_len(const Qp& qp) {
  return sge_list_len(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge);
}
uint32_t recv_pd(const Qp& qp) { return qp.resp.srq ? qp.resp.srq->pd : qp.init.pd; }
/// The PD remote accesses are checked against: an XRC_RECV QP's is that of the XRC SRQ the
/// request names (IBA §11.2.5.2).
uint32_t access_pd(const Qp& qp) {
  return qp.type == QpType::kXrcRecv ? (qp.resp.srq ? qp.resp.srq->pd : 0) : qp.init.pd;
}
}  // namespace

void Engine::Impl::queue_ack(Qp& qp, uint8_t syndrome, Psn psn, bool fatal) {
  qp.resp.dack_at = Timestamp::never();  // every ACK/NAK covers the PSNs before the expected one
  if (!qp.resp.resp_q.empty()) {
    RespItem& t = qp.resp.resp_q.back();
    if ((t.kind == RespItem::Kind::kAck || t.kind == RespItem::Kind::kNak) && !t.fatal) {
      if (diff(psn, t.psn) >= 0 || fatal) {
        t.kind = (syndrome & wire::kAethTypeMask) == wire::kAethTypeAck ? RespItem::Kind::kAck
                                                                        : RespItem::Kind::kNak;
        t.syndrome = syndrome;
        t.psn = psn;
        t.msn = qp.resp.msn;
        t.fatal = fatal;
      }
      activate(qp);
      return;
    }
  }
  RespItem* it = qp.resp.resp_q.push();
  if (!it) return;  // full: the requester's timer recovers
  *it = RespItem{};
  it->kind = (syndrome & wire::kAethTypeMask) == wire::kAethTypeAck ? RespItem::Kind::kAck
                                                                    : RespItem::Kind::kNak;
  it->syndrome = syndrome;
  it->psn = psn;
  it->msn = qp.resp.msn;
  it->fatal = fatal;
  activate(qp);
}

void Engine::Impl::responder_fatal(Qp& qp, uint8_t nak_code, AsyncEventType ev,
                                   WcStatus recv_status) {
  if (nak_code == wire::kAethNakRemoteAccessError) inc(Counter::resp_remote_access_errors);
  if (nak_code == wire::kAethNakInvalidRequest) inc(Counter::resp_remote_invalid_request);
  if (qp.resp.cur_recv && recv_status != WcStatus::kSuccess) {
    qp.resp.cur_recv = false;
    complete_recv(qp, qp.resp.cur_rwqe.wr_id, recv_status, WcOpcode::kRecv, 0, 0, 0, false);
  }
  qp.resp.resp_q.clear();
  qp.resp.resp_rd_atomic = 0;
  queue_ack(qp, nak(nak_code), qp.resp.epsn, /*fatal=*/true);
  raise_qp_error_event(qp, ev);
  qp_error(qp);
  activate(qp);
}

void Engine::Impl::rc_responder(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  const wire::OpcodeInfo& info = *p.info;
  const int32_t d = diff(p.psn, qp.resp.epsn);
  const uint32_t pd = access_pd(qp);

  if (d > 0 && qp.selective) {
    sr_hold(qp, p);  // placed and held, or dropped (sr_responder.cc)
    return;
  }
  if (d > 0) {
    // Future PSN: a request was lost. NAK once per episode (IBA 9.7.5.1.2), then drop.
    inc(Counter::out_of_sequence);
    if (!qp.resp.nak_sent) {
      qp.resp.nak_sent = true;
      queue_ack(qp, nak(wire::kAethNakPsnSeqError), qp.resp.epsn);
    }
    return;
  }
  if (d < 0) {
    // Duplicate (IBA 9.7.5.1.1): SEND/WRITE are re-ACKed, not re-executed; READ is re-read
    // from memory; an atomic or an ATOMIC_WRITE is answered from the replay cache; a FLUSH is
    // answered again.
    inc(Counter::duplicate_request);
    if (info.is(OpFlag::kReadRequest)) {
      uint32_t n = packets_for(p.reth.dma_len, qp.mtu);
      uint32_t len = p.reth.dma_len;
      if (diff(p.psn + (n - 1), qp.resp.epsn) >= 0) {
        // It reaches past what we answered. An IBA requester never asks so; a selective-repeat
        // one does when it asks again for a missing run that crosses into a READ part whose
        // request was lost: answer the PSNs answered before, and it asks for the rest as new.
        if (!qp.selective) return;
        n = static_cast<uint32_t>(diff(qp.resp.epsn, p.psn));
        len = n * qp.mtu;
      }
      if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
      if (mrs.check_remote(p.reth.rkey, pd, p.reth.va, len, kAccessRemoteRead, qp.qpn) !=
          AccessCheck::kOk)
        return;
      RespItem* it = qp.resp.resp_q.push();
      if (!it) return;
      *it = RespItem{};
      it->kind = RespItem::Kind::kRead;
      it->psn = p.psn;
      it->msn = qp.resp.msn;
      it->va = p.reth.va;
      it->rkey = p.reth.rkey;
      it->pd = pd;
      it->len = len;
      it->npkts = n;
      qp.resp.resp_rd_atomic++;
      activate(qp);
    } else if (info.is(OpFlag::kAtomic) || info.is(OpFlag::kAtomicWrite)) {
      const bool write = info.is(OpFlag::kAtomicWrite);
      for (const AtomicReplay& r : qp.resp.replay) {
        if (r.valid && r.write == write && r.psn == p.psn) {
          if (write) {
            // Answered again, not written again: a later request may have overwritten it.
            if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1) ||
                qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity())
              return;
            queue_read_zero(qp, p.psn);
            return;
          }
          if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
          RespItem* it = qp.resp.resp_q.push();
          if (!it) return;
          *it = RespItem{};
          it->kind = RespItem::Kind::kAtomic;
          it->psn = p.psn;
          it->msn = qp.resp.msn;
          it->orig = r.orig;
          qp.resp.resp_rd_atomic++;
          activate(qp);
          return;
        }
      }
    } else if (info.is(OpFlag::kFlush)) {
      // Idempotent: everything before it was placed when it first ran. Answered again.
      if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1) ||
          qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity())
        return;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      queue_read_zero(qp, p.psn);
    } else {
      queue_ack(qp, kSynAck, qp.resp.epsn - 1);
    }
    return;
  }

  if (!qp.selective || qp.resp.sr.held == 0) {
    rc_execute(qp, p, now, nullptr);
    return;
  }
  const Psn before = qp.resp.epsn;
  rc_execute(qp, p, now, nullptr);
  if (qp.resp.epsn != before) sr_drain(qp, before, now);
}

void Engine::Impl::rc_execute(Qp& qp, const wire::ParsedPacket& p, Timestamp now,
                              const HeldPacket* held) {
  const wire::OpcodeInfo& info = *p.info;
  const uint32_t pd = access_pd(qp);
  qp.resp.nak_sent = false;
  const bool cont = info.is(OpFlag::kMiddle) || info.is(OpFlag::kLast);
  // Opcode sequence (IBA 9.7.5.1.3, C9-?): MIDDLE/LAST only continue the same operation.
  bool seq_ok = qp.resp.rx_msg == ResponderState::RxMsg::kSend ? (info.is(OpFlag::kSend) && cont)
                : qp.resp.rx_msg == ResponderState::RxMsg::kWrite
                    ? (info.is(OpFlag::kWrite) && cont)
                    : !cont;
  if (!seq_ok) {
    responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                    WcStatus::kRemInvReqErr);
    return;
  }
  // Operation enabled on this QP (IBA 9.7.5.1.4, qp_access_flags).
  const uint32_t acc = qp.attr.qp_access_flags;
  // ATOMIC_WRITE needs remote write; FLUSH the QP's flush rights for its placement type and a
  // defined selectivity level (as Linux rxe checks them).
  const uint32_t flush_need = info.is(OpFlag::kFlush) ? flush_access(p.feth.placement) : 0;
  if (((info.is(OpFlag::kWrite) || info.is(OpFlag::kAtomicWrite)) && !(acc & kAccessRemoteWrite)) ||
      (info.is(OpFlag::kReadRequest) && !(acc & kAccessRemoteRead)) ||
      (info.is(OpFlag::kAtomic) && !(acc & kAccessRemoteAtomic)) ||
      (info.is(OpFlag::kFlush) &&
       (flush_need == 0 || (acc & flush_need) != flush_need || p.feth.selectivity > kFlushMr))) {
    responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                    WcStatus::kRemInvReqErr);
    return;
  }
  // Payload length vs path MTU (IBA 9.7.5.1.5): FIRST/MIDDLE exactly one MTU.
  const uint32_t len = held ? held->len : static_cast<uint32_t>(p.payload.size());
  if (((info.is(OpFlag::kFirst) || info.is(OpFlag::kMiddle)) && len != qp.mtu) || len > qp.mtu) {
    responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                    WcStatus::kRemInvReqErr);
    return;
  }

  if (info.is(OpFlag::kSend)) {
    if (info.is_start()) {
      if (!qp.resp.cur_recv && !pop_recv(qp)) {
        // No receive WQE: RNR NAK, ePSN unchanged (IBA 9.7.5.2.8).
        inc(Counter::out_of_buffer);
        queue_ack(qp, wire::aeth_syndrome(wire::kAethTypeRnrNak, qp.attr.min_rnr_timer),
                  qp.resp.epsn);
        qp.resp.nak_sent = true;  // the rest of the message is dropped silently until the retry
        return;
      }
      qp.resp.cur_off = 0;
    }
    if (held && (qp.resp.sr.recv_popped - 1 != held->recv_seq || qp.resp.cur_off != held->place)) {
      // Placed ahead where its SRETH said, which is not where this message stands in order.
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kRemInvReqErr);
      return;
    }
    if (uint64_t{qp.resp.cur_off} + len > recv_len(qp)) {
      inc(Counter::resp_local_length_error);
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kLocLenErr);
      return;
    }
    if (len && (!held || held->deferred) &&
        scatter(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge, recv_pd(qp), qp.resp.cur_off,
                p.payload.data(), len) != AccessCheck::kOk) {
      responder_fatal(qp, wire::kAethNakRemoteOperationalError, AsyncEventType::kQpFatal,
                      WcStatus::kLocProtErr);
      return;
    }
    if (info.is_end() && info.is(OpFlag::kInv) && mrs.find_mw(p.ieth_rkey) &&
        mrs.invalidate_mw(p.ieth_rkey, qp.qpn) != MwResult::kOk) {
      // SEND_WITH_INV naming a window it may not invalidate (a stale key, type 1, not bound,
      // bound through another QP): an invalid request (rxe: RESPST_ERR_INVALIDATE_RKEY). A
      // key that names no window is only reported in the completion, as before windows.
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kRemInvReqErr);
      return;
    }
    qp.resp.cur_off += len;
    if (info.is_end()) {
      qp.resp.rx_msg = ResponderState::RxMsg::kNone;
      qp.resp.cur_recv = false;
      qp.resp.msn = qp.resp.msn + 1;
      uint32_t flags = 0, imm = 0;
      if (info.is(OpFlag::kImm)) {
        flags = kWcWithImm;
        imm = imm_to_net(p.imm);  // back to network order as ibv_wc carries it
      } else if (info.is(OpFlag::kInv)) {
        flags = kWcWithInv;
        imm = p.ieth_rkey;
      }
      complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kSuccess, WcOpcode::kRecv,
                    qp.resp.cur_off, imm, flags, p.se);
    } else {
      qp.resp.rx_msg = ResponderState::RxMsg::kSend;
    }
  } else if (info.is(OpFlag::kWrite)) {
    if (info.is_start()) {
      if (mrs.check_remote(p.reth.rkey, pd, p.reth.va, p.reth.dma_len, kAccessRemoteWrite,
                           qp.qpn) != AccessCheck::kOk) {
        responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                        WcStatus::kSuccess);
        return;
      }
      qp.resp.wr_va = p.reth.va;
      qp.resp.wr_rkey = p.reth.rkey;
      qp.resp.wr_resid = qp.resp.wr_len = p.reth.dma_len;
    }
    if (len > qp.resp.wr_resid || (info.is_end() && len != qp.resp.wr_resid)) {
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kSuccess);
      return;
    }
    const bool imm = info.is(OpFlag::kImm);
    if (imm && !qp.resp.cur_recv && !pop_recv(qp)) {
      // WRITE_WITH_IMM consumes a receive WQE at its last packet; none -> RNR NAK.
      inc(Counter::out_of_buffer);
      queue_ack(qp, wire::aeth_syndrome(wire::kAethTypeRnrNak, qp.attr.min_rnr_timer),
                qp.resp.epsn);
      qp.resp.nak_sent = true;
      return;
    }
    if (held && held->place != qp.resp.wr_va) {
      // Placed ahead at the VA its SRETH said, which is not where this WRITE stands in order.
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kSuccess);
      return;
    }
    if (len) {
      // The region may have been deregistered since the FIRST packet: check again.
      // (Placed ahead already when held, unless deferred: then only the check.)
      const AccessCheck c =
          held && !held->deferred
              ? mrs.check_remote(qp.resp.wr_rkey, pd, qp.resp.wr_va, len, kAccessRemoteWrite,
                                 qp.qpn)
              : mrs.write_remote(qp.resp.wr_rkey, pd, qp.resp.wr_va, p.payload.data(), len, qp.qpn);
      if (c != AccessCheck::kOk) {
        responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                        WcStatus::kSuccess);
        return;
      }
    }
    qp.resp.wr_va += len;
    qp.resp.wr_resid -= len;
    if (info.is_start()) inc(Counter::rx_write_requests);
    if (info.is_end()) {
      qp.resp.rx_msg = ResponderState::RxMsg::kNone;
      qp.resp.msn = qp.resp.msn + 1;
      if (imm) {
        qp.resp.cur_recv = false;
        complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm,
                      qp.resp.wr_len, imm_to_net(p.imm), kWcWithImm, p.se);
      }
    } else {
      qp.resp.rx_msg = ResponderState::RxMsg::kWrite;
    }
  } else if (info.is(OpFlag::kReadRequest)) {
    if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
    if (qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity()) return;
    if (mrs.check_remote(p.reth.rkey, pd, p.reth.va, p.reth.dma_len, kAccessRemoteRead, qp.qpn) !=
        AccessCheck::kOk) {
      responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                      WcStatus::kSuccess);
      return;
    }
    uint32_t n = packets_for(p.reth.dma_len, qp.mtu);
    qp.resp.msn = qp.resp.msn + 1;
    RespItem* it = qp.resp.resp_q.push();
    *it = RespItem{};
    it->kind = RespItem::Kind::kRead;
    it->psn = p.psn;
    it->msn = qp.resp.msn;
    it->va = p.reth.va;
    it->rkey = p.reth.rkey;
    it->pd = pd;
    it->len = p.reth.dma_len;
    it->npkts = n;
    qp.resp.resp_rd_atomic++;
    qp.resp.epsn = qp.resp.epsn + n;
    inc(Counter::rx_read_requests);
    activate(qp);
    return;
  } else if (info.is(OpFlag::kAtomic)) {
    if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
    if (qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity()) return;
    const auto& a = p.atomic_eth;
    if (a.va % 8 != 0) {
      // Misaligned atomic: invalid request (IBA 9.4.5 / C9-? "8-byte aligned").
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kSuccess);
      return;
    }
    uint64_t orig = 0;
    if (mrs.atomic_remote(a.rkey, pd, a.va, wire::rc_twin(p.opcode) == wire::Opcode::kRcCompareSwap,
                          a.compare, a.swap_add, &orig, qp.qpn) != AccessCheck::kOk) {
      responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                      WcStatus::kSuccess);
      return;
    }
    AtomicReplay& r = qp.resp.replay[qp.resp.replay_next];
    qp.resp.replay_next =
        (qp.resp.replay_next + 1) % std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1);
    r = AtomicReplay{true, false, p.psn, orig};
    qp.resp.msn = qp.resp.msn + 1;
    RespItem* it = qp.resp.resp_q.push();
    *it = RespItem{};
    it->kind = RespItem::Kind::kAtomic;
    it->psn = p.psn;
    it->msn = qp.resp.msn;
    it->orig = orig;
    qp.resp.resp_rd_atomic++;
    qp.resp.epsn = qp.resp.epsn + 1;
    inc(Counter::rx_atomic_requests);
    activate(qp);
    return;
  } else if (info.is(OpFlag::kAtomicWrite)) {
    if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
    if (qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity()) return;
    // IBA 1.5 Annex A19: exactly 8 bytes (RETH length and payload), inside a region with
    // remote write, 8-byte aligned; checked in that order (as Linux rxe: the range before the
    // alignment). Nothing is written unless all pass.
    if (len != 8 || p.reth.dma_len != 8) {
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kSuccess);
      return;
    }
    if (mrs.check_remote(p.reth.rkey, pd, p.reth.va, 8, kAccessRemoteWrite, qp.qpn) !=
        AccessCheck::kOk) {
      responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                      WcStatus::kSuccess);
      return;
    }
    if (p.reth.va % 8 != 0) {
      responder_fatal(qp, wire::kAethNakInvalidRequest, AsyncEventType::kQpReqErr,
                      WcStatus::kSuccess);
      return;
    }
    uint64_t value;
    std::memcpy(&value, p.payload.data(), 8);
    // One 8-byte store, ordered after every earlier placement (a release store).
    std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(p.reth.va))
        .store(value, std::memory_order_release);
    AtomicReplay& r = qp.resp.replay[qp.resp.replay_next];
    qp.resp.replay_next =
        (qp.resp.replay_next + 1) % std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1);
    r = AtomicReplay{true, true, p.psn, 0};
    qp.resp.msn = qp.resp.msn + 1;
    queue_read_zero(qp, p.psn);
    qp.resp.epsn = qp.resp.epsn + 1;
    inc(Counter::rx_atomic_requests);
    return;
  } else if (info.is(OpFlag::kFlush)) {
    if (qp.resp.resp_rd_atomic >= std::max<uint32_t>(qp.attr.max_dest_rd_atomic, 1)) return;
    if (qp.resp.resp_q.size() + 1 >= qp.resp.resp_q.capacity()) return;
    // The rkey must name a region of this PD with the flush rights of the placement type: for
    // the whole region (selectivity level 1) or a zero-length range the key alone, else the
    // range too (Linux rxe's checks). Windows never carry flush rights.
    AccessCheck c;
    if (p.feth.selectivity == kFlushMr || p.reth.dma_len == 0) {
      const MemoryRegion* mr = mrs.find_rkey(p.reth.rkey);
      c = !mr                                       ? AccessCheck::kBadKey
          : mr->pd != pd                            ? AccessCheck::kBadPd
          : (mr->access & flush_need) != flush_need ? AccessCheck::kBadAccess
                                                    : AccessCheck::kOk;
    } else {
      c = mrs.check_remote(p.reth.rkey, pd, p.reth.va, p.reth.dma_len, flush_need, qp.qpn);
    }
    if (c != AccessCheck::kOk) {
      responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                      WcStatus::kSuccess);
      return;
    }
    // Every earlier request was placed by this thread before this one runs (PSN order); a
    // full fence makes those stores globally visible before the response can go out. There is
    // no persistence domain beyond memory to write back to (no region has persistence rights).
    std::atomic_thread_fence(std::memory_order_seq_cst);
    qp.resp.msn = qp.resp.msn + 1;
    queue_read_zero(qp, p.psn);
    qp.resp.epsn = qp.resp.epsn + 1;
    return;
  }
  qp.resp.epsn = qp.resp.epsn + 1;
  if (p.ackreq) {
    queue_ack(qp, kSynAck, p.psn);
  } else {
    // Delayed ACK (kDelayedAck): a requester that stopped without asking still hears back.
    if (qp.resp.dack_at.is_never()) qp.resp.dack_at = now + kDelayedAck;
    qp.resp.dack_psn = p.psn;
    activate(qp);
  }
}

void Engine::Impl::responder_timers(Qp& qp, Timestamp now) {
  if (qp.resp.dack_at > now) return;
  qp.resp.dack_at = Timestamp::never();
  if (qp.state != QpState::kErr && qp.state != QpState::kReset)
    queue_ack(qp, kSynAck, qp.resp.dack_psn);
}

void Engine::Impl::uc_responder(Qp& qp, const wire::ParsedPacket& p) {
  const wire::OpcodeInfo& info = *p.info;
  const uint32_t len = static_cast<uint32_t>(p.payload.size());
  auto drop_message = [&] {
    qp.resp.rx_msg = ResponderState::RxMsg::kNone;
    qp.resp.uc_drop = true;
    qp.resp.epsn = p.psn + 1;
  };
  if (p.psn != qp.resp.epsn || qp.resp.uc_drop) {
    // UC loss (IBA 9.7.5 for UC): the message in progress is dropped; a FIRST/ONLY resyncs.
    if (p.psn != qp.resp.epsn) inc(Counter::out_of_sequence);
    if (!info.is_start()) {
      drop_message();
      return;
    }
    qp.resp.rx_msg = ResponderState::RxMsg::kNone;
    qp.resp.uc_drop = false;
    qp.resp.epsn = p.psn;
  }
  const bool cont = info.is(OpFlag::kMiddle) || info.is(OpFlag::kLast);
  bool seq_ok = qp.resp.rx_msg == ResponderState::RxMsg::kSend ? (info.is(OpFlag::kSend) && cont)
                : qp.resp.rx_msg == ResponderState::RxMsg::kWrite
                    ? (info.is(OpFlag::kWrite) && cont)
                    : !cont;
  if (!seq_ok && info.is_start()) {
    // A new message while one was in progress: the old one was cut short; start over.
    qp.resp.rx_msg = ResponderState::RxMsg::kNone;
    seq_ok = true;
  }
  if (!seq_ok || len > qp.mtu ||
      ((info.is(OpFlag::kFirst) || info.is(OpFlag::kMiddle)) && len != qp.mtu)) {
    drop_message();
    return;
  }
  if (info.is(OpFlag::kSend)) {
    if (info.is_start()) {
      if (!qp.resp.cur_recv && !pop_recv(qp)) {
        inc(Counter::out_of_buffer);
        drop_message();
        return;
      }
      qp.resp.cur_off = 0;
    }
    if (uint64_t{qp.resp.cur_off} + len > recv_len(qp)) {
      inc(Counter::resp_local_length_error);
      qp.resp.cur_recv = false;
      complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kLocLenErr, WcOpcode::kRecv, 0, 0, 0,
                    false);
      drop_message();
      return;
    }
    if (len && scatter(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge, recv_pd(qp),
                       qp.resp.cur_off, p.payload.data(), len) != AccessCheck::kOk) {
      qp.resp.cur_recv = false;
      complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kLocProtErr, WcOpcode::kRecv, 0, 0, 0,
                    false);
      drop_message();
      return;
    }
    qp.resp.cur_off += len;
    qp.resp.rx_msg = info.is_end() ? ResponderState::RxMsg::kNone : ResponderState::RxMsg::kSend;
    if (info.is_end()) {
      qp.resp.cur_recv = false;
      uint32_t flags = info.is(OpFlag::kImm) ? uint32_t{kWcWithImm} : 0u;
      uint32_t imm = info.is(OpFlag::kImm) ? imm_to_net(p.imm) : 0;
      complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kSuccess, WcOpcode::kRecv,
                    qp.resp.cur_off, imm, flags, p.se);
    }
  } else {  // WRITE
    if (info.is_start()) {
      if (!(qp.attr.qp_access_flags & kAccessRemoteWrite) ||
          mrs.check_remote(p.reth.rkey, qp.init.pd, p.reth.va, p.reth.dma_len, kAccessRemoteWrite,
                           qp.qpn) != AccessCheck::kOk) {
        inc(Counter::resp_remote_access_errors);
        drop_message();
        return;
      }
      qp.resp.wr_va = p.reth.va;
      qp.resp.wr_rkey = p.reth.rkey;
      qp.resp.wr_resid = qp.resp.wr_len = p.reth.dma_len;
      inc(Counter::rx_write_requests);
    }
    if (len > qp.resp.wr_resid || (info.is_end() && len != qp.resp.wr_resid)) {
      drop_message();
      return;
    }
    const bool imm = info.is(OpFlag::kImm);
    if (imm && !qp.resp.cur_recv && !pop_recv(qp)) {
      inc(Counter::out_of_buffer);
      drop_message();
      return;
    }
    if (len) {
      if (mrs.write_remote(qp.resp.wr_rkey, qp.init.pd, qp.resp.wr_va, p.payload.data(), len,
                           qp.qpn) != AccessCheck::kOk) {
        inc(Counter::resp_remote_access_errors);
        drop_message();
        return;
      }
    }
    qp.resp.wr_va += len;
    qp.resp.wr_resid -= len;
    qp.resp.rx_msg = info.is_end() ? ResponderState::RxMsg::kNone : ResponderState::RxMsg::kWrite;
    if (info.is_end() && imm) {
      qp.resp.cur_recv = false;
      complete_recv(qp, qp.resp.cur_rwqe.wr_id, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm,
                    qp.resp.wr_len, imm_to_net(p.imm), kWcWithImm, p.se);
    }
  }
  qp.resp.epsn = p.psn + 1;
}

void Engine::Impl::ud_responder(Qp& qp, const wire::ParsedPacket& p) {
  // Q_Key (IBA 10.2.5, C10-15): the datagram's Q_Key must equal the QP's.
  if (p.deth.qkey != qp.attr.qkey) {
    inc(Counter::rx_qkey_violation);
    return;
  }
  if (!qp.resp.cur_recv && !pop_recv(qp)) {
    inc(Counter::out_of_buffer);
    return;
  }
  qp.resp.cur_recv = false;
  const uint32_t len = static_cast<uint32_t>(p.payload.size());
  constexpr uint32_t kGrh = 40;
  Cqe e;
  e.wr_id = qp.resp.cur_rwqe.wr_id;
  e.opcode = WcOpcode::kRecv;
  e.qp_num = qp.qpn;
  e.src_qp = p.deth.src_qpn.value();
  e.sgid = p.src_ip;
  e.dgid = p.dst_ip;
  e.ipv4 = p.ip_version == 4;
  e.roce_v1 = p.roce_v1;
  e.sl = static_cast<uint8_t>(p.dscp >> 3);
  if (kGrh + len > recv_len(qp)) {
    inc(Counter::resp_local_length_error);
    inc(Counter::resp_cqe_error);
    e.status = WcStatus::kLocLenErr;
    push_cqe(qp.init.recv_cq, e, false);
    return;
  }
  // The GRH slot: an IPv6 header (or RoCE v1's GRH) as is, or 20 zero bytes then the IPv4
  // header (rdma-core / rxe for RoCEv2 over IPv4).
  uint8_t grh[kGrh] = {};
  if (p.ip_version == 4) {
    std::memcpy(grh + 20, p.ip_header.data(), std::min<size_t>(20, p.ip_header.size()));
  } else {
    std::memcpy(grh, p.ip_header.data(), std::min<size_t>(40, p.ip_header.size()));
  }
  const uint32_t pd = recv_pd(qp);
  // Check the whole destination before moving a byte, then copy the two parts.
  AccessCheck c = check_scatter(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge, pd, 0, kGrh + len);
  if (c != AccessCheck::kOk) {
    inc(Counter::resp_cqe_error);
    e.status = WcStatus::kLocProtErr;
    push_cqe(qp.init.recv_cq, e, false);
    return;
  }
  // The copies themselves fail only on an on-demand region's unmapped page.
  if (scatter(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge, pd, 0, grh, kGrh) !=
          AccessCheck::kOk ||
      (len && scatter(qp.resp.cur_sg.data(), qp.resp.cur_rwqe.num_sge, pd, kGrh, p.payload.data(),
                      len) != AccessCheck::kOk)) {
    inc(Counter::resp_cqe_error);
    e.status = WcStatus::kLocProtErr;
    push_cqe(qp.init.recv_cq, e, false);
    return;
  }
  e.status = WcStatus::kSuccess;
  e.byte_len = kGrh + len;
  e.wc_flags = kWcGrh;
  if (p.info->is(OpFlag::kImm)) {
    e.wc_flags |= kWcWithImm;
    e.imm_data = imm_to_net(p.imm);
  }
  push_cqe(qp.init.recv_cq, e, p.se);
}

}  // namespace uroce::transport
