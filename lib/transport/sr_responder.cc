/**
 * @file sr_responder.cc
 * @brief Selective repeat, responder side (uroce's extension, docs/loss-recovery.md): request
 * packets that arrive ahead of the expected PSN, within the window, are checked where their
 * SRETH says they go (a WRITE at its VA after the R_Key check, a SEND into the receive WQE of
 * its recv_seq at its offset) and held, their payload kept aside; when the PSNs before them
 * arrive they are retired in order through the same code as in-order packets, which places
 * them, so completions, MSNs, receive WQEs and memory stay exactly as with go-back-N. Every ACK
 * of such a QP carries the held PSNs as a SACKETH bitmap.
 *
 * In-order placement (unless the QP opted into out-of-order placement): a packet's bytes go in
 * only after every earlier packet of the QP was placed. A program that polls a message's last
 * byte then finds the whole message in place, and an earlier WRITE resent into the same bytes
 * never lands over a later one, as on a NIC that places in order. The opt-in places each packet
 * as it arrives and writes nothing more when it is retired.
 *
 * Not taken out of order (dropped, then repaired by the requester's resend): READ and atomic
 * requests (executed in order: responses and the replay cache stay as IBA has them), packets
 * without an SRETH, SENDs on a QP with an SRQ or whose receive WQE is not posted yet, and
 * packets that fail a check; such a packet is checked again when it arrives in order and then
 * gets the NAK IBA prescribes. Nothing is placed outside a granted MR or a posted WQE.
 */
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::OpFlag;

void Engine::Impl::sr_setup(Qp& qp, bool on) {
  qp.selective = on;
  qp.resp.sr = SrRecvState{};
  qp.comp.sack = SackBoard{};
  qp.req.sr = SrSendState{};
  qp.sr_mask = on ? cfg.sr_window - 1 : 0;
  if (!on) return;
  qp.resp.sr.win.assign(cfg.sr_window, HeldPacket{});
  qp.comp.sack.held.assign(cfg.sr_window, 0);
  qp.req.sr.sent.assign(cfg.sr_window, 0);
}

bool Engine::Impl::sr_place(Qp& qp, const wire::ParsedPacket& p, bool write) {
  const wire::OpcodeInfo& info = *p.info;
  const uint32_t len = static_cast<uint32_t>(p.payload.size());
  if (p.ext != wire::UroceExt::kSreth) return false;
  if (((info.is(OpFlag::kFirst) || info.is(OpFlag::kMiddle)) && len != qp.mtu) || len > qp.mtu)
    return false;
  const uint32_t pd = qp.init.pd;
  if (info.is(OpFlag::kWrite)) {
    if (!(qp.attr.qp_access_flags & kAccessRemoteWrite)) return false;
    const uint32_t rkey = info.is_start() ? p.reth.rkey : p.sreth.rkey;
    const uint64_t va = info.is_start() ? p.reth.va : p.sreth.place;
    if (info.is_start() && mrs.check_remote(rkey, pd, va, p.reth.dma_len, kAccessRemoteWrite,
                                            qp.qpn) != AccessCheck::kOk)
      return false;
    if (len == 0) return true;
    if (!write)
      return mrs.check_remote(rkey, pd, va, len, kAccessRemoteWrite, qp.qpn) == AccessCheck::kOk;
    return mrs.write_remote(rkey, pd, va, p.payload.data(), len, qp.qpn) == AccessCheck::kOk;
  }
  if (!info.is(OpFlag::kSend) || qp.resp.srq) return false;
  // The receive WQE of message recv_seq: the one being filled, or k places behind the head.
  const int32_t k = static_cast<int32_t>(p.sreth.recv_seq - qp.resp.sr.recv_popped);
  const Sge* sg;
  uint32_t nsge;
  if (k == -1 && qp.resp.cur_recv) {
    sg = qp.resp.cur_sg.data();
    nsge = qp.resp.cur_rwqe.num_sge;
  } else if (k >= 0 && static_cast<uint32_t>(k) < qp.resp.rq.size()) {
    const uint32_t pos = qp.resp.rq.head_pos() + static_cast<uint32_t>(k);
    sg = qp.resp.rq_sges.data() + size_t{qp.resp.rq.slot_of(pos)} * qp.init.max_recv_sge;
    nsge = qp.resp.rq.at_pos(pos).num_sge;
  } else {
    return false;
  }
  const uint64_t off = p.sreth.place;
  if (off + len > sge_list_len(sg, nsge)) return false;
  if (len == 0 || !write) return true;  // a deferred packet's access is checked when placed
  return scatter(sg, nsge, pd, static_cast<uint32_t>(off), p.payload.data(), len) ==
         AccessCheck::kOk;
}

void Engine::Impl::sr_hold(Qp& qp, const wire::ParsedPacket& p) {
  SrRecvState& sr = qp.resp.sr;
  const int32_t d = diff(p.psn, qp.resp.epsn);
  inc(Counter::out_of_sequence);
  if (d >= static_cast<int32_t>(cfg.sr_window)) {
    inc(Counter::sr_ooo_dropped);
    queue_ack(qp, kSynAck, qp.resp.epsn - 1);
    return;
  }
  HeldPacket& h = sr.win[p.psn.value() & qp.sr_mask];
  if (h.valid) {
    inc(Counter::duplicate_request);
    queue_ack(qp, kSynAck, qp.resp.epsn - 1);
    return;
  }
  // Its bytes wait for its retirement: placed now, they could be overwritten by an earlier
  // packet still missing (a resend of an earlier WRITE to the same bytes), and a message's last
  // byte could appear before the bytes in front of it.
  const bool defer = !qp.ooo_placement && !p.payload.empty();
  if (!sr_place(qp, p, !defer)) {
    inc(Counter::sr_ooo_dropped);
    queue_ack(qp, kSynAck, qp.resp.epsn - 1);
    return;
  }
  h.deferred = defer;
  if (defer) {
    if (sr.stash.empty()) sr.stash.resize(cfg.sr_window);
    sr.stash[p.psn.value() & qp.sr_mask].assign(p.payload.begin(), p.payload.end());
  }
  h.valid = true;
  h.opcode = static_cast<uint8_t>(p.opcode);
  h.se = p.se;
  h.len = static_cast<uint32_t>(p.payload.size());
  h.imm = p.info->is(OpFlag::kImm) ? p.imm : p.info->is(OpFlag::kInv) ? p.ieth_rkey : 0;
  h.reth = p.reth;
  h.recv_seq = p.sreth.recv_seq;
  h.place = p.info->is(OpFlag::kWrite) && p.info->is_start() ? p.reth.va : p.sreth.place;
  sr.held++;
  inc(defer ? Counter::sr_ooo_deferred : Counter::sr_ooo_placed);
  queue_ack(qp, kSynAck, qp.resp.epsn - 1);
}

void Engine::Impl::sr_drain(Qp& qp, Psn before, Timestamp now) {
  SrRecvState& sr = qp.resp.sr;
  // PSNs that an in-order READ took (it advances the expected PSN by its response count) are
  // no request's: whatever was held there is forged; forget it.
  for (Psn x = before + 1; sr.held && diff(qp.resp.epsn, x) > 0 &&
                           diff(x, before) <= static_cast<int32_t>(cfg.sr_window);
       x = x + 1) {
    HeldPacket& h = sr.win[x.value() & qp.sr_mask];
    if (h.valid) {
      h.valid = false;
      sr.held--;
    }
  }
  bool retired = false;
  while (sr.held && qp.state != QpState::kErr) {
    HeldPacket& slot = sr.win[qp.resp.epsn.value() & qp.sr_mask];
    if (!slot.valid) break;
    const HeldPacket h = slot;
    slot.valid = false;
    sr.held--;
    wire::ParsedPacket q;
    q.opcode = static_cast<wire::Opcode>(h.opcode);
    q.info = &wire::opcode_info(q.opcode);
    q.psn = qp.resp.epsn;
    q.se = h.se;
    q.reth = h.reth;
    q.imm = h.imm;
    q.ieth_rkey = h.imm;
    const Psn at = qp.resp.epsn;
    if (h.deferred) {
      // Its bytes go in now, every earlier packet being in place.
      sr.retiring.swap(sr.stash[at.value() & qp.sr_mask]);
      q.payload = sr.retiring;
    }
    rc_execute(qp, q, now, &h);
    retired = true;
    if (qp.resp.epsn == at) break;  // not retired (an error took the QP down)
  }
  if (retired && qp.state != QpState::kErr) queue_ack(qp, kSynAck, qp.resp.epsn - 1);
}

void Engine::Impl::sr_fill_sack(const Qp& qp, wire::FrameSpec& s) {
  const SrRecvState& sr = qp.resp.sr;
  if (!qp.selective || sr.held == 0) return;
  // Held PSNs lie in (epsn, epsn + window), above every ACK PSN the queue holds.
  s.ext = wire::UroceExt::kSack;
  s.sack = wire::SackValue{};
  s.sack.base = qp.resp.epsn + 1;
  uint32_t seen = 0, last = 0;
  for (uint32_t i = 0; i + 1 < cfg.sr_window && seen < sr.held; ++i) {
    if (!sr.win[(s.sack.base + i).value() & qp.sr_mask].valid) continue;
    s.sack.set(i);
    last = i;
    ++seen;
  }
  s.sack.nwords = static_cast<uint8_t>(last / 32 + 1);
}

}  // namespace uroce::transport
