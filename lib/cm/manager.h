/**
 * @file manager.h
 * @brief The IBA Communication Manager's connection state machine (IBA Vol 1 §12.9), the
 * protocol core that a librdmacm drop-in sits on (issue #9). It speaks CM MADs
 * (transport/wire/cm.h) through a send callback and is driven by the MADs it receives and by
 * time; it never reads a clock or touches a QP. The layer above moves QPs through their
 * states when the events say so.
 *
 * Active side: connect() sends a REQ (resent every response timeout, at most max_retries
 * times; then a REJ "timeout" goes out and kTimeout is reported). A REP gives
 * kConnectResponse; ready_to_use() then sends the RTU and the connection is established. A REJ
 * gives kRejected. An MRA stretches the wait by the peer's service timeout.
 * Passive side: listen() on a service ID. A REQ gives kConnectRequest; accept() sends the
 * REP (resent like a REQ), and the RTU gives kEstablished; reject() sends a REJ. A REQ for a
 * service nobody listens on is answered with REJ "invalid service ID". A duplicate REQ is
 * answered with the REP again when one was sent, and dropped otherwise.
 * Both: disconnect() sends a DREQ (resent, then given up); a DREQ is answered with a DREP
 * and gives kDisconnected, also for a connection already gone, so the peer never hangs.
 * A closed connection lingers for `timewait` (stray MADs for it are recognised), then its
 * ID is freed.
 *
 * UD service resolution (SIDR, IBA §12.11, what RDMA_PS_UDP uses): sidr_request() sends a
 * SIDR_REQ (resent like a REQ, then kTimeout); the SIDR_REP gives kSidrReply. A SIDR_REQ for a
 * listened service gives kSidrRequest, answered by sidr_reply(); for another service it is
 * answered with status "service ID not supported". A repeated SIDR_REQ gets the same reply.
 * cancel() gives a connection up in any state, telling the peer (REJ, DREQ or SIDR_REP
 * "rejected") when it waits for us; what the manager reports about it afterwards is its own.
 *
 * XRC (IBA Annex A14): connect() with `xrc` sends the REQ of an XRC initiator (Linux's
 * cm_format_req for IB_QPT_XRC_INI: no responder resources, retry counts or SRQ bit); the
 * answer to such a REQ is an XRC REP (the target QPN in the Local EE Context Number, SRQ set, no
 * initiator depth or flow control), and the peer QPN of an XRC connection is the REP's EECN.
 *
 * Malformed MADs and MADs for unknown connections are counted and dropped. Units: Timestamp
 * and Duration (nanoseconds).
 */
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "common/types.h"
#include "transport/wire/cm.h"

namespace uroce::cm {

/// What the layer above learns (librdmacm maps these to RDMA_CM_EVENT_*).
enum class EventType : uint8_t {
  kConnectRequest,   ///< passive: a REQ for a listened service; req holds it
  kConnectResponse,  ///< active: the REP; rep holds it; answer with ready_to_use() or reject()
  kEstablished,      ///< passive: the RTU arrived (active: ready_to_use() establishes at once)
  kRejected,         ///< the peer sent a REJ; reason and private_data hold it
  kTimeout,          ///< no answer after every retry (REQ, REP) — the connection is gone
  kDisconnected,     ///< a DREQ or DREP arrived, or our DREQ went unanswered
  kSidrRequest,      ///< passive: a SIDR_REQ for a listened service; sidr_req holds it
  kSidrReply,        ///< active: the SIDR_REP; sidr_rep holds it (any status)
};

struct Event {
  EventType type{};
  uint32_t conn = 0;  ///< the local communication ID
  Gid peer{};
  std::optional<wire::cm::Req> req;
  std::optional<wire::cm::Rep> rep;
  std::optional<wire::cm::SidrReq> sidr_req;
  std::optional<wire::cm::SidrRep> sidr_rep;
  uint32_t ece_options = 0;           ///< REQ/REP: the MAD's attribute modifier (ECE options)
  uint16_t reason = 0;                ///< kRejected: the REJ's reason
  std::vector<uint8_t> private_data;  ///< kRejected, kDisconnected: the peer's private data
};

/// The REQ of connect(): what the peer needs to bring its QP to RTR towards ours.
struct ConnectParams {
  Gid local{}, remote{};
  uint64_t service_id = 0;
  uint32_t qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t path_mtu = 3;  ///< IBA MTU code, 3 = 1024
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint8_t local_ack_timeout = 14;
  bool srq = false;
  bool flow_control = false;  ///< the REQ's End-to-End Flow Control bit
  bool xrc = false;           ///< qpn is an XRC_SEND QP's: the REQ asks for an XRC target
  uint32_t ece_vendor = 0;    ///< ECE (IBA 1.4): the REQ's vendor id, 24 bits; 0: none
  uint32_t ece_options = 0;   ///< and its options, carried as the MAD's attribute modifier
  std::array<uint8_t, wire::cm::kReqPrivateLen> private_data{};
};

/// The REP of accept(); an XRC REQ's REP carries qpn (the XRC_RECV QP's) as its EECN.
struct AcceptParams {
  uint32_t qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t rnr_retry_count = 7;
  bool srq = false;
  bool flow_control = false;  ///< the REP's End-to-End Flow Control bit
  uint32_t ece_vendor = 0;    ///< ECE: the REP's vendor id; 0: none
  uint32_t ece_options = 0;   ///< the options agreed, as the MAD's attribute modifier
  std::array<uint8_t, wire::cm::kRepPrivateLen> private_data{};
};

struct Config {
  uint64_t ca_guid = 0;
  uint32_t first_comm_id = 1;  ///< local IDs count up from here (randomise per process)
  /// A process sharing its netdev through uroce-hostd: every local ID (communication and SIDR
  /// request IDs) carries id_prefix in its top id_prefix_bits bits, so that the daemon steers
  /// the answers to it (HostCm); the rest counts up from first_comm_id and wraps within.
  uint8_t id_prefix_bits = 0;
  uint32_t id_prefix = 0;
  Duration response_timeout = Duration::millis(100);
  int max_retries = 7;
  Duration timewait = Duration::seconds(1);
  /// The port is shared with other processes that all see every CM MAD: a REQ or SIDR_REQ
  /// for a service nobody here listens on and a DREQ for an unknown connection are dropped
  /// instead of answered, since the process they are for answers them. (lib/rdmacm leaves it
  /// off: uroce-hostd steers each MAD to its process and answers the others, HostCm.)
  bool shared = false;
};

/// What the manager dropped or repeated.
struct Counters {
  uint64_t malformed = 0;     ///< refused by the MAD parser
  uint64_t unknown_conn = 0;  ///< for no connection (or the wrong state)
  uint64_t duplicate_req = 0;
  uint64_t resent = 0;  ///< REQ/REP/DREQ/RTU sent again
  uint64_t rejected_no_listener = 0;
};

class Manager {
 public:
  /// Sends one MAD to the CM (QP1) of `dst`.
  using Send = std::function<void(const Gid& dst, std::span<const uint8_t, wire::cm::kMadLen>)>;

  Manager(const Config& cfg, Send send);

  Status listen(uint64_t service_id);
  Status unlisten(uint64_t service_id);

  /// Sends a REQ; returns the new connection's local ID.
  uint32_t connect(const ConnectParams& p, Timestamp now);
  /// Passive, after kConnectRequest: sends the REP.
  Status accept(uint32_t conn, const AcceptParams& p, Timestamp now);
  /// After kConnectRequest (passive) or kConnectResponse (active): sends a REJ with `reason`
  /// ("consumer defined" by default) and `private_data` (at most 148 bytes) and forgets the
  /// connection.
  Status reject(uint32_t conn, std::span<const uint8_t> private_data, Timestamp now,
                wire::cm::RejReason reason = wire::cm::RejReason::kConsumerDefined);
  /// Active, after kConnectResponse: sends the RTU; the connection is established.
  Status ready_to_use(uint32_t conn, Timestamp now);
  /// Established (or REP sent): sends a DREQ.
  Status disconnect(uint32_t conn, Timestamp now);
  /// Sends a SIDR_REQ for service_id to `remote`; returns the request's local ID.
  uint32_t sidr_request(const Gid& remote, uint64_t service_id,
                        std::span<const uint8_t> private_data, Timestamp now);
  /// Passive, after kSidrRequest: sends the SIDR_REP (status wire::cm::SidrStatus, the UD
  /// QP and Q_Key when valid, at most 136 bytes of private data).
  Status sidr_reply(uint32_t conn, uint8_t status, uint32_t qpn, uint32_t qkey,
                    std::span<const uint8_t> private_data, Timestamp now);
  /// Gives the connection up: REQ/REP sent -> REJ "timeout"; REQ/REP received -> REJ
  /// "consumer defined"; established -> DREQ; SIDR_REQ received -> SIDR_REP "rejected";
  /// otherwise nothing is sent. EINVAL: unknown connection.
  Status cancel(uint32_t conn, Timestamp now);

  void on_mad(const Gid& src, std::span<const uint8_t> mad, Timestamp now);
  void on_timer(Timestamp now);
  /// The earliest resend or timewait end; never when there is none.
  Timestamp next_deadline() const;

  std::optional<Event> poll_event();
  const Counters& counters() const { return counters_; }
  /// Connections known, in any state (timewait included).
  size_t connections() const { return conns_.size(); }

 private:
  enum class State : uint8_t {
    kReqSent,
    kRepRcvd,
    kReqRcvd,
    kRepSent,
    kEstablished,
    kDreqSent,
    kTimewait,
    kSidrSent,
    kSidrRcvd,
  };
  struct Conn {
    State state{};
    uint32_t local_id = 0;
    uint32_t remote_id = 0;
    uint32_t remote_qpn = 0;
    uint64_t tid = 0;
    uint64_t service_id = 0;  ///< SIDR
    Gid peer{};
    std::array<uint8_t, wire::cm::kMadLen> last{};  ///< the MAD that a resend repeats
    bool active = false;  ///< connect() made it (its last MAD after the REP is the RTU)
    bool xrc = false;     ///< an XRC connection (ConnectParams::xrc, or an XRC REQ)
    int retries_left = 0;
    Timestamp deadline = Timestamp::never();
  };

  void send(Conn& c, const wire::cm::Message& m, Timestamp now, bool expect_answer,
            uint32_t attr_mod = 0);
  void send_once(const Gid& dst, uint64_t tid, const wire::cm::Message& m);
  void enter_timewait(Conn& c, Timestamp now);
  void emit(Event e) { events_.push_back(std::move(e)); }
  static Event event_of(EventType type, const Conn& c);
  Conn& new_conn(State state, const Gid& peer);
  uint64_t new_tid(const Conn& c);
  static wire::cm::Rej rej_of(const Conn& c, wire::cm::RejReason reason, wire::cm::MsgRef rejected);
  Conn* find(uint32_t local_id);
  Conn* find_remote(const Gid& peer, uint32_t remote_id);

  void on_req(const Gid& src, uint64_t tid, const wire::cm::Req& m, uint32_t attr_mod,
              Timestamp now);
  void on_rep(uint64_t tid, const wire::cm::Rep& m, uint32_t attr_mod);
  void on_rtu(const wire::cm::Rtu& m);
  void on_rej(const Gid& src, const wire::cm::Rej& m, Timestamp now);
  void on_mra(const wire::cm::Mra& m, Timestamp now);
  void on_dreq(const Gid& src, uint64_t tid, const wire::cm::Dreq& m, Timestamp now);
  void on_drep(const wire::cm::Drep& m, Timestamp now);
  void on_sidr_req(const Gid& src, uint64_t tid, const wire::cm::SidrReq& m, Timestamp now);
  void on_sidr_rep(uint64_t tid, const wire::cm::SidrRep& m, Timestamp now);
  bool listening(uint64_t service_id) const;

  Config cfg_;
  Send send_;
  uint32_t next_id_;
  uint64_t next_tid_ = 1;
  std::unordered_map<uint32_t, Conn> conns_;
  std::vector<uint64_t> listening_;
  std::deque<Event> events_;
  Counters counters_;
};

}  // namespace uroce::cm
