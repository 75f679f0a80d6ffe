/**
 * @file neighbors.h
 * @brief Userspace ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) for the addresses a
 * device owns: the kernel has no address on the link DPDK drives, so the port answers and
 * resolves itself.
 *
 * Sans-IO: frames come in as byte spans with the time, replies and requests go out through a
 * TxSink. No DPDK header, no clock read; unit-tested on its own (tests/dpdk/neighbors_test.cc).
 *
 * Policy:
 *  - ARP requests and NS for one of our addresses are answered (ARP reply; NA with S and O set,
 *    to all-nodes when the solicitation came from the unspecified address).
 *  - The sender of such a request is learned, and so is every ARP reply or NA we see; an ARP
 *    packet whose sender is already cached updates the entry (RFC 826 "merge"); a gratuitous
 *    ARP (sender = target) from one of our subnets creates an entry, so a peer that starts
 *    later is known before it sends anything else.
 *  - resolve(): our own address, then static neighbours, then the cache; else an ARP request
 *    (broadcast) or an NS (solicited-node multicast) is sent, at most once per retry interval
 *    per address, and false is returned.
 * Units: Timestamp/Duration in ns.
 */
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/packet_io.h"
#include "common/time.h"
#include "common/types.h"
#include "config/config.h"

namespace uroce::dpdk {

/// Counters of what the neighbour module did (for tests and `uroce show`).
struct NeighborStats {
  uint64_t arp_requests_sent = 0;  ///< ARP requests sent by resolve()
  uint64_t arp_replies_sent = 0;   ///< ARP replies to requests for our addresses
  uint64_t ns_sent = 0;            ///< neighbour solicitations sent by resolve()
  uint64_t na_sent = 0;            ///< neighbour advertisements sent in reply
  uint64_t learned = 0;            ///< cache insertions or updates
  uint64_t tx_dropped = 0;         ///< replies/requests the sink had no buffer for
};

class Neighbors {
 public:
  static constexpr Duration kRetryInterval = Duration::millis(100);  ///< per-address resend
  static constexpr size_t kMaxEntries = 4096;                        ///< cache bound

  /// @param mac our MAC; @param own our addresses (config order);
  /// @param static_neighbors address text -> MAC (config::Device::neighbors).
  /// @param vlan 802.1Q VLAN id (config::Device::vlan): ARP/ND frames are sent tagged with
  /// it (PCP 0); received ones are understood tagged or untagged either way.
  Neighbors(MacAddr mac, std::vector<config::Address> own,
            const std::map<std::string, MacAddr>& static_neighbors,
            std::optional<uint16_t> vlan = std::nullopt);

  /// Handles an ARP or ND frame; returns false (and does nothing) for any other frame.
  bool on_frame(std::span<const uint8_t> frame, Timestamp now, TxSink& tx);

  /// Looks ip up (own address, static, cache) without sending anything or reading time.
  bool lookup(const Gid& ip, MacAddr* mac) const;

  /// Looks ip up; on a miss may send a request through tx (rate limited) and returns false.
  bool resolve(const Gid& ip, MacAddr* mac, Timestamp now, TxSink& tx);

  /// Sends a gratuitous ARP for each IPv4 address and an unsolicited NA for each IPv6 one.
  void announce(TxSink& tx);

  /// True when a frame with this destination MAC is for us: our unicast MAC, broadcast, the
  /// all-nodes or one of our solicited-node multicast groups.
  bool accepts_dst(const uint8_t* dst) const;

  /// The multicast MACs of accepts_dst() (for a NIC's multicast filter).
  const std::vector<MacAddr>& multicast_macs() const { return mcast_; }

  const NeighborStats& stats() const { return stats_; }
  size_t cache_size() const { return cache_.size(); }

 private:
  using Key = std::array<uint8_t, 16>;

  void learn(const Gid& ip, const MacAddr& mac, bool create);
  const config::Address* source_for(const Gid& target) const;
  bool owns(const Gid& ip) const;
  bool on_arp(std::span<const uint8_t> frame, TxSink& tx);
  bool on_ipv6(std::span<const uint8_t> frame, TxSink& tx);
  bool send_arp(uint16_t op, const MacAddr& eth_dst, const MacAddr& tha, uint32_t spa, uint32_t tpa,
                TxSink& tx);
  bool send_nd(uint8_t type, uint32_t flags, const Key& src, const Key& dst, const MacAddr& eth_dst,
               const Key& target, TxSink& tx);
  /// Writes an untagged frame f to tx, with the 802.1Q tag inserted when vlan_ is set.
  bool emit(const uint8_t* f, size_t len, TxSink& tx);

  MacAddr mac_;
  std::optional<uint16_t> vlan_;
  std::vector<uint8_t> untagged_;  ///< a received tagged frame with its tag removed
  std::vector<config::Address> own_;
  std::map<Key, MacAddr> static_;
  std::map<Key, MacAddr> cache_;
  std::map<Key, Timestamp> last_request_;  ///< pending resolutions: when we last asked
  std::vector<MacAddr> mcast_;
  NeighborStats stats_;
};

/// Solicited-node multicast address of ip (RFC 4291 §2.7.1): ff02::1:ffXX:XXXX.
std::array<uint8_t, 16> solicited_node(const Gid& ip);

/// The ICMPv6 checksum of msg (len bytes) between src and dst (RFC 8200 §8.1).
uint16_t icmpv6_checksum(const std::array<uint8_t, 16>& src, const std::array<uint8_t, 16>& dst,
                         const uint8_t* msg, size_t len);

}  // namespace uroce::dpdk
