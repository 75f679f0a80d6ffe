/**
 * @file rsocket.h
 * @brief uroce's rsockets (rsocket(7)): stream sockets over RC QPs that the RDMA CM connects,
 * speaking librdmacm's rsocket protocol (rs_wire.h): data is RDMA-written into the peer's
 * receive buffer, announced by immediate data, paced by receive credits; riomap/riowrite
 * write straight into a buffer the peer mapped.
 *
 * A Socket is one SOCK_STREAM rsocket. Its number, what the program holds, is the file
 * descriptor of its rdma_cm_id's event channel (the id is synchronous, so it has a channel of
 * its own), as in rdma-core; rpoll waits on that fd while the socket connects or listens and
 * on the completion channel of its CQ once connected.
 *
 * Flow (sender side, per connection): a data message needs a send-queue slot (sqe_avail),
 * room in the send buffer (sbuf_avail >= kSndLowat), a receive credit (sseq_no != sseq_comp)
 * and room in the current target SGE (the receive-buffer half the peer published; Socket::tsgl
 * says how the peer's writes into our registered target memory are taken in). The
 * receiver consumes data in order from its receive ring, and grants credits and republishes
 * a buffer half (an SGL update) when half the ring is free or half its credits are used.
 * Control messages (credit updates, shutdown) have kCtrlSlots send slots of their own.
 *
 * Locks: send_mu serialises senders and recv_mu receivers (a send is never interleaved with
 * another); mu guards the state and the CQ; wait_mu is held by the one thread that sleeps on
 * the completion channel (taken with mu held, mu then released, so the sleeper never holds
 * mu). Order: send_mu/recv_mu -> mu -> wait_mu. The global table lock is never held with
 * another.
 *
 * Not implemented (clear errors): SOCK_DGRAM rsockets (EOPNOTSUPP: a different protocol over
 * UD QPs and UDP sockets), RDMA_ROUTE (ENOSYS: paths come from the configuration), AF_IB
 * (EAFNOSUPPORT), keepalive messages (SO_KEEPALIVE and TCP_KEEPIDLE are kept and reported, as
 * rsocket(7) says "supported, but ignored": RC retries detect a dead peer while we send; a
 * socket that only waits to receive does not notice a peer process that died), fork support.
 * Interoperates with rdma-core's rsockets (tests/interop: rstream, riostream against rxe).
 */
#pragma once

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <sys/socket.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "rdmacm/rs_wire.h"

namespace uroce::rdmacm::rs {

/// Socket states, a bit set as rsocket(7)'s implementation orders them: passive, opening,
/// connected, disconnected.
enum State : uint32_t {
  kInit = 0,
  kBound = 0x0001,
  kListening = 0x0002,
  kOpening = 0x0004,
  kResolvingAddr = kOpening | 0x0010,
  kResolvingRoute = kOpening | 0x0020,
  kConnecting = kOpening | 0x0040,
  kAccepting = kOpening | 0x0080,
  kConnected = 0x0100,
  kWritable = 0x0200,
  kReadable = 0x0400,
  kConnectRdwr = kConnected | kReadable | kWritable,
  kConnectError = 0x0800,
  kDisconnected = 0x1000,
  kError = 0x2000,
};

/// Process-wide defaults (/etc/rdma/rsocket/<name> files, as librdmacm reads them).
struct Defaults {
  uint32_t mem = 1 << 17;   ///< mem_default: receive buffer bytes
  uint32_t wmem = 1 << 17;  ///< wmem_default: send buffer bytes
  uint16_t sqsize = 384;    ///< sqsize_default
  uint16_t rqsize = 384;    ///< rqsize_default
  uint16_t inline_size = 64;
  uint16_t iomap_size = 0;
  uint32_t polling_us = 10;  ///< busy-poll time before sleeping on the completion channel
};
const Defaults& defaults();

/// One registered buffer mapped for the peer's direct writes (riomap).
struct IomapMr {
  uint64_t offset = 0;
  ibv_mr* mr = nullptr;
  int index = -1;  ///< slot in the peer's target iomap; -1: local mapping
};

struct Socket {
  int fd = -1;               ///< the number the program holds
  rdma_cm_id* cm = nullptr;  ///< a synchronous id
  int domain = AF_INET;

  std::mutex send_mu, recv_mu, mu, wait_mu;

  // ---- State (mu) ----------------------------------------------------------------------
  uint32_t state = kInit;
  int err = 0;                                        ///< SO_ERROR
  int fd_flags = 0;                                   ///< rfcntl F_GETFL/F_SETFL (O_NONBLOCK)
  uint64_t so_opts = 0, tcp_opts = 0, ipv6_opts = 0;  ///< boolean options, bit = optname
  uint32_t keepalive_time = 0;
  sockaddr_storage dst{};  ///< rconnect's destination
  /// RDMA_ROUTE's path records (struct ibv_path_data): rconnect resolves the route with them
  /// (RDMA_OPTION_IB_PATH) instead of rdma_resolve_route, then forgets them, as librdmacm.
  std::vector<uint8_t> route;

  // ---- Sizes (settable until connecting) ------------------------------------------------
  uint32_t sbuf_size = 0, rbuf_size = 0;
  uint16_t sq_size = 0, rq_size = 0, sq_inline = 0;
  uint16_t target_iomap_size = 0;  ///< entries the peer may write into our target iomap

  // ---- The connection (after create_ep) --------------------------------------------------
  ibv_comp_channel* cq_channel = nullptr;
  ibv_cq* cq = nullptr;
  std::atomic<bool> cq_armed{false};
  uint32_t unack_events = 0;
  std::unique_ptr<uint8_t[]> sbuf, rbuf, target;  ///< target: Sge[kSglSize] + Iomap[n]
  ibv_mr *smr = nullptr, *rmr = nullptr, *tmr = nullptr;
  bool swap = false;  ///< the peer is of the other byte order: swap what we write to it

  uint32_t ctrl_seqno = 0, ctrl_max_seqno = kCtrlSlots;
  uint16_t sseq_no = 0, sseq_comp = 0, rseq_no = 0, rseq_comp = 0;
  int sqe_avail = 0;
  uint32_t sbuf_avail = 0;  ///< bytes of the send buffer not in flight
  uint32_t sbuf_head = 0;   ///< where the next copy into the send buffer goes
  /// Our copies of the target SGL, the buffer halves the peer published for our data. An
  /// entry is taken from the registered target memory only when the message that wrote it is
  /// taken (an SGL update carrying 16 bytes goes to entry tsgl_next, alternating from 1, as the
  /// peer's remote_sge), and then used up here: never read while the peer may write it.
  std::array<Sge, kSglSize> tsgl{};
  int tsgl_next = 1;
  int target_sge = 0;         ///< the entry data goes to next
  std::vector<Iomap> tiomap;  ///< copies of the target iomap, taken on iomap-updated messages
  Sge remote_sgl;             ///< the peer's target SGL (length: entries)
  int remote_sge = 1;         ///< the peer's SGE our next SGL update rewrites
  Sge remote_iomap;           ///< the peer's target iomap (length: entries)
  uint32_t rbuf_avail = 0, rbuf_free = 0, rbuf_off = 0;

  /// Data messages received and not yet read: bytes each (a ring of rq_size + 1).
  std::vector<uint32_t> rmsg;
  uint32_t rmsg_head = 0, rmsg_tail = 0;

  // ---- Iomaps (mu) -----------------------------------------------------------------------
  std::vector<IomapMr> remote_maps;                  ///< one slot per peer iomap entry
  std::vector<IomapMr*> iomap_queue;                 ///< mapped, not yet announced to the peer
  std::vector<std::unique_ptr<IomapMr>> local_maps;  ///< PROT_NONE mappings

  /// The registered target SGL and iomap (the peer RDMA-writes them).
  Sge* target_sgl() { return reinterpret_cast<Sge*>(target.get()); }
  Iomap* target_iomap() { return reinterpret_cast<Iomap*>(target.get() + sizeof(Sge) * kSglSize); }

  bool have_rdata() const { return rmsg_head != rmsg_tail; }
  bool nonblocking(int flags) const { return (fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT); }
};

using SocketPtr = std::shared_ptr<Socket>;

// ---- rs_table.cc ------------------------------------------------------------------------
/// The socket of number fd, or null.
SocketPtr lookup(int fd);
void insert(const SocketPtr& s);
void remove(int fd);
/// A new socket with the defaults, or (passive) the listener's sizes.
SocketPtr alloc(const Socket* inherit);

// ---- rs_stream.cc: the connected stream (all require mu) --------------------------------
/// Creates the CQ, QP, buffers and MRs, posts the receives.
int create_ep(Socket& s);
/// The connection data we send the peer.
ConnData conn_data(Socket& s);
/// Takes the peer's connection data.
void save_conn_data(Socket& s, const ConnData& d);
/// Polls the CQ: takes messages and completions, reposts receives. -1 + errno on failure.
int poll_cq(Socket& s);
/// Sends a credit update when one is due.
void update_credits(Socket& s);
bool can_send(Socket& s);
/// Until the socket can send (once when flags make it nonblocking): 0, or -1 + errno
/// (EWOULDBLOCK, ECONNRESET when the connection stopped being writable). lk holds s.mu.
int wait_can_send(Socket& s, std::unique_lock<std::mutex>& lk, int flags);
/// The size of the next piece of a long send with `left` bytes to go: olen, the split size
/// (kOlapStartSize at first, doubled after each full piece up to kMaxTransfer), or what is left.
uint32_t next_transfer(uint32_t& olen, size_t left);
bool ctrl_avail(const Socket& s);
/// A control message (zero-length RDMA WRITE WITH IMMEDIATE).
int post_msg(Socket& s, uint32_t m);
/// An RDMA WRITE (WITH IMMEDIATE when imm) of sges to addr/rkey; wr_id = m.
int post_write(Socket& s, ibv_sge* sg, int n, uint32_t m, bool imm, int flags, uint64_t addr,
               uint32_t rkey);
/// Puts len bytes into the send ring at its head, wrapping: copy(dst, from, n) writes the
/// source's bytes [from, from + n) to dst. sg gets the 1 or 2 SGEs; returns their number.
int stage(Socket& s, const std::function<void(uint8_t*, uint32_t, uint32_t)>& copy, uint32_t len,
          ibv_sge sg[2]);
/// The peer's direct-write buffer swapped to its byte order when it differs from ours.
Sge to_peer(const Socket& s, Sge e);
/// Data messages: a send of `len` bytes to the current target SGE.
int write_data(Socket& s, ibv_sge* sg, int n, uint32_t len, int flags);

using Test = bool (*)(Socket&);
/// Processes completions until test(s) holds. nonblock: once; else sleeps on the completion
/// channel (mu released meanwhile). lk holds s.mu. 0, or -1 + errno (EWOULDBLOCK ...).
int process_cq(Socket& s, std::unique_lock<std::mutex>& lk, bool nonblock, Test test);
/// As process_cq, busy-polling defaults().polling_us before sleeping.
int get_comp(Socket& s, std::unique_lock<std::mutex>& lk, bool nonblock, Test test);
/// Takes a completion-channel event when the CQ was armed (wait_mu held by the caller).
int get_cq_event(Socket& s);
/// Frees the connection's verbs objects and the id.
void free_socket(Socket& s);

bool conn_can_send(Socket& s);
bool conn_have_rdata(Socket& s);
bool conn_can_send_ctrl(Socket& s);
bool conn_all_sends_done(Socket& s);
inline bool poll_all(Socket&) { return true; }
inline bool is_cq_armed(Socket& s) { return s.cq_armed.load(); }

// ---- rs_connect.cc ----------------------------------------------------------------------
/// Advances an opening socket (resolve, connect, accept); -1 + EINPROGRESS while waiting.
int do_connect(Socket& s);
/// The channel/CQ fds follow O_NONBLOCK (rfcntl).
int set_nonblocking(Socket& s, int flags);

// ---- rs_iomap.cc ------------------------------------------------------------------------
/// Announces queued iomaps to the peer (before data, from rsend and riowrite). Requires mu.
int send_iomaps(Socket& s, std::unique_lock<std::mutex>& lk, int flags);

// ---- rs_poll.cc -------------------------------------------------------------------------
/// poll(2) revents of an rsocket (nonblock: without sleeping). Requires nothing held.
short poll_rs(Socket& s, short events, bool nonblock, Test test);

}  // namespace uroce::rdmacm::rs
