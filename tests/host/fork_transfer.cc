/**
 * @file fork_transfer.cc
 * @brief Run by hostd_e2e.py's case `fork` in a namespace whose netdev uroce-hostd serves
 * (fork as rdma-core: docs/limits.md, "fork").
 *
 * The parent opens the device, connects two RC QPs to each other (same host: the daemon
 * switches their frames) and checks an RDMA WRITE of 64 KiB. Then it forks. The child: every
 * call on the parent's context and objects fails with EIO (ibv_alloc_pd, ibv_post_send,
 * ibv_poll_cq), and none crashes; it opens the device afresh (a session of its own with the
 * daemon) and checks transfers on two QPs of its own. Meanwhile and after, the parent keeps
 * checking transfers on its QPs. Prints one "ok ..." line; exits non-zero with the reason.
 *
 * Usage: fork_transfer DEVICE IPV4_ADDRESS
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rc_connect.h"

namespace {

constexpr size_t kSize = 65536;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "fork_transfer (pid %d): %s\n", static_cast<int>(getpid()), what.c_str());
  std::exit(1);
}

ibv_context* open_device(const char* name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ibv_context* c = nullptr;
  for (int i = 0; i < n && !c; ++i)
    if (std::strcmp(ibv_get_device_name(list[i]), name) == 0) c = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  if (!c) die(std::string("cannot open ") + name);
  return c;
}

/// The GID index of ::ffff:<ipv4>.
int gid_index(ibv_context* c, const char* ipv4) {
  in_addr a{};
  if (inet_pton(AF_INET, ipv4, &a) != 1) die("bad address");
  ibv_port_attr pa{};
  ibv_query_port(c, 1, &pa);
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(c, 1, i, &g) != 0) continue;
    if (g.raw[10] == 0xff && g.raw[11] == 0xff && std::memcmp(g.raw + 12, &a, 4) == 0) return i;
  }
  die("no GID for the address");
}

/// Two RC QPs of one context connected to each other, with a buffer each.
struct Pair {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
  ibv_qp* qp[2] = {};
  std::vector<uint8_t> buf[2];
  ibv_mr* mr[2] = {};
  int gid = 0;

  Pair(ibv_context* c, int gid_idx) : ctx(c), gid(gid_idx) {
    pd = ibv_alloc_pd(ctx);
    cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
    if (!pd || !cq) die("alloc_pd/create_cq: " + std::string(std::strerror(errno)));
    for (int i = 0; i < 2; ++i) {
      buf[i].assign(kSize, 0);
      mr[i] =
          ibv_reg_mr(pd, buf[i].data(), kSize, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
      ibv_qp_init_attr ia{};
      ia.send_cq = ia.recv_cq = cq;
      ia.qp_type = IBV_QPT_RC;
      ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
      ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
      qp[i] = ibv_create_qp(pd, &ia);
      if (!mr[i] || !qp[i]) die("reg_mr/create_qp: " + std::string(std::strerror(errno)));
    }
    ibv_gid g{};
    ibv_query_gid(ctx, 1, gid, &g);
    for (int i = 0; i < 2; ++i)
      if (!hostd_test::connect_rc(qp[i], qp[1 - i]->qp_num, g, gid))
        die("INIT/RTR/RTS: " + std::string(std::strerror(errno)));
  }

  /// QP 0 WRITEs 64 KiB of `seed`'s pattern into QP 1's buffer; every byte is checked.
  void transfer(uint8_t seed) {
    for (size_t i = 0; i < kSize; ++i) buf[0][i] = static_cast<uint8_t>(seed + i * 7);
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf[0].data()), kSize, mr[0]->lkey};
    ibv_send_wr wr{}, *bad = nullptr;
    wr.wr_id = seed;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf[1].data());
    wr.wr.rdma.rkey = mr[1]->rkey;
    if (int e = ibv_post_send(qp[0], &wr, &bad)) die("post_send: " + std::string(strerror(e)));
    ibv_wc wc{};
    for (int n = 0; n == 0;) {
      n = ibv_poll_cq(cq, 1, &wc);
      if (n < 0) die("poll_cq");
    }
    if (wc.status != IBV_WC_SUCCESS) die(std::string("WRITE: ") + ibv_wc_status_str(wc.status));
    for (size_t i = 0; i < kSize; ++i)
      if (buf[1][i] != static_cast<uint8_t>(seed + i * 7)) die("byte " + std::to_string(i));
  }
};

/// In the child: the parent's context and objects refuse every call with EIO, without a crash.
void check_inherited(Pair& p) {
  errno = 0;
  if (ibv_alloc_pd(p.ctx) || errno != EIO) die("alloc_pd on the parent's context did not fail");
  ibv_sge sge{reinterpret_cast<uintptr_t>(p.buf[0].data()), 64, p.mr[0]->lkey};
  ibv_send_wr wr{}, *bad = nullptr;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  if (ibv_post_send(p.qp[0], &wr, &bad) != EIO) die("post_send on the parent's QP did not fail");
  ibv_wc wc{};
  if (ibv_poll_cq(p.cq, 1, &wc) >= 0) die("poll_cq on the parent's CQ did not fail");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) die("usage: fork_transfer DEVICE IPV4_ADDRESS");
  ibv_context* ctx = open_device(argv[1]);
  Pair parent(ctx, gid_index(ctx, argv[2]));
  parent.transfer(1);
  const uint32_t parent_qpn = parent.qp[0]->qp_num;
  const pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    check_inherited(parent);
    ibv_context* own = open_device(argv[1]);
    Pair mine(own, gid_index(own, argv[2]));
    for (int i = 0; i < 20; ++i) mine.transfer(static_cast<uint8_t>(100 + i));
    std::printf("child: own QPs %#x, %#x (parent's %#x), 20 transfers checked\n",
                mine.qp[0]->qp_num, mine.qp[1]->qp_num, parent_qpn);
    std::fflush(stdout);
    std::exit(0);
  }
  for (int i = 0; i < 20; ++i) parent.transfer(static_cast<uint8_t>(2 + i));
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    die("the child failed: status " + std::to_string(status));
  for (int i = 0; i < 20; ++i) parent.transfer(static_cast<uint8_t>(50 + i));
  std::printf(
      "ok: parent QPs %#x, %#x kept working across the fork (41 transfers checked); "
      "the child got EIO on them and ran its own\n",
      parent.qp[0]->qp_num, parent.qp[1]->qp_num);
  return 0;
}
