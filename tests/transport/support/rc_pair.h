/**
 * @file rc_pair.h
 * @brief Two engines with one connected RC QP pair and a registered 1 MiB buffer on each side
 * (A's `am`, B's `bm`, filled with patterns), for the RC error and memory window tests: A
 * posts, B receives; completions are waited for in fake time.
 */
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "support/two_engines.h"

namespace uroce::transport::testing {

constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

struct Rc {
  /// access: the QPs' remote access rights; b_mr_access: B's region's access flags.
  explicit Rc(QpAttr a = base(), uint32_t access = kAll, uint32_t b_mr_access = kAll) : h(5) {
    auto q = h.connect(QpType::kRc, a, 64, 4, 64, access);
    qa = q.first;
    qb = q.second;
    am.resize(1 << 20);
    bm.resize(1 << 20);
    fill_pattern(am.data(), am.size(), 1);
    fill_pattern(bm.data(), bm.size(), 2);
    ka = A().reg_mr(h.a().pd, addr(am), am.size(), kAll).value();
    kb = B().reg_mr(h.b().pd, addr(bm), bm.size(), b_mr_access).value();
  }
  static QpAttr base() {
    QpAttr a;
    a.path_mtu = 3;
    a.timeout = 10;  // 4.194 ms
    a.retry_cnt = 3;
    a.rnr_retry = 7;
    a.min_rnr_timer = 1;  // 10 us
    a.max_rd_atomic = 4;
    a.max_dest_rd_atomic = 4;
    return a;
  }
  static uint64_t addr(std::vector<uint8_t>& v) { return reinterpret_cast<uint64_t>(v.data()); }
  Engine& A() { return *h.a().engine; }
  Engine& B() { return *h.b().engine; }
  Status post(WrOpcode op, uint64_t id, uint32_t len, uint64_t raddr, uint32_t rkey,
              uint32_t lkey = 0, uint32_t flags = kSendSignaled, uint32_t inv = 0) {
    Sge sg{addr(am), len, lkey ? lkey : ka.lkey};
    SendWr w;
    w.wr_id = id;
    w.opcode = op;
    w.send_flags = flags;
    w.sg = &sg;
    w.num_sge = 1;
    w.remote_addr = raddr;
    w.rkey = rkey;
    w.invalidate_rkey = inv;
    return A().post_send(qa, w, h.now());
  }
  void post_recv_b(uint64_t id, uint32_t len, uint64_t at = 0) {
    Sge sg{addr(bm) + at, len, kb.lkey};
    RecvWr r;
    r.wr_id = id;
    r.sg = &sg;
    r.num_sge = 1;
    ASSERT_TRUE(B().post_recv(qb, r));
  }
  std::vector<Cqe> wait_cqes(Engine& e, uint32_t cq, size_t n,
                             Duration max = Duration::seconds(10)) {
    std::vector<Cqe> out;
    h.run_until(
        [&] {
          Cqe c[16];
          size_t k = e.poll_cq(cq, c);
          out.insert(out.end(), c, c + k);
          return out.size() >= n;
        },
        max);
    return out;
  }
  QpState state(Engine& e, uint32_t qpn) {
    QpAttr a;
    e.query_qp(qpn, &a, nullptr);
    return a.qp_state;
  }
  /// Affiliated QP error events (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR) side s saw for qpn.
  static size_t qp_error_events(const Side& s, uint32_t qpn, AsyncEventType t) {
    size_t n = 0;
    for (const AsyncEvent& e : s.observer.events) n += e.type == t && e.id == qpn;
    return n;
  }
  TwoEngines h;
  uint32_t qa = 0, qb = 0;
  std::vector<uint8_t> am, bm;
  MrKeys ka, kb;
};

}  // namespace uroce::transport::testing
