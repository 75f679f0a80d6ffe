/**
 * @file host_reopen.cc
 * @brief e2e program for host mode: a process that opens a device, uses it, closes it and
 * opens it again, as libraries that probe devices before they use them do (UCX, MPI
 * components), with one or several contexts of the device open at once.
 *
 *   server: e2e_host_reopen --server --port P --count N [--device D] [--gid G]
 *   client: e2e_host_reopen --port P --cycles C --contexts K [--device D] [--gid G] [--probe]
 *           [--hold] SERVER_HOST
 *
 * Client, per cycle: with --probe first opens the device, queries it, allocates and frees a
 * PD (which opens the port) and closes it at once, as libraries that probe devices do; then
 * opens the device K times (K contexts at once), and on each context a PD,
 * a CQ, a region and an RC QP connected to a QP of the server (QPN, PSN, GID, address and rkey
 * over one TCP connection per QP). With every QP in RTS it WRITEs a pattern of its own (cycle,
 * context) into the server's buffer on each QP, READs it back and compares every byte; then it
 * destroys everything and closes every context. So each cycle's frames cross the netdev (or
 * the daemon) both ways. Prints "CYCLE <i> ok ..."; after the last cycle "CLOSED" with what the
 * process still has open of a port ("afxdp_sockets=0 bpf_objects=0 hostd_regions=0": all
 * must be 0), and with --hold then waits for stdin to close, so that the harness checks the
 * netdev while the process lives with no context open.
 * Server: the device opened once; per TCP connection one QP and a buffer, destroyed when the
 * client closes the connection; exits 0 after N connections ended.
 *
 * Any failure prints "FAIL <what>" and exits 1. An application of the ABI: links the system
 * libibverbs, LD_LIBRARY_PATH puts uroce's first. Sizes in bytes, times in milliseconds.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

constexpr size_t kLen = 65536;  ///< bytes WRITten and READ back per QP and cycle
constexpr int kCompletionTimeoutMs = 10000;
constexpr int kMaxContexts = 8;

struct Options {
  bool server = false;
  std::string device = "uroce0";
  std::string host;
  int port = 0;
  int gid = 0;
  int count = 0;     ///< server: connections to serve
  int cycles = 10;   ///< client
  int contexts = 1;  ///< client: contexts open at once per cycle
  bool hold = false;
  bool probe = false;  ///< client: each cycle starts with a probe (open, PD, close)
};

/// What each side sends about its QP (both ends run on this host's architecture).
struct QpInfo {
  uint32_t qpn;
  uint32_t psn;
  uint8_t gid[16];
  uint64_t addr;
  uint32_t rkey;
  uint32_t pad;
};

[[noreturn]] void fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n > 0) {
    ssize_t w = write(fd, b, n);
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n > 0) {
    ssize_t r = read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

int tcp_connect(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* r = res; r && fd < 0; r = r->ai_next) {
    fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, r->ai_addr, r->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  return fd;
}

ibv_context* open_device(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* ctx = nullptr;
  for (int i = 0; list && i < n; ++i)
    if (name == ibv_get_device_name(list[i])) ctx = ibv_open_device(list[i]);
  if (list) ibv_free_device_list(list);
  return ctx;
}

/// RESET -> INIT -> RTR -> RTS towards the peer's QP, over GID index gid.
bool connect_qp(ibv_qp* qp, const ibv_port_attr& port, int gid, const QpInfo& my,
                const QpInfo& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return false;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = port.active_mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid, 16);
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return false;
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my.psn;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

/// One QP with what it needs on one context: PD, CQ, region (kLen bytes at least).
struct Endpoint {
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_mr* mr = nullptr;
  ibv_qp* qp = nullptr;
  std::vector<uint8_t> buf;
  QpInfo info{};

  /// Everything but the connection; false on the first failing call (named in *what).
  bool create(ibv_context* ctx, int gid, size_t len, uint32_t psn, std::string* what) {
    buf.assign(len, 0);
    if (!(pd = ibv_alloc_pd(ctx))) return *what = "ibv_alloc_pd", false;
    if (!(cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0))) return *what = "ibv_create_cq", false;
    mr = ibv_reg_mr(pd, buf.data(), len,
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
    if (!mr) return *what = "ibv_reg_mr", false;
    ibv_qp_init_attr ia{};
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 4;
    ia.cap.max_recv_wr = 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    if (!(qp = ibv_create_qp(pd, &ia))) return *what = "ibv_create_qp", false;
    ibv_gid g{};
    if (ibv_query_gid(ctx, 1, gid, &g)) return *what = "ibv_query_gid", false;
    info.qpn = qp->qp_num;
    info.psn = psn & 0xffffff;
    std::memcpy(info.gid, g.raw, 16);
    info.addr = reinterpret_cast<uintptr_t>(buf.data());
    info.rkey = mr->rkey;
    return true;
  }

  /// Destroys in reverse order; false when a destroy call failed.
  bool destroy() {
    bool ok = true;
    if (qp) ok &= ibv_destroy_qp(qp) == 0;
    if (mr) ok &= ibv_dereg_mr(mr) == 0;
    if (cq) ok &= ibv_destroy_cq(cq) == 0;
    if (pd) ok &= ibv_dealloc_pd(pd) == 0;
    qp = nullptr, mr = nullptr, cq = nullptr, pd = nullptr;
    return ok;
  }
};

/// Posts one signaled RDMA op of len bytes (local buffer at offset loff) and waits for its
/// completion; false with *what on an error or a timeout.
bool rdma(Endpoint& e, ibv_wr_opcode op, size_t loff, const QpInfo& peer, size_t len,
          std::string* what) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(e.buf.data() + loff), static_cast<uint32_t>(len),
              e.mr->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.wr_id = op;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = peer.addr;
  wr.wr.rdma.rkey = peer.rkey;
  if (int rc = ibv_post_send(e.qp, &wr, &bad)) {
    *what = "ibv_post_send: " + std::string(std::strerror(rc));
    return false;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kCompletionTimeoutMs);
  ibv_wc wc{};
  int n = 0;
  while ((n = ibv_poll_cq(e.cq, 1, &wc)) == 0 && std::chrono::steady_clock::now() < deadline) {
  }
  if (n != 1) {
    *what = n < 0 ? "ibv_poll_cq failed" : "no completion within 10 s";
    return false;
  }
  if (wc.status != IBV_WC_SUCCESS || wc.wr_id != op) {
    *what = std::string("completion ") + ibv_wc_status_str(wc.status);
    return false;
  }
  return true;
}

/// What this process still has open of an RDMA port after closing every context: AF_XDP
/// sockets, BPF objects (programs, maps, BTF) from /proc/self/fd, and mappings of uroce-hostd
/// client regions from /proc/self/maps.
std::string leftovers() {
  int xsk = 0, bpf = 0, regions = 0;
  for (int fd = 0; fd < 4096; ++fd) {
    char target[256];
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string t(target, static_cast<size_t>(n));
    int domain = 0;
    socklen_t len = sizeof domain;
    if (t.rfind("socket:", 0) == 0 && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 &&
        domain == AF_XDP)
      ++xsk;
    if (t.rfind("anon_inode:bpf", 0) == 0 || t == "anon_inode:btf") ++bpf;
    if (t.find("uroce-hostd-client") != std::string::npos) ++regions;
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);)
    if (line.find("memfd:uroce-hostd-client") != std::string::npos) ++regions;
  return "afxdp_sockets=" + std::to_string(xsk) + " bpf_objects=" + std::to_string(bpf) +
         " hostd_regions=" + std::to_string(regions);
}

uint8_t pattern(int cycle, int context, size_t i) {
  return static_cast<uint8_t>(i * 7 + static_cast<size_t>(cycle) * 31 +
                              static_cast<size_t>(context) * 101 + (i >> 8));
}

int run_client(const Options& o) {
  for (int cycle = 0; cycle < o.cycles; ++cycle) {
    const std::string at = "cycle " + std::to_string(cycle) + ": ";
    const auto start = std::chrono::steady_clock::now();
    if (o.probe) {
      // As a library probing devices does: open, look, allocate a PD (opens the port), close.
      ibv_context* ctx = open_device(o.device);
      if (!ctx) fail(at + "probe: cannot open " + o.device);
      ibv_device_attr attr{};
      ibv_port_attr port{};
      ibv_pd* pd = nullptr;
      if (ibv_query_device(ctx, &attr) || ibv_query_port(ctx, 1, &port) ||
          port.state != IBV_PORT_ACTIVE || !(pd = ibv_alloc_pd(ctx)) || ibv_dealloc_pd(pd) ||
          ibv_close_device(ctx))
        fail(at + "probe: query, ibv_alloc_pd or close failed");
    }
    std::vector<ibv_context*> ctxs;
    std::vector<Endpoint> eps(static_cast<size_t>(o.contexts));
    std::vector<QpInfo> peers(eps.size());
    std::vector<int> socks;
    for (int k = 0; k < o.contexts; ++k) {
      ibv_context* ctx = open_device(o.device);
      if (!ctx) fail(at + "cannot open " + o.device + " (context " + std::to_string(k) + ")");
      ctxs.push_back(ctx);
    }
    // Every context's QP up before any transfer: the contexts are in use at once.
    for (size_t k = 0; k < eps.size(); ++k) {
      ibv_port_attr port{};
      if (ibv_query_port(ctxs[k], 1, &port)) fail(at + "ibv_query_port");
      std::string what;
      // 2 x kLen: the pattern sent, then what is read back.
      if (!eps[k].create(ctxs[k], o.gid, 2 * kLen, static_cast<uint32_t>(cycle * 16 + k), &what))
        fail(at + "context " + std::to_string(k) + ": " + what);
      int fd = tcp_connect(o.host, o.port);
      if (fd < 0) fail(at + "cannot connect to the server");
      socks.push_back(fd);
      if (!write_all(fd, &eps[k].info, sizeof(QpInfo)) || !read_all(fd, &peers[k], sizeof(QpInfo)))
        fail(at + "QP exchange with the server");
      if (!connect_qp(eps[k].qp, port, o.gid, eps[k].info, peers[k]))
        fail(at + "context " + std::to_string(k) +
             ": ibv_modify_qp to RTS: " + std::strerror(errno));
    }
    for (size_t k = 0; k < eps.size(); ++k) {
      Endpoint& e = eps[k];
      for (size_t i = 0; i < kLen; ++i) e.buf[i] = pattern(cycle, static_cast<int>(k), i);
      std::string what;
      if (!rdma(e, IBV_WR_RDMA_WRITE, 0, peers[k], kLen, &what) ||
          !rdma(e, IBV_WR_RDMA_READ, kLen, peers[k], kLen, &what))
        fail(at + "context " + std::to_string(k) + ": " + what);
      for (size_t i = 0; i < kLen; ++i)
        if (e.buf[kLen + i] != pattern(cycle, static_cast<int>(k), i))
          fail(at + "context " + std::to_string(k) + ": byte " + std::to_string(i) +
               " read back differs");
    }
    for (size_t k = 0; k < eps.size(); ++k) {
      if (!eps[k].destroy()) fail(at + "a destroy call failed");
      close(socks[k]);
    }
    for (ibv_context* ctx : ctxs)
      if (ibv_close_device(ctx)) fail(at + "ibv_close_device");
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    std::printf("CYCLE %d ok: %d context(s), %zu bytes written and read back on each, %lld ms\n",
                cycle, o.contexts, kLen, static_cast<long long>(ms));
    std::fflush(stdout);
  }
  std::printf("CLOSED %s\n", leftovers().c_str());
  std::fflush(stdout);
  if (o.hold) {
    char b[64];
    while (read(0, b, sizeof b) > 0) {
    }
  }
  return 0;
}

int run_server(const Options& o) {
  ibv_context* ctx = open_device(o.device);
  if (!ctx) fail("cannot open " + o.device);
  ibv_port_attr port{};
  if (ibv_query_port(ctx, 1, &port)) fail("ibv_query_port");
  int ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(static_cast<uint16_t>(o.port));
  a.sin6_addr = in6addr_any;
  if (ls < 0 || bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      listen(ls, kMaxContexts) != 0)
    fail("cannot listen on TCP port " + std::to_string(o.port));
  struct Conn {
    int fd;
    Endpoint* ep;
  };
  std::vector<Conn> conns;
  int ended = 0;
  while (ended < o.count) {
    std::vector<pollfd> fds{{ls, POLLIN, 0}};
    for (const Conn& c : conns) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) fail("poll");
    for (size_t i = fds.size() - 1; i >= 1; --i) {
      if (!fds[i].revents) continue;
      // The client closed the connection (nothing else arrives on it): its QP goes.
      Conn c = conns[i - 1];
      close(c.fd);
      if (!c.ep->destroy()) fail("a destroy call failed");
      delete c.ep;
      conns.erase(conns.begin() + static_cast<long>(i - 1));
      ++ended;
    }
    if (!fds[0].revents) continue;
    int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) fail("accept");
    QpInfo peer{};
    if (!read_all(fd, &peer, sizeof peer)) fail("QP exchange with a client");
    auto* ep = new Endpoint;
    std::string what;
    if (!ep->create(ctx, o.gid, kLen, peer.qpn ^ 0x5a5a, &what)) fail(what);
    if (!connect_qp(ep->qp, port, o.gid, ep->info, peer))
      fail("ibv_modify_qp to RTS: " + std::string(std::strerror(errno)));
    if (!write_all(fd, &ep->info, sizeof ep->info)) fail("QP exchange with a client");
    conns.push_back({fd, ep});
  }
  close(ls);
  ibv_close_device(ctx);
  std::printf("SERVED %d\n", ended);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) fail("usage: " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--server") {
      o.server = true;
    } else if (a == "--hold") {
      o.hold = true;
    } else if (a == "--probe") {
      o.probe = true;
    } else if (a == "--device") {
      o.device = next();
    } else if (a == "--port") {
      o.port = std::atoi(next());
    } else if (a == "--gid") {
      o.gid = std::atoi(next());
    } else if (a == "--count") {
      o.count = std::atoi(next());
    } else if (a == "--cycles") {
      o.cycles = std::atoi(next());
    } else if (a == "--contexts") {
      o.contexts = std::atoi(next());
    } else if (a[0] != '-' && o.host.empty()) {
      o.host = a;
    } else {
      fail("usage: unknown argument " + a);
    }
  }
  if (!o.port || o.contexts < 1 || o.contexts > kMaxContexts || (!o.server && o.host.empty()))
    fail(
        "usage: e2e_host_reopen --server --port P --count N | --port P --cycles C "
        "--contexts K [--probe] [--hold] HOST  [--device D] [--gid G]");
  return o.server ? run_server(o) : run_client(o);
}
