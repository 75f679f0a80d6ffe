/**
 * @file qp_attr_test.cc
 * @brief rdma_init_qp_attr's computation (lib/rdmacm/qp_attr.h): the attributes and masks
 * that move an id's QP to INIT, RTR and RTS for the connection the CM negotiated, connected
 * (RC and both ends of XRC) and UD, before and after a peer is known.
 */
#include "rdmacm/qp_attr.h"

#include <gtest/gtest.h>

namespace uroce::rdmacm {
namespace {

/// A connected id after the REP: peer QPN 0x22 starting at PSN 0x4321, our PSN 0x1234, 4
/// responder resources, initiator depth 2, path MTU 4096, GID index 1, TOS 0x60.
Id connected() {
  Id id;
  id.id.ps = RDMA_PS_TCP;
  id.id.qp_type = IBV_QPT_RC;
  id.id.port_num = 1;
  id.state = IdState::kConnResp;
  id.remote_qpn = 0x22;
  id.remote_psn = 0x4321;
  id.local_psn = 0x1234;
  id.responder_resources = 4;
  id.initiator_depth = 2;
  id.path_mtu = IBV_MTU_4096;
  id.sgid_index = 1;
  id.tos = 0x60;
  id.dgid = Gid::from_ipv4(0xc6120001u);
  id.retry_count = 6;
  id.rnr_retry = 5;
  return id;
}

TEST(RdmacmQpAttr, ConnectedInitRtrRts) {
  Id id = connected();
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  EXPECT_EQ(a.qp_access_flags,
            unsigned{IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC});
  EXPECT_EQ(a.port_num, 1);
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  EXPECT_EQ(a.dest_qp_num, 0x22u);
  EXPECT_EQ(a.rq_psn, 0x1234u);  // our REQ/REP's starting PSN is where our RQ starts
  EXPECT_EQ(a.path_mtu, IBV_MTU_4096);
  EXPECT_EQ(a.max_dest_rd_atomic, 4);
  EXPECT_EQ(a.ah_attr.is_global, 1);
  EXPECT_EQ(a.ah_attr.grh.sgid_index, 1);
  EXPECT_EQ(a.ah_attr.grh.traffic_class, 0x60);
  EXPECT_EQ(a.ah_attr.grh.dgid.raw[15], 1);
  EXPECT_EQ(a.ah_attr.grh.dgid.raw[10], 0xff);
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  EXPECT_EQ(a.sq_psn, 0x4321u);  // and the peer's is where our SQ starts (as the kernel CM)
  EXPECT_EQ(a.max_rd_atomic, 2);
  EXPECT_EQ(a.retry_cnt, 6);
  EXPECT_EQ(a.rnr_retry, 5);
  EXPECT_EQ(a.timeout, kLocalAckTimeout);
}

TEST(RdmacmQpAttr, AckTimeoutOptionSetsTheRtsTimeout) {
  Id id = connected();
  id.ack_timeout = 21;  // rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_TRUE(mask & IBV_QP_TIMEOUT);
  EXPECT_EQ(a.timeout, 21);
}

TEST(RdmacmQpAttr, BeforeAPeerOnlyInitWithoutRemoteAccess) {
  Id id = connected();
  id.state = IdState::kRouteResolved;
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(a.qp_access_flags, 0u);
  a.qp_state = IBV_QPS_RTR;
  EXPECT_EQ(init_qp_attr(id, &a, &mask), EINVAL);
  a.qp_state = IBV_QPS_SQD;
  EXPECT_EQ(init_qp_attr(id, &a, &mask), EINVAL);
}

TEST(RdmacmQpAttr, XrcMasksAreTheKernelCmsForInitiatorAndTarget) {
  // Initiator (XRC_SEND, IB_QPT_XRC_INI): RTR without the responder side, RTS as RC.
  Id id = connected();
  id.id.ps = RDMA_PS_IB;
  id.id.qp_type = IBV_QPT_XRC_SEND;
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN);
  EXPECT_EQ(a.dest_qp_num, 0x22u);
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
  // Target (XRC_RECV, IB_QPT_XRC_TGT): RTR as RC, RTS with the SQ PSN and ACK timeout only.
  id.id.qp_type = IBV_QPT_XRC_RECV;
  id.state = IdState::kReqRcvd;
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
  EXPECT_EQ(a.max_dest_rd_atomic, 4);
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
  EXPECT_EQ(a.sq_psn, 0x4321u);
  EXPECT_EQ(a.timeout, kLocalAckTimeout);
}

TEST(RdmacmQpAttr, UdUsesTheUdpPortSpaceQkeyAndPsnZero) {
  Id id;
  id.id.ps = RDMA_PS_UDP;
  id.id.qp_type = IBV_QPT_UD;
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  EXPECT_EQ(a.qkey, uint32_t{RDMA_UDP_QKEY});
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE);
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(init_qp_attr(id, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_SQ_PSN);
  EXPECT_EQ(a.sq_psn, 0u);
}

}  // namespace
}  // namespace uroce::rdmacm
