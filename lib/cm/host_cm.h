/**
 * @file host_cm.h
 * @brief The host's share of the RDMA CM when several processes use one netdev through
 * uroce-hostd (docs/host-mode.md, "RDMA CM"): the port space the kernel keeps per host, and the
 * steering of CM MADs (QP1) to the one process each is for. Sans-IO: the daemon hands it every
 * MAD that arrives and every MAD a client sends, with the clock; it answers where a MAD goes,
 * and which MADs the daemon itself must send (REJ, DREP, DREQ).
 *
 * Clients are numbered 1..kMaxClient; a client's number is the prefix (top kClientBits bits)
 * of every communication ID and SIDR request ID its CM allocates, so an answer finds its
 * process by the ID it echoes, with no table to fill or to get wrong.
 *
 * - Port space: bind() of (port space, port, address) fails with EADDRINUSE when another
 *   client holds the port on the same address or either address is the wildcard (as the
 *   kernel's cma_check_port without SO_REUSEADDR); listen() needs the client's own binding.
 * - Inbound: a REQ or SIDR_REQ goes to the client that listens on its service ID and the
 *   address it was sent to; for nobody, the daemon answers as the kernel's CM does: REJ
 *   "invalid service ID" (IB_CM_REJ_INVALID_SERVICE_ID), SIDR_REP "service ID not supported".
 *   Every other MAD goes to the client its echoed ID names; a DREQ for a client that is gone
 *   gets a DREP from the daemon, anything else for nobody is dropped.
 * - Outbound: a client may only send MADs under its own IDs (a REQ, REP, RTU, DREQ, DREP, MRA
 *   or REJ whose local communication ID, a SIDR_REQ whose request ID, carries its prefix; a
 *   SIDR_REP only for a service it listens on); others are refused (the daemon drops them and
 *   counts). Allowed MADs are followed to know the client's connections.
 * - A client that goes (drop_client): its bindings are released, and each of its connections
 *   that the peer knows (a REP was sent or received) gets a DREQ from the daemon, resent every
 *   response timeout up to max_retries times until the peer's DREP; so no peer waits out its
 *   own timeout. Its IDs are remembered for `timewait` (a late DREQ still gets its DREP).
 *
 * Units: Timestamp/Duration (ns). Thread-safety: none (the daemon's CM worker owns it).
 */
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/time.h"
#include "common/types.h"
#include "transport/wire/cm.h"

namespace uroce::cm {

/// HostCm's timing.
struct HostCmConfig {
  Duration response_timeout = Duration::millis(100);  ///< between DREQ resends
  int max_retries = 7;
  Duration timewait = Duration::seconds(60);
};

class HostCm {
 public:
  static constexpr int kClientBits = 12;
  static constexpr uint32_t kMaxClient = (1u << kClientBits) - 1;

  /// The client whose prefix an ID carries (0: none).
  static constexpr uint32_t client_of(uint32_t id) { return id >> (32 - kClientBits); }
  /// The first ID a client's CM may use; its IDs are [first_id, first_id + id_span()).
  static constexpr uint32_t first_id(uint32_t client) { return client << (32 - kClientBits); }
  static constexpr uint32_t id_span() { return 1u << (32 - kClientBits); }

  using Config = HostCmConfig;

  /// A MAD the daemon sends itself, from `local` to the CM (QP1) of `peer`.
  struct Outgoing {
    Gid peer{}, local{};
    std::array<uint8_t, wire::cm::kMadLen> mad{};
  };

  /// Where an inbound MAD goes.
  enum class To : uint8_t {
    kClient,    ///< deliver to `client`
    kAnswered,  ///< the daemon answered it (`reply`); deliver to nobody
    kDropped,   ///< malformed, or for nobody
  };
  struct Route {
    To to = To::kDropped;
    uint32_t client = 0;
    std::optional<Outgoing> reply;
  };

  /// Why an outbound MAD was refused.
  enum class Refusal : uint8_t {
    kNone,
    kMalformed,     ///< not a CM MAD the parser takes
    kForeignId,     ///< under an ID of another client
    kNotListening,  ///< a SIDR_REP for a service the client does not listen on
  };

  struct Counters {
    uint64_t rejected_no_listener = 0;  ///< REQs answered with REJ "invalid service ID"
    uint64_t sidr_unsupported = 0;      ///< SIDR_REQs answered "service ID not supported"
    uint64_t drep_for_gone = 0;         ///< DREQs for a client that is gone, answered
    uint64_t dreq_for_dead = 0;         ///< DREQs sent for connections of a client that died
    uint64_t dropped_in = 0;            ///< inbound MADs for nobody, or malformed
    uint64_t refused_out = 0;           ///< outbound MADs refused
  };

  explicit HostCm(const Config& cfg = {}) : cfg_(cfg) {}

  /// A client connected to the daemon (its number is the prefix of its CM's IDs). false:
  /// out of range, or already there.
  bool add_client(uint32_t client);

  /// rdma_bind_addr of one client: port space ps (wire/cm_ip.h kPs*), port, address (zero:
  /// any). 0, EADDRINUSE (another client holds it), EINVAL (client out of range).
  int bind(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr);
  /// The binding ends (rdma_destroy_id, or the listen's end).
  void release(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr);
  /// rdma_listen on a binding the client holds: 0, or EINVAL (no such binding of its own).
  int listen(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr);
  /// Whether the client holds (ps, port, addr) (tests, `uroce show`).
  bool bound(uint32_t client, uint16_t ps, uint16_t port, const Gid& addr) const;

  /// An inbound MAD from `peer`'s CM to our address `local`.
  Route inbound(const Gid& peer, const Gid& local, std::span<const uint8_t> mad, Timestamp now);
  /// A MAD `client` sends from `local` to `peer`: kNone (send it) or why not.
  Refusal outbound(uint32_t client, const Gid& local, const Gid& peer, std::span<const uint8_t> mad,
                   Timestamp now);

  /// The client is gone: its ports are released; DREQs for its connections are returned (and
  /// resent by timers() until answered).
  std::vector<Outgoing> drop_client(uint32_t client, Timestamp now);
  /// DREQs due again, and forgets what timewait has passed.
  std::vector<Outgoing> timers(Timestamp now);
  /// The earliest time timers() has work (Timestamp::never() when none).
  Timestamp next_deadline() const;

  /// Connections the CM follows for a client (tests, `uroce show`).
  size_t connections(uint32_t client) const;
  /// Connections the CM follows for all clients.
  size_t connections_total() const { return conns_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Binding {
    uint32_t client = 0;
    Gid addr{};
    bool listening = false;
  };
  /// A connection of a client, as its MADs showed it; keyed by the client's local comm ID.
  struct Conn {
    Gid peer{}, local{};
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn = 0;
    bool peer_knows = false;  ///< a REP went one way or the other: the peer holds a QP for it
    bool xrc = false;         ///< the client's REQ was an XRC one: the REP's EECN is the QPN
  };
  /// A connection of a client that died, still answered (and DREQed until the peer answers).
  struct Dead {
    Gid peer{}, local{};
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn = 0;
    int sent = 0;           ///< DREQs sent
    bool answered = false;  ///< the peer's DREP (or DREQ) came
    Timestamp next_send{}, forget_at{};
  };
  /// A REQ delivered to a client and not answered yet: its sender's QPN, for the REP.
  struct PendingReq {
    uint32_t client = 0;
    uint32_t remote_qpn = 0;
    Gid local{};
    Timestamp forget_at{};
  };

  static uint32_t key(uint16_t ps, uint16_t port) { return uint32_t{ps} << 16 | port; }
  const Binding* listener(uint16_t ps, uint16_t port, const Gid& local) const;
  Outgoing dreq_of(uint32_t local_comm_id, const Dead& d) const;
  void follow_out(uint32_t client, const Gid& local, const Gid& peer, const wire::cm::Mad& m);

  Config cfg_;
  std::vector<bool> alive_ = std::vector<bool>(kMaxClient + 1, false);
  std::multimap<uint32_t, Binding> ports_;  ///< by key(ps, port)
  std::unordered_map<uint32_t, Conn> conns_;
  std::unordered_map<uint32_t, Dead> dead_;
  /// By (peer's GID, its local comm ID): REQs handed to a client.
  std::map<std::pair<std::array<uint8_t, 16>, uint32_t>, PendingReq> pending_;
  Counters counters_;
};

}  // namespace uroce::cm
