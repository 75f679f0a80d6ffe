/**
 * @file neighbors_test.cc
 * @brief ARP (RFC 826) and IPv6 ND (RFC 4861) of drivers/dpdk/neighbors.h, sans-IO: frames
 * in as bytes, replies captured from a TxSink, time injected.
 */
#include "dpdk/neighbors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <utility>
#include <vector>

#include "common/byteorder.h"
#include "dpdk/neighbor_wire.h"

namespace uroce::dpdk {
namespace {

using Frame = std::vector<uint8_t>;

/// A TxSink that keeps every frame; `capacity` frames at most (then begin_frame fails).
class CaptureSink : public TxSink {
 public:
  uint8_t* begin_frame(size_t max_len) override {
    if (frames.size() >= capacity) return nullptr;
    buf_.assign(max_len, 0xee);
    return buf_.data();
  }
  void end_frame(size_t len, const TxMeta&) override {
    buf_.resize(len);
    frames.push_back(buf_);
  }
  Frame pop() {
    Frame f = frames.front();
    frames.pop_front();
    return f;
  }
  std::deque<Frame> frames;
  size_t capacity = 100;

 private:
  Frame buf_;
};

const MacAddr kOurMac{{0x02, 0, 0, 0, 0, 0x01}};
const MacAddr kPeerMac{{0x02, 0, 0, 0, 0, 0x02}};
constexpr uint32_t kOurIp = 0xc6120001;   // 198.18.0.1
constexpr uint32_t kPeerIp = 0xc6120002;  // 198.18.0.2

Gid v6(const char* s) {
  Gid g;
  EXPECT_TRUE(Gid::parse(s, &g));
  return g;
}

config::Address addr(const Gid& g, uint8_t prefix) {
  config::Address a;
  a.gid = g;
  a.prefix = prefix;
  return a;
}

Neighbors make(std::map<std::string, MacAddr> statics = {}) {
  return Neighbors(kOurMac, {addr(Gid::from_ipv4(kOurIp), 15), addr(v6("2001:2::1"), 64)}, statics);
}

Frame arp_frame(uint16_t op, const MacAddr& eth_dst, const MacAddr& sha, uint32_t spa,
                const MacAddr& tha, uint32_t tpa) {
  Frame f(wire::kArpFrameLen);
  wire::EthHdr eth{eth_dst, sha, Be16::of(wire::kEtherTypeArp)};
  wire::ArpPkt arp{Be16::of(1), Be16::of(0x0800), 6, 4, Be16::of(op), sha.b, Be32::of(spa),
                   tha.b,       Be32::of(tpa)};
  std::memcpy(f.data(), &eth, sizeof eth);
  std::memcpy(f.data() + sizeof eth, &arp, sizeof arp);
  return f;
}

wire::ArpPkt arp_of(const Frame& f) {
  wire::ArpPkt a;
  EXPECT_EQ(f.size(), wire::kArpFrameLen);
  std::memcpy(&a, f.data() + 14, sizeof a);
  return a;
}

Frame nd_frame(uint8_t type, uint32_t flags, const Gid& src, const std::array<uint8_t, 16>& dst,
               const Gid& target, uint8_t opt_type, const MacAddr& opt_mac, uint8_t hop = 255) {
  Frame f(wire::kNdFrameLen);
  wire::EthHdr eth{MacAddr::broadcast(), opt_mac, Be16::of(wire::kEtherTypeIpv6)};
  wire::Ipv6Hdr ip{Be32::of(6u << 28), Be16::of(32), 58, hop, src.raw, dst};
  wire::NdMsg nd{type, 0, Be16::of(0), Be32::of(flags), target.raw};
  wire::NdLinkOpt opt{opt_type, 1, opt_mac.b};
  std::memcpy(f.data(), &eth, 14);
  std::memcpy(f.data() + 14, &ip, 40);
  std::memcpy(f.data() + 54, &nd, 24);
  std::memcpy(f.data() + 78, &opt, 8);
  store_be16(f.data() + 56, icmpv6_checksum(src.raw, dst, f.data() + 54, 32));
  return f;
}

TEST(NeighborsArp, AnswersARequestForOurAddressAndLearnsTheSender) {
  Neighbors n = make();
  CaptureSink tx;
  // Receive ARP who-has 198.18.0.1 tell 198.18.0.2
  // Expect: a reply from our MAC to the requester, and the requester cached.
  Frame req = arp_frame(1, MacAddr::broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  EXPECT_TRUE(n.on_frame(req, Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame rep = tx.pop();
  EXPECT_EQ(std::memcmp(rep.data(), kPeerMac.b.data(), 6), 0);     // eth dst
  EXPECT_EQ(std::memcmp(rep.data() + 6, kOurMac.b.data(), 6), 0);  // eth src
  wire::ArpPkt a = arp_of(rep);
  EXPECT_EQ(a.op.load(), 2);
  EXPECT_EQ(a.sha, kOurMac.b);
  EXPECT_EQ(a.spa.load(), kOurIp);
  EXPECT_EQ(a.tha, kPeerMac.b);
  EXPECT_EQ(a.tpa.load(), kPeerIp);
  EXPECT_EQ(n.stats().arp_replies_sent, 1u);
  MacAddr m;
  EXPECT_TRUE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kPeerMac);
  EXPECT_TRUE(tx.frames.empty());
}

TEST(NeighborsArp, IgnoresRequestsForOtherAddressesButConsumesThem) {
  Neighbors n = make();
  CaptureSink tx;
  Frame req = arp_frame(1, MacAddr::broadcast(), kPeerMac, kPeerIp, MacAddr{}, 0xc6120009);
  EXPECT_TRUE(n.on_frame(req, Timestamp{0}, tx));
  EXPECT_TRUE(tx.frames.empty());
  EXPECT_EQ(n.cache_size(), 0u);  // not for us: not learned (RFC 826 adds only as target)
}

TEST(NeighborsArp, ResolveSendsOneRequestPerRetryIntervalThenLearnsTheReply) {
  Neighbors n = make();
  CaptureSink tx;
  MacAddr m;
  // Resolve 198.18.0.2 (unknown)
  // Expect: false, one broadcast who-has from 198.18.0.1.
  EXPECT_FALSE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{1000}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame req = tx.pop();
  EXPECT_EQ(std::memcmp(req.data(), MacAddr::broadcast().b.data(), 6), 0);
  wire::ArpPkt a = arp_of(req);
  EXPECT_EQ(a.op.load(), 1);
  EXPECT_EQ(a.spa.load(), kOurIp);
  EXPECT_EQ(a.tpa.load(), kPeerIp);
  // Resolve again 50 ms later (inside the 100 ms retry interval)
  // Expect: false, nothing sent.
  EXPECT_FALSE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{1000} + Duration::millis(50), tx));
  EXPECT_TRUE(tx.frames.empty());
  // Resolve 100 ms after the first request
  // Expect: a second request.
  EXPECT_FALSE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{1000} + Duration::millis(100), tx));
  EXPECT_EQ(tx.frames.size(), 1u);
  tx.frames.clear();
  EXPECT_EQ(n.stats().arp_requests_sent, 2u);
  // Receive the reply
  // Expect: resolved, no frame sent.
  EXPECT_TRUE(
      n.on_frame(arp_frame(2, kOurMac, kPeerMac, kPeerIp, kOurMac, kOurIp), Timestamp{0}, tx));
  EXPECT_TRUE(tx.frames.empty());
  EXPECT_TRUE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kPeerMac);
}

TEST(NeighborsArp, GratuitousArpUpdatesAKnownEntry) {
  Neighbors n = make();
  CaptureSink tx;
  n.on_frame(arp_frame(2, kOurMac, kPeerMac, kPeerIp, kOurMac, kOurIp), Timestamp{0}, tx);
  const MacAddr moved{{0x02, 0, 0, 0, 0, 0x22}};
  // Receive gratuitous ARP: 198.18.0.2 is now at 02:..:22 (sender = target = its address)
  n.on_frame(arp_frame(1, MacAddr::broadcast(), moved, kPeerIp, MacAddr{}, kPeerIp), Timestamp{0},
             tx);
  MacAddr m;
  EXPECT_TRUE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{0}, tx));
  EXPECT_EQ(m, moved);
  EXPECT_TRUE(tx.frames.empty());
}

TEST(NeighborsArp, GratuitousArpFromOurSubnetCreatesAnEntry) {
  Neighbors n = make();
  CaptureSink tx;
  // Receive gratuitous ARP for 198.18.0.2 (inside 198.18.0.0/15)
  n.on_frame(arp_frame(1, MacAddr::broadcast(), kPeerMac, kPeerIp, MacAddr{}, kPeerIp),
             Timestamp{0}, tx);
  // Receive gratuitous ARP for 10.0.0.2 (not our subnet)
  n.on_frame(arp_frame(1, MacAddr::broadcast(), kPeerMac, 0x0a000002, MacAddr{}, 0x0a000002),
             Timestamp{0}, tx);
  MacAddr m;
  EXPECT_TRUE(n.lookup(Gid::from_ipv4(kPeerIp), &m));
  EXPECT_EQ(m, kPeerMac);
  EXPECT_FALSE(n.lookup(Gid::from_ipv4(0x0a000002), &m));
  EXPECT_TRUE(tx.frames.empty());
}

TEST(NeighborsArp, StaticNeighboursAndOwnAddressNeedNoRequest) {
  Neighbors n = make({{"198.18.0.7", kPeerMac}});
  CaptureSink tx;
  MacAddr m;
  EXPECT_TRUE(n.resolve(Gid::from_ipv4(0xc6120007), &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kPeerMac);
  EXPECT_TRUE(n.resolve(Gid::from_ipv4(kOurIp), &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kOurMac);
  EXPECT_TRUE(tx.frames.empty());
}

TEST(NeighborsArp, NoBufferCountsADrop) {
  Neighbors n = make();
  CaptureSink tx;
  tx.capacity = 0;
  MacAddr m;
  EXPECT_FALSE(n.resolve(Gid::from_ipv4(kPeerIp), &m, Timestamp{0}, tx));
  EXPECT_EQ(n.stats().tx_dropped, 1u);
  EXPECT_EQ(n.stats().arp_requests_sent, 0u);
}

TEST(NeighborsArp, AnnounceSendsGratuitousArpAndUnsolicitedNa) {
  Neighbors n = make();
  CaptureSink tx;
  n.announce(tx);
  ASSERT_EQ(tx.frames.size(), 2u);
  wire::ArpPkt a = arp_of(tx.frames[0]);
  EXPECT_EQ(a.spa.load(), kOurIp);
  EXPECT_EQ(a.tpa.load(), kOurIp);
  EXPECT_EQ(tx.frames[1][54], wire::kIcmpv6NeighborAdvert);
}

TEST(NeighborsNd, AnswersASolicitationWithAValidAdvertisement) {
  Neighbors n = make();
  CaptureSink tx;
  Gid peer = v6("2001:2::2");
  Gid ours = v6("2001:2::1");
  // Receive NS for 2001:2::1 from 2001:2::2 with its link-layer address
  // Expect: NA (S|O) to the peer carrying our MAC, checksum valid; the peer cached.
  Frame ns = nd_frame(135, 0, peer, solicited_node(ours), ours, 1, kPeerMac);
  EXPECT_TRUE(n.on_frame(ns, Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame na = tx.pop();
  ASSERT_EQ(na.size(), wire::kNdFrameLen);
  EXPECT_EQ(std::memcmp(na.data(), kPeerMac.b.data(), 6), 0);
  wire::Ipv6Hdr ip;
  std::memcpy(&ip, na.data() + 14, 40);
  EXPECT_EQ(ip.hop_limit, 255);
  EXPECT_EQ(ip.src, ours.raw);
  EXPECT_EQ(ip.dst, peer.raw);
  EXPECT_EQ(icmpv6_checksum(ip.src, ip.dst, na.data() + 54, 32), 0);  // sums to zero
  wire::NdMsg nd;
  std::memcpy(&nd, na.data() + 54, 24);
  EXPECT_EQ(nd.type, 136);
  EXPECT_EQ(nd.flags.load(), wire::kNaFlagSolicited | wire::kNaFlagOverride);
  EXPECT_EQ(nd.target, ours.raw);
  EXPECT_EQ(na[78], wire::kNdOptTargetLinkAddr);
  EXPECT_EQ(std::memcmp(na.data() + 80, kOurMac.b.data(), 6), 0);
  MacAddr m;
  EXPECT_TRUE(n.resolve(peer, &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kPeerMac);
}

TEST(NeighborsNd, DropsSolicitationsWithBadHopLimitOrChecksum) {
  Neighbors n = make();
  CaptureSink tx;
  Gid ours = v6("2001:2::1");
  Frame bad_hop = nd_frame(135, 0, v6("2001:2::2"), solicited_node(ours), ours, 1, kPeerMac, 64);
  EXPECT_TRUE(n.on_frame(bad_hop, Timestamp{0}, tx));
  Frame bad_sum = nd_frame(135, 0, v6("2001:2::2"), solicited_node(ours), ours, 1, kPeerMac);
  bad_sum[60] ^= 1;
  EXPECT_TRUE(n.on_frame(bad_sum, Timestamp{0}, tx));
  EXPECT_TRUE(tx.frames.empty());
  EXPECT_EQ(n.cache_size(), 0u);
}

TEST(NeighborsNd, ResolveSendsSolicitationToTheSolicitedNodeGroupAndLearnsTheAdvert) {
  Neighbors n = make();
  CaptureSink tx;
  Gid peer = v6("2001:2::abcd:2");
  MacAddr m;
  EXPECT_FALSE(n.resolve(peer, &m, Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame ns = tx.pop();
  const uint8_t group_mac[6] = {0x33, 0x33, 0xff, 0xcd, 0x00, 0x02};  // 33:33:ff + low 24 bits
  EXPECT_EQ(std::memcmp(ns.data(), group_mac, 6), 0);
  wire::Ipv6Hdr ip;
  std::memcpy(&ip, ns.data() + 14, 40);
  EXPECT_EQ(ip.dst, solicited_node(peer));
  EXPECT_EQ(icmpv6_checksum(ip.src, ip.dst, ns.data() + 54, 32), 0);
  EXPECT_EQ(ns[54], 135);
  EXPECT_EQ(ns[78], wire::kNdOptSourceLinkAddr);
  // Receive NA for the peer with its target link-layer address
  Frame na = nd_frame(136, wire::kNaFlagSolicited, peer, v6("2001:2::1").raw, peer, 2, kPeerMac);
  EXPECT_TRUE(n.on_frame(na, Timestamp{0}, tx));
  EXPECT_TRUE(n.resolve(peer, &m, Timestamp{0}, tx));
  EXPECT_EQ(m, kPeerMac);
}

/// f with an 802.1Q tag (PCP pcp, VID vid) inserted after the MACs.
Frame tagged(const Frame& f, uint16_t vid, uint8_t pcp = 0) {
  Frame t(f.begin(), f.begin() + 12);
  t.push_back(0x81);
  t.push_back(0x00);
  t.push_back(static_cast<uint8_t>(pcp << 5 | vid >> 8));
  t.push_back(static_cast<uint8_t>(vid & 0xff));
  t.insert(t.end(), f.begin() + 12, f.end());
  return t;
}

/// f without the 802.1Q tag that must follow its MACs: (VID, PCP) of that tag, or (-1, -1).
std::pair<int, int> untag(Frame* f) {
  if (f->size() < 18 || (*f)[12] != 0x81 || (*f)[13] != 0x00) return {-1, -1};
  int vid = ((*f)[14] & 0x0f) << 8 | (*f)[15];
  int pcp = (*f)[14] >> 5;
  f->erase(f->begin() + 12, f->begin() + 16);
  return {vid, pcp};
}

TEST(NeighborsVlan, TaggedRequestsAreAnsweredAndEveryFrameSentCarriesTheVlanTag) {
  Neighbors n(kOurMac, {addr(Gid::from_ipv4(kOurIp), 15), addr(v6("2001:2::1"), 64)}, {},
              /*vlan=*/100);
  CaptureSink tx;
  // Receive a VLAN-100 (PCP 3) ARP request for our address.
  // Expect: a reply tagged VID 100 / PCP 0 that is, untagged, the reply of the untagged case.
  Frame req = arp_frame(1, MacAddr::broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  EXPECT_TRUE(n.on_frame(tagged(req, 100, 3), Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame rep = tx.pop();
  EXPECT_EQ(untag(&rep), std::make_pair(100, 0));
  wire::ArpPkt a = arp_of(rep);
  EXPECT_EQ(a.op.load(), 2);
  EXPECT_EQ(a.tpa.load(), kPeerIp);
  EXPECT_EQ(std::memcmp(rep.data(), kPeerMac.b.data(), 6), 0);
  // An untagged request is understood too; the reply is still tagged.
  EXPECT_TRUE(n.on_frame(req, Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  rep = tx.pop();
  EXPECT_EQ(untag(&rep).first, 100);
  // Our own requests (ARP and ND) are tagged.
  MacAddr m;
  EXPECT_FALSE(n.resolve(Gid::from_ipv4(0xc6120007), &m, Timestamp{0}, tx));
  EXPECT_FALSE(n.resolve(v6("2001:2::7"), &m, Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 2u);
  Frame arp = tx.pop(), ns = tx.pop();
  EXPECT_EQ(untag(&arp).first, 100);
  EXPECT_EQ(arp_of(arp).op.load(), 1);
  EXPECT_EQ(untag(&ns).first, 100);
  ASSERT_EQ(ns.size(), wire::kNdFrameLen);
  EXPECT_EQ(ns[54], 135);  // neighbour solicitation
  // A tagged NS is answered with a tagged NA whose checksum holds.
  Gid peer = v6("2001:2::2"), ours = v6("2001:2::1");
  EXPECT_TRUE(
      n.on_frame(tagged(nd_frame(135, 0, peer, solicited_node(ours), ours, 1, kPeerMac), 100),
                 Timestamp{0}, tx));
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame na = tx.pop();
  EXPECT_EQ(untag(&na).first, 100);
  ASSERT_EQ(na.size(), wire::kNdFrameLen);
  EXPECT_EQ(na[54], 136);
  wire::Ipv6Hdr ip;
  std::memcpy(&ip, na.data() + 14, 40);
  EXPECT_EQ(icmpv6_checksum(ip.src, ip.dst, na.data() + 54, 32), 0);
  // A tagged frame that is neither ARP nor IPv6 is not ours to consume.
  Frame other = req;
  other[12] = 0x88;
  other[13] = 0xb5;
  EXPECT_FALSE(n.on_frame(tagged(other, 100), Timestamp{0}, tx));
}

TEST(NeighborsVlan, WithoutAVlanTheRepliesToTaggedRequestsAreUntagged) {
  Neighbors n = make();
  CaptureSink tx;
  Frame req = arp_frame(1, MacAddr::broadcast(), kPeerMac, kPeerIp, MacAddr{}, kOurIp);
  EXPECT_TRUE(n.on_frame(tagged(req, 0, 3), Timestamp{0}, tx));  // priority-tagged request
  ASSERT_EQ(tx.frames.size(), 1u);
  Frame rep = tx.pop();
  EXPECT_EQ(untag(&rep).first, -1);
  EXPECT_EQ(rep.size(), wire::kArpFrameLen);
}

TEST(Neighbors, OtherFramesAreNotConsumed) {
  Neighbors n = make();
  CaptureSink tx;
  Frame udp(64, 0);
  store_be16(udp.data() + 12, wire::kEtherTypeIpv4);
  EXPECT_FALSE(n.on_frame(udp, Timestamp{0}, tx));
  Frame v6udp(100, 0);
  store_be16(v6udp.data() + 12, wire::kEtherTypeIpv6);
  v6udp[14 + 6] = 17;  // next header UDP
  EXPECT_FALSE(n.on_frame(v6udp, Timestamp{0}, tx));
  EXPECT_FALSE(n.on_frame(Frame(10, 0), Timestamp{0}, tx));
}

TEST(Neighbors, AcceptsOurUnicastBroadcastAndNdGroupsOnly) {
  Neighbors n = make();
  EXPECT_TRUE(n.accepts_dst(kOurMac.b.data()));
  EXPECT_TRUE(n.accepts_dst(MacAddr::broadcast().b.data()));
  const uint8_t all_nodes[6] = {0x33, 0x33, 0, 0, 0, 1};
  const uint8_t our_group[6] = {0x33, 0x33, 0xff, 0, 0, 1};
  const uint8_t other_group[6] = {0x33, 0x33, 0xff, 0, 0, 2};
  EXPECT_TRUE(n.accepts_dst(all_nodes));
  EXPECT_TRUE(n.accepts_dst(our_group));
  EXPECT_FALSE(n.accepts_dst(other_group));
  EXPECT_FALSE(n.accepts_dst(kPeerMac.b.data()));
}

}  // namespace
}  // namespace uroce::dpdk
