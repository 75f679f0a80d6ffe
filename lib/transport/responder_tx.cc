/**
 * @file responder_tx.cc
 * @brief The responder's transmit half: its ordered response queue (resp_q) to the wire, one
 * frame per call: ACK/NAK (AETH with the MSN), RDMA READ response packets read from memory as
 * they leave (the region is checked again per packet), atomic ACKs with the original value
 * (IBA Vol 1 §9.7.5.1.1, §9.7.5.1.6, §9.7.5.2). READ response packets count against the QP's
 * congestion control like its requests (tx.cc holds them at its send-time gate); the other
 * responses are not paced.
 */
#include <algorithm>
#include <cstring>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::Opcode;

int Engine::Impl::service_responder(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  if (!resolve(qp, neigh)) {
    // No MAC for the peer: the responses are lost; the requester's timer recovers.
    inc(Counter::tx_no_neighbor);
    qp.resp.resp_q.clear();
    qp.resp.resp_rd_atomic = 0;
    return 0;
  }
  RespItem& it = qp.resp.resp_q.front();
  wire::FrameSpec s = qp.tmpl;
  // An XRC_RECV QP answers with the XRC twins of the RC response opcodes.
  const auto op = [&](Opcode rc) { return qp.type == QpType::kXrcRecv ? wire::xrc_twin(rc) : rc; };
  const uint8_t prio = prio_of(s.dscp);
  s.aeth.msn = it.msn;
  auto none = [](uint8_t*) { return true; };
  int r;
  switch (it.kind) {
    case RespItem::Kind::kAck:
    case RespItem::Kind::kNak: {
      s.opcode = op(Opcode::kRcAcknowledge);
      s.psn = it.psn;
      s.aeth.syndrome = it.syndrome;
      if (it.kind == RespItem::Kind::kAck) sr_fill_sack(qp, s);
      if (qp.timestamps && !qp.resp.ts_arrived.is_never()) {
        // Each stamp is echoed once, with the time it waited here.
        s.has_tseth = true;
        s.tseth = {qp.resp.ts_echo, static_cast<uint32_t>(std::clamp<int64_t>(
                                        (now - qp.resp.ts_arrived).ns, 0, INT32_MAX))};
      }
      r = emit(sink, qp, s, 0, prio, false, none);
      if (r > 0 && s.ext == wire::UroceExt::kSack) inc(Counter::sr_sacks_sent);
      if (r > 0) qp.resp.resp_q.pop();
      if (r > 0 && s.has_tseth) qp.resp.ts_arrived = Timestamp::never();
      return r > 0 ? 1 : r;
    }
    case RespItem::Kind::kAtomic: {
      s.opcode = op(Opcode::kRcAtomicAcknowledge);
      s.psn = it.psn;
      s.aeth.syndrome = kSynAck;
      s.atomic_ack_orig = it.orig;
      r = emit(sink, qp, s, 0, prio, false, none);
      if (r > 0) {
        qp.resp.resp_q.pop();
        qp.resp.resp_rd_atomic--;
      }
      return r > 0 ? 1 : r;
    }
    case RespItem::Kind::kRead: {
      const uint32_t idx = it.sent;
      const uint32_t off = idx * qp.mtu;
      const uint32_t chunk = std::min(qp.mtu, it.len - std::min(it.len, off));
      const bool first = idx == 0, last = idx + 1 == it.npkts;
      s.opcode = op(first && last ? Opcode::kRcRdmaReadResponseOnly
                    : first       ? Opcode::kRcRdmaReadResponseFirst
                    : last        ? Opcode::kRcRdmaReadResponseLast
                                  : Opcode::kRcRdmaReadResponseMiddle);
      s.psn = it.psn + idx;
      s.aeth.syndrome = kSynAck;
      // The region may have gone since the request was checked: checked again per packet,
      // as the bytes are read.
      bool refused = false;
      r = emit(sink, qp, s, chunk, prio, false, [&](uint8_t* dst) {
        refused =
            mrs.read_remote(it.rkey, it.pd, it.va + off, dst, chunk, qp.qpn) != AccessCheck::kOk;
        return !refused;
      });
      if (refused) {
        // The NAK names this response's PSN, inside the READ, so the requester fails that WQE
        // (epsn is already past the whole READ; the QP leaves service anyway).
        qp.resp.epsn = s.psn;
        responder_fatal(qp, wire::kAethNakRemoteAccessError, AsyncEventType::kQpAccessErr,
                        WcStatus::kSuccess);
        return 0;
      }
      if (r <= 0) return r;
      qp.cc->on_packet_sent(static_cast<uint32_t>(r), now);
      if (++it.sent == it.npkts) {
        qp.resp.resp_q.pop();
        qp.resp.resp_rd_atomic--;
      }
      return 1;
    }
  }
  return 0;
}

}  // namespace uroce::transport
