/**
 * @file qp_stats.cc
 * @brief The per-QP records of the device's stats segment (lib/stats layout.h QpRecord, read by
 * `uroce show qp`): claimed at ibv_create_qp, identity (state, peer QPN/GID) and PSNs written
 * after every ibv_modify_qp and QP error event, the DCQCN current rate (Mb/s; 0 = unlimited)
 * and the QP's traffic counters (engine QpTraffic) refreshed by the progress thread, freed at
 * ibv_destroy_qp. Single writer: everything runs
 * under the engine lock. Without a segment (or UROCE_STATS=0) all calls do nothing.
 */
#include <cstring>

#include "verbs/objects.h"

namespace uroce::verbs {

#ifdef UROCE_HAVE_STATS

namespace {
stats::QpRecord* rec_of(Qp* qp) { return static_cast<stats::QpRecord*>(qp->stats_rec); }

/// The fields that change without a verb call: DCQCN state and the traffic counters.
void write_live(Runtime* rt, Qp* qp, stats::QpRecord* r) {
  transport::QpCcState s;
  if (!rt->engine->qp_cc_state(qp->qpn, rt->rx_now, &s)) s = {};
  r->set_rate(static_cast<double>(s.rate_bps) / 1e6, static_cast<double>(s.target_rate_bps) / 1e6,
              s.alpha);
  const uint32_t flags = (s.delay_in_force ? stats::kQpFlagDelayInForce : 0u) |
                         (rt->engine->selective_repeat(qp->qpn) ? stats::kQpFlagSelective : 0u) |
                         (rt->engine->peer_timestamps(qp->qpn) ? stats::kQpFlagTimestamps : 0u);
  r->set_cc(static_cast<uint32_t>(s.algorithm), flags, static_cast<double>(s.delay_rate_bps) / 1e6,
            static_cast<double>(s.rtt_ns) / 1e3, static_cast<double>(s.target_delay_ns) / 1e3);
  transport::QpTraffic t;
  if (!rt->engine->qp_traffic(qp->qpn, &t)) return;
  using C = stats::QpCounter;
  r->set(C::tx_packets, t.tx_packets);
  r->set(C::tx_bytes, t.tx_bytes);
  r->set(C::rx_packets, t.rx_packets);
  r->set(C::rx_bytes, t.rx_bytes);
  r->set(C::retransmits, t.retransmits);
  r->set(C::local_ack_timeouts, t.local_ack_timeouts);
  r->set(C::rnr_naks, t.rnr_naks);
  r->set(C::np_ecn_marked, t.np_ecn_marked);
  r->set(C::np_cnp_sent, t.np_cnp_sent);
  r->set(C::rp_cnp_handled, t.rp_cnp_handled);
}
}  // namespace

void stats_add_qp(Runtime* rt, Qp* qp, uint32_t type) {
  if (!rt->stats) return;
  qp->stats_rec = rt->stats->add_qp(qp->qpn, type);
  if (qp->stats_rec) stats_update_qp(rt, qp);
}

void stats_update_qp(Runtime* rt, Qp* qp, bool in_error) {
  stats::QpRecord* r = rec_of(qp);
  if (!r) return;
  transport::QpAttr a;
  if (!rt->engine->query_qp(qp->qpn, &a, nullptr)) return;
  r->set_state(in_error ? static_cast<uint32_t>(transport::QpState::kErr)
                        : static_cast<uint32_t>(a.qp_state));
  if (qp->base()->qp_type != IBV_QPT_UD) r->set_peer(a.dest_qp_num, a.av.dgid.raw.data());
  r->set_psns(a.sq_psn, a.rq_psn);
  write_live(rt, qp, r);
}

void stats_remove_qp(Runtime* rt, Qp* qp) {
  if (rt->stats && qp->stats_rec) rt->stats->remove_qp(rec_of(qp));
  qp->stats_rec = nullptr;
}

void stats_refresh_qps(Runtime* rt) {
  for (auto& [qpn, qp] : rt->qps)
    if (stats::QpRecord* r = rec_of(qp)) write_live(rt, qp, r);
}

#else

void stats_add_qp(Runtime*, Qp*, uint32_t) {}
void stats_update_qp(Runtime*, Qp*, bool) {}
void stats_remove_qp(Runtime*, Qp*) {}
void stats_refresh_qps(Runtime*) {}

#endif

}  // namespace uroce::verbs
