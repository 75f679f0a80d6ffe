/**
 * @file gsi.cc
 * @brief QP1 (GSI) receive and send (see gsi.h).
 */
#include "transport/gsi.h"

#include <algorithm>
#include <cstring>

#include "transport/wire/build.h"
#include "transport/wire/cm.h"

namespace uroce::transport {

namespace {
constexpr uint16_t kGsiUdpSport = 0xc001;  ///< fixed: MADs of one CM need no ECMP spread
}

void Gsi::enable(bool on) {
  enabled_ = on;
  if (!on) {
    rx_.clear();
    tx_.clear();
  }
}

void Gsi::on_packet(const wire::ParsedPacket& p) {
  // IBA §13.5.1: QP1 takes UD SENDs carrying the well-known GSI Q_Key; a MAD is exactly
  // 256 bytes (§13.4.1). Anything else for QP 1 is not ours to interpret.
  if (!enabled_) {
    inc(Counter::rx_unknown_qp);
    return;
  }
  if (p.opcode != wire::Opcode::kUdSendOnly || p.payload.size() != wire::cm::kMadLen) {
    inc(Counter::gsi_rx_dropped);
    return;
  }
  if (p.deth.qkey != wire::cm::kGsiQkey) {
    inc(Counter::rx_qkey_violation);
    return;
  }
  if ((p.pkey & 0x7fff) != (wire::kDefaultPkey & 0x7fff)) {
    inc(Counter::rx_pkey_violation);
    return;
  }
  if (rx_.size() >= kGsiQueueDepth) {
    inc(Counter::gsi_rx_dropped);
    return;
  }
  GsiMad& m = rx_.emplace_back();
  m.peer = p.src_ip;
  m.local = p.dst_ip;
  m.peer_qpn = p.deth.src_qpn.value();
  std::memcpy(m.mad.data(), p.payload.data(), m.mad.size());
  inc(Counter::gsi_rx_mads);
  if (obs_) obs_->on_gsi_mad();
}

size_t Gsi::poll(std::span<GsiMad> out) {
  size_t n = 0;
  while (n < out.size() && !rx_.empty()) {
    out[n++] = rx_.front();
    rx_.pop_front();
  }
  return n;
}

Status Gsi::post(const GsiMad& m, Timestamp now) {
  if (!enabled_) return Status::again();
  auto it = std::find(cfg_.gids.begin(), cfg_.gids.end(), m.local);
  if (it == cfg_.gids.end()) return Status::invalid();
  if (m.local.is_ipv4_mapped() != m.peer.is_ipv4_mapped()) return Status::invalid();
  if (tx_.size() >= kGsiQueueDepth) {
    inc(Counter::gsi_tx_dropped);
    return Status::no_memory();
  }
  Out& o = tx_.emplace_back();
  o.mad = m;
  o.sgid_index = static_cast<uint8_t>(it - cfg_.gids.begin());
  o.give_up_at = now + kGsiResolveFor;
  return Status::ok();
}

size_t Gsi::transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  size_t sent = 0;
  while (!tx_.empty()) {
    Out& o = tx_.front();
    if (!o.retry_at.is_never() && now < o.retry_at) break;
    wire::FrameSpec s;
    if (!neigh.resolve(o.mad.peer, &s.dst_mac)) {
      inc(Counter::tx_no_neighbor);
      if (now >= o.give_up_at) {
        inc(Counter::gsi_tx_dropped);
        tx_.pop_front();
        continue;
      }
      o.retry_at = now + kGsiResolveRetry;
      break;  // in order: a later MAD to the same peer must not overtake this one
    }
    s.src_mac = cfg_.mac;
    s.src_ip = cfg_.gids[o.sgid_index];
    s.roce_v1 = gid_type_at(o.sgid_index, cfg_.gid_v1_base) == GidType::kRoceV1;
    s.dst_ip = o.mad.peer;
    s.dscp = cfg_.roce_dscp;
    if (cfg_.vlan) {
      s.vlan = true;
      s.vid = *cfg_.vlan;
      s.pcp = cfg_.dscp_to_prio[s.dscp & 63] & 7;
    }
    s.udp_sport = kGsiUdpSport;
    s.opcode = wire::Opcode::kUdSendOnly;
    s.pkey = wire::kDefaultPkey;
    s.dest_qpn = Qpn(o.mad.peer_qpn);
    s.psn = Psn(psn_);
    s.deth.qkey = wire::cm::kGsiQkey;
    s.deth.src_qpn = Qpn(wire::cm::kGsiQpn);
    const size_t max_len = wire::kMaxFrameOverhead + o.mad.mad.size();
    uint8_t* buf = sink.begin_frame(max_len);
    if (!buf) break;  // port full: try again on the next poll
    std::span<uint8_t> b(buf, max_len);
    wire::FrameLayout l = wire::build_headers(s, b);
    size_t len = 0;
    if (l.payload_offset != 0) {
      std::memcpy(buf + l.payload_offset, o.mad.mad.data(), o.mad.mad.size());
      len = wire::finalize(b, l, o.mad.mad.size());
    }
    if (len == 0) {
      inc(Counter::gsi_tx_dropped);
      tx_.pop_front();
      continue;
    }
    TxMeta meta;
    meta.priority = s.pcp;
    if (!cfg_.vlan) meta.priority = cfg_.dscp_to_prio[s.dscp & 63] & 7;
    sink.end_frame(len, meta);
    psn_ = (psn_ + 1) & 0xffffff;
    inc(Counter::gsi_tx_mads);
    inc(Counter::tx_vport_rdma_unicast_packets);
    ctr_->inc(Counter::tx_vport_rdma_unicast_bytes, len);
    tx_.pop_front();
    ++sent;
  }
  return sent;
}

Timestamp Gsi::next_deadline(Timestamp now) const {
  if (tx_.empty()) return Timestamp::never();
  const Out& o = tx_.front();
  return o.retry_at.is_never() ? now : o.retry_at;
}

}  // namespace uroce::transport
