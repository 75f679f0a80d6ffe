/**
 * @file tx_guard.cc
 * @brief TxGuard (tx_guard.h): the daemon's check of what a client sends.
 */
#include "hostd/tx_guard.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "transport/wire/cm.h"

namespace uroce::hostd {

std::string_view TxGuard::name(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kMalformed: return "malformed";
    case Verdict::kSrcMac: return "src_mac";
    case Verdict::kSrcAddr: return "src_addr";
    case Verdict::kSrcQpn: return "src_qpn";
    case Verdict::kNotConnected: return "not_connected";
    case Verdict::kSport: return "udp_sport";
  }
  return "?";
}

size_t TxGuard::RemoteHash::operator()(const RemoteKey& k) const {
  uint64_t h = k.second * 0x9e3779b97f4a7c15ull;
  for (uint8_t b : k.first) h = (h ^ b) * 0x100000001b3ull;
  return static_cast<size_t>(h);
}

void TxGuard::set_host(const MacAddr& mac, std::vector<Gid> gids) {
  mac_ = mac;
  gids_ = std::move(gids);
}

bool TxGuard::add_client(uint32_t client, uint32_t qpn_first, uint32_t qpn_count) {
  return clients_.emplace(client, Client{qpn_first, qpn_count}).second;
}

void TxGuard::drop_client(uint32_t client) {
  clients_.erase(client);
  std::erase_if(by_remote_, [&](const auto& kv) { return kv.second.client == client; });
}

bool TxGuard::owns(uint32_t client, uint32_t qpn) const {
  auto it = clients_.find(client);
  return it != clients_.end() && qpn >= it->second.qpn_first &&
         qpn - it->second.qpn_first < it->second.qpn_count;
}

int TxGuard::connect(uint32_t client, uint32_t qpn, const Gid& dgid, uint32_t dqpn,
                     uint16_t sport) {
  if (!owns(client, qpn)) return EPERM;
  auto [it, fresh] = by_remote_.try_emplace({dgid.raw, dqpn}, Conn{client, qpn, sport});
  if (!fresh) {
    if (it->second.client != client) return EADDRINUSE;
    it->second = Conn{client, qpn, sport};
  }
  // One registration per local QP: a QP connected anew leaves its old remote.
  std::erase_if(by_remote_, [&](const auto& kv) {
    return kv.second.client == client && kv.second.qpn == qpn &&
           (kv.first.first != dgid.raw || kv.first.second != dqpn);
  });
  return 0;
}

void TxGuard::disconnect(uint32_t client, uint32_t qpn) {
  std::erase_if(by_remote_,
                [&](const auto& kv) { return kv.second.client == client && kv.second.qpn == qpn; });
}

TxGuard::Verdict TxGuard::check(uint32_t client, std::span<const uint8_t> frame,
                                wire::ParsedPacket* p) const {
  if (wire::parse_headers(frame, p) != wire::DropReason::kOk || p->roce_v1)
    return Verdict::kMalformed;
  if (p->src_mac != mac_) return Verdict::kSrcMac;
  if (std::find(gids_.begin(), gids_.end(), p->src_ip) == gids_.end()) return Verdict::kSrcAddr;
  const uint32_t dqpn = p->dest_qpn.value();
  if (p->has(wire::ExtHdr::kDeth)) {
    const uint32_t src = p->deth.src_qpn.value();
    if (src == wire::cm::kGsiQpn)
      return dqpn == wire::cm::kGsiQpn ? Verdict::kOk : Verdict::kSrcQpn;
    return owns(client, src) ? Verdict::kOk : Verdict::kSrcQpn;
  }
  auto it = by_remote_.find({p->dst_ip.raw, dqpn});
  if (it == by_remote_.end() || it->second.client != client) return Verdict::kNotConnected;
  return p->udp_sport == it->second.sport ? Verdict::kOk : Verdict::kSport;
}

}  // namespace uroce::hostd
