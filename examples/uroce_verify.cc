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
 * Every completion is checked to be the one expected (the posted WR; receives in posting
 * order) and no completion may follow the last. Exit status 0 only when both sides saw no
 * mismatch, no error completion and no unexpected completion. Sizes in bytes.
 */
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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
  size_t size = 4096;        ///< -s: bytes per message (8 for atomic)
  int iters = 100;           ///< -n
  std::string op = "write";  ///< -o: write | read | send | atomic
  int port = 18515;          ///< -p: TCP port
  int timeout_s = 10;        ///< -t: seconds to wait for any one completion
  int duration_s = 0;        ///< -D: mixed only; run this long instead of -n iterations
  std::string host;          ///< server host (client mode)
};

/// mixed: receive slots the server keeps posted, and where its counter sits in its buffer.
constexpr size_t kMixedSlots = 16;
size_t counter_offset(const Options& o) { return (o.size + 7) & ~size_t{7}; }

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
  int timeout_s = 10;
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
  r->cq = ibv_create_cq(r->ctx, mixed ? 64 : 2 * o.iters + 16, nullptr, nullptr, 0);
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                     IBV_ACCESS_REMOTE_ATOMIC;
  // A SEND server keeps one slot per message, so no message overwrites an unchecked one.
  size_t slots = server && o.op == "send" ? static_cast<size_t>(o.iters) : 1;
  r->buf.assign(mixed ? counter_offset(o) + 8 + kMixedSlots * o.size : o.size * slots, 0);
  r->scratch.assign(o.size, 0);
  if (!r->pd || !r->cq) {
    std::perror("ibv_alloc_pd/ibv_create_cq");
    return false;
  }
  r->mr = ibv_reg_mr(r->pd, r->buf.data(), r->buf.size(), access);
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
  r->qp = ibv_create_qp(r->pd, &ia);
  if (!r->qp) {
    std::perror("ibv_create_qp");
    return false;
  }
  r->timeout_s = o.timeout_s;
  return true;
}

bool connect_qp(const Options& o, Rdma* r, const Peer& me, const Peer& peer) {
  ibv_port_attr pa;
  if (ibv_query_port(r->ctx, 1, &pa)) return false;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(r->qp, &a,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
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
  if (ibv_modify_qp(r->qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    std::perror("modify RTR");
    return false;
  }
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = me.psn;
  a.max_rd_atomic = 4;
  if (ibv_modify_qp(r->qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)) {
    std::perror("modify RTS");
    return false;
  }
  return true;
}

/// Waits for one completion; false on timeout or an error status.
bool wait_one(Rdma* r, ibv_wc* wc) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(r->timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int n = ibv_poll_cq(r->cq, 1, wc);
    if (n < 0) return false;
    if (n == 1) {
      if (wc->status != IBV_WC_SUCCESS) {
        std::fprintf(stderr, "uroce_verify: completion wr_id %" PRIu64 ": %s\n", wc->wr_id,
                     ibv_wc_status_str(wc->status));
        return false;
      }
      return true;
    }
  }
  std::fprintf(stderr, "uroce_verify: no completion within %d s\n", r->timeout_s);
  return false;
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
bool no_extra_completion(Rdma* r) {
  ibv_wc wc;
  int n = ibv_poll_cq(r->cq, 1, &wc);
  if (n != 0)
    std::fprintf(stderr, "uroce_verify: unexpected completion (wr_id %" PRIu64 ") after the last\n",
                 n > 0 ? wc.wr_id : 0);
  return n == 0;
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
/// the number of iterations run (-n, or as many as -D seconds allowed).
long run_client(const Options& o, Rdma* r, const Peer& peer, int* done) {
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
  return no_extra_completion(r) ? bad : -1;
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
  return no_extra_completion(r) ? bad : -1;
}

/// Server side: prepare the buffer, and for SEND receive and check every message.
long server_prepare(const Options& o, Rdma* r) {
  if (o.op == "read") fill(r->buf.data(), o.size, 0xfeed);
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
  return no_extra_completion(r) ? bad : -1;
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
  return 0;
}

void usage() {
  std::fprintf(stderr,
               "usage: uroce_verify [-d dev] [-g gid_index] [-s size] [-n iters]\n"
               "                    [-o write|read|send|atomic|mixed] [-D seconds] [-p tcp_port]\n"
               "                    [-t timeout_s] [host]\n");
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
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "d:g:s:n:o:p:t:D:h", longopts, nullptr)) != -1) {
    switch (c) {
      case 'd': o.dev = optarg; break;
      case 'g': o.gid_index = std::atoi(optarg); break;
      case 's': o.size = std::strtoull(optarg, nullptr, 0); break;
      case 'n': o.iters = std::atoi(optarg); break;
      case 'o': o.op = optarg; break;
      case 'p': o.port = std::atoi(optarg); break;
      case 't': o.timeout_s = std::atoi(optarg); break;
      case 'D': o.duration_s = std::atoi(optarg); break;
      default: usage(); return 2;
    }
  }
  if (optind < argc) o.host = argv[optind];
  if (o.op != "write" && o.op != "read" && o.op != "send" && o.op != "atomic" && o.op != "mixed") {
    usage();
    return 2;
  }
  if (o.op == "atomic") o.size = 8;
  if (o.size == 0 || o.iters <= 0 || o.duration_s < 0 || (o.duration_s && o.op != "mixed")) {
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
  me.rkey = r.mr->rkey;
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
  if (!connect_qp(o, &r, me, peer)) return 1;
  if (server && server_prepare(o, &r) < 0) {
    std::fprintf(stderr, "uroce_verify: ibv_post_recv failed\n");
    return 1;
  }
  // Both QPs are ready before the client starts.
  if (!send_line(fd, "READY") || !recv_line(fd, &line) || line != "READY") return 1;

  long mine = 0, theirs = 0;
  int iters = o.iters;
  if (server && o.op == "mixed") {
    long n = 0;
    mine = server_run_mixed(o, &r, fd, &theirs, &n);
    iters = static_cast<int>(n);
    send_line(fd, "RESULT " + std::to_string(mine));
  } else if (server) {
    if (o.op == "send") mine = server_run_send(o, &r);
    if (!recv_line(fd, &line)) return 1;  // "DONE <client mismatches>"
    std::sscanf(line.c_str(), "DONE %ld", &theirs);
    if (mine >= 0) mine += server_check_end(o, &r);
    send_line(fd, "RESULT " + std::to_string(mine));
  } else {
    mine = run_client(o, &r, peer, &iters);
    send_line(fd, "DONE " + std::to_string(mine) + " " + std::to_string(iters));
    if (!recv_line(fd, &line)) return 1;
    std::sscanf(line.c_str(), "RESULT %ld", &theirs);
  }
  close(fd);
  std::printf("uroce_verify %s: op=%s size=%zu iters=%d local_mismatch=%ld peer_mismatch=%ld %s\n",
              server ? "server" : "client", o.op.c_str(), o.size, iters, mine, theirs,
              mine == 0 && theirs == 0 ? "OK" : "FAILED");
  ibv_destroy_qp(r.qp);
  ibv_dereg_mr(r.mr);
  ibv_dereg_mr(r.smr);
  ibv_destroy_cq(r.cq);
  ibv_dealloc_pd(r.pd);
  ibv_close_device(r.ctx);
  return mine == 0 && theirs == 0 ? 0 : 1;
}
