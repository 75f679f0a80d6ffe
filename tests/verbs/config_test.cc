/**
 * @file config_test.cc
 * @brief Devices from a configuration file ($UROCE_CONFIG): listing reads the file and opens
 * no port (no EAL thread appears for a DPDK device), the GID table has one RoCEv2 GID per
 * address (IPv4-mapped and IPv6), and RC traffic runs over the IPv6 GID on loopback, also
 * with a path MTU above the link's (sent at the link's, as rxe and mlx5 take it).
 */
#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

std::string write_config() {
  return write_temp_config(
      "[[device]]\n"
      "name = \"uroce_lo\"\n"
      "port = \"loopback\"\n"
      "addresses = [\"198.18.0.7/15\", \"fd00:198:18::7/64\"]\n"
      "mtu = 2048\n"
      "\n"
      "[[device]]\n"
      "name = \"uroce_dpdk\"\n"
      "port = \"net_null0\"\n"
      "addresses = [\"198.18.0.8/15\"]\n");
}

/// Names of this process's threads.
std::vector<std::string> thread_names() {
  std::vector<std::string> out;
  DIR* d = opendir("/proc/self/task");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string n;
    std::getline(f, n);
    out.push_back(n);
  }
  closedir(d);
  return out;
}

/// RC WRITE of 5000 bytes between two QPs of ctx addressed by its IPv6 GID (index 1),
/// both moved to RTR with path_mtu; the bytes must arrive.
void rc_write_over_ipv6(ibv_context* ctx, ibv_mtu path_mtu) {
  ibv_gid v6;
  ASSERT_EQ(ibv_query_gid(ctx, 1, 1, &v6), 0);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(pd, nullptr);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* a = ibv_create_qp(pd, &ia);
  ibv_qp* b = ibv_create_qp(pd, &ia);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  for (auto [q, dest] : {std::pair{a, b}, std::pair{b, a}}) {
    ibv_qp_attr at{};
    at.qp_state = IBV_QPS_INIT;
    at.port_num = 1;
    at.qp_access_flags = kAllAccess;
    ASSERT_EQ(
        ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
        0);
    std::memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_RTR;
    at.path_mtu = path_mtu;
    at.dest_qp_num = dest->qp_num;
    at.max_dest_rd_atomic = 1;
    at.ah_attr.is_global = 1;
    at.ah_attr.grh.dgid = v6;
    at.ah_attr.grh.sgid_index = 1;
    at.ah_attr.port_num = 1;
    ASSERT_EQ(ibv_modify_qp(q, &at,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
              0);
    std::memset(&at, 0, sizeof at);
    at.qp_state = IBV_QPS_RTS;
    at.timeout = 14;
    at.retry_cnt = 7;
    at.rnr_retry = 7;
    at.max_rd_atomic = 1;
    ASSERT_EQ(ibv_modify_qp(q, &at,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
              0);
  }
  {
    Buffer src(pd, 5000, kAllAccess);
    Buffer dst(pd, 5000, kAllAccess);
    fill_pattern(src.bytes, 66);
    ibv_sge sge{src.addr(), 5000, src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = dst.addr();
    wr.wr.rdma.rkey = dst.mr->rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    auto wcs = poll_n(cq, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
    EXPECT_EQ(dst.bytes, src.bytes);
  }
  EXPECT_EQ(ibv_destroy_qp(a), 0);
  EXPECT_EQ(ibv_destroy_qp(b), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

class ConfigTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("UROCE_CONFIG", write_config().c_str(), 1); }
  static void TearDownTestSuite() { unsetenv("UROCE_CONFIG"); }
  ibv_context* open_named(const char* name) {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) return nullptr;
    ibv_context* c = nullptr;
    for (int i = 0; i < n; ++i)
      if (!std::strcmp(ibv_get_device_name(list[i]), name)) c = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    return c;
  }
};

TEST_F(ConfigTest, ListingReadsTheFileAndStartsNoEal) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(n, 2);
  EXPECT_STREQ(ibv_get_device_name(list[0]), "uroce_lo");
  EXPECT_STREQ(ibv_get_device_name(list[1]), "uroce_dpdk");
  EXPECT_NE(ibv_get_device_guid(list[0]), ibv_get_device_guid(list[1]));
  ibv_free_device_list(list);
  for (const auto& t : thread_names()) {
    EXPECT_EQ(t.find("eal-intr"), std::string::npos) << t;
    EXPECT_EQ(t.find("uroce-progress"), std::string::npos) << t;
  }
}

TEST_F(ConfigTest, GidTablePerAddressAndRcOverIpv6) {
  ibv_context* ctx = open_named("uroce_lo");
  ASSERT_NE(ctx, nullptr);
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(ctx, 1, &pa), 0);
  EXPECT_EQ(pa.active_mtu, IBV_MTU_2048);
  EXPECT_EQ(pa.gid_tbl_len, 2);
  ibv_gid_entry e[2];
  ASSERT_EQ(ibv_query_gid_table(ctx, e, 2, 0), 2);
  const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 7};
  const uint8_t v6[16] = {0xfd, 0, 0x01, 0x98, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
  EXPECT_EQ(std::memcmp(e[0].gid.raw, v4, 16), 0);
  EXPECT_EQ(std::memcmp(e[1].gid.raw, v6, 16), 0);
  EXPECT_EQ(e[0].gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(e[1].gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(e[1].gid_index, 1u);

  // RC WRITE between two QPs addressed by the IPv6 GID (sgid_index 1).
  rc_write_over_ipv6(ctx, IBV_MTU_2048);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(ConfigTest, APathMtuAboveTheLinksIsTakenAndSentAtTheLinks) {
  // rxe and mlx5 take any path MTU up to the port's max_mtu (4096); this link carries
  // 2048: the QP keeps 4096 and sends packets of 2048.
  ibv_context* ctx = open_named("uroce_lo");
  ASSERT_NE(ctx, nullptr);
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(ctx, 1, &pa), 0);
  EXPECT_EQ(pa.max_mtu, IBV_MTU_4096);
  rc_write_over_ipv6(ctx, IBV_MTU_4096);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST_F(ConfigTest, UdOverIpv6CarriesAnIpv6Grh) {
  ibv_context* ctx = open_named("uroce_lo");
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ASSERT_NE(pd, nullptr);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* a = ibv_create_qp(pd, &ia);
  ibv_qp* b = ibv_create_qp(pd, &ia);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(connect_qp(ctx, a, 0, 1, 0), 0);
  ASSERT_EQ(connect_qp(ctx, b, 0, 1, 0), 0);
  ibv_ah_attr aa{};
  aa.is_global = 1;
  ASSERT_EQ(ibv_query_gid(ctx, 1, 1, &aa.grh.dgid), 0);  // the IPv6 GID
  aa.grh.sgid_index = 1;
  aa.grh.hop_limit = 64;
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd, &aa);
  ASSERT_NE(ah, nullptr);
  {
    Buffer src(pd, 100, kAllAccess);
    Buffer dst(pd, 140, kAllAccess);
    fill_pattern(src.bytes, 12);
    ibv_sge rs{dst.addr(), 140, dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(0, &rs);
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(b, &rwr, &rbad), 0);
    ibv_sge sge{src.addr(), 100, src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b->qp_num;
    wr.wr.ud.remote_qkey = 0x11111111;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
    auto wcs = poll_n(cq, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
    EXPECT_EQ(wcs[0].src_qp, a->qp_num);
    EXPECT_EQ(wcs[0].sl, 0x8 | 0x1);  // RoCE packet type (cq.cc): UDP | IPv6
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 40, src.bytes.data(), 100), 0);
    // An IPv6 GRH: version 6, source and destination the IPv6 GID.
    auto* grh = reinterpret_cast<ibv_grh*>(dst.bytes.data());
    EXPECT_EQ(be32toh(grh->version_tclass_flow) >> 28, 6u);
    EXPECT_EQ(std::memcmp(grh->sgid.raw, aa.grh.dgid.raw, 16), 0);
    EXPECT_EQ(std::memcmp(grh->dgid.raw, aa.grh.dgid.raw, 16), 0);
    ibv_ah_attr back;
    ASSERT_EQ(ibv_init_ah_from_wc(ctx, 1, &wcs[0], grh, &back), 0);
    EXPECT_EQ(back.grh.sgid_index, 1);
    EXPECT_EQ(std::memcmp(back.grh.dgid.raw, aa.grh.dgid.raw, 16), 0);
  }
  EXPECT_EQ(ibv_destroy_ah(ah), 0);
  EXPECT_EQ(ibv_destroy_qp(a), 0);
  EXPECT_EQ(ibv_destroy_qp(b), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

}  // namespace
}  // namespace uroce::verbs_test
