/**
 * @file neighbors.cc
 * @brief ARP (RFC 826) and IPv6 ND (RFC 4861) answering and resolution; see neighbors.h.
 */
#include "dpdk/neighbors.h"

#include <cstring>

#include "dpdk/neighbor_wire.h"

namespace uroce::dpdk {

namespace {

using Key = std::array<uint8_t, 16>;

constexpr Key kAllNodes = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

MacAddr mac_of(const std::array<uint8_t, 6>& b) { return MacAddr{b}; }

MacAddr ipv6_multicast_mac(const Key& group) {
  return MacAddr{{0x33, 0x33, group[12], group[13], group[14], group[15]}};
}

Gid gid_of(const Key& k) {
  Gid g;
  g.raw = k;
  return g;
}

/// True when the first `bits` bits of a and b agree.
bool same_prefix(const Gid& a, const Gid& b, int bits) {
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((a.raw[i] ^ b.raw[i]) & mask) return false;
  }
  return true;
}

}  // namespace

std::array<uint8_t, 16> solicited_node(const Gid& ip) {
  return {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, ip.raw[13], ip.raw[14], ip.raw[15]};
}

uint16_t icmpv6_checksum(const Key& src, const Key& dst, const uint8_t* msg, size_t len) {
  uint32_t sum = 0;
  auto add = [&sum](const uint8_t* p, size_t n) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += (uint32_t{p[i]} << 8) | p[i + 1];
    if (n & 1) sum += uint32_t{p[n - 1]} << 8;
  };
  add(src.data(), 16);
  add(dst.data(), 16);
  sum += static_cast<uint32_t>(len >> 16) + static_cast<uint32_t>(len & 0xffff);
  sum += wire::kIpProtoIcmpv6;
  add(msg, len);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

Neighbors::Neighbors(MacAddr mac, std::vector<config::Address> own,
                     const std::map<std::string, MacAddr>& static_neighbors,
                     std::optional<uint16_t> vlan)
    : mac_(mac), vlan_(vlan), own_(std::move(own)) {
  for (const auto& [text, m] : static_neighbors) {
    Gid g;
    if (Gid::parse(text, &g)) static_[g.raw] = m;
  }
  mcast_.push_back(ipv6_multicast_mac(kAllNodes));
  for (const config::Address& a : own_) {
    if (a.is_ipv4()) continue;
    MacAddr m = ipv6_multicast_mac(solicited_node(a.gid));
    bool dup = false;
    for (const MacAddr& x : mcast_) dup |= x == m;
    if (!dup) mcast_.push_back(m);
  }
}

bool Neighbors::accepts_dst(const uint8_t* dst) const {
  MacAddr d;
  std::memcpy(d.b.data(), dst, 6);
  if (d == mac_ || d == MacAddr::broadcast()) return true;
  for (const MacAddr& m : mcast_)
    if (d == m) return true;
  return false;
}

bool Neighbors::owns(const Gid& ip) const {
  for (const config::Address& a : own_)
    if (a.gid == ip) return true;
  return false;
}

const config::Address* Neighbors::source_for(const Gid& target) const {
  const config::Address* any = nullptr;
  for (const config::Address& a : own_) {
    if (a.is_ipv4() != target.is_ipv4_mapped()) continue;
    if (!any) any = &a;
    if (same_prefix(a.gid, target, a.is_ipv4() ? 96 + a.prefix : a.prefix)) return &a;
  }
  return any;
}

void Neighbors::learn(const Gid& ip, const MacAddr& mac, bool create) {
  if (ip.is_zero() || mac.is_zero() || (mac.b[0] & 1) || owns(ip)) return;
  auto it = cache_.find(ip.raw);
  if (it == cache_.end()) {
    if (!create) return;
    if (cache_.size() >= kMaxEntries) cache_.erase(cache_.begin());
    cache_.emplace(ip.raw, mac);
  } else if (it->second == mac) {
    return;
  } else {
    it->second = mac;
  }
  last_request_.erase(ip.raw);
  ++stats_.learned;
}

bool Neighbors::on_frame(std::span<const uint8_t> frame, Timestamp /*now*/, TxSink& tx) {
  if (frame.size() < sizeof(wire::EthHdr)) return false;
  if (load_be16(frame.data() + 12) == wire::kEtherTypeVlan &&
      frame.size() >= sizeof(wire::EthHdr) + 4) {
    const uint16_t inner = load_be16(frame.data() + 16);
    if (inner != wire::kEtherTypeArp && inner != wire::kEtherTypeIpv6) return false;
    // 802.1Q-tagged ARP/ND: handled as the untagged frame (MACs, then what follows the tag).
    untagged_.assign(frame.begin(), frame.begin() + 12);
    untagged_.insert(untagged_.end(), frame.begin() + 16, frame.end());
    frame = untagged_;
  }
  wire::EthHdr eth;
  std::memcpy(&eth, frame.data(), sizeof eth);
  switch (eth.ethertype.load()) {
    case wire::kEtherTypeArp: return on_arp(frame, tx);
    case wire::kEtherTypeIpv6: return on_ipv6(frame, tx);
    default: return false;
  }
}

bool Neighbors::on_arp(std::span<const uint8_t> frame, TxSink& tx) {
  // Every ARP frame is consumed: none of it is for the RoCE engine.
  if (frame.size() < wire::kArpFrameLen) return true;
  wire::ArpPkt arp;
  std::memcpy(&arp, frame.data() + sizeof(wire::EthHdr), sizeof arp);
  if (arp.htype.load() != wire::kArpHtypeEthernet || arp.ptype.load() != wire::kEtherTypeIpv4 ||
      arp.hlen != 6 || arp.plen != 4)
    return true;
  Gid sender = Gid::from_ipv4(arp.spa.load());
  Gid target = Gid::from_ipv4(arp.tpa.load());
  MacAddr sha = mac_of(arp.sha);
  bool for_us = owns(target);
  const config::Address* local = source_for(sender);
  bool gratuitous_local =
      sender == target && local && same_prefix(local->gid, sender, 96 + local->prefix);
  // RFC 826: update an existing entry from any ARP; add one when we are the target, or for a
  // gratuitous ARP from our subnet (RFC 5227 §3 announcements).
  if (arp.spa.load() != 0) learn(sender, sha, for_us || gratuitous_local);
  if (for_us && arp.op.load() == wire::kArpOpRequest &&
      send_arp(wire::kArpOpReply, sha, sha, arp.tpa.load(), arp.spa.load(), tx))
    ++stats_.arp_replies_sent;
  return true;
}

bool Neighbors::on_ipv6(std::span<const uint8_t> frame, TxSink& tx) {
  constexpr size_t kOff = sizeof(wire::EthHdr);
  if (frame.size() < kOff + sizeof(wire::Ipv6Hdr) + sizeof(wire::NdMsg)) return false;
  wire::Ipv6Hdr ip;
  std::memcpy(&ip, frame.data() + kOff, sizeof ip);
  if (ip.next_header != wire::kIpProtoIcmpv6) return false;
  wire::NdMsg nd;
  const uint8_t* msg = frame.data() + kOff + sizeof ip;
  std::memcpy(&nd, msg, sizeof nd);
  if (nd.type != wire::kIcmpv6NeighborSolicit && nd.type != wire::kIcmpv6NeighborAdvert)
    return false;
  // From here on the frame is ND: consumed whatever its validity (RFC 4861 §7.1 checks).
  size_t len = ip.payload_len.load();
  if (ip.hop_limit != 255 || nd.code != 0 || len < sizeof nd ||
      kOff + sizeof ip + len > frame.size() || icmpv6_checksum(ip.src, ip.dst, msg, len) != 0)
    return true;
  // The first link-layer address option of the wanted type, if any.
  auto link_opt = [&](uint8_t want, MacAddr* out) {
    for (size_t o = sizeof nd; o + 2 <= len;) {
      uint8_t type = msg[o], olen = msg[o + 1];
      if (olen == 0 || o + olen * 8u > len) return false;
      if (type == want && olen == 1) {
        std::memcpy(out->b.data(), msg + o + 2, 6);
        return true;
      }
      o += olen * 8u;
    }
    return false;
  };
  Gid target = gid_of(nd.target);
  Gid src = gid_of(ip.src);
  MacAddr ll;
  if (nd.type == wire::kIcmpv6NeighborSolicit) {
    if (!owns(target)) return true;
    bool from_unspecified = src.is_zero();
    if (!from_unspecified && link_opt(wire::kNdOptSourceLinkAddr, &ll)) learn(src, ll, true);
    bool sent =
        from_unspecified
            ? send_nd(wire::kIcmpv6NeighborAdvert, wire::kNaFlagOverride, nd.target, kAllNodes,
                      ipv6_multicast_mac(kAllNodes), nd.target, tx)
            : send_nd(wire::kIcmpv6NeighborAdvert, wire::kNaFlagSolicited | wire::kNaFlagOverride,
                      nd.target, ip.src,
                      MacAddr{{frame[6], frame[7], frame[8], frame[9], frame[10], frame[11]}},
                      nd.target, tx);
    if (sent) ++stats_.na_sent;
  } else if (link_opt(wire::kNdOptTargetLinkAddr, &ll)) {
    learn(target, ll, true);
  }
  return true;
}

bool Neighbors::send_arp(uint16_t op, const MacAddr& eth_dst, const MacAddr& tha, uint32_t spa,
                         uint32_t tpa, TxSink& tx) {
  uint8_t p[wire::kArpFrameLen];
  wire::EthHdr eth{eth_dst, mac_, Be16::of(wire::kEtherTypeArp)};
  wire::ArpPkt arp{Be16::of(wire::kArpHtypeEthernet),
                   Be16::of(wire::kEtherTypeIpv4),
                   6,
                   4,
                   Be16::of(op),
                   mac_.b,
                   Be32::of(spa),
                   tha.b,
                   Be32::of(tpa)};
  std::memcpy(p, &eth, sizeof eth);
  std::memcpy(p + sizeof eth, &arp, sizeof arp);
  return emit(p, sizeof p, tx);
}

bool Neighbors::send_nd(uint8_t type, uint32_t flags, const Key& src, const Key& dst,
                        const MacAddr& eth_dst, const Key& target, TxSink& tx) {
  uint8_t p[wire::kNdFrameLen];
  constexpr uint16_t kPayload = sizeof(wire::NdMsg) + sizeof(wire::NdLinkOpt);
  wire::EthHdr eth{eth_dst, mac_, Be16::of(wire::kEtherTypeIpv6)};
  wire::Ipv6Hdr ip{Be32::of(6u << 28), Be16::of(kPayload), wire::kIpProtoIcmpv6, 255, src, dst};
  uint8_t msg[kPayload];
  wire::NdMsg nd{type, 0, Be16::of(0), Be32::of(flags), target};
  wire::NdLinkOpt opt{type == wire::kIcmpv6NeighborSolicit ? wire::kNdOptSourceLinkAddr
                                                           : wire::kNdOptTargetLinkAddr,
                      1, mac_.b};
  std::memcpy(msg, &nd, sizeof nd);
  std::memcpy(msg + sizeof nd, &opt, sizeof opt);
  store_be16(msg + 2, icmpv6_checksum(src, dst, msg, kPayload));
  std::memcpy(p, &eth, sizeof eth);
  std::memcpy(p + sizeof eth, &ip, sizeof ip);
  std::memcpy(p + sizeof eth + sizeof ip, msg, kPayload);
  return emit(p, sizeof p, tx);
}

bool Neighbors::emit(const uint8_t* f, size_t len, TxSink& tx) {
  const size_t tag = vlan_ ? 4 : 0;
  uint8_t* p = tx.begin_frame(len + tag);
  if (!p) {
    ++stats_.tx_dropped;
    return false;
  }
  std::memcpy(p, f, 12);  // destination and source MAC
  if (vlan_) {            // TPID, then TCI: PCP 0, DEI 0, VID
    store_be16(p + 12, wire::kEtherTypeVlan);
    store_be16(p + 14, static_cast<uint16_t>(*vlan_ & 0x0fff));
  }
  std::memcpy(p + 12 + tag, f + 12, len - 12);
  tx.end_frame(len + tag, TxMeta{});
  return true;
}

bool Neighbors::lookup(const Gid& ip, MacAddr* mac) const {
  if (auto it = cache_.find(ip.raw); it != cache_.end()) {
    *mac = it->second;
    return true;
  }
  if (auto it = static_.find(ip.raw); it != static_.end()) {
    *mac = it->second;
    return true;
  }
  if (owns(ip)) {
    *mac = mac_;
    return true;
  }
  return false;
}

bool Neighbors::resolve(const Gid& ip, MacAddr* mac, Timestamp now, TxSink& tx) {
  if (lookup(ip, mac)) return true;
  const config::Address* src = source_for(ip);
  if (!src) return false;  // no address of that family: nothing to ask from
  auto [it, fresh] = last_request_.try_emplace(ip.raw, now);
  if (!fresh) {
    if (now - it->second < kRetryInterval) return false;
    it->second = now;
  }
  if (last_request_.size() > kMaxEntries) last_request_.erase(last_request_.begin());
  if (ip.is_ipv4_mapped()) {
    if (send_arp(wire::kArpOpRequest, MacAddr::broadcast(), MacAddr{}, src->gid.ipv4(), ip.ipv4(),
                 tx))
      ++stats_.arp_requests_sent;
  } else {
    Key group = solicited_node(ip);
    if (send_nd(wire::kIcmpv6NeighborSolicit, 0, src->gid.raw, group, ipv6_multicast_mac(group),
                ip.raw, tx))
      ++stats_.ns_sent;
  }
  return false;
}

void Neighbors::announce(TxSink& tx) {
  for (const config::Address& a : own_) {
    if (a.is_ipv4()) {
      // Gratuitous ARP: a request with sender = target = our address (RFC 5227 §3).
      send_arp(wire::kArpOpRequest, MacAddr::broadcast(), MacAddr{}, a.gid.ipv4(), a.gid.ipv4(),
               tx);
    } else {
      send_nd(wire::kIcmpv6NeighborAdvert, wire::kNaFlagOverride, a.gid.raw, kAllNodes,
              ipv6_multicast_mac(kAllNodes), a.gid.raw, tx);
    }
  }
}

}  // namespace uroce::dpdk
