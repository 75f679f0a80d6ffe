/**
 * @file completer.cc
 * @brief The RC completer: ACK / NAK / RNR NAK / read response / atomic ACK processing (the
 * zero-length READ response completes an ATOMIC_WRITE or a FLUSH),
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

void Engine::Impl::retire_head(Qp& qp, WcStatus st) {
  uint32_t pos = qp.req.sq.head_pos();
  SendWqe& w = qp.req.sq.front();
  if (w.started && is_rd_atomic(w) && qp.req.rd_atomic_out) qp.req.rd_atomic_out--;
  complete_send(qp, w, st);
  if (qp.state == QpState::kErr && st == WcStatus::kSuccess && qp.req.sq.empty()) return;
  if (qp.req.sq.empty() || qp.req.sq.head_pos() != pos) return;  // flushed meanwhile
  qp.req.sq.pop();
  if (qp.req.send_pos == pos) {
    // Retired while being re-sent: continue with the next WQE at its first PSN.
    qp.req.send_pos = pos + 1;
    qp.req.send_off = 0;
    if (w.started) qp.req.next_psn = w.last_psn + 1;
  }
  if (qp.req.started_end == pos) qp.req.started_end = pos + 1;
  activate(qp);
}

void Engine::Impl::requester_fatal(Qp& qp, WcStatus st) {
  if (!qp.req.sq.empty()) retire_head(qp, st);
  if (is_reliable(qp.type)) {
    qp_error(qp);
    raise_qp_error_event(qp);
  } else {
    qp_sq_error(qp);
  }
}

void Engine::Impl::check_head_error(Qp& qp) {
  if (qp.req.sq.empty() || qp.req.send_pos != qp.req.sq.head_pos()) return;
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) return;
  const SendWqe& w = qp.req.sq.front();
  if (w.local_error != WcStatus::kSuccess) requester_fatal(qp, w.local_error);
}

void Engine::Impl::rtt_on_sent(Qp& qp, const SendWqe& w, Psn psn, bool first, bool prompt,
                               Timestamp now) {
  RequesterState& r = qp.req;
  if (!first) {
    // Go-back-N resends everything from psn on, the timed PSN too when it is not below;
    // selective repeat resends single PSNs.
    const bool covers = qp.selective ? psn == r.rtt_psn : diff(psn, r.rtt_psn) <= 0;
    if (!r.rtt_sent.is_never() && covers) r.rtt_sent = Timestamp::never();
    return;
  }
  if (prompt && r.rtt_sent.is_never()) {
    r.rtt_psn = psn;
    r.rtt_sent = now;
    r.rtt_read = w.opcode == WrOpcode::kRdmaRead;
  }
}

void Engine::Impl::rtt_on_arrived(Qp& qp, Psn psn, Timestamp now) {
  RequesterState& r = qp.req;
  if (r.rtt_sent.is_never() || diff(psn, r.rtt_psn) < 0) return;
  const Duration rtt = now - r.rtt_sent;
  if (!r.rtt_read && !qp.timestamps) qp.cc->on_rtt(rtt, now);
  r.rtt_sent = Timestamp::never();
  // Smoothed with its variation as TCP does (RFC 6298 §2: gains 1/8 and 1/4), for selective
  // repeat's short RTO.
  if (r.srtt.ns == 0) {
    r.srtt = rtt;
    r.rttvar = Duration::nanos(rtt.ns / 2);
  } else {
    const int64_t err = rtt.ns - r.srtt.ns;
    r.rttvar = Duration::nanos(r.rttvar.ns + ((err < 0 ? -err : err) - r.rttvar.ns) / 4);
    r.srtt = Duration::nanos(r.srtt.ns + err / 8);
  }
}

void Engine::Impl::peer_rtt(Qp& qp, const wire::TsethValue& t, Timestamp now) {
  // Modulo 2^32 ns: exact for round trips under ~2 s; a later or forged echo is ignored.
  const uint32_t since_sent = static_cast<uint32_t>(now.ns) - t.stamp;
  if (since_sent > 0x7fffffffu || t.hold >= since_sent) return;
  inc(Counter::ts_samples);
  qp.cc->on_rtt(Duration::nanos(since_sent - t.hold), now);
}

void Engine::Impl::on_progress(Qp& qp, Timestamp now) {
  rtt_on_arrived(qp, qp.comp.una - 1, now);
  qp.comp.retry_left = qp.attr.retry_cnt;
  qp.comp.rnr_left = qp.attr.rnr_retry;
  qp.comp.rewind_guard = false;
  qp.comp.retrans_at =
      outstanding(qp) ? now + local_ack_timeout(qp.attr.timeout) : Timestamp::never();
  if (qp.selective) {
    sr_after_progress(qp);
    qp.req.sr.rto_backoff = 0;
    if (outstanding(qp))
      sr_arm_rto(qp, now);
    else
      qp.req.sr.rto_at = Timestamp::never();
  }
  if (qp.state == QpState::kSqd && !qp.req.sqd_notified &&
      qp.req.sq.head_pos() == qp.req.started_end) {
    qp.req.sqd_notified = true;
    if (qp.attr.en_sqd_async_notify) async_event(AsyncEventType::kSqDrained, qp.qpn);
  }
  activate(qp);
}

void Engine::Impl::rewind(Qp& qp, Psn psn) {
  uint32_t pos = qp.req.sq.head_pos();
  for (; pos != qp.req.started_end; ++pos) {
    if (diff(psn, qp.req.sq.at_pos(pos).last_psn) <= 0) break;
  }
  qp.req.pkts_since_ackreq = 0;
  if (pos == qp.req.started_end) {
    qp.req.send_pos = pos;
    qp.req.send_off = 0;
    qp.req.next_psn = psn;
    return;
  }
  const SendWqe& w = qp.req.sq.at_pos(pos);
  int32_t k = std::max(0, diff(psn, w.first_psn));
  qp.req.send_pos = pos;
  if (w.opcode == WrOpcode::kRdmaRead) {
    qp.req.send_off = static_cast<uint32_t>(k);  // packets: the READ resumes there
  } else if (is_rd_atomic(w)) {
    qp.req.send_off = 0;
    k = 0;
  } else {
    qp.req.send_off = static_cast<uint32_t>(k) * qp.mtu;
  }
  qp.req.next_psn = w.first_psn + static_cast<uint32_t>(k);
  activate(qp);
}

void Engine::Impl::retry_from(Qp& qp, Psn psn, Counter why, bool ours, Timestamp now) {
  // A resend from an earlier PSN is already under way (e.g. an implied NAK found in the same
  // ACK): it covers psn. Going forward to psn would skip the earlier packets.
  if (diff(qp.req.next_psn, psn) < 0) {
    if (why != Counter::kCount) inc(why);
    return;
  }
  if (qp.comp.rewind_guard && qp.comp.rewind_psn == psn && qp.comp.rewind_una == qp.comp.una)
    return;
  // NAK-driven retries do not spend retry_cnt and do not restart the local ACK timer: under
  // loss plus reordering one loss produces several such signals (sequence NAK, implied NAKs
  // from later responses) within one round trip. retry_cnt counts local ACK timeouts, which
  // keep running from the last forward progress, so a peer that never lets us progress still
  // ends in RETRY_EXC_ERR after (retry_cnt + 1) x timeout.
  if (why != Counter::kCount) inc(why);
  if (ours) qp.cc->on_loss(now);
  qp.comp.rewind_guard = true;
  qp.comp.rewind_psn = psn;
  qp.comp.rewind_una = qp.comp.una;
  if (qp.selective) {
    sr_force_resend(qp, psn);  // the request that covers psn goes again, before new packets
    return;
  }
  rewind(qp, psn);
}

bool Engine::Impl::ack_through(Qp& qp, Psn psn, Timestamp now) {
  if (diff(psn, qp.req.max_psn) >= 0) return false;  // acknowledges what was never sent
  if (!qp.comp.any_ack || diff(psn, qp.comp.acked_psn) > 0) {
    qp.comp.acked_psn = psn;
    qp.comp.any_ack = true;
  }
  bool progress = false;
  Psn una_new = psn + 1;
  while (qp.req.sq.head_pos() != qp.req.started_end && qp.state != QpState::kErr) {
    SendWqe& w = qp.req.sq.front();
    if (is_rd_atomic(w)) {
      Psn first_missing = w.first_psn + w.resp_pkts;
      if (diff(una_new, first_missing) > 0) una_new = first_missing;
      if (diff(psn, w.first_psn) >= 0) {
        // Implied NAK (IBA 9.7.5.2.3): the response to this READ/atomic was lost.
        if (diff(una_new, qp.comp.una) > 0) {
          qp.comp.una = una_new;
          on_progress(qp, now);
        }
        retry_from(qp, first_missing, Counter::implied_nak_seq_err, true, now);
        return true;
      }
      break;
    }
    if (diff(psn, w.last_psn) < 0) break;
    retire_head(qp, WcStatus::kSuccess);
    progress = true;
  }
  if (qp.state == QpState::kErr) return progress;
  if (diff(una_new, qp.comp.una) > 0) {
    qp.comp.una = una_new;
    progress = true;
  }
  if (progress) on_progress(qp, now);
  if (diff(qp.comp.una, qp.req.next_psn) > 0)
    rewind(qp, qp.comp.una);  // acked past a retransmission
  check_head_error(qp);
  return progress;
}

bool Engine::Impl::place_read_response(Qp& qp, SendWqe& w, uint32_t pos,
                                       const wire::ParsedPacket& p, Psn q) {
  const uint32_t off = static_cast<uint32_t>(diff(q, w.first_psn)) * qp.mtu;
  const uint32_t want = std::min(qp.mtu, w.length - std::min(w.length, off));
  if (p.payload.size() != want) {
    requester_fatal(qp, WcStatus::kBadRespErr);
    return false;
  }
  if (want && scatter(sq_sg(qp, pos), w.num_sge, qp.init.pd, off, p.payload.data(), want) !=
                  AccessCheck::kOk) {
    requester_fatal(qp, WcStatus::kLocProtErr);
    return false;
  }
  return true;
}

void Engine::Impl::completer_rx(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  const wire::OpcodeInfo& info = *p.info;
  const Psn q = p.psn;
  if (diff(q, qp.comp.una) < -1 || diff(q, qp.req.max_psn) >= 0) return;  // stale, or never sent
  if (p.has_tseth) peer_rtt(qp, p.tseth, now);

  if (info.is(OpFlag::kReadResponse) || info.is(OpFlag::kAtomicAck)) {
    if (qp.selective) sr_response_arrived(qp, q);
    // Implicit ACK of everything before q (IBA 9.7.5.2.1).
    while (qp.req.sq.head_pos() != qp.req.started_end) {
      SendWqe& w = qp.req.sq.front();
      if (is_rd_atomic(w) || diff(q, w.last_psn) <= 0) break;
      retire_head(qp, WcStatus::kSuccess);
    }
    if (qp.state == QpState::kErr || qp.req.sq.head_pos() == qp.req.started_end) return;
    SendWqe& w = qp.req.sq.front();
    const uint32_t pos = qp.req.sq.head_pos();
    if (diff(q, w.first_psn) < 0) return;  // stale
    if (diff(q, w.last_psn) > 0) {
      // A response to a later request: this READ/atomic's response was lost (implied NAK,
      // IBA 9.7.5.2.3). Resend it now rather than wait for the timer. Selective repeat keeps a
      // later READ's response where it belongs and finds what is lost by transmission order.
      if (!is_rd_atomic(w)) return;
      if (qp.selective) {
        inc(Counter::implied_nak_seq_err);
        if (info.is(OpFlag::kReadResponse) && !sr_place_later_read(qp, p)) return;
        sr_find_hole(qp, qp.comp.una);
        return;
      }
      retry_from(qp, w.first_psn + w.resp_pkts, Counter::implied_nak_seq_err, true, now);
      return;
    }
    const Psn expect = w.first_psn + w.resp_pkts;
    if (info.is(OpFlag::kReadResponse) && !scatters_response(w)) {
      // ATOMIC_WRITE and FLUSH: done when one zero-length READ response answers them (IBA 1.5
      // Annex A19, as Linux rxe answers; a READ response to another request is ignored).
      if (!is_rd_atomic(w) || q != expect) return;
      if (wire::rc_twin(p.opcode) != wire::Opcode::kRcRdmaReadResponseOnly || !p.payload.empty()) {
        requester_fatal(qp, WcStatus::kBadRespErr);
        return;
      }
    } else if (info.is(OpFlag::kReadResponse)) {
      if (w.opcode != WrOpcode::kRdmaRead) return;
      if (q != expect) {
        if (diff(q, expect) <= 0) return;  // a duplicate
        // A response went missing on the way back. Go-back-N asks again from it (once per gap,
        // see retry_from); selective repeat places this one and asks for what is lost by
        // transmission order. Not this side's loss: its requests arrived.
        if (!qp.selective) {
          retry_from(qp, expect, Counter::kCount, false, now);
          return;
        }
        if (sr_hold_response(qp, q) && !place_read_response(qp, w, pos, p, q)) return;
        sr_find_hole(qp, qp.comp.una);
        return;
      }
      if (!place_read_response(qp, w, pos, p, q)) return;
    } else {
      if (!scatters_response(w) || w.opcode == WrOpcode::kRdmaRead || q != expect) return;
      uint64_t orig = p.atomic_ack_orig;
      const uint8_t* src = reinterpret_cast<const uint8_t*>(&orig);
      if (scatter(sq_sg(qp, pos), w.num_sge, qp.init.pd, 0, src, 8) != AccessCheck::kOk) {
        requester_fatal(qp, WcStatus::kLocProtErr);
        return;
      }
    }
    w.resp_pkts++;
    if (diff(q + 1, qp.comp.una) > 0) qp.comp.una = q + 1;
    if (w.resp_pkts >= w.npkts) retire_head(qp, WcStatus::kSuccess);
    if (qp.selective) sr_read_catch_up(qp);  // responses held ahead count now
    if (qp.state == QpState::kErr) return;
    on_progress(qp, now);
    if (qp.comp.any_ack) ack_through(qp, qp.comp.acked_psn, now);
    if (diff(qp.comp.una, qp.req.next_psn) > 0) rewind(qp, qp.comp.una);
    check_head_error(qp);
    return;
  }

  // ACK / NAK (AETH).
  const wire::AethValue& a = p.aeth;
  if (a.is_ack()) {
    ack_through(qp, q, now);
    if (qp.selective && qp.state != QpState::kErr) sr_on_ack(qp, p, now);
    return;
  }
  // Every NAK acknowledges the PSNs before it.
  if (diff(q, qp.comp.una) < 0) return;
  ack_through(qp, q - 1, now);
  if (qp.state == QpState::kErr) return;
  if (a.is_rnr_nak()) {
    // RNR NAK (IBA 9.7.5.2.8): wait the peer's RNR timer, then resend from q.
    qp.traffic.rnr_naks++;
    if (qp.attr.rnr_retry != 7) {
      if (qp.comp.rnr_left == 0) {
        inc(Counter::req_rnr_retries_exceeded);
        requester_fatal(qp, WcStatus::kRnrRetryExcErr);
        return;
      }
      qp.comp.rnr_left--;
    }
    inc(Counter::rnr_nak_retry_err);
    qp.req.rnr_until = now + rnr_timer_delay(a.value());
    qp.comp.retrans_at = Timestamp::never();  // re-armed by the next packet sent
    qp.comp.rewind_guard = false;
    if (diff(qp.req.next_psn, q) >= 0) rewind(qp, q);  // never forward past an earlier resend
    return;
  }
  switch (a.value()) {
    case wire::kAethNakPsnSeqError: retry_from(qp, q, Counter::packet_seq_err, true, now); return;
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

void Engine::Impl::completer_timers(Qp& qp, Timestamp now) {
  if (qp.comp.retrans_at > now) return;
  qp.comp.retrans_at = Timestamp::never();
  if (!is_reliable(qp.type) || !outstanding(qp) ||
      (qp.state != QpState::kRts && qp.state != QpState::kSqd) || !qp.req.rnr_until.is_never())
    return;
  // Local ACK timeout (IBA 9.7.6.1.3): resend from the oldest unacknowledged PSN.
  if (qp.comp.retry_left == 0) {
    inc(Counter::req_transport_retries_exceeded);
    requester_fatal(qp, WcStatus::kRetryExcErr);
    return;
  }
  qp.comp.retry_left--;
  inc(Counter::local_ack_timeout_err);
  qp.traffic.local_ack_timeouts++;
  qp.cc->on_loss(now);
  qp.comp.rewind_guard = false;
  qp.dmac_valid = false;  // the neighbour may have moved
  if (qp.selective) {
    sack_forget_below(qp);
    sr_declare_lost(qp, qp.comp.una);  // resends only what the peer does not hold
  } else {
    rewind(qp, qp.comp.una);
  }
  qp.comp.retrans_at = now + local_ack_timeout(qp.attr.timeout);
}

}  // namespace uroce::transport
