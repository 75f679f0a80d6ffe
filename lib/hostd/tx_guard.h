/**
 * @file tx_guard.h
 * @brief What a process may send through uroce-hostd (docs/host-mode.md, "Isolation, as a NIC
 * gives it"): a NIC builds a QP's headers from the QP context the kernel set up, so a process
 * can only send as itself; the daemon gets the same guarantee by checking, after it copied a
 * client's frame out of the client's ring, that the frame is one the client's own QPs may send:
 *
 * - source MAC and IP address: the netdev's;
 * - a connected QP's frame (RC, UC, XRC requests and responses, CNPs): to the address and QPN
 *   of a connection the client registered when its QP reached RTR (connect()), from that
 *   connection's UDP source port. A remote QP is connected to one local QP: a client cannot
 *   register (and so cannot send into) a connection another client holds;
 * - a datagram's DETH source QPN: one of the client's own QPNs (its block); QP 1 (CM MADs,
 *   whose contents lib/cm/host_cm.h checks) only to QP 1.
 *
 * Sans-IO and allocation-free on the checking path; the daemon's worker that owns the client
 * calls check() on every frame and drops (and counts per reason) what fails.
 */
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/types.h"
#include "transport/wire/parse.h"

namespace uroce::hostd {

class TxGuard {
 public:
  enum class Verdict : uint8_t {
    kOk,
    kMalformed,     ///< the RoCEv2 headers do not parse
    kSrcMac,        ///< not the netdev's MAC
    kSrcAddr,       ///< not one of the netdev's addresses
    kSrcQpn,        ///< a datagram from a QPN that is not the client's
    kNotConnected,  ///< to a QP the client has no connection with (or another client has)
    kSport,         ///< a connection's frame from another UDP source port
  };
  static std::string_view name(Verdict v);

  /// The netdev's MAC and addresses (updated as netlink reports changes).
  void set_host(const MacAddr& mac, std::vector<Gid> gids);
  /// A client and its QPN block [first, first + count). false: already there.
  bool add_client(uint32_t client, uint32_t qpn_first, uint32_t qpn_count);
  /// The client is gone: its block and connections are forgotten.
  void drop_client(uint32_t client);
  /// The client's QP `qpn` (in its block) reached RTR towards (dgid, dqpn), sending from UDP
  /// port `sport`. 0; EPERM: not the client's QPN (or no such client); EADDRINUSE: that remote
  /// QP is another client's connection. Registering the same QP again updates it.
  int connect(uint32_t client, uint32_t qpn, const Gid& dgid, uint32_t dqpn, uint16_t sport);
  /// The QP left its connection (reset, error flushed, destroyed).
  void disconnect(uint32_t client, uint32_t qpn);

  /// Whether `client` may send `frame`; *p gets the parsed headers (the daemon steers by them).
  Verdict check(uint32_t client, std::span<const uint8_t> frame, wire::ParsedPacket* p) const;

  size_t connections() const { return by_remote_.size(); }

 private:
  struct Client {
    uint32_t qpn_first = 0, qpn_count = 0;
  };
  struct Conn {
    uint32_t client = 0, qpn = 0;
    uint16_t sport = 0;
  };
  using RemoteKey = std::pair<std::array<uint8_t, 16>, uint32_t>;
  struct RemoteHash {
    size_t operator()(const RemoteKey& k) const;
  };
  bool owns(uint32_t client, uint32_t qpn) const;

  MacAddr mac_{};
  std::vector<Gid> gids_;
  std::unordered_map<uint32_t, Client> clients_;
  std::unordered_map<RemoteKey, Conn, RemoteHash> by_remote_;
};

}  // namespace uroce::hostd
