/**
 * @file control.h
 * @brief uroce-hostd's control protocol (docs/host-mode.md, "Several processes on one netdev"):
 * where the daemon of a netdev listens, the messages, and descriptor passing.
 *
 * Rendezvous, per netdev and network namespace (common/run_path.h):
 *   <run dir>/hostd-<ifname>.<netns inode>.sock  the daemon's Unix SOCK_SEQPACKET socket (0666)
 *   <run dir>/hostd-<ifname>.<netns inode>.lock  held (flock, exclusive) by the running daemon
 *
 * A session is one connection, and lives as long as it: the client sends Hello (magic,
 * protocol version, its device's name, and the QPN block it resumes after a daemon restart,
 * if any); the daemon answers Welcome with three descriptors
 * (SCM_RIGHTS): the region's memfd (region.h), the client's doorbell (the daemon kicks it, the
 * client sleeps on it) and the daemon's doorbell (the client kicks it), or Refused with one
 * line (another protocol version, no free client slot, the block to resume held by another
 * client). The daemon takes the client's pid and
 * uid from SO_PEERCRED, never from a message. When the connection closes (the process exits or
 * is killed), the daemon frees the client's slot, QPN block and region at once.
 *
 * Messages are fixed-size structs in host byte order (both ends are on one host); a message
 * of another size, magic or type ends the session.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "shm/region.h"

namespace uroce::shm {

inline constexpr uint32_t kMagic = 0x68726375;  ///< "ucrh" in memory on little-endian hosts
/// 3: Hello carries resume_block (daemon restart survival, docs/host-mode.md).
inline constexpr uint32_t kProtocolVersion = 3;

enum class MsgType : uint32_t { kHello = 1, kWelcome = 2, kRefused = 3, kRequest = 4, kReply = 5 };

struct MsgHeader {
  uint32_t magic = kMagic;
  MsgType type = MsgType::kHello;
  uint32_t version = kProtocolVersion;
  uint32_t reserved = 0;
};

/// Client -> daemon, the first message.
struct Hello {
  MsgHeader h{kMagic, MsgType::kHello, kProtocolVersion, 0};
  char device[32] = {};  ///< the uroce device's name (NUL-terminated), for the daemon's listing
  /// 0: a new session. Else the QPN block of this client's session with a daemon that went
  /// away (its QPs live on): the daemon gives it that block again, or Refused when another
  /// client holds it.
  uint32_t resume_block = 0;
  uint32_t reserved = 0;
};

/// Daemon -> client: the session's facts; three descriptors travel with it (file comment).
struct Welcome {
  MsgHeader h{kMagic, MsgType::kWelcome, kProtocolVersion, 0};
  uint32_t client = 0;          ///< the client's number at the daemon (its QPN block)
  uint32_t qpn_block = 0;       ///< QPNs qpn_block << qpn_block_bits .. + 2^qpn_block_bits - 1
  uint32_t qpn_block_bits = 0;  ///< low QPN bits the client numbers its QPs with
  uint32_t max_frame = 0;       ///< largest frame (bytes) either way
  RegionParams region{};
};
inline constexpr size_t kWelcomeFds = 3;  ///< region memfd, client doorbell, daemon doorbell

/// Daemon -> client instead of Welcome, or during a session when the device is removed
/// (`uroce link del`: the session ends for good, no resume); then the daemon closes the
/// connection.
struct Refused {
  MsgHeader h{kMagic, MsgType::kRefused, kProtocolVersion, 0};
  char reason[200] = {};  ///< one line, NUL-terminated
};

/// What a Request asks of the daemon.
enum class Op : uint32_t {
  /// rdma_listen on (ps, port, gid; gid zero: any address): the host's port space binds the
  /// port to the client unless another holds it (EADDRINUSE), and REQs for it come to it.
  kListen = 1,
  /// A bind or listen of (ps, port, gid) ends (one per Bind or Listen).
  kRelease = 2,
  /// The client's connected QP `qpn` reached RTR towards (gid, dqpn), sending from UDP port
  /// `sport`: frames of it to that destination are the client's (EPERM: not its QPN;
  /// EADDRINUSE: another client's connection).
  kConnect = 3,
  /// QP `qpn` left its connection (reset, destroyed).
  kDisconnect = 4,
  /// rdma_bind_addr on (ps, port, gid): the port is the client's in the host's port space
  /// unless another holds it (EADDRINUSE); Release gives it back.
  kBind = 5,
};
inline constexpr uint32_t kOpLast = 5;

/// Client -> daemon after Welcome, one at a time: the daemon answers each with a Reply of the
/// same seq. Fields an op does not use are zero.
struct Request {
  MsgHeader h{kMagic, MsgType::kRequest, kProtocolVersion, 0};
  Op op = Op::kListen;
  uint32_t seq = 0;
  uint16_t ps = 0;     ///< kBind, kListen, kRelease: the RDMA CM port space (RDMA_PS_*)
  uint16_t port = 0;   ///< kBind, kListen, kRelease
  uint32_t qpn = 0;    ///< kConnect, kDisconnect: the client's QPN (24 bits)
  uint32_t dqpn = 0;   ///< kConnect: the remote QPN (24 bits)
  uint16_t sport = 0;  ///< kConnect: the QP's UDP source port
  uint16_t reserved = 0;
  uint8_t gid[16] = {};  ///< kBind, kListen, kRelease: the address; kConnect: the remote GID
};

/// Daemon -> client: the answer to the Request of the same seq.
struct Reply {
  MsgHeader h{kMagic, MsgType::kReply, kProtocolVersion, 0};
  uint32_t seq = 0;
  int32_t error = 0;  ///< 0, or an errno
};

static_assert(sizeof(Request) == 56 && sizeof(Reply) == 24 && sizeof(Hello) == 56);

/// A Hello as received, every field checked: size, magic, type, version, reserved fields
/// zero, the device's name NUL-terminated, resume_block a 24-bit QPN's block number at most.
/// nullopt: nonsense (the daemon closes the connection; another protocol version is refused
/// with a line before this, hello_version()).
std::optional<Hello> parse_hello(std::span<const uint8_t> msg);
/// The protocol version a first message names when it is a Hello of any version (magic, type
/// and a whole header), so that a client of another version is told so; nullopt otherwise.
std::optional<uint32_t> hello_version(std::span<const uint8_t> msg);

/// A Request as received (msg: the bytes of one message), with every field checked: size,
/// magic, type, version, op, the fields its op uses in range and the others zero. nullopt:
/// nonsense (the daemon ends the session).
std::optional<Request> parse_request(std::span<const uint8_t> msg);

/// A Refused message's reason (NUL-terminated within it), or nullopt for anything else.
std::optional<std::string> parse_refused(std::span<const uint8_t> msg);

/// The client's side of one Request on a session's socket: sends it and waits (the socket's
/// receive timeout) for its Reply. The Reply's error, or the errno of the exchange (EPROTO: an
/// answer that is no Reply to it; ESHUTDOWN: Refused instead, its reason in *refused).
int request(int sock, Request req, std::string* refused = nullptr);

/// hostd-<ifname>.<netns inode> in the run folder (append ".sock", ".lock").
std::string hostd_base(std::string_view ifname);
/// A daemon serves ifname in this network namespace: its lock is held and its socket exists
/// (it creates the socket last, when ready). Connects to nothing.
bool hostd_running(std::string_view ifname);

/// Sends one message with descriptors (none: fds empty). 0, or the errno.
int send_msg(int sock, const void* msg, size_t len, std::span<const int> fds = {});
/// Receives one message into buf (cap bytes) and up to fds.size() descriptors (close-on-exec;
/// *nfds of them; any beyond are closed). Returns the message's length, 0 when the peer closed,
/// -1 with errno on error; a message longer than cap is an error (EMSGSIZE).
long recv_msg(int sock, void* buf, size_t cap, std::span<int> fds, size_t* nfds);

/// A client's session, as connect_daemon() opened it; the descriptors are the caller's.
struct Session {
  int sock = -1;
  Welcome welcome;
  int region_fd = -1;
  int client_bell = -1;
  int daemon_bell = -1;
};

/// Connects to the daemon of ifname, says Hello for `device` (resuming QPN block
/// `resume_block` unless 0) and waits (up to 5 s) for its answer. nullopt with one line in
/// *err: no daemon, refused (its reason), or a protocol error; *refused (optional) tells a
/// daemon's refusal from the others.
std::optional<Session> connect_daemon(std::string_view ifname, std::string_view device,
                                      std::string* err, uint32_t resume_block = 0,
                                      bool* refused = nullptr);

}  // namespace uroce::shm
