/**
 * @file rx.cc
 * @brief The receive gate after wire::parse(): CNP handling, ECN-CE accounting, QP lookup and
 * the QP type/state checks, then dispatch to the responder (requests) or the completer
 * (responses). Parse once, at one gate, then trust (docs/design.md, "Principles").
 *
 * References: IBA Vol 1 §9.6 (packet transport header checks, C9-? order), Annex 17 §A17.9.3
 * (CNP), RFC 3168 (CE codepoint).
 */
#include "transport/engine_impl.h"

namespace uroce::transport {

namespace {
bool service_matches(QpType t, const wire::OpcodeInfo& info) {
  switch (t) {
    case QpType::kRc: return info.is(wire::OpFlag::kRc);
    case QpType::kUc: return info.is(wire::OpFlag::kUc);
    case QpType::kUd: return info.is(wire::OpFlag::kUd);
    // The XRC halves: an XRC_SEND QP hears responses, an XRC_RECV QP requests.
    case QpType::kXrcSend: return info.is(wire::OpFlag::kXrc) && info.is(wire::OpFlag::kResponse);
    case QpType::kXrcRecv: return info.is(wire::OpFlag::kXrc) && info.is(wire::OpFlag::kRequest);
  }
  return false;
}
}  // namespace

void Engine::Impl::on_frame(std::span<const uint8_t> frame, Timestamp now) {
  if (now > last_now) last_now = now;
  wire::ParsedPacket p;
  wire::DropReason r = wire::parse(frame, &p);
  // [device] rxe_flush_icrc: an RC FLUSH may carry Linux rxe's ICRC instead (icrc.h).
  if (r == wire::DropReason::kBadIcrc && cfg.rxe_flush_icrc && p.opcode == wire::Opcode::kRcFlush)
    r = wire::check_icrc_rxe_flush(frame, p);
  if (r != wire::DropReason::kOk) {
    inc(wire::drop_counter(r));
    return;
  }
  inc(Counter::rx_vport_rdma_unicast_packets);
  inc(Counter::rx_vport_rdma_unicast_bytes, frame.size());

  if (p.dest_qpn.value() == kGsiQpn && p.opcode != wire::Opcode::kCnp) {
    gsi.on_packet(p);  // QP1: management datagrams (gsi.h)
    return;
  }
  Qp* qp = find_qp(p.dest_qpn.value());
  if (p.opcode == wire::Opcode::kCnp) {
    // Annex 17 §A17.9.3: the CNP's DestQP is our QP whose flow was marked.
    if (qp && qp->state >= QpState::kRtr && qp->state != QpState::kErr) {
      inc(Counter::rp_cnp_handled);
      qp->traffic.rp_cnp_handled++;
      qp->cc->on_cnp(now);
      activate(*qp);  // its rate (and so its send-time gate) may have changed
    } else {
      inc(Counter::rp_cnp_ignored);
    }
    return;
  }
  if (!qp) {
    inc(Counter::rx_unknown_qp);
    return;
  }
  if (!service_matches(qp->type, *p.info)) {
    inc(Counter::rx_bad_qp_state);
    return;
  }
  // P_Key: the table holds only the default partition; compare the 15-bit key (IBA 10.9.3).
  if ((p.pkey & 0x7fff) != (wire::kDefaultPkey & 0x7fff)) {
    inc(Counter::rx_pkey_violation);
    return;
  }
  bool request = p.info->is(wire::OpFlag::kRequest);
  // Responder accepts in RTR and later; the completer only while sending (RTS/SQD/SQE).
  bool state_ok = request ? (qp->state == QpState::kRtr || qp->state == QpState::kRts ||
                             qp->state == QpState::kSqd || qp->state == QpState::kSqe)
                          : (qp->state == QpState::kRts || qp->state == QpState::kSqd ||
                             qp->state == QpState::kSqe);
  if (!state_ok) {
    inc(Counter::rx_bad_qp_state);
    return;
  }
  // A connected QP speaks the RoCE version of its path's source GID: a frame of the other
  // version is from a peer it is not connected with (UD QPs take either; each AH picks).
  if (qp->type != QpType::kUd && p.roce_v1 != qp->tmpl.roce_v1) {
    inc(Counter::rx_bad_qp_state);
    return;
  }
  if (p.ext != wire::UroceExt::kNone && !qp->selective) {
    inc(Counter::sr_unnegotiated);  // uroce's extension from a peer this QP did not agree with
    return;
  }
  if (p.has_tseth && !qp->timestamps) {
    inc(Counter::ts_unnegotiated);
    return;
  }
  qp->traffic.rx_packets++;
  qp->traffic.rx_bytes += frame.size();
  if (p.ecn == wire::kEcnCe) note_ce(*qp, p, now);
  if (qp->state == QpState::kRtr && !qp->resp.comm_est) {
    // IBA 11.6.3: first packet on a QP in RTR -> Communication Established.
    qp->resp.comm_est = true;
    async_event(AsyncEventType::kCommEst, qp->qpn);
  }
  if (request) {
    responder_rx(*qp, p, now);
  } else if (qp->type == QpType::kRc || qp->type == QpType::kXrcSend) {
    completer_rx(*qp, p, now);
  } else {
    inc(Counter::rx_bad_qp_state);
  }
}

}  // namespace uroce::transport
