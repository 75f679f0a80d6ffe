/**
 * @file abi_layout_test.cc
 * @brief The ABI facts of docs/design.md ("The ABI contract") against the rdma-core 44 headers this
 * builds with, and the context our ibv_open_device returns: verbs_context layout and sz,
 * abi_compat, every op filled, verbs_get_ctx_op finding the extended ops, EOPNOTSUPP from dummy
 * ops; the device identity (vendor_id, cmd_fd, ibv_import_device).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

TEST(AbiLayout, SizesAndOffsetsMatchAbiMd) {
  EXPECT_EQ(sizeof(verbs_context), 648u);
  EXPECT_EQ(offsetof(verbs_context, context), 320u);
  EXPECT_EQ(offsetof(verbs_context, sz) + sizeof(size_t), offsetof(verbs_context, context));
  EXPECT_EQ(sizeof(verbs_context) - offsetof(verbs_context, context), sizeof(ibv_context));
  EXPECT_EQ(sizeof(ibv_qp_ex), 352u);
  EXPECT_EQ(offsetof(ibv_qp_ex, qp_base), 0u);
  EXPECT_EQ(sizeof(ibv_cq_ex), 288u);
  // ibv_cq is the prefix of ibv_cq_ex (ibv_cq_ex_to_cq is a cast).
  EXPECT_EQ(offsetof(ibv_cq_ex, async_events_completed), offsetof(ibv_cq, async_events_completed));
}

class AbiContext : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override {
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }
  ibv_context* ctx_ = nullptr;
};

TEST_F(AbiContext, IsAnExtendedVerbsContextCoveringEveryOp) {
  // Expect: abi_compat marks a verbs_context and sz covers the whole struct.
  ASSERT_EQ(ctx_->abi_compat, __VERBS_ABI_IS_EXTENDED);
  verbs_context* v = verbs_get_ctx(ctx_);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->sz, sizeof(verbs_context));
  EXPECT_NE(verbs_get_ctx_op(ctx_, query_device_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, create_cq_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, create_qp_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, query_port), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, create_srq_ex), nullptr);
  EXPECT_NE(verbs_get_ctx_op(ctx_, close_xrcd), nullptr);  // the first op in memory order
  // Expect: every function pointer from query_port up to (excluding) priv, and after it up to
  // _ABI_placeholder3, is set.
  auto* p = reinterpret_cast<void**>(v);
  size_t n_before_priv = offsetof(verbs_context, priv) / sizeof(void*);
  for (size_t i = 0; i < n_before_priv; ++i) EXPECT_NE(p[i], nullptr) << "op slot " << i;
  for (size_t i = n_before_priv + 1; i < offsetof(verbs_context, _ABI_placeholder3) / sizeof(void*);
       ++i)
    EXPECT_NE(p[i], nullptr) << "op slot " << i;
  // Expect: every ibv_context_ops pointer is set.
  auto* o = reinterpret_cast<void**>(&ctx_->ops);
  for (size_t i = 0; i < sizeof(ibv_context_ops) / sizeof(void*); ++i)
    EXPECT_NE(o[i], nullptr) << "ibv_context_ops slot " << i;
}

TEST_F(AbiContext, UnsupportedOpsFailWithEopnotsupp) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  if (pd) {
    ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);  // supported since memory windows
    ASSERT_NE(mw, nullptr);
    EXPECT_EQ(ibv_dealloc_mw(mw), 0);
    errno = 0;
    EXPECT_EQ(ibv_alloc_mw(pd, static_cast<ibv_mw_type>(3)), nullptr);
    EXPECT_EQ(errno, EINVAL);
    ibv_wq_init_attr wa{};
    errno = 0;
    EXPECT_EQ(ibv_create_wq(ctx_, &wa), nullptr);
    EXPECT_EQ(errno, EOPNOTSUPP);
    EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  }
  // XRC is implemented (xrc_test.cc): an init attr without its fd and oflags is EINVAL, an
  // unknown comp_mask bit EOPNOTSUPP, as rdma-core's ibv_cmd_open_xrcd answers.
  ibv_xrcd_init_attr xa{};
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx_, &xa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  xa.comp_mask = IBV_XRCD_INIT_ATTR_RESERVED;
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx_, &xa), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_counters_init_attr ca{};
  EXPECT_EQ(ibv_create_counters(ctx_, &ca), nullptr);
  ibv_alloc_dm_attr da{};
  da.length = 64;
  EXPECT_EQ(ibv_alloc_dm(ctx_, &da), nullptr);
  errno = 0;
  EXPECT_EQ(ibv_import_device(3), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(AbiContext, UnimplementedPublicVerbsFailCleanly) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 3, IBV_ACCESS_LOCAL_WRITE), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_EQ(ibv_import_pd(ctx_, 1), nullptr);
  EXPECT_EQ(ibv_import_mr(pd, 1), nullptr);
  ibv_cq* cq = ibv_create_cq(ctx_, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  ASSERT_NE(qp, nullptr);
  ibv_gid g{};
  EXPECT_EQ(ibv_attach_mcast(qp, &g, 0), EOPNOTSUPP);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST(AbiVersions, CompatAndPrivateEntriesAreCallable) {
  void* h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  // The 1.0 compat ABI (old struct layouts) fails with ENOSYS; the 1.1 default works.
  using OpenFn = void* (*)(void*);
  auto open10 = reinterpret_cast<OpenFn>(dlvsym(h, "ibv_open_device", "IBVERBS_1.0"));
  auto open11 = reinterpret_cast<OpenFn>(dlvsym(h, "ibv_open_device", "IBVERBS_1.1"));
  ASSERT_NE(open10, nullptr);
  ASSERT_NE(open11, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(open10), reinterpret_cast<void*>(open11));
  errno = 0;
  EXPECT_EQ(open10(nullptr), nullptr);
  EXPECT_EQ(errno, ENOSYS);
  // Provider registration (from libmlx5/libefa constructors) is accepted; commands fail.
  std::string node = "IBVERBS_PRIVATE_" + std::to_string(UROCE_TEST_PRIVATE_ABI);
  std::string reg = "verbs_register_driver_" + std::to_string(UROCE_TEST_PRIVATE_ABI);
  auto reg_fn = reinterpret_cast<void (*)(const void*)>(dlvsym(h, reg.c_str(), node.c_str()));
  ASSERT_NE(reg_fn, nullptr);
  reg_fn(nullptr);
  auto cmd = reinterpret_cast<int (*)()>(dlvsym(h, "ibv_cmd_alloc_pd", node.c_str()));
  ASSERT_NE(cmd, nullptr);
  EXPECT_EQ(cmd(), EOPNOTSUPP);
  dlclose(h);
}

TEST_F(AbiContext, DeviceAndPortQueries) {
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  EXPECT_EQ(da.phys_port_cnt, 1);
  EXPECT_EQ(da.atomic_cap, IBV_ATOMIC_HCA);
  EXPECT_GT(da.max_qp_wr, 128);
  EXPECT_EQ(da.node_guid, ibv_get_device_guid(ctx_->device));
  EXPECT_NE(da.node_guid, 0u);
  ibv_device_attr_ex dx;
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &dx), 0);
  EXPECT_EQ(dx.orig_attr.max_qp, da.max_qp);
  EXPECT_EQ(dx.phys_port_cnt_ex, 1u);

  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(ctx_, 1, &pa), 0);
  EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(pa.active_mtu, IBV_MTU_1024);  // config.h default mtu of the built-in device
  EXPECT_EQ(pa.gid_tbl_len, 1);
  EXPECT_EQ(pa.pkey_tbl_len, 1);
  EXPECT_GT(ibv_rate_to_mbps(static_cast<ibv_rate>(IBV_RATE_100_GBPS)), 0);
  EXPECT_NE(ibv_query_port(ctx_, 2, &pa), 0);

  // GID 0: ::ffff:198.18.0.1, RoCE v2.
  ibv_gid gid;
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
  EXPECT_EQ(std::memcmp(gid.raw, want, 16), 0);
  EXPECT_EQ(ibv_query_gid(ctx_, 1, 1, &gid), -1);
  ibv_gid_entry e;
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(std::memcmp(e.gid.raw, want, 16), 0);
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 5, &e, 0), ENODATA);
  ibv_gid_entry table[4];
  EXPECT_EQ(ibv_query_gid_table(ctx_, table, 4, 0), 1);
  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
  EXPECT_EQ(be16toh(pkey), 0xffff);
  EXPECT_EQ(ibv_get_pkey_index(ctx_, 1, htobe16(0xffff)), 0);
}

TEST_F(AbiContext, VendorIdIsRxesNonOui) {
  // 0xFFFFFF (query.cc): non-zero, not Mellanox's 0x02c9 nor any other vendor's table entry.
  ibv_device_attr da;
  ASSERT_EQ(ibv_query_device(ctx_, &da), 0);
  EXPECT_EQ(da.vendor_id, 0xFFFFFFu);
  EXPECT_EQ(da.vendor_part_id, 1u);
  ibv_device_attr_ex dx;
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &dx), 0);
  EXPECT_EQ(dx.orig_attr.vendor_id, 0xFFFFFFu);
  EXPECT_EQ(dx.orig_attr.vendor_part_id, 1u);
}

TEST(AbiIdentity, CmdFdIsAnOpenDescriptorPerContextClosedAtClose) {
  ibv_context* a = open_builtin();
  ASSERT_NE(a, nullptr);
  ibv_context* b = open_builtin();
  ASSERT_NE(b, nullptr);
  // Expect: each context has its own open descriptor, close-on-exec, distinct from async_fd.
  ASSERT_GE(a->cmd_fd, 0);
  ASSERT_GE(b->cmd_fd, 0);
  EXPECT_NE(a->cmd_fd, b->cmd_fd);
  EXPECT_NE(a->cmd_fd, a->async_fd);
  int flags = fcntl(a->cmd_fd, F_GETFD);
  ASSERT_GE(flags, 0);
  EXPECT_TRUE(flags & FD_CLOEXEC);
  // Expect: the descriptor can be duplicated (rdma-core's suite does it to try an import).
  int dup_fd = dup(a->cmd_fd);
  ASSERT_GE(dup_fd, 0);
  // Expect: importing a context fails with EOPNOTSUPP and leaves the caller's fd open.
  errno = 0;
  EXPECT_EQ(ibv_import_device(dup_fd), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  EXPECT_GE(fcntl(dup_fd, F_GETFD), 0);
  EXPECT_EQ(close(dup_fd), 0);
  // Expect: ibv_close_device closes the context's cmd_fd and only that one.
  int a_fd = a->cmd_fd;
  ASSERT_EQ(ibv_close_device(a), 0);
  errno = 0;
  EXPECT_EQ(fcntl(a_fd, F_GETFD), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_GE(fcntl(b->cmd_fd, F_GETFD), 0);
  EXPECT_EQ(ibv_close_device(b), 0);
}

TEST_F(AbiContext, PortActiveAsyncEventOnPollableFd) {
  pollfd p{ctx_->async_fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 1000), 1);
  ibv_async_event ev;
  ASSERT_EQ(ibv_get_async_event(ctx_, &ev), 0);
  EXPECT_EQ(ev.event_type, IBV_EVENT_PORT_ACTIVE);
  EXPECT_EQ(ev.element.port_num, 1);
  ibv_ack_async_event(&ev);
}

TEST(AbiDevices, ListNamesAndClose) {
  use_builtin_config();
  int n = -1;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(list[1], nullptr);
  EXPECT_STREQ(ibv_get_device_name(list[0]), "uroce0");
  EXPECT_EQ(ibv_get_device_index(list[0]), 0);
  EXPECT_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
  ibv_context* c = ibv_open_device(list[0]);
  ibv_free_device_list(list);
  ASSERT_NE(c, nullptr);
  // As rdma-core: closing releases what is still open (a PD, a CQ, a QP) and succeeds.
  ibv_pd* pd = ibv_alloc_pd(c);
  ASSERT_NE(pd, nullptr);
  ibv_cq* cq = ibv_create_cq(c, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ASSERT_NE(ibv_create_qp(pd, &ia), nullptr);
  EXPECT_EQ(ibv_close_device(c), 0);
}

TEST(AbiStrings, HelpersPrintRdmaCoreTexts) {
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error");
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
  EXPECT_STREQ(ibv_wc_status_str(static_cast<ibv_wc_status>(999)), "unknown");
  EXPECT_STREQ(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter");
  EXPECT_STREQ(ibv_port_state_str(IBV_PORT_ACTIVE), "active");
  EXPECT_STREQ(ibv_event_type_str(IBV_EVENT_SRQ_LIMIT_REACHED), "SRQ limit reached");
  EXPECT_STREQ(ibv_event_type_str(IBV_EVENT_QP_LAST_WQE_REACHED), "last WQE reached");
  EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
  EXPECT_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
  EXPECT_EQ(mbps_to_ibv_rate(103125), IBV_RATE_100_GBPS);
  EXPECT_EQ(ibv_fork_init(), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
