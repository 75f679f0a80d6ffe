/**
 * @file sr_requester.cc
 * @brief Selective repeat, requester and completer side (uroce's extension,
 * docs/loss-recovery.md). The SACKETH bitmaps of the peer's ACKs fill a board of the PSNs it
 * holds after the cumulative ACK. Loss is found by transmission order, as TCP's RACK does by
 * time: every PSN keeps when (in order) it was last sent, and a PSN neither acknowledged nor held
 * that was sent before a packet known to have arrived is lost (a path carries one UDP flow in
 * order), so it is resent, once per such evidence, before any new packet; a lost resend is found
 * the same way. New packets wait while the packets in flight (sent, neither acknowledged nor held)
 * reach the cap near the bandwidth-delay product (IRN's BDP-FC). Timers: the QP's local ACK timeout
 * (spends retry_cnt) and, without progress, the short sr_rto_low while at most kSrFewInFlight
 * packets are in flight or the longer sr_rto_high otherwise (IRN's RTO_low and RTO_high, each at
 * least RTT-based and backed off); each declares everything outstanding lost, and only what the
 * peer does not hold is resent.
 *
 * READ: its responses are placed at their offset as they come, in or out of order, and held on
 * the same board; a READ request covers one step of transmission order per response PSN (the
 * responder sends them in PSN order), so a response proves every earlier one lost, and only the
 * missing run is asked again (a READ request for just those PSNs). A READ longer than the window
 * is asked for in parts that stay inside it; READ requests that may still be at the responder
 * (first parts, later parts, re-requests) stay within the QP's max_rd_atomic, as the responder
 * drops any beyond its own limit.
 */
#include <algorithm>

#include "transport/engine_impl.h"

namespace uroce::transport {

uint32_t Engine::Impl::sr_cap(const Qp& qp) const {
  if (cfg.sr_max_inflight) return cfg.sr_max_inflight;
  const uint64_t bdp =
      cfg.link_speed_bps / 8 * static_cast<uint64_t>(kSrDefaultBdpRtt.ns) / 1'000'000'000ull;
  return static_cast<uint32_t>(std::max<uint64_t>(16, bdp / std::max(qp.mtu, 1u)));
}

void Engine::Impl::sr_delivered(Qp& qp, Psn psn) {
  qp.req.sr.delivered = std::max(qp.req.sr.delivered, qp.req.sr.sent[psn.value() & qp.sr_mask]);
}

void Engine::Impl::sack_forget_below(Qp& qp) {
  SackBoard& b = qp.comp.sack;
  if (!b.based) {
    b.base = qp.comp.una;
    b.based = true;
    return;
  }
  // Everything below una arrived: its send times are evidence too.
  int32_t n = std::min(diff(qp.comp.una, b.base), static_cast<int32_t>(cfg.sr_window));
  for (; n > 0; --n, b.base = b.base + 1) {
    sr_delivered(qp, b.base);
    uint8_t& e = b.held[b.base.value() & qp.sr_mask];
    if (e) {
      e = 0;
      b.count--;
    }
  }
  b.base = qp.comp.una;
}

bool Engine::Impl::sack_held(const Qp& qp, Psn psn) const {
  return qp.comp.sack.count && diff(psn, qp.comp.una) < static_cast<int32_t>(cfg.sr_window) &&
         qp.comp.sack.held[psn.value() & qp.sr_mask];
}

uint32_t Engine::Impl::sr_in_flight(const Qp& qp) const {
  const int32_t out = diff(qp.req.max_psn, qp.comp.una);
  if (out <= 0) return 0;
  return static_cast<uint32_t>(out) - std::min<uint32_t>(qp.comp.sack.count, out);
}

namespace {
/// The started WQE of qp that covers psn, or nullptr.
const SendWqe* wqe_of(const Qp& qp, Psn psn) {
  for (uint32_t pos = qp.req.sq.head_pos(); pos != qp.req.started_end; ++pos) {
    const SendWqe& w = qp.req.sq.at_pos(pos);
    if (diff(psn, w.first_psn) >= 0 && diff(psn, w.last_psn) <= 0) return &w;
  }
  return nullptr;
}
}  // namespace

void Engine::Impl::sr_find_hole(Qp& qp, Psn from) {
  SrSendState& sr = qp.req.sr;
  const bool had = sr.has_hole;
  sr.has_hole = false;
  sr.hole_read = false;
  // Within the window: the board and the send order know nothing beyond it (a long READ's
  // response PSNs can reach past it; they are asked again by sr_force_resend, not found here).
  const Psn end = diff(qp.req.max_psn, qp.comp.una) < static_cast<int32_t>(cfg.sr_window)
                      ? qp.req.max_psn
                      : qp.comp.una + cfg.sr_window;
  for (Psn x = diff(from, qp.comp.una) < 0 ? qp.comp.una : from; diff(x, end) < 0; x = x + 1) {
    if (!sack_held(qp, x) && sr.sent[x.value() & qp.sr_mask] < sr.delivered) {
      sr.has_hole = true;
      sr.hole = x;
      const SendWqe* w = wqe_of(qp, x);
      sr.hole_read = w && w->opcode == WrOpcode::kRdmaRead;
      if (!had) inc(Counter::sr_loss_events);
      // Every hole found: the control decides how often to react. A READ response was lost on
      // the way back, not one of this side's packets.
      if (!sr.hole_read) qp.cc->on_loss(last_now);
      activate(qp);
      return;
    }
  }
}

void Engine::Impl::sr_declare_lost(Qp& qp, Psn from) {
  // Everything sent so far counts as lost from `from` on, unless the peer holds it.
  qp.req.sr.delivered = qp.req.sr.tx_seq + 1;
  qp.req.sr.has_hole = false;  // a new loss event
  sr_find_hole(qp, from);
}

void Engine::Impl::sr_on_ack(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  sack_forget_below(qp);
  if (p.ext == wire::UroceExt::kSack) {
    bool bad = false;
    for (uint32_t j = 0; j < 32u * p.sack.nwords; ++j) {
      if (!p.sack.has(j)) continue;
      const Psn x = p.sack.base + j;
      // Only PSNs sent and not yet acknowledged; the rest is forged.
      if (diff(x, qp.comp.una) < 0 || diff(x, qp.req.max_psn) >= 0 ||
          diff(x, qp.comp.una) >= static_cast<int32_t>(cfg.sr_window)) {
        bad = true;
        continue;
      }
      if (sack_hold(qp, x, now)) {
        sr_delivered(qp, x);
        if (x == qp.req.rtt_psn) rtt_on_arrived(qp, x, now);
      }
    }
    if (bad) inc(Counter::sr_bad_sack);
  }
  sr_find_hole(qp, qp.comp.una);
}

void Engine::Impl::sr_after_progress(Qp& qp) {
  sack_forget_below(qp);
  SrSendState& sr = qp.req.sr;
  if (!sr.has_hole || diff(sr.hole, qp.comp.una) < 0) sr_find_hole(qp, qp.comp.una);
}

void Engine::Impl::sr_note_sent(Qp& qp, Psn first, Psn after) {
  SrSendState& sr = qp.req.sr;
  int32_t n = std::min(diff(after, first), static_cast<int32_t>(cfg.sr_window));
  for (Psn x = first; n > 0; --n, x = x + 1) sr.sent[x.value() & qp.sr_mask] = ++sr.tx_seq;
}

bool Engine::Impl::sr_read_done(const Qp& qp, Psn last) const {
  if (diff(last, qp.comp.una) < 0 || sack_held(qp, last)) return true;
  // Something sent after its last response arrived: the responder has finished with it.
  return diff(last, qp.comp.una) < static_cast<int32_t>(cfg.sr_window) &&
         qp.req.sr.sent[last.value() & qp.sr_mask] < qp.req.sr.delivered;
}

uint32_t Engine::Impl::sr_reads_in_flight(const Qp& qp) const {
  uint32_t n = 0;
  for (Psn e : qp.req.sr.read_ends) n += sr_read_done(qp, e) ? 0 : 1;
  return n;
}

bool Engine::Impl::sr_reads_full(const Qp& qp) const {
  return sr_reads_in_flight(qp) >= std::max<uint32_t>(qp.attr.max_rd_atomic, 1);
}

void Engine::Impl::sr_note_read(Qp& qp, Psn last) {
  std::vector<Psn>& v = qp.req.sr.read_ends;
  std::erase_if(v, [&](Psn e) { return sr_read_done(qp, e); });  // a short list
  v.push_back(last);
}

void Engine::Impl::sr_response_arrived(Qp& qp, Psn psn) {
  const int32_t d = diff(psn, qp.comp.una);
  if (d >= 0 && d < static_cast<int32_t>(cfg.sr_window)) sr_delivered(qp, psn);
}

bool Engine::Impl::sr_hold_response(Qp& qp, Psn psn) {
  sack_forget_below(qp);
  const int32_t d = diff(psn, qp.comp.una);
  if (d < 0 || d >= static_cast<int32_t>(cfg.sr_window)) return false;
  return sack_hold(qp, psn, last_now);
}

bool Engine::Impl::sack_hold(Qp& qp, Psn psn, Timestamp now) {
  uint8_t& e = qp.comp.sack.held[psn.value() & qp.sr_mask];
  if (e) return false;
  e = 1;
  qp.comp.sack.count++;
  sr_alive(qp, now);
  return true;
}

bool Engine::Impl::sr_place_later_read(Qp& qp, const wire::ParsedPacket& p) {
  for (uint32_t pos = qp.req.sq.head_pos() + 1; pos != qp.req.started_end; ++pos) {
    SendWqe& w = qp.req.sq.at_pos(pos);
    if (diff(p.psn, w.first_psn) < 0) return true;
    if (diff(p.psn, w.last_psn) > 0) continue;
    if (w.opcode != WrOpcode::kRdmaRead || !sr_hold_response(qp, p.psn)) return true;
    return place_read_response(qp, w, pos, p, p.psn);
  }
  return true;
}

void Engine::Impl::sr_read_catch_up(Qp& qp) {
  while (qp.req.sq.head_pos() != qp.req.started_end && qp.state != QpState::kErr) {
    SendWqe& w = qp.req.sq.front();
    if (w.opcode != WrOpcode::kRdmaRead) return;
    while (w.resp_pkts < w.npkts && sack_held(qp, w.first_psn + w.resp_pkts)) w.resp_pkts++;
    const Psn done = w.first_psn + w.resp_pkts;
    if (diff(done, qp.comp.una) > 0) qp.comp.una = done;
    if (w.resp_pkts < w.npkts) return;
    retire_head(qp, WcStatus::kSuccess);
  }
}

void Engine::Impl::sr_force_resend(Qp& qp, Psn psn) {
  if (diff(psn, qp.comp.una) < 0 || diff(psn, qp.req.max_psn) >= 0) return;
  qp.req.sr.sent[psn.value() & qp.sr_mask] = 0;
  qp.req.sr.delivered = std::max<uint64_t>(qp.req.sr.delivered, 1);
  if (!qp.req.sr.has_hole || diff(psn, qp.req.sr.hole) < 0) sr_find_hole(qp, psn);
}

int Engine::Impl::sr_resend(Qp& qp, TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  RequesterState& rq = qp.req;
  const Psn h = rq.sr.hole;
  const uint32_t save_pos = rq.send_pos, save_off = rq.send_off;
  const Psn save_next = rq.next_psn;
  const uint32_t pkts_since = rq.pkts_since_ackreq;
  rewind(qp, h);
  const int r = service_requester(qp, sink, neigh, now);
  if (qp.state == QpState::kErr) return r;  // a local error retired and flushed the queue
  // Back to where first transmissions stand.
  rq.send_pos = save_pos;
  rq.send_off = save_off;
  rq.next_psn = save_next;
  rq.pkts_since_ackreq = pkts_since;
  if (r > 0) {
    rq.sr.has_hole = true;  // still in the same loss event
    sr_find_hole(qp, h + 1);
  }
  return r;
}

void Engine::Impl::sr_timers(Qp& qp, Timestamp now) {
  SrSendState& sr = qp.req.sr;
  if (sr.rto_at > now) return;
  sr.rto_at = Timestamp::never();
  if (!outstanding(qp) || !qp.req.rnr_until.is_never() ||
      (qp.state != QpState::kRts && qp.state != QpState::kSqd))
    return;
  // Few packets in flight means few chances for a later one to reveal a loss: the short
  // timeout. A READ request in flight is one packet, however many responses it asks for.
  const uint32_t reads = sr_reads_in_flight(qp);
  const bool few = (reads ? reads : sr_in_flight(qp)) <= kSrFewInFlight;
  if (!few) {
    const Timestamp due = sr.rto_armed + sr_rto(qp, false);
    if (due > now) {
      sr.rto_at = due;
      return;
    }
  }
  inc(few ? Counter::sr_rto_low : Counter::sr_rto_high);
  ++sr.rto_backoff;
  sr_arm_rto(qp, now);
  sr_declare_lost(qp, qp.comp.una);
}

}  // namespace uroce::transport
