/**
 * @file verbs_fixture.h
 * @brief Test helpers for the in-process verbs tests: the built-in loopback device (no config
 * file: UROCE_CONFIG unset, run from an empty temporary folder), QP set-up through the real
 * exported C API, and bounded completion polling. Units: milliseconds for timeouts.
 */
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace uroce::verbs_test {

/// Folders made by the helpers here, removed with what they hold at exit.
inline std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

/// A fresh folder /tmp/<prefix>-XXXXXX, removed at exit; "" on failure.
inline std::string make_temp_dir(const std::string& prefix) {
  std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
  if (!mkdtemp(tmpl.data())) return "";
  if (temp_dirs().empty())
    std::atexit([] {
      std::error_code ec;
      for (const std::string& d : temp_dirs()) std::filesystem::remove_all(d, ec);
    });
  temp_dirs().push_back(tmpl);
  return tmpl;
}

/// Writes `toml` as uroce.toml into a fresh folder (removed at exit); returns the file's path.
inline std::string write_temp_config(const std::string& toml) {
  std::string path = make_temp_dir("uroce-verbs-config") + "/uroce.toml";
  std::ofstream(path) << toml;
  return path;
}

/// Makes ibv_get_device_list() see the built-in configuration: no $UROCE_CONFIG, and a fresh
/// empty working folder so no ./uroce.toml is found (removed at exit).
inline void use_builtin_config() {
  static bool done = false;
  if (done) return;
  done = true;
  unsetenv("UROCE_CONFIG");
  const std::string dir = make_temp_dir("uroce-verbs-test");
  ASSERT_FALSE(dir.empty());
  ASSERT_EQ(chdir(dir.c_str()), 0);
}

/// Opens the built-in device uroce0.
inline ibv_context* open_builtin() {
  use_builtin_config();
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return nullptr;
  ibv_context* ctx = nullptr;
  for (int i = 0; i < n; ++i)
    if (std::string(ibv_get_device_name(list[i])) == "uroce0") ctx = ibv_open_device(list[i]);
  ibv_free_device_list(list);
  return ctx;
}

/// Polls cq until `want` completions arrived or timeout_ms passed; returns them.
inline std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t want, int timeout_ms = 5000) {
  std::vector<ibv_wc> out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    ibv_wc wc[16];
    int n = ibv_poll_cq(cq, 16, wc);
    if (n < 0) break;
    out.insert(out.end(), wc, wc + n);
  }
  return out;
}

/// A registered buffer.
struct Buffer {
  std::vector<uint8_t> bytes;
  ibv_mr* mr = nullptr;
  Buffer(ibv_pd* pd, size_t len, int access, uint8_t fill = 0) : bytes(len, fill) {
    mr = ibv_reg_mr(pd, bytes.data(), len, access);
  }
  ~Buffer() {
    if (mr) ibv_dereg_mr(mr);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  uint64_t addr() const { return reinterpret_cast<uintptr_t>(bytes.data()); }
};

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// rdma-core 45's names for RDMA FLUSH that rdma-core 44's headers lack, with their values.
constexpr int kAccessFlushGlobal = 1 << 8;                 ///< IBV_ACCESS_FLUSH_GLOBAL
constexpr int kAccessFlushPersistent = 1 << 9;             ///< IBV_ACCESS_FLUSH_PERSISTENT
constexpr uint64_t kQpExWithFlush = 1ull << 11;            ///< IBV_QP_EX_WITH_FLUSH
constexpr int kWcFlush = 8;                                ///< IBV_WC_FLUSH
constexpr uint8_t kFlushGlobal = 1, kFlushPersistent = 2;  ///< IBV_FLUSH_GLOBAL, _PERSISTENT
constexpr uint8_t kFlushRange = 0, kFlushMr = 1;           ///< IBV_FLUSH_RANGE, IBV_FLUSH_MR
/// rdma-core 45's struct ibv_qp_ex: 44's with wr_flush appended (what ibv_wr_flush() calls).
struct QpEx45 {
  ibv_qp_ex base;
  void (*wr_flush)(ibv_qp_ex* qp, uint32_t rkey, uint64_t remote_addr, size_t len, uint8_t type,
                   uint8_t level);
};

/// An RDMA WRITE or READ work request of one SGE to (remote_addr, rkey), or a SEND with
/// (0, 0); unsignaled, wr_id 0.
inline ibv_send_wr rdma_wr(ibv_wr_opcode op, ibv_sge* sge, uint64_t remote_addr, uint32_t rkey) {
  ibv_send_wr wr{};
  wr.sg_list = sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  return wr;
}

/// A receive work request of one SGE.
inline ibv_recv_wr recv_wr(uint64_t wr_id, ibv_sge* sge) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = sge;
  wr.num_sge = 1;
  return wr;
}

/// Moves qp RESET -> INIT -> RTR -> RTS towards dest_qpn on the GID at index 0 of ctx.
/// Returns the first ibv_modify_qp error, 0 on success.
inline int connect_qp(ibv_context* ctx, ibv_qp* qp, uint32_t dest_qpn, uint32_t my_psn,
                      uint32_t dest_psn, int access = kAllAccess, uint8_t timeout = 14,
                      uint8_t retry_cnt = 7) {
  ibv_qp_attr a;
  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (qp->qp_type == IBV_QPT_UD) {
    a.qkey = 0x11111111;
    mask |= IBV_QP_QKEY;
  } else {
    a.qp_access_flags = access;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  if (int r = ibv_modify_qp(qp, &a, mask)) return r;

  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  mask = IBV_QP_STATE;
  if (qp->qp_type != IBV_QPT_UD) {
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = dest_psn;
    a.ah_attr.is_global = 1;
    ibv_query_gid(ctx, 1, 0, &a.ah_attr.grh.dgid);
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (qp->qp_type == IBV_QPT_RC) {
      a.max_dest_rd_atomic = 4;
      a.min_rnr_timer = 1;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  if (int r = ibv_modify_qp(qp, &a, mask)) return r;

  std::memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = my_psn;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (qp->qp_type == IBV_QPT_RC) {
    a.timeout = timeout;
    a.retry_cnt = retry_cnt;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return ibv_modify_qp(qp, &a, mask);
}

/// A device, a PD, one CQ per side and two QPs of one type connected to each other.
class QpPairTest : public ::testing::Test {
 protected:
  void open(ibv_qp_type type, bool with_ex = false, ibv_srq* srq_b = nullptr) {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    cq_a_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
    cq_b_ = ibv_create_cq(ctx_, 256, nullptr, nullptr, 0);
    ASSERT_NE(cq_a_, nullptr);
    ASSERT_NE(cq_b_, nullptr);
    a_ = make_qp(type, cq_a_, nullptr, with_ex);
    b_ = make_qp(type, cq_b_, srq_b, with_ex);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    before_connect();
    ASSERT_EQ(connect_qp(ctx_, a_, b_->qp_num, 100, 200), 0);
    ASSERT_EQ(connect_qp(ctx_, b_, a_->qp_num, 200, 100), 0);
  }

  /// Runs between creating the two QPs and connecting them (e.g. ECE).
  virtual void before_connect() {}

  ibv_qp* make_qp(ibv_qp_type type, ibv_cq* cq, ibv_srq* srq, bool with_ex) {
    ibv_qp_init_attr_ex ia;
    std::memset(&ia, 0, sizeof ia);
    ia.qp_type = type;
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.srq = srq;
    ia.cap.max_send_wr = 64;
    ia.cap.max_recv_wr = 64;
    ia.cap.max_send_sge = 4;
    ia.cap.max_recv_sge = 4;
    ia.cap.max_inline_data = 64;
    ia.sq_sig_all = 0;
    ia.pd = pd_;
    ia.comp_mask = IBV_QP_INIT_ATTR_PD;
    if (with_ex) {
      ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
      ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                          IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                          IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                          IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_ATOMIC_WRITE |
                          kQpExWithFlush;
    }
    return ibv_create_qp_ex(ctx_, &ia);
  }

  void TearDown() override {
    if (a_) {
      EXPECT_EQ(ibv_destroy_qp(a_), 0);
    }
    if (b_) {
      EXPECT_EQ(ibv_destroy_qp(b_), 0);
    }
    extra_qp_teardown();
    if (cq_a_) {
      EXPECT_EQ(ibv_destroy_cq(cq_a_), 0);
    }
    if (cq_b_) {
      EXPECT_EQ(ibv_destroy_cq(cq_b_), 0);
    }
    extra_teardown();
    if (pd_) {
      EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }
  /// Destroys QPs a test created beyond the pair (before the CQs go).
  virtual void extra_qp_teardown() {}
  /// Destroys what a test created beyond the pair (before the PD goes).
  virtual void extra_teardown() {}

  /// Posts one signaled WR on a_ and returns its completion (status checked by the caller).
  ibv_wc post_and_wait(ibv_send_wr& wr) {
    ibv_send_wr* bad = nullptr;
    wr.send_flags |= IBV_SEND_SIGNALED;
    EXPECT_EQ(ibv_post_send(a_, &wr, &bad), 0);
    auto wcs = poll_n(cq_a_, 1);
    EXPECT_EQ(wcs.size(), 1u);
    if (wcs.empty()) {
      ibv_wc none;
      std::memset(&none, 0, sizeof none);
      none.status = IBV_WC_GENERAL_ERR;
      return none;
    }
    return wcs[0];
  }

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
};

/// A deterministic byte pattern (seeded) for byte-for-byte checks.
/// QpPairTest plus a second RC pair: b2_ receives on ecq_, a CQ with a completion channel
/// (ch_); a2_ sends to b2_ and completes on cq_a_.
class ChannelPairTest : public QpPairTest {
 protected:
  void SetUp() override {
    open(IBV_QPT_RC);
    ch_ = ibv_create_comp_channel(ctx_);
    ASSERT_NE(ch_, nullptr);
    ecq_ = ibv_create_cq(ctx_, 64, this, ch_, 0);
    ASSERT_NE(ecq_, nullptr);
    a2_ = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
    b2_ = make_qp(IBV_QPT_RC, ecq_, nullptr, false);
    ASSERT_NE(a2_, nullptr);
    ASSERT_NE(b2_, nullptr);
    ASSERT_EQ(connect_qp(ctx_, a2_, b2_->qp_num, 5, 6), 0);
    ASSERT_EQ(connect_qp(ctx_, b2_, a2_->qp_num, 6, 5), 0);
  }
  void extra_qp_teardown() override {
    if (a2_) {
      EXPECT_EQ(ibv_destroy_qp(a2_), 0);
    }
    if (b2_) {
      EXPECT_EQ(ibv_destroy_qp(b2_), 0);
    }
  }
  void extra_teardown() override {
    if (ecq_) {
      EXPECT_EQ(ibv_destroy_cq(ecq_), 0);
    }
    if (ch_) {
      EXPECT_EQ(ibv_destroy_comp_channel(ch_), 0);
    }
  }
  ibv_comp_channel* ch_ = nullptr;
  ibv_cq* ecq_ = nullptr;
  ibv_qp* a2_ = nullptr;
  ibv_qp* b2_ = nullptr;
};

inline void fill_pattern(std::vector<uint8_t>& v, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
}

}  // namespace uroce::verbs_test
