/**
 * @file completer.cc
 * @brief The RC completer: ACK / NAK / RNR NAK / read response / atomic ACK processing,
 * go-back-N retransmission, the local ACK timer, retry_cnt and rnr_retry, implied NAKs, and
 * in-order completion (IBA Vol 1 §9.7.5.2 "Requester side behavior", §9.7.6 "Timers",
 * §9.9.3 error classes).
 *
 * PSN bookkeeping: una is the oldest unacknowledged PSN, next_psn the next one the requester
 * builds (it goes back on a retry), max_psn one past the highest ever sent. ACKs are
 * cumulative; a read response or atomic ACK implicitly acknowledges all earlier requests
 * (IBA 9.7.5.2.1). An ACK whose PSN covers a READ/atomic whose response has not arrived is an
 * implied NAK (IBA 9.7.5.2.3): the request is sent again from its first missing response.
 * retry_cnt counts local ACK timeouts (sequence NAKs and implied NAKs resend at once but do
 * not spend it, see retry_from); rnr_retry counts RNR NAKs (7 = forever). Both reset on
 * forward progress. Exhausting them completes
 * the head WQE with RETRY_EXC_ERR / RNR_RETRY_EXC_ERR and moves the QP to ERR.
 */
#include <algorithm>

#include "transport/engine_impl.h"

namespace uroce::transport {

using wire::OpFlag;

namespace {
bool outstanding(const Qp& qp) { return diff(qp.max_psn, qp.una) > 0; }
}  // namespace

void Engine::Impl::retire_head(Qp& qp, WcStatus st) {
  uint32_t pos = qp.sq.head_pos();
  SendWqe& w = qp.sq.front();
  if (w.started && is_rd_atomic(w) && qp.rd_atomic_out) qp.rd_atomic_out--;
  complete_send(qp, w, st);
  if (qp.state == QpState::kErr && st == WcStatus::kSuccess && qp.sq.empty()) return;
  if (qp.sq.empty() || qp.sq.head_pos() != pos) return;  // flushed meanwhile
  qp.sq.pop();
  if (qp.send_pos == pos) {
    // Retired while being re-sent: continue with the next WQE at its first PSN.
    qp.send_pos = pos + 1;
    qp.send_off = 0;
    if (w.started) qp.next_psn = w.last_psn + 1;
  }
  if (qp.started_end == pos) qp.started_end = pos + 1;
  activate(qp);
}

void Engine::Impl::requester_fatal(Qp& qp, WcStatus st) {
  if (!qp.sq.empty()) retire_head(qp, st);
  if (qp.type == QpType::kRc) {
    qp_error(qp);
    raise_qp_error_event(qp);
  } else {
    qp_sq_error(qp);
  }
}

void Engine::Impl::check_head_error(Qp& qp) {
  if (qp.sq.empty() || qp.send_pos != qp.sq.head_pos()) return;
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) return;
  const SendWqe& w = qp.sq.front();
  if (w.local_error != WcStatus::kSuccess) requester_fatal(qp, w.local_error);
}

void Engine::Impl::on_progress(Qp& qp, Timestamp now) {
  qp.retry_left = qp.attr.retry_cnt;
  qp.rnr_left = qp.attr.rnr_retry;
  qp.rewind_guard = false;
  qp.retrans_at = outstanding(qp) ? now + local_ack_timeout(qp.attr.timeout) : Timestamp::never();
  if (qp.state == QpState::kSqd && !qp.sqd_notified && qp.sq.head_pos() == qp.started_end) {
    qp.sqd_notified = true;
    if (qp.attr.en_sqd_async_notify) async_event(AsyncEventType::kSqDrained, qp.qpn);
  }
  activate(qp);
}

void Engine::Impl::rewind(Qp& qp, Psn psn) {
  uint32_t pos = qp.sq.head_pos();
  for (; pos != qp.started_end; ++pos) {
    if (diff(psn, qp.sq.at_pos(pos).last_psn) <= 0) break;
  }
  qp.pkts_since_ackreq = 0;
  if (pos == qp.started_end) {
    qp.send_pos = pos;
    qp.send_off = 0;
    qp.next_psn = psn;
    return;
  }
  const SendWqe& w = qp.sq.at_pos(pos);
  int32_t k = std::max(0, diff(psn, w.first_psn));
  qp.send_pos = pos;
  if (w.opcode == WrOpcode::kRdmaRead) {
    qp.send_off = static_cast<uint32_t>(k);  // packets: the READ resumes there
  } else if (is_rd_atomic(w)) {
    qp.send_off = 0;
    k = 0;
  } else {
    qp.send_off = static_cast<uint32_t>(k) * qp.mtu;
  }
  qp.next_psn = w.first_psn + static_cast<uint32_t>(k);
  activate(qp);
}

void Engine::Impl::retry_from(Qp& qp, Psn psn, Counter why, Timestamp now) {
  // A resend from an earlier PSN is already under way (e.g. an implied NAK found in the same
  // ACK): it covers psn. Going forward to psn would skip the earlier packets.
  if (diff(qp.next_psn, psn) < 0) {
    if (why != Counter::kCount) inc(why);
    return;
  }
  if (qp.rewind_guard && qp.rewind_psn == psn && qp.rewind_una == qp.una) return;
  // NAK-driven retries do not spend retry_cnt and do not restart the local ACK timer: under
  // loss plus reordering one loss produces several such signals (sequence NAK, implied NAKs
  // from later responses) within one round trip. retry_cnt counts local ACK timeouts, which
  // keep running from the last forward progress, so a peer that never lets us progress still
  // ends in RETRY_EXC_ERR after (retry_cnt + 1) x timeout.
  (void)now;
  if (why != Counter::kCount) inc(why);
  qp.rewind_guard = true;
  qp.rewind_psn = psn;
  qp.rewind_una = qp.una;
  rewind(qp, psn);
}

bool Engine::Impl::ack_through(Qp& qp, Psn psn, Timestamp now) {
  if (diff(psn, qp.max_psn) >= 0) return false;  // acknowledges what was never sent
  if (!qp.any_ack || diff(psn, qp.acked_psn) > 0) {
    qp.acked_psn = psn;
    qp.any_ack = true;
  }
  bool progress = false;
  Psn una_new = psn + 1;
  while (qp.sq.head_pos() != qp.started_end && qp.state != QpState::kErr) {
    SendWqe& w = qp.sq.front();
    if (is_rd_atomic(w)) {
      Psn first_missing = w.first_psn + w.resp_pkts;
      if (diff(una_new, first_missing) > 0) una_new = first_missing;
      if (diff(psn, w.first_psn) >= 0) {
        // Implied NAK (IBA 9.7.5.2.3): the response to this READ/atomic was lost.
        if (diff(una_new, qp.una) > 0) {
          qp.una = una_new;
          on_progress(qp, now);
        }
        retry_from(qp, first_missing, Counter::implied_nak_seq_err, now);
        return true;
      }
      break;
    }
    if (diff(psn, w.last_psn) < 0) break;
    retire_head(qp, WcStatus::kSuccess);
    progress = true;
  }
  if (qp.state == QpState::kErr) return progress;
  if (diff(una_new, qp.una) > 0) {
    qp.una = una_new;
    progress = true;
  }
  if (progress) on_progress(qp, now);
  if (diff(qp.una, qp.next_psn) > 0) rewind(qp, qp.una);  // acked past a retransmission
  check_head_error(qp);
  return progress;
}

void Engine::Impl::completer_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  const wire::OpcodeInfo& info = *p.info;
  const Psn q = p.psn;
  if (diff(q, qp.una) < -1 || diff(q, qp.max_psn) >= 0) return;  // stale, or never sent

  if (info.is(OpFlag::kReadResponse) || info.is(OpFlag::kAtomicAck)) {
    // Implicit ACK of everything before q (IBA 9.7.5.2.1).
    while (qp.sq.head_pos() != qp.started_end) {
      SendWqe& w = qp.sq.front();
      if (is_rd_atomic(w) || diff(q, w.last_psn) <= 0) break;
      retire_head(qp, WcStatus::kSuccess);
    }
    if (qp.state == QpState::kErr || qp.sq.head_pos() == qp.started_end) return;
    SendWqe& w = qp.sq.front();
    const uint32_t pos = qp.sq.head_pos();
    if (diff(q, w.first_psn) < 0) return;  // stale
    if (diff(q, w.last_psn) > 0) {
      // A response to a later request: this READ/atomic's response was lost (implied NAK,
      // IBA 9.7.5.2.3). Resend it now rather than wait for the timer.
      if (is_rd_atomic(w))
        retry_from(qp, w.first_psn + w.resp_pkts, Counter::implied_nak_seq_err, now);
      return;
    }
    const Psn expect = w.first_psn + w.resp_pkts;
    if (info.is(OpFlag::kReadResponse)) {
      if (w.opcode != WrOpcode::kRdmaRead) return;
      if (q != expect) {
        // A response went missing: ask again from it (once per gap, see retry_from).
        if (diff(q, expect) > 0) retry_from(qp, expect, Counter::kCount, now);
        return;
      }
      uint32_t off = w.resp_pkts * qp.mtu;
      uint32_t want = std::min(qp.mtu, w.length - std::min(w.length, off));
      if (p.payload.size() != want) {
        requester_fatal(qp, WcStatus::kBadRespErr);
        return;
      }
      if (want && scatter(sq_sg(qp, pos), w.num_sge, qp.init.pd, off, p.payload.data(), want) !=
                      AccessCheck::kOk) {
        requester_fatal(qp, WcStatus::kLocProtErr);
        return;
      }
    } else {
      if (!is_rd_atomic(w) || w.opcode == WrOpcode::kRdmaRead || q != expect) return;
      uint64_t orig = p.atomic_ack_orig;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(&orig);
      if (scatter(sq_sg(qp, pos), w.num_sge, qp.init.pd, 0, src, 8) != AccessCheck::kOk) {
        requester_fatal(qp, WcStatus::kLocProtErr);
        return;
      }
    }
    w.resp_pkts++;
    if (diff(q + 1, qp.una) > 0) qp.una = q + 1;
    if (w.resp_pkts >= w.npkts) retire_head(qp, WcStatus::kSuccess);
    on_progress(qp, now);
    if (qp.any_ack) ack_through(qp, qp.acked_psn, now);
    if (diff(qp.una, qp.next_psn) > 0) rewind(qp, qp.una);
    check_head_error(qp);
    return;
  }

  // ACK / NAK (AETH).
  const wire::AethValue& a = p.aeth;
  if (a.is_ack()) {
    ack_through(qp, q, now);
    return;
  }
  // Every NAK acknowledges the PSNs before it.
  if (diff(q, qp.una) < 0) return;
  ack_through(qp, q - 1, now);
  if (qp.state == QpState::kErr) return;
  if (a.is_rnr_nak()) {
    // RNR NAK (IBA 9.7.5.2.8): wait the peer's RNR timer, then resend from q.
    qp.traffic.rnr_naks++;
    if (qp.attr.rnr_retry != 7) {
      if (qp.rnr_left == 0) {
        inc(Counter::req_rnr_retries_exceeded);
        requester_fatal(qp, WcStatus::kRnrRetryExcErr);
        return;
      }
      qp.rnr_left--;
    }
    inc(Counter::rnr_nak_retry_err);
    qp.rnr_until = now + rnr_timer_delay(a.value());
    qp.retrans_at = Timestamp::never();  // re-armed by the next packet sent
    qp.rewind_guard = false;
    if (diff(qp.next_psn, q) >= 0) rewind(qp, q);  // never forward past an earlier resend
    return;
  }
  switch (a.value()) {
    case wire::kAethNakPsnSeqError: retry_from(qp, q, Counter::packet_seq_err, now); return;
    case wire::kAethNakInvalidRequest:
      inc(Counter::req_remote_invalid_request);
      requester_fatal(qp, WcStatus::kRemInvReqErr);
      return;
    case wire::kAethNakRemoteAccessError:
      inc(Counter::req_remote_access_errors);
      requester_fatal(qp, WcStatus::kRemAccessErr);
      return;
    case wire::kAethNakRemoteOperationalError: requester_fatal(qp, WcStatus::kRemOpErr); return;
    default:
      // Invalid RD request and reserved codes.
      requester_fatal(qp, WcStatus::kRemInvRdReqErr);
      return;
  }
}

void Engine::Impl::on_timers(Qp& qp, Timestamp now) {
  if (qp.retrans_at <= now) {
    qp.retrans_at = Timestamp::never();
    if (qp.type == QpType::kRc && outstanding(qp) &&
        (qp.state == QpState::kRts || qp.state == QpState::kSqd) && qp.rnr_until.is_never()) {
      // Local ACK timeout (IBA 9.7.6.1.3): resend from the oldest unacknowledged PSN.
      if (qp.retry_left == 0) {
        inc(Counter::req_transport_retries_exceeded);
        requester_fatal(qp, WcStatus::kRetryExcErr);
        return;
      }
      qp.retry_left--;
      inc(Counter::local_ack_timeout_err);
      qp.traffic.local_ack_timeouts++;
      qp.rewind_guard = false;
      qp.dmac_valid = false;  // the neighbour may have moved
      rewind(qp, qp.una);
      qp.retrans_at = now + local_ack_timeout(qp.attr.timeout);
    }
  }
  if (qp.probe_at <= now) {
    qp.probe_at = Timestamp::never();
    // ACK probe (kAckProbeDelay): the stream stopped with its last packets never asked to be
    // ACKed; resend the last one with AckReq. Not while another packet can go out.
    if (outstanding(qp) && qp.next_psn == qp.max_psn && !requester_has_packet(qp) &&
        qp.rnr_until.is_never() && (qp.state == QpState::kRts || qp.state == QpState::kSqd)) {
      inc(Counter::req_ack_probes);
      rewind(qp, qp.next_psn - 1);
      qp.force_ackreq = true;
    }
  }
  if (qp.dack_at <= now) {
    qp.dack_at = Timestamp::never();
    if (qp.state != QpState::kErr && qp.state != QpState::kReset)
      queue_ack(qp, kSynAck, qp.dack_psn);
  }
  if (qp.rnr_until <= now) {
    qp.rnr_until = Timestamp::never();
    activate(qp);
  }
  if (qp.neigh_retry_at <= now) {
    qp.neigh_retry_at = Timestamp::never();
    activate(qp);
  }
  if (qp.cc->next_deadline() <= now) qp.cc->on_timer(now);
}

}  // namespace uroce::transport
