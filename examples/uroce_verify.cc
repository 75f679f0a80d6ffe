/**
 * @file uroce_verify.cc
 * @brief Two-process RDMA data verifier over the verbs API (any libibverbs, uroce's or
 * rdma-core's): like ibv_rc_pingpong it exchanges QPN/PSN/GID/rkey/address over TCP, connects
 * one RC QP pair, then moves a known pattern and checks every byte.
 *
 *   server:  uroce_verify [options]
 *   client:  uroce_verify [options] <server host>
 *
 * Ops (-o), all driven by the client; the server is passive except for SEND:
 *   write   client WRITEs pattern(i) into the server buffer, READs it back, compares;
 *           the server checks its buffer holds pattern(n-1) at the end.
 *   read    client READs the server's buffer (pattern(seed 0xfeed)) and compares.
 *   send    client SENDs pattern(i); the server checks each received message.
 *   atomic  FETCH_ADD 1 then CMP_SWP per iteration on a server counter; the returned
 *           originals must be 2i and 2i+1, the final counter 2n.
 *   mixed   per iteration a WRITE + READ back, a FETCH_ADD on a server counter (must return
 *           i) and a SEND the server checks (it keeps 16 receives posted, re-posting each);
 *           with -D the client runs for that many seconds instead of -n iterations (the soak
 *           test); the server checks the counter and the number of SENDs at the end.
 *   mw      memory windows (ibv_alloc_mw(3), ibv_bind_mw(3)). The server's region grants no
 *           remote access itself (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND); four QP pairs,
 *           one window on each, each window -s bytes between 64-byte guards, and the server
 *           sends the windows' rkeys and addresses (not the region's) over TCP. Per window the
 *           client WRITEs pattern(i) through the window's rkey and READs it back (-n times),
 *           then checks that access ends as the window says (IBV_WC_REM_ACCESS_ERR expected):
 *             0  type 1, bound by ibv_bind_mw; the server unbinds it (zero-length bind); a
 *                WRITE through its rkey
 *             1  type 2, bound by IBV_WR_BIND_MW; the client's SEND_WITH_INV names its rkey
 *                (the server's receive must report IBV_WC_WITH_INV and that rkey); a WRITE
 *             2  type 2; the server posts IBV_WR_LOCAL_INV on its rkey; a WRITE
 *             3  type 2; a 9-byte WRITE of its last 8 bytes and the one past it
 *           (type 2 windows are used through the QP they were bound through, as IBA type 2B
 *           requires). The server checks every window holds the last pattern and no guard
 *           byte changed. Every check is printed, with what it wants.
 *           --rxe (server on Linux Soft-RoCE, as in Debian 12's kernel 6.1; tests/interop
 *           README.md has the findings): rxe bounds an access through a window by the region
 *           only, so the region ends where window 3 ends (its past-the-end byte is outside the
 *           region too); and rxe's receive completion carries the kernel's
 *           IB_WC_WITH_INVALIDATE bit (1 << 2, IBV_WC_IP_CSUM_OK to libibverbs) in place of
 *           IBV_WC_WITH_INV (1 << 3), which is then accepted (and reported) as such.
 *   atomic_write  IBA 1.5's RDMA ATOMIC WRITE (ibv_wr_atomic_write, rdma-core 44+): the
 *           server's buffer is 8 slots of 8 bytes (-s is 64), filled with a known pattern;
 *           iteration i writes an 8-byte value of its own into slot i % 8, then READs the 64
 *           bytes back and compares them with what every slot must hold by now. The server
 *           checks that its buffer holds the last value of every slot.
 *   flush   IBA 1.5's RDMA FLUSH (ibv_wr_flush of rdma-core 45+, reached as the ibv_qp_ex
 *           member after wr_atomic_write; the client's provider must accept
 *           IBV_QP_EX_WITH_FLUSH). The server registers its buffer with
 *           IBV_ACCESS_FLUSH_GLOBAL, allows that flush type on its QP, and registers a second
 *           buffer without it. Iteration i WRITEs pattern(i), FLUSHes it to global visibility
 *           (even i: the range written; odd i: the whole region), READs it back and compares;
 *           then a FLUSH of a range of the second buffer must end in IBV_WC_REM_ACCESS_ERR.
 *           The server checks its buffer holds pattern(n-1) and the second one is unchanged.
 *   lastbyte  in-order visibility, as programs that poll a message's last byte need it
 *           (perftest's ib_write_lat, RPCs over one-sided WRITEs): iteration i WRITEs
 *           pattern(i) with its last byte set to a marker (1 + i % 255) into the server's
 *           buffer; the server spins on that byte and, as soon as it shows the marker, checks
 *           every byte before it. A message found with an earlier byte still old is torn (a
 *           mismatch; the count is printed). The server then tells the client over TCP, and
 *           the next WRITE starts once that and its completion arrived.
 * Every completion is checked to be the one expected (the posted WR; receives in posting
 * order) and no completion may follow the last. Exit status 0 only when both sides saw no
 * mismatch, no error completion (mw: only the expected ones) and no unexpected completion.
 * Sizes in bytes.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string dev;           ///< -d: device name (default: the first)
  int gid_index = 0;         ///< -g
  size_t size = 4096;        ///< -s: bytes per message (8 for atomic, 64 for atomic_write)
  int iters = 100;           ///< -n
  std::string op = "write";  ///< -o: one of the ops above
  int port = 18515;          ///< -p: TCP port
  int timeout_s = 10;        ///< -t: seconds to wait for any one completion
  int ack_timeout = 14;      ///< --ack-timeout: the QPs' local ACK timeout, IBA code (67 ms)
  int duration_s = 0;        ///< -D: mixed only; run this long instead of -n iterations
  bool rxe = false;          ///< --rxe: mw server on Linux rxe (its two deviations, above)
  std::string host;          ///< server host (client mode)
};

/// mixed: receive slots the server keeps posted, and where its counter sits in its buffer.
constexpr size_t kMixedSlots = 16;
size_t counter_offset(const Options& o) { return (o.size + 7) & ~size_t{7}; }

/// mw: four windows of -s bytes, each between kMwGuard-byte guards, one QP pair per window.
constexpr int kMwWindows = 4;
enum MwWindow { kWinType1 = 0, kWinSendInv = 1, kWinLocalInv = 2, kWinBounds = 3 };
constexpr size_t kMwGuard = 64;
size_t mw_offset(const Options& o, int k) {
  return kMwGuard + static_cast<size_t>(k) * (o.size + kMwGuard);
}
/// The server's buffer: the windows and guards; its region ends after the last guard, or with
/// window kWinBounds under --rxe.
size_t mw_buf_len(const Options& o) { return mw_offset(o, kMwWindows); }
size_t mw_mr_len(const Options& o) {
  return o.rxe ? mw_offset(o, kWinBounds) + o.size : mw_buf_len(o);
}
/// Pattern seeds: the i-th WRITE through window k, the guards' (and the whole buffer's initial)
/// fill, the SEND_WITH_INV message, and the data of the WRITEs that must be refused.
uint32_t mw_seed(int k, int i) {
  return (static_cast<uint32_t>(k + 1) << 16) | static_cast<uint32_t>(i);
}
constexpr uint32_t kMwGuardSeed = 0x6a6a, kMwSendSeed = 0x5e9d, kMwRefusedSeed = 0xeeee;

/// atomic_write: 8-byte slots in the server's buffer, their initial fill, the i-th value.
constexpr size_t kAwSlots = 8;
constexpr uint32_t kAwInitSeed = 0xa770;
uint64_t aw_value(uint64_t i) {  // splitmix64: every byte of every value differs from the fill
  uint64_t z = i + 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/// flush: the second buffer's fill (it must stay so).
constexpr uint32_t kNoFlushSeed = 0xf1f1;

/// IBA 1.5 names that rdma-core 44's headers lack, with rdma-core 45's values (libibverbs
/// verbs.h; Linux include/uapi/rdma/ib_user_verbs.h). uroce's lib/verbs/ibta15.h has the same.
constexpr unsigned kAccessFlushGlobal = 1u << 8;  ///< IBV_ACCESS_FLUSH_GLOBAL
constexpr uint64_t kQpExWithFlush = 1ull << 11;   ///< IBV_QP_EX_WITH_FLUSH
constexpr int kWcFlush = 8;                       ///< IBV_WC_FLUSH
constexpr uint64_t kDevFlushGlobal = 1ull << 38;  ///< IB_UVERBS_DEVICE_FLUSH_GLOBAL
constexpr uint64_t kDevAtomicWrite = 1ull << 40;  ///< IB_UVERBS_DEVICE_ATOMIC_WRITE
constexpr uint8_t kFlushGlobal = 1;               ///< IBV_FLUSH_GLOBAL
constexpr uint8_t kFlushRange = 0, kFlushMr = 1;  ///< IBV_FLUSH_RANGE, IBV_FLUSH_MR
/// rdma-core 45's struct ibv_qp_ex: 44's with wr_flush appended. Only a QP whose provider took
/// IBV_QP_EX_WITH_FLUSH has it (one of rdma-core 44 refuses the flag).
struct QpEx45 {
  ibv_qp_ex base;
  void (*wr_flush)(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
                   uint8_t level);
};

bool ibta15_op(const std::string& op) { return op == "atomic_write" || op == "flush"; }

/// Peer parameters exchanged over TCP.
struct Peer {
  uint32_t qpn = 0, psn = 0, rkey = 0;
  uint64_t addr = 0;
  ibv_gid gid{};
};

void fill(uint8_t* p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 0x9e3779b9u;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = static_cast<uint8_t>(x);
  }
}

size_t count_mismatch(const uint8_t* p, size_t n, uint32_t seed) {
  std::vector<uint8_t> want(n);
  fill(want.data(), n, seed);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += p[i] != want[i];
  return bad;
}

// ---- TCP exchange (text lines, as the pingpongs do) ----------------------------------------

int tcp_connect(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    for (addrinfo* r = res; r; r = r->ai_next) {
      fd = socket(r->ai_family, r->ai_socktype, 0);
      if (fd < 0) continue;
      if (connect(fd, r->ai_addr, r->ai_addrlen) == 0) break;
      close(fd);
      fd = -1;
    }
    if (fd < 0) usleep(100 * 1000);  // server not listening yet: retry for up to 10 s
  }
  freeaddrinfo(res);
  return fd;
}

int tcp_accept(int port) {
  int ls = socket(AF_INET6, SOCK_STREAM, 0);
  if (ls < 0) return -1;
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<uint16_t>(port));
  a.sin6_addr = in6addr_any;
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(ls, 1) != 0) {
    close(ls);
    return -1;
  }
  int fd = accept(ls, nullptr, nullptr);
  close(ls);
  return fd;
}

bool send_line(int fd, const std::string& s) {
  std::string l = s + "\n";
  return write(fd, l.data(), l.size()) == static_cast<ssize_t>(l.size());
}

bool recv_line(int fd, std::string* out) {
  out->clear();
  char c;
  while (read(fd, &c, 1) == 1) {
    if (c == '\n') return true;
    out->push_back(c);
  }
  return false;
}

std::string encode(const Peer& p) {
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "%06x:%06x:%08x:%016" PRIx64 ":", p.qpn, p.psn, p.rkey,
                        p.addr);
  for (int i = 0; i < 16; ++i) n += std::snprintf(buf + n, sizeof buf - n, "%02x", p.gid.raw[i]);
  return buf;
}

bool decode(const std::string& s, Peer* p) {
  char gid[33] = {};
  if (std::sscanf(s.c_str(), "%x:%x:%x:%" SCNx64 ":%32s", &p->qpn, &p->psn, &p->rkey, &p->addr,
                  gid) != 5)
    return false;
  for (int i = 0; i < 16; ++i) {
    unsigned v;
    if (std::sscanf(gid + 2 * i, "%2x", &v) != 1) return false;
    p->gid.raw[i] = static_cast<uint8_t>(v);
  }
  return true;
}

// ---- Verbs -------------------------------------------------------------------------------

struct Rdma {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<uint8_t> buf, scratch;
  ibv_mr* mr = nullptr;
  ibv_mr* smr = nullptr;
  /// atomic_write/flush client: the QP's ibv_wr_* interface.
  ibv_qp_ex* qpx = nullptr;
  /// flush server: the buffer registered without IBV_ACCESS_FLUSH_GLOBAL.
  std::vector<uint8_t> noflush;
  ibv_mr* nmr = nullptr;
  int timeout_s = 10;
  /// mw: one QP and its own CQ per window; links[0] is {qp, cq}.
  struct Link {
    ibv_qp* qp = nullptr;
    ibv_cq* cq = nullptr;
  };
  std::vector<Link> links;
};

bool setup(const Options& o, bool server, Rdma* r) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list || n == 0) {
    std::fprintf(stderr, "uroce_verify: no RDMA devices\n");
    return false;
  }
  ibv_device* dev = nullptr;
  for (int i = 0; i < n; ++i)
    if (o.dev.empty() || o.dev == ibv_get_device_name(list[i])) dev = dev ? dev : list[i];
  if (!dev) {
    std::fprintf(stderr, "uroce_verify: device %s not found\n", o.dev.c_str());
    return false;
  }
  r->ctx = ibv_open_device(dev);
  ibv_free_device_list(list);
  if (!r->ctx) {
    std::perror("ibv_open_device");
    return false;
  }
  r->pd = ibv_alloc_pd(r->ctx);
  const bool mixed = o.op == "mixed";
  const bool mw = o.op == "mw";
  r->cq = ibv_create_cq(r->ctx, mixed ? 64 : 2 * o.iters + 16, nullptr, nullptr, 0);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;
  // A SEND server keeps one slot per message, so no message overwrites an unchecked one.
  size_t slots = server && o.op == "send" ? static_cast<size_t>(o.iters) : 1;
  r->buf.assign(mixed ? counter_offset(o) + 8 + kMixedSlots * o.size
                : mw  ? mw_buf_len(o)
                      : o.size * slots,
                0);
  r->scratch.assign(o.size, 0);
  if (!r->pd || !r->cq) {
    std::perror("ibv_alloc_pd/ibv_create_cq");
    return false;
  }
  if (server && mw)  // the windows grant remote access; the region itself grants none
    r->mr =
        ibv_reg_mr(r->pd, r->buf.data(), mw_mr_len(o), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
  else if (server && o.op == "flush")
    r->mr = ibv_reg_mr(r->pd, r->buf.data(), r->buf.size(),
                       access | static_cast<int>(kAccessFlushGlobal));
  else
    r->mr = ibv_reg_mr(r->pd, r->buf.data(), r->buf.size(), access);
  if (!r->mr && server && o.op == "flush")
    std::fprintf(stderr, "uroce_verify: ibv_reg_mr with IBV_ACCESS_FLUSH_GLOBAL: %s\n",
                 std::strerror(errno));
  if (server && o.op == "flush") {
    r->noflush.assign(o.size, 0);
    fill(r->noflush.data(), o.size, kNoFlushSeed);
    r->nmr = ibv_reg_mr(r->pd, r->noflush.data(), o.size, access);
    if (!r->nmr) {
      std::perror("ibv_reg_mr");
      return false;
    }
  }
  r->smr = ibv_reg_mr(r->pd, r->scratch.data(), r->scratch.size(), access);
  if (!r->mr || !r->smr) {
    std::perror("ibv_reg_mr");
    return false;
  }
  ibv_qp_init_attr ia{};
  ia.send_cq = r->cq;
  ia.recv_cq = r->cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = 16;
  ia.cap.max_recv_wr = mixed ? kMixedSlots : static_cast<uint32_t>(o.iters) + 1;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  if (!server && ibta15_op(o.op)) {
    // The ibv_wr_* interface: ATOMIC WRITE and FLUSH have no ibv_post_send form.
    ibv_qp_init_attr_ex ix{};
    ix.send_cq = ia.send_cq;
    ix.recv_cq = ia.recv_cq;
    ix.qp_type = IBV_QPT_RC;
    ix.cap = ia.cap;
    ix.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    ix.pd = r->pd;
    ix.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
                        (o.op == "flush" ? kQpExWithFlush : uint64_t{IBV_QP_EX_WITH_ATOMIC_WRITE});
    r->qp = ibv_create_qp_ex(r->ctx, &ix);
    if (!r->qp) {
      std::fprintf(
          stderr, "uroce_verify: ibv_create_qp_ex with %s: %s%s\n",
          o.op == "flush" ? "IBV_QP_EX_WITH_FLUSH" : "IBV_QP_EX_WITH_ATOMIC_WRITE",
          std::strerror(errno),
          o.op == "flush" ? " (ibv_wr_flush needs a provider of rdma-core 45 or later)" : "");
      return false;
    }
    r->qpx = ibv_qp_to_qp_ex(r->qp);
  } else {
    r->qp = ibv_create_qp(r->pd, &ia);
  }
  if (!r->qp) {
    std::perror("ibv_create_qp");
    return false;
  }
  r->links.push_back({r->qp, r->cq});
  for (int k = 1; mw && k < kMwWindows; ++k) {
    Rdma::Link l;
    l.cq = ibv_create_cq(r->ctx, 2 * o.iters + 16, nullptr, nullptr, 0);
    ia.send_cq = ia.recv_cq = l.cq;
    l.qp = l.cq ? ibv_create_qp(r->pd, &ia) : nullptr;
    if (!l.qp) {
      std::perror("ibv_create_cq/ibv_create_qp");
      return false;
    }
    r->links.push_back(l);
  }
  r->timeout_s = o.timeout_s;
  return true;
}

bool connect_qp(const Options& o, Rdma* r, ibv_qp* qp, const Peer& me, const Peer& peer) {
  ibv_port_attr pa;
  if (ibv_query_port(r->ctx, 1, &pa)) return false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  // A FLUSH needs its placement type allowed by the responder's QP too (IBA 9.7.5.1.4).
  if (o.op == "flush") a.qp_access_flags |= kAccessFlushGlobal;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    std::perror("modify INIT");
    return false;
  }
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = pa.active_mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = peer.gid;
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(o.gid_index);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    std::perror("modify RTR");
    return false;
  }
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = static_cast<uint8_t>(o.ack_timeout);
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = me.psn;
  a.max_rd_atomic = 4;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    std::perror("modify RTS");
    return false;
  }
  return true;
}

/// Waits for one completion on cq, of any status; false on timeout or a poll failure.
bool wait_cq(ibv_cq* cq, int timeout_s, ibv_wc* wc) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int n = ibv_poll_cq(cq, 1, wc);
    if (n < 0) return false;
    if (n == 1) return true;
  }
  std::fprintf(stderr, "uroce_verify: no completion within %d s\n", timeout_s);
  return false;
}

/// Waits for one completion; false on timeout or an error status.
bool wait_one(Rdma* r, ibv_wc* wc) {
  if (!wait_cq(r->cq, r->timeout_s, wc)) return false;
  if (wc->status != IBV_WC_SUCCESS) {
    std::fprintf(stderr, "uroce_verify: completion wr_id %" PRIu64 ": %s\n", wc->wr_id,
                 ibv_wc_status_str(wc->status));
    return false;
  }
  return true;
}

bool post(Rdma* r, ibv_wr_opcode op, uint8_t* local, ibv_mr* lmr, uint32_t len, const Peer& peer,
          uint64_t compare = 0, uint64_t swap = 0) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lmr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(op);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = peer.addr;
    wr.wr.atomic.rkey = peer.rkey;
    wr.wr.atomic.compare_add = compare;
    wr.wr.atomic.swap = swap;
  } else {
    wr.wr.rdma.remote_addr = peer.addr;
    wr.wr.rdma.rkey = peer.rkey;
  }
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(r->qp, &wr, &bad)) {
    std::fprintf(stderr, "uroce_verify: ibv_post_send: %s\n", std::strerror(e));
    return false;
  }
  ibv_wc wc;
  if (!wait_one(r, &wc)) return false;
  if (wc.wr_id != wr.wr_id) {  // one WR outstanding: its completion, exactly once
    std::fprintf(stderr, "uroce_verify: completion for wr_id %" PRIu64 ", expected %" PRIu64 "\n",
                 wc.wr_id, wr.wr_id);
    return false;
  }
  return true;
}

/// After the last expected completion: no other completion may follow (each exactly once).
bool no_extra_completion(ibv_cq* cq) {
  ibv_wc wc;
  int n = ibv_poll_cq(cq, 1, &wc);
  if (n != 0)
    std::fprintf(stderr, "uroce_verify: unexpected completion (wr_id %" PRIu64 ") after the last\n",
                 n > 0 ? wc.wr_id : 0);
  return n == 0;
}

/// Posts one signalled ATOMIC WRITE of value (flush: a FLUSH to global visibility of len bytes
/// at raddr, selectivity level) through the ibv_wr_* interface and waits for its completion:
/// its status, or -1 (refused, no completion, another WR's, or success with the wrong opcode).
int post_ex(Rdma* r, bool flush, uint32_t rkey, uint64_t raddr, uint64_t value, size_t len = 0,
            uint8_t level = 0) {
  ibv_qp_ex* q = r->qpx;
  const uint64_t id = flush ? 0xf1 : 0xa7;
  ibv_wr_start(q);
  q->wr_id = id;
  q->wr_flags = IBV_SEND_SIGNALED;
  if (flush)
    reinterpret_cast<QpEx45*>(q)->wr_flush(q, rkey, raddr, len, kFlushGlobal, level);
  else
    ibv_wr_atomic_write(q, rkey, raddr, &value);
  if (int e = ibv_wr_complete(q)) {
    std::fprintf(stderr, "uroce_verify: ibv_wr_complete (%s): %s\n",
                 flush ? "ibv_wr_flush" : "ibv_wr_atomic_write", std::strerror(e));
    return -1;
  }
  ibv_wc wc;
  if (!wait_cq(r->cq, r->timeout_s, &wc)) return -1;
  const int want_opcode = flush ? kWcFlush : static_cast<int>(IBV_WC_ATOMIC_WRITE);
  if (wc.wr_id != id ||
      (wc.status == IBV_WC_SUCCESS && static_cast<int>(wc.opcode) != want_opcode)) {
    std::fprintf(stderr,
                 "uroce_verify: completion wr_id %" PRIu64 " opcode %d, expected wr_id %" PRIu64
                 " opcode %d\n",
                 wc.wr_id, static_cast<int>(wc.opcode), id, want_opcode);
    return -1;
  }
  return wc.status;
}

/// atomic_write: what the server's 8 slots hold after the first n values were written.
std::vector<uint8_t> aw_model(const Options& o, int n) {
  std::vector<uint8_t> m(o.size);
  fill(m.data(), m.size(), kAwInitSeed);
  for (int i = 0; i < n; ++i) {
    const uint64_t v = aw_value(static_cast<uint64_t>(i));
    std::memcpy(m.data() + (static_cast<size_t>(i) % kAwSlots) * 8, &v, 8);
  }
  return m;
}

size_t count_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += a[i] != b[i];
  return bad;
}

bool post_recv(Rdma* r, uint64_t id, uint8_t* p, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(p), len, r->mr->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(r->qp, &wr, &bad) == 0;
}

/// Seed of the i-th mixed SEND (distinct from the WRITE's pattern(i)).
uint32_t send_seed(uint64_t i) { return static_cast<uint32_t>(i) ^ 0x5a5a5a5au; }

/// Client side of one op; returns mismatching bytes (or -1 on a transport error). *done is
/// the number of iterations run (-n, or as many as -D seconds allowed). noflush: flush's
/// region without the flush right.
long run_client(const Options& o, Rdma* r, const Peer& peer, const Peer& noflush, int* done) {
  long bad = 0;
  auto len = static_cast<uint32_t>(o.size);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o.duration_s);
  *done = 0;
  for (int i = 0; o.duration_s ? std::chrono::steady_clock::now() < until : i < o.iters; ++i) {
    auto seed = static_cast<uint32_t>(i);
    *done = i + 1;
    if (o.op == "mixed") {
      fill(r->buf.data(), o.size, seed);
      if (!post(r, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, len, peer)) return -1;
      std::memset(r->scratch.data(), 0, o.size);
      if (!post(r, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, peer)) return -1;
      bad += static_cast<long>(count_mismatch(r->scratch.data(), o.size, seed));
      Peer counter = peer;
      counter.addr += counter_offset(o);
      if (!post(r, IBV_WR_ATOMIC_FETCH_AND_ADD, r->scratch.data(), r->smr, 8, counter, 1))
        return -1;
      uint64_t old = 0;
      std::memcpy(&old, r->scratch.data(), 8);
      bad += old != static_cast<uint64_t>(i);
      fill(r->buf.data(), o.size, send_seed(static_cast<uint64_t>(i)));
      if (!post(r, IBV_WR_SEND, r->buf.data(), r->mr, len, peer)) return -1;
    } else if (o.op == "write") {
      fill(r->buf.data(), o.size, seed);
      if (!post(r, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, len, peer)) return -1;
      std::memset(r->scratch.data(), 0, o.size);
      if (!post(r, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, peer)) return -1;
      bad += static_cast<long>(count_mismatch(r->scratch.data(), o.size, seed));
    } else if (o.op == "read") {
      std::memset(r->scratch.data(), 0, o.size);
      if (!post(r, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, peer)) return -1;
      bad += static_cast<long>(count_mismatch(r->scratch.data(), o.size, 0xfeed));
    } else if (o.op == "send") {
      fill(r->buf.data(), o.size, seed);
      if (!post(r, IBV_WR_SEND, r->buf.data(), r->mr, len, peer)) return -1;
    } else if (o.op == "atomic_write") {
      const size_t slot = static_cast<size_t>(i) % kAwSlots;
      const int st = post_ex(r, false, peer.rkey, peer.addr + slot * 8, aw_value(seed));
      if (st != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "uroce_verify: ATOMIC WRITE %d: %s\n", i,
                     st < 0 ? "no completion" : ibv_wc_status_str(static_cast<ibv_wc_status>(st)));
        return -1;
      }
      std::memset(r->scratch.data(), 0, o.size);
      if (!post(r, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, peer)) return -1;
      const std::vector<uint8_t> want = aw_model(o, i + 1);
      bad += static_cast<long>(count_diff(r->scratch.data(), want.data(), o.size));
    } else if (o.op == "flush") {
      fill(r->buf.data(), o.size, seed);
      if (!post(r, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, len, peer)) return -1;
      // Even iterations flush the range written, odd ones the whole region.
      const uint8_t level = i % 2 ? kFlushMr : kFlushRange;
      const int st = post_ex(r, true, peer.rkey, peer.addr, 0, o.size, level);
      if (st != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "uroce_verify: FLUSH %d (%s): %s\n", i,
                     level == kFlushMr ? "IBV_FLUSH_MR" : "IBV_FLUSH_RANGE",
                     st < 0 ? "no completion" : ibv_wc_status_str(static_cast<ibv_wc_status>(st)));
        return -1;
      }
      std::memset(r->scratch.data(), 0, o.size);
      if (!post(r, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, peer)) return -1;
      bad += static_cast<long>(count_mismatch(r->scratch.data(), o.size, seed));
    } else {  // atomic
      uint64_t old = 0;
      if (!post(r, IBV_WR_ATOMIC_FETCH_AND_ADD, r->scratch.data(), r->smr, 8, peer, 1)) return -1;
      std::memcpy(&old, r->scratch.data(), 8);
      bad += old != 2u * static_cast<uint64_t>(i);
      uint64_t expect = 2u * static_cast<uint64_t>(i) + 1;
      if (!post(r, IBV_WR_ATOMIC_CMP_AND_SWP, r->scratch.data(), r->smr, 8, peer, expect,
                expect + 1))
        return -1;
      std::memcpy(&old, r->scratch.data(), 8);
      bad += old != expect;
    }
  }
  if (o.op == "flush") {
    // Bad input last (it moves the QP to the error state): a FLUSH of a range of the region
    // registered without IBV_ACCESS_FLUSH_GLOBAL.
    const int st = post_ex(r, true, noflush.rkey, noflush.addr, 0, o.size, kFlushRange);
    const bool ok = st == IBV_WC_REM_ACCESS_ERR;
    std::printf(
        "uroce_verify client: FLUSH (global, range) of the region without "
        "IBV_ACCESS_FLUSH_GLOBAL, rkey 0x%x: %s (want IBV_WC_REM_ACCESS_ERR) %s\n",
        noflush.rkey, st < 0 ? "no completion" : ibv_wc_status_str(static_cast<ibv_wc_status>(st)),
        ok ? "ok" : "FAILED");
    bad += !ok;
  }
  return no_extra_completion(r->cq) ? bad : -1;
}

/// Server side of mixed: keeps kMixedSlots receives posted and checks each SEND (in order)
/// until the client's "DONE <mismatches> <iterations>" line arrives on fd. Returns its own
/// mismatches (-1 on a transport error); *theirs and *iters from the DONE line.
long server_run_mixed(const Options& o, Rdma* r, int fd, long* theirs, long* iters) {
  uint8_t* slots = r->buf.data() + counter_offset(o) + 8;
  auto len = static_cast<uint32_t>(o.size);
  for (size_t j = 0; j < kMixedSlots; ++j)
    if (!post_recv(r, j, slots + j * o.size, len)) return -1;
  long bad = 0;
  uint64_t received = 0;
  std::string line;
  bool client_done = false;
  for (;;) {
    ibv_wc wc;
    int n = ibv_poll_cq(r->cq, 1, &wc);
    if (n < 0) return -1;
    if (n == 1) {
      if (wc.status != IBV_WC_SUCCESS || wc.wr_id != received % kMixedSlots) {
        std::fprintf(stderr, "uroce_verify: receive %" PRIu64 ": %s, wr_id %" PRIu64 "\n", received,
                     ibv_wc_status_str(wc.status), wc.wr_id);
        return -1;
      }
      uint8_t* slot = slots + wc.wr_id * o.size;
      bad += static_cast<long>(count_mismatch(slot, o.size, send_seed(received)));
      if (wc.byte_len != o.size) ++bad;
      ++received;
      if (!post_recv(r, wc.wr_id, slot, len)) return -1;
      continue;
    }
    // The client is done once every SEND of it was ACKed, and a receive completes before its
    // ACK leaves: one more pass over the CQ after DONE is readable sees them all.
    if (client_done) break;
    pollfd p{fd, POLLIN, 0};
    client_done = poll(&p, 1, 0) == 1;
  }
  if (!recv_line(fd, &line) || std::sscanf(line.c_str(), "DONE %ld %ld", theirs, iters) != 2)
    return -1;
  uint64_t counter = 0;
  std::memcpy(&counter, r->buf.data() + counter_offset(o), 8);
  if (counter != static_cast<uint64_t>(*iters) || received != static_cast<uint64_t>(*iters)) {
    std::fprintf(stderr, "uroce_verify: %ld iterations, counter %" PRIu64 ", %" PRIu64 " SENDs\n",
                 *iters, counter, received);
    ++bad;
  }
  // The receives still posted are flushed when the QP is destroyed; nothing else may complete.
  return no_extra_completion(r->cq) ? bad : -1;
}

/// Server side: prepare the buffer, and for SEND receive and check every message.
long server_prepare(const Options& o, Rdma* r) {
  if (o.op == "read") fill(r->buf.data(), o.size, 0xfeed);
  if (o.op == "atomic_write") fill(r->buf.data(), o.size, kAwInitSeed);
  if (o.op == "send")
    for (int i = 0; i < o.iters; ++i)
      if (!post_recv(r, static_cast<uint64_t>(i), r->buf.data() + static_cast<size_t>(i) * o.size,
                     static_cast<uint32_t>(o.size)))
        return -1;
  return 0;
}

long server_run_send(const Options& o, Rdma* r) {
  long bad = 0;
  for (int i = 0; i < o.iters; ++i) {
    ibv_wc wc;
    if (!wait_one(r, &wc)) return -1;
    if (wc.byte_len != o.size) ++bad;
    if (wc.wr_id != static_cast<uint64_t>(i)) {  // receives complete in posting order
      std::fprintf(stderr, "uroce_verify: receive %d completed as wr_id %" PRIu64 "\n", i,
                   wc.wr_id);
      return -1;
    }
    bad += static_cast<long>(
        count_mismatch(r->buf.data() + wc.wr_id * o.size, o.size, static_cast<uint32_t>(wc.wr_id)));
  }
  return no_extra_completion(r->cq) ? bad : -1;
}

long server_check_end(const Options& o, Rdma* r) {
  if (o.op == "write")
    return static_cast<long>(
        count_mismatch(r->buf.data(), o.size, static_cast<uint32_t>(o.iters - 1)));
  if (o.op == "read") return static_cast<long>(count_mismatch(r->buf.data(), o.size, 0xfeed));
  if (o.op == "atomic") {
    uint64_t v;
    std::memcpy(&v, r->buf.data(), 8);
    return v == 2u * static_cast<uint64_t>(o.iters) ? 0 : 1;
  }
  if (o.op == "atomic_write") {
    const std::vector<uint8_t> want = aw_model(o, o.iters);
    return static_cast<long>(count_diff(r->buf.data(), want.data(), o.size));
  }
  if (o.op == "flush") {
    const long last = static_cast<long>(
        count_mismatch(r->buf.data(), o.size, static_cast<uint32_t>(o.iters - 1)));
    const long other = static_cast<long>(count_mismatch(r->noflush.data(), o.size, kNoFlushSeed));
    std::printf(
        "uroce_verify server: flushed region holds the last pattern: %ld bytes differ; "
        "the region without the flush right: %ld bytes changed\n",
        last, other);
    return last + other;
  }
  return 0;
}

/// atomic_write/flush: the device advertises the operation in ibv_query_device_ex's
/// device_cap_flags_ex (IB_UVERBS_DEVICE_ATOMIC_WRITE or _FLUSH_GLOBAL). 0 if so, else 1.
long ibta15_caps(const Options& o, Rdma* r, bool server) {
  ibv_device_attr_ex ax{};
  const bool queried = ibv_query_device_ex(r->ctx, nullptr, &ax) == 0;
  const bool flush = o.op == "flush";
  const uint64_t want = flush ? kDevFlushGlobal : kDevAtomicWrite;
  const bool ok = queried && (ax.device_cap_flags_ex & want);
  std::printf("uroce_verify %s: %s device_cap_flags_ex 0x%" PRIx64 ": %s %s\n",
              server ? "server" : "client", ibv_get_device_name(r->ctx->device),
              static_cast<uint64_t>(ax.device_cap_flags_ex),
              flush ? "FLUSH_GLOBAL (bit 38)" : "ATOMIC_WRITE (bit 40)",
              ok ? "advertised" : "NOT advertised");
  return ok ? 0 : 1;
}

// ---- lastbyte: in-order visibility -----------------------------------------------------------

uint8_t lastbyte_marker(int i) { return static_cast<uint8_t>(1 + i % 255); }

/// Client side of lastbyte: one WRITE at a time, each after the server saw the previous one.
/// Returns -1 on a transport error, else 0 (the server counts torn messages).
long lastbyte_client(const Options& o, Rdma* r, const Peer& peer, int fd) {
  const auto len = static_cast<uint32_t>(o.size);
  std::string line;
  for (int i = 0; i < o.iters; ++i) {
    fill(r->buf.data(), o.size, static_cast<uint32_t>(i));
    r->buf[o.size - 1] = lastbyte_marker(i);
    if (!post(r, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, len, peer)) return -1;
    if (!recv_line(fd, &line) || line != "SEEN " + std::to_string(i)) {
      std::fprintf(stderr, "uroce_verify: lastbyte %d: server said '%s'\n", i, line.c_str());
      return -1;
    }
  }
  return no_extra_completion(r->cq) ? 0 : -1;
}

/// Server side of lastbyte: returns the torn messages (-1 when a marker never came within the
/// timeout).
long lastbyte_server(const Options& o, Rdma* r, int fd) {
  const volatile uint8_t* last = r->buf.data() + o.size - 1;
  std::vector<uint8_t> want(o.size);
  long torn = 0;
  for (int i = 0; i < o.iters; ++i) {
    fill(want.data(), o.size, static_cast<uint32_t>(i));
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_s);
    for (uint32_t spins = 0; *last != lastbyte_marker(i); ++spins)
      if (spins % 4096 == 0 && std::chrono::steady_clock::now() > until) {
        std::fprintf(stderr, "uroce_verify: lastbyte %d: the marker never came\n", i);
        return -1;
      }
    std::atomic_thread_fence(std::memory_order_acquire);
    size_t stale = 0, first = 0;
    for (size_t k = 0; k + 1 < o.size; ++k)
      if (r->buf[k] != want[k] && stale++ == 0) first = k;
    if (stale) {
      ++torn;
      std::printf(
          "uroce_verify server: message %d torn: its last byte was there while %zu "
          "earlier bytes were not (the first at offset %zu)\n",
          i, stale, first);
    }
    if (!send_line(fd, "SEEN " + std::to_string(i))) return -1;
  }
  std::printf("uroce_verify server: lastbyte: %ld of %d messages torn\n", torn, o.iters);
  return torn;
}

// ---- mw: memory windows ------------------------------------------------------------------

/// Where a window lies on the server and the rkey that reaches it.
struct Window {
  uint64_t addr = 0;
  uint32_t rkey = 0;
};

/// A completion status by its enum name (ibv_wc_status_str's words would read as a failure in
/// a log where the status is the expected one). -1: no completion.
std::string status_name(int st) {
  switch (st) {
    case -1: return "no completion";
    case IBV_WC_SUCCESS: return "IBV_WC_SUCCESS";
    case IBV_WC_LOC_QP_OP_ERR: return "IBV_WC_LOC_QP_OP_ERR";
    case IBV_WC_LOC_PROT_ERR: return "IBV_WC_LOC_PROT_ERR";
    case IBV_WC_WR_FLUSH_ERR: return "IBV_WC_WR_FLUSH_ERR";
    case IBV_WC_MW_BIND_ERR: return "IBV_WC_MW_BIND_ERR";
    case IBV_WC_REM_INV_REQ_ERR: return "IBV_WC_REM_INV_REQ_ERR";
    case IBV_WC_REM_ACCESS_ERR: return "IBV_WC_REM_ACCESS_ERR";
    case IBV_WC_REM_OP_ERR: return "IBV_WC_REM_OP_ERR";
    case IBV_WC_RETRY_EXC_ERR: return "IBV_WC_RETRY_EXC_ERR";
    default: return "status " + std::to_string(st);
  }
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

/// The checks of one side: each printed with what it saw and what it wants.
struct Checks {
  const char* side;
  long failed = 0;
  void check(bool ok, const std::string& what, const std::string& got, const std::string& want) {
    failed += !ok;
    std::printf("uroce_verify mw %s: %s: %s (want %s) %s\n", side, what.c_str(), got.c_str(),
                want.c_str(), ok ? "ok" : "FAILED");
    std::fflush(stdout);
  }
};

/// Posts one signalled WR on link l and waits for its completion: its status, or -1 (post
/// refused, no completion, or the completion of another WR).
int mw_post(Rdma* r, const Rdma::Link& l, ibv_send_wr* wr, ibv_wc* out = nullptr) {
  wr->send_flags |= IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(l.qp, wr, &bad)) {
    std::fprintf(stderr, "uroce_verify: ibv_post_send (opcode %d): %s\n", wr->opcode,
                 std::strerror(e));
    return -1;
  }
  ibv_wc wc{};
  if (!wait_cq(l.cq, r->timeout_s, &wc)) return -1;
  if (out) *out = wc;
  if (wc.wr_id != wr->wr_id) {
    std::fprintf(stderr, "uroce_verify: completion for wr_id %" PRIu64 ", expected %" PRIu64 "\n",
                 wc.wr_id, wr->wr_id);
    return -1;
  }
  return wc.status;
}

/// A WRITE or READ of len bytes between local (in lmr) and the window at raddr/rkey.
int mw_rdma(Rdma* r, const Rdma::Link& l, ibv_wr_opcode op, uint8_t* local, ibv_mr* lmr,
            uint32_t len, uint64_t raddr, uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lmr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(op) + 1;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  return mw_post(r, l, &wr);
}

/// The client: per window, -n WRITE + READ back through its rkey, then the access that the
/// window must refuse (the server unbinds or invalidates on request: "UNBIND"/"INV" lines).
/// Returns the number of failed checks.
long mw_client(const Options& o, Rdma* r, const Window* win, int fd) {
  Checks c{"client"};
  static const char* const kName[kMwWindows] = {"window 0 (type 1)", "window 1 (type 2)",
                                                "window 2 (type 2)", "window 3 (type 2)"};
  const auto len = static_cast<uint32_t>(o.size);
  for (int k = 0; k < kMwWindows; ++k) {
    const Rdma::Link& l = r->links[static_cast<size_t>(k)];
    const std::string name = kName[k];
    int st = IBV_WC_SUCCESS, at = 0;
    long bad = 0;
    for (; at < o.iters; ++at) {
      const uint32_t seed = mw_seed(k, at);
      fill(r->buf.data(), o.size, seed);
      st = mw_rdma(r, l, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, len, win[k].addr, win[k].rkey);
      if (st != IBV_WC_SUCCESS) break;
      std::memset(r->scratch.data(), 0, o.size);
      st =
          mw_rdma(r, l, IBV_WR_RDMA_READ, r->scratch.data(), r->smr, len, win[k].addr, win[k].rkey);
      if (st != IBV_WC_SUCCESS) break;
      bad += static_cast<long>(count_mismatch(r->scratch.data(), o.size, seed));
    }
    c.check(st == IBV_WC_SUCCESS && bad == 0,
            name + ": " + std::to_string(o.iters) + " x WRITE + READ back through rkey " +
                hex(win[k].rkey),
            st == IBV_WC_SUCCESS ? std::to_string(bad) + " bytes differ"
                                 : "iteration " + std::to_string(at) + ": " + status_name(st),
            "IBV_WC_SUCCESS, 0 bytes differ");
    if (st != IBV_WC_SUCCESS) continue;  // its QP is in the error state: nothing more to try

    // The access the window must refuse; its data must not land (the server checks).
    fill(r->buf.data(), o.size, kMwRefusedSeed);
    std::string what, line;
    uint64_t at_addr = win[k].addr;
    uint32_t n = 8;
    if (k == kWinType1 || k == kWinLocalInv) {
      const char* req = k == kWinType1 ? "UNBIND" : "INV";
      int srv = -1;
      if (!send_line(fd, req) || !recv_line(fd, &line) ||
          std::sscanf(line.c_str(), "%*s %d", &srv) != 1)
        return -1;
      c.check(srv == IBV_WC_SUCCESS,
              name + (k == kWinType1 ? ": the server's zero-length ibv_bind_mw"
                                     : ": the server's IBV_WR_LOCAL_INV"),
              status_name(srv), "IBV_WC_SUCCESS");
      what = k == kWinType1 ? ": after the unbind, WRITE through rkey "
                            : ": after LOCAL_INV, WRITE through rkey ";
    } else if (k == kWinSendInv) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(r->buf.data()), len, r->mr->lkey};
      fill(r->buf.data(), o.size, kMwSendSeed);
      ibv_send_wr wr{};
      wr.wr_id = 42;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND_WITH_INV;
      wr.invalidate_rkey = win[k].rkey;
      const int s = mw_post(r, l, &wr);
      c.check(s == IBV_WC_SUCCESS, name + ": SEND_WITH_INV naming rkey " + hex(win[k].rkey),
              status_name(s), "IBV_WC_SUCCESS");
      if (s != IBV_WC_SUCCESS) continue;
      fill(r->buf.data(), o.size, kMwRefusedSeed);
      what = ": after SEND_WITH_INV, WRITE through rkey ";
    } else {  // kWinBounds: the last 8 bytes of the window and the one past its end
      at_addr = win[k].addr + o.size - 8;
      n = 9;
      what = ": 9-byte WRITE of the last 8 bytes and the one past the end, rkey ";
    }
    st = mw_rdma(r, l, IBV_WR_RDMA_WRITE, r->buf.data(), r->mr, n, at_addr, win[k].rkey);
    c.check(st == IBV_WC_REM_ACCESS_ERR, name + what + hex(win[k].rkey), status_name(st),
            "IBV_WC_REM_ACCESS_ERR");
  }
  for (size_t k = 0; k < r->links.size(); ++k) {
    const bool none = no_extra_completion(r->links[k].cq);
    c.check(none, "QP " + std::to_string(k) + ": no completion beyond those expected",
            none ? "none" : "one more", "none");
  }
  return c.failed;
}

/// The server before the client starts: windows allocated and bound over its buffer (filled
/// with the guard pattern), the receive for the SEND_WITH_INV posted. Returns the failed checks,
/// -1 if the windows could not even be allocated.
long mw_server_bind(const Options& o, Rdma* r, Window* win, std::vector<ibv_mw*>* mws) {
  Checks c{"server"};
  ibv_device_attr da{};
  const bool caps = ibv_query_device(r->ctx, &da) == 0;
  c.check(caps && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
              (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && da.max_mw > 0,
          "device capabilities",
          caps ? "max_mw " + std::to_string(da.max_mw) +
                     ((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) ? ", MEM_WINDOW" : "") +
                     ((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) ? ", TYPE_2B" : "")
               : "ibv_query_device refused",
          "max_mw > 0, MEM_WINDOW, TYPE_2B");
  fill(r->buf.data(), r->buf.size(), kMwGuardSeed);
  ibv_sge rsge{reinterpret_cast<uintptr_t>(r->scratch.data()), static_cast<uint32_t>(o.size),
               r->smr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 7;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  if (ibv_post_recv(r->links[kWinSendInv].qp, &rwr, &rbad) != 0) return -1;
  for (int k = 0; k < kMwWindows; ++k) {
    const Rdma::Link& l = r->links[static_cast<size_t>(k)];
    const ibv_mw_type type = k == kWinType1 ? IBV_MW_TYPE_1 : IBV_MW_TYPE_2;
    ibv_mw* mw = ibv_alloc_mw(r->pd, type);
    if (!mw) {
      std::perror("ibv_alloc_mw");
      return -1;
    }
    mws->push_back(mw);
    ibv_mw_bind_info info{};
    info.mr = r->mr;
    info.addr = reinterpret_cast<uintptr_t>(r->buf.data()) + mw_offset(o, k);
    info.length = o.size;
    info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    int st = -1;
    ibv_wc wc{};
    if (type == IBV_MW_TYPE_1) {
      // ibv_bind_mw(3): the new rkey is in mw->rkey at once, the bind completes in order.
      ibv_mw_bind b{};
      b.wr_id = 100;
      b.send_flags = IBV_SEND_SIGNALED;
      b.bind_info = info;
      if (ibv_bind_mw(l.qp, mw, &b) == 0 && wait_cq(l.cq, r->timeout_s, &wc) && wc.wr_id == 100)
        st = wc.status;
      win[k].rkey = mw->rkey;
    } else {
      // A type 2 window is bound by a WR on the QP it will serve; the key is the consumer's.
      ibv_send_wr wr{};
      wr.wr_id = 100;
      wr.opcode = IBV_WR_BIND_MW;
      wr.bind_mw.mw = mw;
      wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
      wr.bind_mw.bind_info = info;
      st = mw_post(r, l, &wr, &wc);
      win[k].rkey = wr.bind_mw.rkey;
    }
    win[k].addr = info.addr;
    c.check(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
            "window " + std::to_string(k) + (k == kWinType1 ? " (type 1)" : " (type 2)") +
                ": bind over bytes " + std::to_string(mw_offset(o, k)) + ".." +
                std::to_string(mw_offset(o, k) + o.size) + " of the region (" +
                std::to_string(mw_mr_len(o)) + " bytes), rkey " + hex(win[k].rkey),
            status_name(st) + (st == IBV_WC_SUCCESS && wc.opcode != IBV_WC_BIND_MW
                                   ? ", opcode " + std::to_string(wc.opcode)
                                   : ""),
            "IBV_WC_SUCCESS, IBV_WC_BIND_MW");
  }
  return c.failed;
}

/// The server while the client runs: unbinds window 0 and invalidates window 2 when asked,
/// then (after "DONE <client's failed checks>") checks the SEND_WITH_INV receive, the windows'
/// contents and the guards. Returns its failed checks, -1 on a broken exchange.
long mw_server_run(const Options& o, Rdma* r, const Window* win, const std::vector<ibv_mw*>& mws,
                   int fd, long* theirs) {
  Checks c{"server"};
  std::string line;
  for (;;) {
    if (!recv_line(fd, &line)) return -1;
    if (std::sscanf(line.c_str(), "DONE %ld", theirs) == 1) break;
    int st = -1;
    ibv_wc wc{};
    if (line == "UNBIND") {
      const Rdma::Link& l = r->links[kWinType1];
      ibv_mw_bind b{};  // ibv_bind_mw(3) with a zero length: the window reaches nothing
      b.wr_id = 200;
      b.send_flags = IBV_SEND_SIGNALED;
      b.bind_info.mr = r->mr;
      if (ibv_bind_mw(l.qp, mws[kWinType1], &b) == 0 && wait_cq(l.cq, r->timeout_s, &wc) &&
          wc.wr_id == 200)
        st = wc.status;
      c.check(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_BIND_MW,
              "window 0: zero-length ibv_bind_mw (unbind)", status_name(st),
              "IBV_WC_SUCCESS, IBV_WC_BIND_MW");
    } else if (line == "INV") {
      ibv_send_wr wr{};
      wr.wr_id = 300;
      wr.opcode = IBV_WR_LOCAL_INV;
      wr.invalidate_rkey = win[kWinLocalInv].rkey;
      st = mw_post(r, r->links[kWinLocalInv], &wr, &wc);
      c.check(st == IBV_WC_SUCCESS && wc.opcode == IBV_WC_LOCAL_INV,
              "window 2: IBV_WR_LOCAL_INV of rkey " + hex(win[kWinLocalInv].rkey), status_name(st),
              "IBV_WC_SUCCESS, IBV_WC_LOCAL_INV");
    } else {
      std::fprintf(stderr, "uroce_verify: unexpected line '%s'\n", line.c_str());
      return -1;
    }
    if (!send_line(fd, line + " " + std::to_string(st))) return -1;
  }
  // The SEND_WITH_INV was ACKed before the client said DONE, and a receive completes before
  // its ACK leaves.
  ibv_wc wc{};
  const Rdma::Link& l = r->links[kWinSendInv];
  const bool got = wait_cq(l.cq, r->timeout_s, &wc);
  // rxe writes the kernel's IB_WC_WITH_INVALIDATE (1 << 2) into the CQE libibverbs reads.
  constexpr unsigned kKernelWithInv = 1u << 2;
  const bool inv = got && (wc.wc_flags & IBV_WC_WITH_INV);
  const bool rxe_inv = got && o.rxe && !inv && (wc.wc_flags & kKernelWithInv);
  const long bad = got && wc.status == IBV_WC_SUCCESS
                       ? static_cast<long>(count_mismatch(r->scratch.data(), o.size, kMwSendSeed))
                       : 0;
  c.check(got && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV && (inv || rxe_inv) &&
              wc.invalidated_rkey == win[kWinSendInv].rkey && wc.byte_len == o.size && bad == 0,
          "window 1: the SEND_WITH_INV's receive",
          got ? status_name(wc.status) + ", wc_flags " + hex(wc.wc_flags) +
                    (inv       ? " (IBV_WC_WITH_INV)"
                     : rxe_inv ? " (rxe: bit 2, the kernel's IB_WC_WITH_INVALIDATE)"
                               : " (no IBV_WC_WITH_INV)") +
                    " rkey " + hex(wc.invalidated_rkey) + ", " + std::to_string(wc.byte_len) +
                    " bytes, " + std::to_string(bad) + " differ"
              : status_name(-1),
          "IBV_WC_SUCCESS, IBV_WC_WITH_INV rkey " + hex(win[kWinSendInv].rkey) + ", " +
              std::to_string(o.size) + " bytes, 0 differ");
  // Every window holds the client's last WRITE through it; the refused WRITEs left no byte.
  for (int k = 0; k < kMwWindows; ++k) {
    const long diff = static_cast<long>(
        count_mismatch(r->buf.data() + mw_offset(o, k), o.size, mw_seed(k, o.iters - 1)));
    c.check(diff == 0, "window " + std::to_string(k) + " holds the last pattern written",
            std::to_string(diff) + " bytes differ", "0");
  }
  std::vector<uint8_t> init(r->buf.size());
  fill(init.data(), init.size(), kMwGuardSeed);
  long guard = 0;
  for (int k = 0; k <= kMwWindows; ++k) {  // the guard before each window and after the last
    const size_t from = k == 0 ? 0 : mw_offset(o, k - 1) + o.size;
    for (size_t i = from; i < from + kMwGuard; ++i) guard += r->buf[i] != init[i];
  }
  c.check(guard == 0, "guard bytes around the windows unchanged",
          std::to_string(guard) + " of " + std::to_string(5 * kMwGuard) + " changed", "0");
  for (size_t k = 0; k < r->links.size(); ++k) {
    const bool none = no_extra_completion(r->links[k].cq);
    c.check(none, "QP " + std::to_string(k) + ": no completion beyond those expected",
            none ? "none" : "one more", "none");
  }
  return c.failed;
}

void usage() {
  std::fprintf(
      stderr,
      "usage: uroce_verify [-d dev] [-g gid_index] [-s size] [-n iters]\n"
      "                    [-o write|read|send|atomic|mixed|mw|atomic_write|flush|lastbyte]\n"
      "                    [-D seconds]\n"
      "                    [-p tcp_port]\n"
      "                    [-t timeout_s] [--ack-timeout code] [--rxe] [host]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static const option longopts[] = {{"ib-dev", required_argument, nullptr, 'd'},
                                    {"gid-idx", required_argument, nullptr, 'g'},
                                    {"size", required_argument, nullptr, 's'},
                                    {"iters", required_argument, nullptr, 'n'},
                                    {"op", required_argument, nullptr, 'o'},
                                    {"port", required_argument, nullptr, 'p'},
                                    {"timeout", required_argument, nullptr, 't'},
                                    {"duration", required_argument, nullptr, 'D'},
                                    {"rxe", no_argument, nullptr, 'R'},
                                    {"ack-timeout", required_argument, nullptr, 'A'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "d:g:s:n:o:p:t:D:Rh", longopts, nullptr)) != -1) {
    switch (c) {
      case 'd': o.dev = optarg; break;
      case 'g': o.gid_index = std::atoi(optarg); break;
      case 's': o.size = std::strtoull(optarg, nullptr, 0); break;
      case 'n': o.iters = std::atoi(optarg); break;
      case 'o': o.op = optarg; break;
      case 'p': o.port = std::atoi(optarg); break;
      case 't': o.timeout_s = std::atoi(optarg); break;
      case 'D': o.duration_s = std::atoi(optarg); break;
      case 'R': o.rxe = true; break;
      case 'A': o.ack_timeout = std::atoi(optarg); break;
      default: usage(); return 2;
    }
  }
  if (optind < argc) o.host = argv[optind];
  if (o.op != "write" && o.op != "read" && o.op != "send" && o.op != "atomic" && o.op != "mixed" &&
      o.op != "mw" && o.op != "lastbyte" && !ibta15_op(o.op)) {
    usage();
    return 2;
  }
  if (o.op == "atomic") o.size = 8;
  if (o.op == "atomic_write") o.size = kAwSlots * 8;
  if (o.size == 0 || o.iters <= 0 || o.duration_s < 0 || (o.duration_s && o.op != "mixed") ||
      (o.op == "mw" && o.size < 8) || (o.rxe && o.op != "mw") || o.ack_timeout < 0 ||
      o.ack_timeout > 31) {
    usage();
    return 2;
  }
  bool server = o.host.empty();
  if (server && o.op == "send" && o.size * static_cast<size_t>(o.iters) > (size_t{1} << 30)) {
    std::fprintf(stderr, "uroce_verify: -o send keeps size*iters bytes (max 1 GiB)\n");
    return 2;
  }
  Rdma r;
  if (!setup(o, server, &r)) return 1;
  Peer me;
  me.qpn = r.qp->qp_num;
  me.psn = static_cast<uint32_t>(getpid() * 7919u) & 0xffffff;
  me.rkey = o.op == "mw" ? 0 : r.mr->rkey;  // mw: the windows' rkeys follow once bound
  me.addr = reinterpret_cast<uintptr_t>(r.buf.data());
  if (ibv_query_gid(r.ctx, 1, o.gid_index, &me.gid)) {
    std::fprintf(stderr, "uroce_verify: no GID at index %d\n", o.gid_index);
    return 1;
  }
  int fd = server ? tcp_accept(o.port) : tcp_connect(o.host, o.port);
  if (fd < 0) {
    std::perror("tcp");
    return 1;
  }
  Peer peer;
  std::string line;
  if (!send_line(fd, encode(me)) || !recv_line(fd, &line) || !decode(line, &peer)) {
    std::fprintf(stderr, "uroce_verify: bad peer parameters '%s'\n", line.c_str());
    return 1;
  }
  if (!connect_qp(o, &r, r.qp, me, peer)) return 1;
  // flush: the server's region without the flush right, where the client's last FLUSH goes.
  Peer noflush;
  if (o.op == "flush") {
    if (server) {
      if (!send_line(fd, "NOFLUSH " +
                             std::to_string(reinterpret_cast<uintptr_t>(r.noflush.data())) + " " +
                             std::to_string(r.nmr->rkey)))
        return 1;
    } else if (!recv_line(fd, &line) || std::sscanf(line.c_str(), "NOFLUSH %" SCNu64 " %u",
                                                    &noflush.addr, &noflush.rkey) != 2) {
      std::fprintf(stderr, "uroce_verify: bad NOFLUSH line '%s'\n", line.c_str());
      return 1;
    }
  }
  const long caps_failed = ibta15_op(o.op) ? ibta15_caps(o, &r, server) : 0;
  Window win[kMwWindows];
  std::vector<ibv_mw*> mws;
  long mw_bind_failed = 0;
  if (o.op == "mw") {
    // The other QPs' numbers, then each connected like the first.
    std::string qps = "QPS";
    for (size_t k = 1; k < r.links.size(); ++k) qps += " " + std::to_string(r.links[k].qp->qp_num);
    uint32_t q[kMwWindows] = {peer.qpn};
    if (!send_line(fd, qps) || !recv_line(fd, &line) ||
        std::sscanf(line.c_str(), "QPS %u %u %u", &q[1], &q[2], &q[3]) != kMwWindows - 1) {
      std::fprintf(stderr, "uroce_verify: bad QP numbers '%s'\n", line.c_str());
      return 1;
    }
    for (size_t k = 1; k < r.links.size(); ++k) {
      Peer p = peer;
      p.qpn = q[k];
      if (!connect_qp(o, &r, r.links[k].qp, me, p)) return 1;
    }
    // The server binds its windows (its QPs are ready to send now) and passes their rkeys.
    if (server) {
      mw_bind_failed = mw_server_bind(o, &r, win, &mws);
      if (mw_bind_failed < 0) return 1;
      std::string w = "WIN";
      for (const Window& x : win) w += " " + hex(x.addr) + " " + hex(x.rkey);
      if (!send_line(fd, w)) return 1;
    } else {
      int n = 0, at = 0;
      if (recv_line(fd, &line) && line.rfind("WIN", 0) == 0) {
        const char* p = line.c_str() + 3;
        for (Window& x : win) {
          unsigned rkey = 0;
          if (std::sscanf(p, " %" SCNx64 " %x%n", &x.addr, &rkey, &at) != 2) break;
          x.rkey = rkey;
          p += at;
          ++n;
        }
      }
      if (n != kMwWindows) {
        std::fprintf(stderr, "uroce_verify: bad window line '%s'\n", line.c_str());
        return 1;
      }
    }
  }
  if (server && server_prepare(o, &r) < 0) {
    std::fprintf(stderr, "uroce_verify: ibv_post_recv failed\n");
    return 1;
  }
  // Both QPs are ready before the client starts.
  if (!send_line(fd, "READY") || !recv_line(fd, &line) || line != "READY") return 1;

  long mine = 0, theirs = 0;
  int iters = o.iters;
  if (server && o.op == "mw") {
    mine = mw_server_run(o, &r, win, mws, fd, &theirs);
    if (mine >= 0) mine += mw_bind_failed;
    send_line(fd, "RESULT " + std::to_string(mine));
  } else if (server && o.op == "mixed") {
    long n = 0;
    mine = server_run_mixed(o, &r, fd, &theirs, &n);
    iters = static_cast<int>(n);
    send_line(fd, "RESULT " + std::to_string(mine));
  } else if (server) {
    if (o.op == "send") mine = server_run_send(o, &r);
    if (o.op == "lastbyte") mine = lastbyte_server(o, &r, fd);
    if (!recv_line(fd, &line)) return 1;  // "DONE <client mismatches>"
    std::sscanf(line.c_str(), "DONE %ld", &theirs);
    if (mine >= 0) mine += server_check_end(o, &r) + caps_failed;
    send_line(fd, "RESULT " + std::to_string(mine));
  } else {
    mine = o.op == "mw"         ? mw_client(o, &r, win, fd)
           : o.op == "lastbyte" ? lastbyte_client(o, &r, peer, fd)
                                : run_client(o, &r, peer, noflush, &iters);
    if (mine >= 0) mine += caps_failed;
    send_line(fd, "DONE " + std::to_string(mine) + " " + std::to_string(iters));
    if (!recv_line(fd, &line)) return 1;
    std::sscanf(line.c_str(), "RESULT %ld", &theirs);
  }
  close(fd);
  std::printf("uroce_verify %s: op=%s size=%zu iters=%d local_mismatch=%ld peer_mismatch=%ld %s\n",
              server ? "server" : "client", o.op.c_str(), o.size, iters, mine, theirs,
              mine == 0 && theirs == 0 ? "OK" : "FAILED");
  for (ibv_mw* mw : mws) ibv_dealloc_mw(mw);  // before the region they are bound to
  for (size_t k = 1; k < r.links.size(); ++k) {
    ibv_destroy_qp(r.links[k].qp);
    ibv_destroy_cq(r.links[k].cq);
  }
  ibv_destroy_qp(r.qp);
  ibv_dereg_mr(r.mr);
  ibv_dereg_mr(r.smr);
  if (r.nmr) ibv_dereg_mr(r.nmr);
  ibv_destroy_cq(r.cq);
  ibv_dealloc_pd(r.pd);
  ibv_close_device(r.ctx);
  return mine == 0 && theirs == 0 ? 0 : 1;
}
