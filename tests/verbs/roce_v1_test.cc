/**
 * @file roce_v1_test.cc
 * @brief [device] roce_v1 = true ($UROCE_CONFIG, loopback port): the GID table shows a RoCE v1
 * GID after the RoCEv2 ones (docs/configuration.md), each query reports its type, and RC, UC and
 * UD run over a RoCE v1 source GID (the UD GRH is RoCE v1's: NxtHdr 0x1B); an RC QP on RoCE v1
 * does not talk to one on RoCEv2.
 */
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "verbs_fixture.h"

// rdma-core's private query (driver.h): 0 = IB/RoCE v1, 1 = RoCE v2.
extern "C" int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index,
                                  int* type);

namespace uroce::verbs_test {
namespace {

const uint8_t kV4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 9};
const uint8_t kV6[16] = {0xfd, 0, 0x01, 0x98, 0, 0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9};

std::string write_config() {
  return write_temp_config(
      "[[device]]\n"
      "name = \"uroce_v1\"\n"
      "port = \"loopback\"\n"
      "addresses = [\"198.18.0.9/15\", \"fd00:198:18::9/64\"]\n"
      "roce_v1 = true\n");
}

/// Moves qp to RTS towards dest_qpn at dgid, from GID index sgid (RC/UC), or to RTS (UD).
int bring_up(ibv_qp* qp, uint32_t dest_qpn, uint8_t sgid, const uint8_t* dgid, uint8_t timeout = 14,
             uint8_t retry_cnt = 7) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (qp->qp_type == IBV_QPT_UD) {
    a.qkey = 0x11111111;
    mask |= IBV_QP_QKEY;
  } else {
    a.qp_access_flags = kAllAccess;
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  if (int r = ibv_modify_qp(qp, &a, mask)) return r;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  mask = IBV_QP_STATE;
  if (qp->qp_type != IBV_QPT_UD) {
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
    a.ah_attr.grh.sgid_index = sgid;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (qp->qp_type == IBV_QPT_RC) {
      a.max_dest_rd_atomic = 1;
      a.min_rnr_timer = 1;
      mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
  }
  if (int r = ibv_modify_qp(qp, &a, mask)) return r;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (qp->qp_type == IBV_QPT_RC) {
    a.timeout = timeout;
    a.retry_cnt = retry_cnt;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  }
  return ibv_modify_qp(qp, &a, mask);
}

class RoceV1Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("UROCE_CONFIG", write_config().c_str(), 1); }
  static void TearDownTestSuite() { unsetenv("UROCE_CONFIG"); }

  void SetUp() override {
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    ASSERT_EQ(n, 1);
    ctx_ = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    cq_ = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
    ASSERT_NE(pd_, nullptr);
    ASSERT_NE(cq_, nullptr);
  }
  void TearDown() override {
    for (ibv_qp* q : qps_) {
      EXPECT_EQ(ibv_destroy_qp(q), 0);
    }
    if (cq_) {
      EXPECT_EQ(ibv_destroy_cq(cq_), 0);
    }
    if (pd_) {
      EXPECT_EQ(ibv_dealloc_pd(pd_), 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }
  ibv_qp* qp(ibv_qp_type type) {
    ibv_qp_init_attr ia{};
    ia.send_cq = ia.recv_cq = cq_;
    ia.qp_type = type;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    ibv_qp* q = ibv_create_qp(pd_, &ia);
    if (q) qps_.push_back(q);
    return q;
  }

  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
};

TEST_F(RoceV1Test, GidTableHasRoceV1EntriesAfterTheRoceV2Ones) {
  ibv_port_attr pa;
  ASSERT_EQ(ibv_query_port(ctx_, 1, &pa), 0);
  EXPECT_EQ(pa.gid_tbl_len, 4);
  ibv_gid_entry e[4];
  ASSERT_EQ(ibv_query_gid_table(ctx_, e, 4, 0), 4);
  const uint8_t* want[4] = {kV4, kV6, kV4, kV6};
  for (uint32_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(e[i].gid_index, i);
    EXPECT_EQ(std::memcmp(e[i].gid.raw, want[i], 16), 0);
    const uint32_t type = i < 2 ? IBV_GID_TYPE_ROCE_V2 : IBV_GID_TYPE_ROCE_V1;
    EXPECT_EQ(e[i].gid_type, type);
    ibv_gid_entry one;
    ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, i, &one, 0), 0);
    EXPECT_EQ(one.gid_type, type);
    int t = -1;
    ASSERT_EQ(ibv_query_gid_type(ctx_, 1, i, &t), 0);
    EXPECT_EQ(t, i < 2 ? 1 : 0);
    ibv_gid g;
    ASSERT_EQ(ibv_query_gid(ctx_, 1, static_cast<int>(i), &g), 0);
    EXPECT_EQ(std::memcmp(g.raw, want[i], 16), 0);
  }
  int t = -1;
  EXPECT_EQ(ibv_query_gid_type(ctx_, 1, 4, &t), -1);
  ibv_gid_entry past;
  EXPECT_EQ(ibv_query_gid_ex(ctx_, 1, 4, &past, 0), ENODATA);
}

TEST_F(RoceV1Test, RcAndUcOverRoceV1MoveTheData) {
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC}) {
    for (uint8_t sgid : {uint8_t{2}, uint8_t{3}}) {  // RoCE v1 over IPv4-mapped and IPv6 GIDs
      SCOPED_TRACE(testing::Message() << "type " << type << " sgid " << int{sgid});
      const uint8_t* dgid = sgid == 2 ? kV4 : kV6;
      ibv_qp* a = qp(type);
      ibv_qp* b = qp(type);
      ASSERT_NE(a, nullptr);
      ASSERT_NE(b, nullptr);
      ASSERT_EQ(bring_up(a, b->qp_num, sgid, dgid), 0);
      ASSERT_EQ(bring_up(b, a->qp_num, sgid, dgid), 0);
      Buffer src(pd_, 3000, kAllAccess);
      Buffer dst(pd_, 3000, kAllAccess);
      fill_pattern(src.bytes, sgid + 7u * static_cast<uint32_t>(type));
      ibv_sge sge{src.addr(), 3000, src.mr->lkey};
      ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, dst.addr(), dst.mr->rkey);
      wr.send_flags = IBV_SEND_SIGNALED;
      ibv_send_wr* bad = nullptr;
      ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
      auto wcs = poll_n(cq_, 1);
      ASSERT_EQ(wcs.size(), 1u);
      EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(wcs[0].status);
      if (type == IBV_QPT_UC) {
        // UC completes on send; the data has landed once a SEND after it arrives.
        Buffer one(pd_, 4, kAllAccess);
        ibv_sge rs{one.addr(), 4, one.mr->lkey};
        ibv_recv_wr rwr = recv_wr(9, &rs);
        ibv_recv_wr* rbad = nullptr;
        ASSERT_EQ(ibv_post_recv(b, &rwr, &rbad), 0);
        ibv_sge ss{src.addr(), 4, src.mr->lkey};
        ibv_send_wr s{};
        s.sg_list = &ss;
        s.num_sge = 1;
        s.opcode = IBV_WR_SEND;
        ASSERT_EQ(ibv_post_send(a, &s, &bad), 0);
        auto r = poll_n(cq_, 1);
        ASSERT_EQ(r.size(), 1u);
        EXPECT_EQ(r[0].status, IBV_WC_SUCCESS);
        EXPECT_EQ(r[0].wr_id, 9u);
      }
      EXPECT_EQ(dst.bytes, src.bytes);
    }
  }
}

TEST_F(RoceV1Test, UdOverRoceV1CarriesItsGrh) {
  ibv_qp* a = qp(IBV_QPT_UD);
  ibv_qp* b = qp(IBV_QPT_UD);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(bring_up(a, 0, 0, nullptr), 0);
  ASSERT_EQ(bring_up(b, 0, 0, nullptr), 0);
  for (uint8_t sgid : {uint8_t{2}, uint8_t{0}}) {  // RoCE v1, then RoCEv2 to the same QP
    SCOPED_TRACE(int{sgid});
    ibv_ah_attr aa{};
    aa.is_global = 1;
    std::memcpy(aa.grh.dgid.raw, kV4, 16);
    aa.grh.sgid_index = sgid;
    aa.grh.hop_limit = 9;
    aa.grh.traffic_class = 0x68;
    aa.port_num = 1;
    ibv_ah* ah = ibv_create_ah(pd_, &aa);
    ASSERT_NE(ah, nullptr);
    Buffer src(pd_, 100, kAllAccess);
    Buffer dst(pd_, 140, kAllAccess);
    fill_pattern(src.bytes, 40u + sgid);
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
    auto wcs = poll_n(cq_, 1);  // the receive (the send is unsignaled)
    ASSERT_EQ(wcs.size(), 1u);
    ibv_wc rx = wcs[0];
    EXPECT_EQ(rx.qp_num, b->qp_num);
    EXPECT_EQ(rx.status, IBV_WC_SUCCESS);
    EXPECT_EQ(rx.src_qp, a->qp_num);
    EXPECT_EQ(std::memcmp(dst.bytes.data() + 40, src.bytes.data(), 100), 0);
    if (sgid == 2) {
      // RoCE v1: the packet type is "GRH, no UDP" (cq.cc), and the 40 bytes are the GRH as
      // sent: IPVer 6, TClass, PayLen (BTH 12 + DETH 8 + 100 + ICRC 4), NxtHdr 0x1B, HopLmt,
      // and the IPv4-mapped GIDs.
      EXPECT_EQ(rx.sl, 0);
      auto* grh = reinterpret_cast<ibv_grh*>(dst.bytes.data());
      const uint32_t vtf = be32toh(grh->version_tclass_flow);
      EXPECT_EQ(vtf >> 28, 6u);
      EXPECT_EQ((vtf >> 20) & 0xfc, 0x68u);
      EXPECT_EQ(be16toh(grh->paylen), 12 + 8 + 100 + 4);
      EXPECT_EQ(grh->next_hdr, 0x1b);
      EXPECT_EQ(grh->hop_limit, 9);
      EXPECT_EQ(std::memcmp(grh->sgid.raw, kV4, 16), 0);
      EXPECT_EQ(std::memcmp(grh->dgid.raw, kV4, 16), 0);
      ibv_ah_attr back;
      ASSERT_EQ(ibv_init_ah_from_wc(ctx_, 1, &rx, grh, &back), 0);
      EXPECT_EQ(back.grh.sgid_index, 2);  // the reply goes out as RoCE v1 too
    } else {
      EXPECT_EQ(rx.sl, 0x8 | 0x2);  // UDP | IPv4
      ibv_ah_attr back;
      ASSERT_EQ(
          ibv_init_ah_from_wc(ctx_, 1, &rx, reinterpret_cast<ibv_grh*>(dst.bytes.data()), &back),
          0);
      EXPECT_EQ(back.grh.sgid_index, 0);
    }
    EXPECT_EQ(ibv_destroy_ah(ah), 0);
  }
}

TEST_F(RoceV1Test, RcOnRoceV1DoesNotTalkToRcOnRoceV2) {
  // a sends RoCE v1 (GID 2), b expects RoCEv2 (GID 0) from the same address: b drops a's
  // frames, a's WRITE is never acknowledged and fails once its retries are spent.
  ibv_qp* a = qp(IBV_QPT_RC);
  ibv_qp* b = qp(IBV_QPT_RC);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(bring_up(a, b->qp_num, 2, kV4, /*timeout=*/8, /*retry_cnt=*/1), 0);
  ASSERT_EQ(bring_up(b, a->qp_num, 0, kV4), 0);
  Buffer src(pd_, 64, kAllAccess);
  Buffer dst(pd_, 64, kAllAccess);
  fill_pattern(src.bytes, 5);
  const std::vector<uint8_t> before = dst.bytes;
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr wr = rdma_wr(IBV_WR_RDMA_WRITE, &sge, dst.addr(), dst.mr->rkey);
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a, &wr, &bad), 0);
  auto wcs = poll_n(cq_, 1, 10000);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(wcs[0].status);
  EXPECT_EQ(dst.bytes, before);
}

}  // namespace
}  // namespace uroce::verbs_test
