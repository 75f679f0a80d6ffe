/**
 * @file notification.cc
 * @brief The congestion notification point of each QP (RoCEv2 Annex 17 §A17.9.3, DCQCN's
 * NP): a CE-marked request or response records where a CNP for the flow goes and asks the
 * device's NotificationPoint (congestion.h) whether one is due now or coalesced; send_cnp()
 * builds it (BTH opcode 0x81, DestQP = the sender's QP, the device's cnp_dscp, not ECN-capable).
 */
#include "transport/engine_impl.h"

namespace uroce::transport {

void Engine::Impl::note_ce(Qp& qp, const wire::ParsedPacket& p, Timestamp now) {
  inc(Counter::np_ecn_marked_roce_packets);
  qp.traffic.np_ecn_marked++;
  if (!np) return;
  // Where a CNP for this QP goes, now or when a coalesced one falls due (poll_transmit).
  qp.cnp.cnp_dqpn = qp.type == QpType::kUd ? p.deth.src_qpn.value() : qp.attr.dest_qp_num;
  qp.cnp.cnp_dip = p.src_ip;
  qp.cnp.cnp_dmac = p.src_mac;
  qp.cnp.cnp_target = true;
  if (np->on_ce_marked(qp.qpn, now)) {
    qp.cnp.cnp_pending = true;
    activate(qp);
  }
}

int Engine::Impl::send_cnp(Qp& qp, TxSink& sink) {
  wire::FrameSpec s;
  s.src_mac = cfg.mac;
  s.dst_mac = qp.cnp.cnp_dmac;
  s.dst_ip = qp.cnp.cnp_dip;
  s.roce_v1 = qp.type != QpType::kUd && qp.tmpl.roce_v1;  // a connected QP's path version
  for (const Gid& g : cfg.gids) {
    if (!g.is_zero() && g.is_ipv4_mapped() == qp.cnp.cnp_dip.is_ipv4_mapped()) {
      s.src_ip = g;
      break;
    }
  }
  s.dscp = cfg.cnp_dscp;
  tag(s);
  s.ecn = wire::kEcnNotEct;
  s.udp_sport = qp.udp_sport;
  s.dest_qpn = Qpn(qp.cnp.cnp_dqpn);
  constexpr size_t kMax = wire::kMaxFrameOverhead + 16;
  uint8_t* buf = sink.begin_frame(kMax);
  if (!buf) return -1;
  size_t len = wire::build_cnp(s, std::span<uint8_t>(buf, kMax));
  qp.cnp.cnp_pending = false;
  if (len == 0) return 0;
  TxMeta meta;
  meta.priority = prio_of(cfg.cnp_dscp);
  meta.is_cnp = true;
  sink.end_frame(len, meta);
  inc(Counter::np_cnp_sent);
  qp.traffic.np_cnp_sent++;
  count_tx(qp, len);
  return 1;
}

}  // namespace uroce::transport
