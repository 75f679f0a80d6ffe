/**
 * @file xrc_test.cc
 * @brief XRC through the RDMA CM inside one process, on the built-in device (uroce0 on the
 * in-process loopback port, 198.18.0.1): rdma_create_ep's XRC endpoints as rdmacm-utils'
 * rdma_xserver/rdma_xclient -c x make them (RDMA_PS_IB; an XRC_RECV QP per request, its XRC SRQ
 * from rdma_create_srq; an XRC_SEND QP that sends to the SRQ number the server's accept carries)
 * connect and deliver a message; the device's XRC domain and the SRQ's CQ are filled in when the
 * program names none; a REQ whose transport does not match the listener's type is rejected.
 */
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace {

uint16_t next_port() {
  static std::atomic<uint16_t> port{static_cast<uint16_t>(30000 + getpid() % 20000)};
  return port++;
}

rdma_addrinfo* info(uint16_t port, bool passive, ibv_qp_type type) {
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_IB;
  hints.ai_qp_type = type;
  if (passive) hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* res = nullptr;
  const std::string p = std::to_string(port);
  EXPECT_EQ(rdma_getaddrinfo(passive ? nullptr : "198.18.0.1", p.c_str(), &hints, &res), 0)
      << strerror(errno);
  return res;
}

ibv_qp_state state_of(ibv_qp* qp, uint32_t* dest_qpn = nullptr) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  EXPECT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_DEST_QPN, &init), 0);
  if (dest_qpn) *dest_qpn = a.dest_qp_num;
  return a.qp_state;
}

class RdmacmXrc : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("UROCE_CONFIG"); }  // the built-in device
};

/// What rdma_xserver and rdma_xclient -c x do, step by step, with the checks they leave out.
TEST_F(RdmacmXrc, XserverAndXclientDeliverAMessageThroughTheXrcSrq) {
  const uint16_t port = next_port();
  rdma_addrinfo* sres = info(port, true, IBV_QPT_XRC_RECV);
  ASSERT_NE(sres, nullptr);
  ibv_qp_init_attr sa{};
  sa.cap.max_recv_wr = 1;
  sa.cap.max_recv_sge = 1;
  rdma_cm_id* listen = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen, sres, nullptr, &sa), 0) << strerror(errno);
  rdma_freeaddrinfo(sres);
  ASSERT_EQ(rdma_listen(listen, 0), 0) << strerror(errno);

  std::atomic<uint32_t> server_qpn{0}, client_qpn_seen{0};
  std::thread srv([&] {
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_get_request(listen, &id), 0) << strerror(errno);
    ASSERT_NE(id->qp, nullptr);
    EXPECT_EQ(id->qp_type, IBV_QPT_XRC_RECV);
    EXPECT_EQ(id->qp->qp_type, IBV_QPT_XRC_RECV);
    EXPECT_NE(id->pd, nullptr) << "the id keeps a PD for rdma_reg_msgs";
    client_qpn_seen = id->event->param.conn.qp_num;
    server_qpn = id->qp->qp_num;
    ibv_srq_init_attr attr{};
    attr.attr.max_wr = 1;
    attr.attr.max_sge = 1;
    attr.srq_context = id;
    ASSERT_EQ(rdma_create_srq(id, nullptr, &attr), 0) << strerror(errno);
    ASSERT_NE(id->srq, nullptr);
    uint32_t srqn = 0;
    ASSERT_EQ(ibv_get_srq_num(id->srq, &srqn), 0) << "an XRC SRQ";
    const uint32_t wire_srqn = htonl(srqn);
    uint8_t msg[16] = {};
    ibv_mr* mr = rdma_reg_msgs(id, msg, sizeof msg);
    ASSERT_NE(mr, nullptr);
    ASSERT_EQ(rdma_post_recv(id, nullptr, msg, sizeof msg, mr), 0);  // to the SRQ
    rdma_conn_param param{};
    param.private_data = &wire_srqn;
    param.private_data_len = sizeof wire_srqn;
    ASSERT_EQ(rdma_accept(id, &param), 0) << strerror(errno);
    EXPECT_EQ(state_of(id->qp), IBV_QPS_RTS);
    ibv_wc wc{};
    ASSERT_EQ(rdma_get_recv_comp(id, &wc), 1);
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
    EXPECT_EQ(wc.byte_len, sizeof msg);
    EXPECT_EQ(msg[0], 'x');
    EXPECT_EQ(msg[15], 't');
    rdma_disconnect(id);
    rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
  });

  rdma_addrinfo* cres = info(port, false, IBV_QPT_XRC_SEND);
  ASSERT_NE(cres, nullptr);
  ibv_qp_init_attr ca{};
  ca.cap.max_send_wr = 1;
  ca.cap.max_send_sge = 1;
  ca.sq_sig_all = 1;
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, cres, nullptr, &ca), 0) << strerror(errno);
  rdma_freeaddrinfo(cres);
  ASSERT_NE(id->qp, nullptr);
  EXPECT_EQ(id->qp->qp_type, IBV_QPT_XRC_SEND);
  EXPECT_EQ(id->recv_cq, nullptr) << "an initiator has no receive side";
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << strerror(errno);
  ASSERT_NE(id->event, nullptr);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_GE(id->event->param.conn.private_data_len, 4);
  uint32_t srqn = 0;
  std::memcpy(&srqn, id->event->param.conn.private_data, 4);
  srqn = ntohl(srqn);
  // The REP named the server's XRC_RECV QP (as its EECN): the event and the QP's RTR say so.
  EXPECT_EQ(id->event->param.conn.qp_num, server_qpn.load());
  uint32_t dest = 0;
  EXPECT_EQ(state_of(id->qp, &dest), IBV_QPS_RTS);
  EXPECT_EQ(dest, server_qpn.load());

  char msg[16];
  std::memcpy(msg, "xrc from xclient", sizeof msg);
  ibv_sge sge{reinterpret_cast<uintptr_t>(msg), sizeof msg, 0};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE;
  wr.qp_type.xrc.remote_srqn = srqn;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(id->qp, &wr, &bad), 0);
  ibv_wc wc{};
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  srv.join();
  EXPECT_EQ(client_qpn_seen.load(), id->qp->qp_num) << "the REQ named the client's QP";
  rdma_disconnect(id);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen);
}

/// An XRC_RECV id bound to the device: its QP and SRQ take the device's XRC domain, the SRQ
/// completes on the id's receive CQ, and the CQ goes with the SRQ.
TEST_F(RdmacmXrc, TheDevicesDomainAndTheIdsCqAreFilledIn) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(0xc6120001);  // 198.18.0.1
  rdma_cm_id* ids[2] = {};
  for (rdma_cm_id*& id : ids) {
    ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_IB), 0);
    id->qp_type = IBV_QPT_XRC_RECV;  // as rdma_create_ep sets it from ai_qp_type
    ASSERT_EQ(rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&addr)), 0) << strerror(errno);
  }
  ibv_srq_init_attr_ex ex{};
  ex.attr.max_wr = 4;
  ex.attr.max_sge = 1;
  ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
  ex.srq_type = IBV_SRQT_XRC;
  ASSERT_EQ(rdma_create_srq_ex(ids[0], &ex), 0) << strerror(errno);
  EXPECT_EQ(ex.comp_mask & (IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD),
            uint32_t{IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD});
  ASSERT_NE(ex.xrcd, nullptr);
  ASSERT_NE(ids[0]->recv_cq, nullptr);
  EXPECT_EQ(ex.cq, ids[0]->recv_cq);
  EXPECT_NE(ids[0]->recv_cq_channel, nullptr);
  ibv_srq_init_attr_ex ex2 = ex;
  ex2.comp_mask = IBV_SRQ_INIT_ATTR_TYPE;
  ex2.xrcd = nullptr;
  ex2.cq = nullptr;
  ASSERT_EQ(rdma_create_srq_ex(ids[1], &ex2), 0) << strerror(errno);
  EXPECT_EQ(ex2.xrcd, ex.xrcd) << "one domain per device";

  // A QP on the first id: the SRQ's CQ is the id's; destroying the QP leaves it to the SRQ.
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_XRC_RECV;
  qa.cap.max_recv_wr = 1;
  ASSERT_EQ(rdma_create_qp(ids[0], nullptr, &qa), 0) << strerror(errno);
  EXPECT_EQ(ids[0]->qp->qp_type, IBV_QPT_XRC_RECV);
  EXPECT_EQ(state_of(ids[0]->qp), IBV_QPS_INIT);
  ibv_cq* cq = ids[0]->recv_cq;
  rdma_destroy_qp(ids[0]);
  EXPECT_EQ(ids[0]->recv_cq, cq);
  rdma_destroy_srq(ids[0]);
  EXPECT_EQ(ids[0]->recv_cq, nullptr);
  EXPECT_EQ(ids[0]->recv_cq_channel, nullptr);
  for (rdma_cm_id* id : ids) rdma_destroy_ep(id);
}

/// A client of one type against a listener of the other: REJ, so rdma_connect fails with
/// ECONNREFUSED, as the kernel's RDMA CM answers (cma_ib_check_req_qp_type).
TEST_F(RdmacmXrc, ARequestOfTheOtherTransportIsRejected) {
  const std::pair<ibv_qp_type, ibv_qp_type> cases[] = {{IBV_QPT_RC, IBV_QPT_XRC_SEND},
                                                       {IBV_QPT_XRC_RECV, IBV_QPT_RC}};
  for (auto [server_type, client_type] : cases) {
    const uint16_t port = next_port();
    rdma_addrinfo* sres = info(port, true, server_type);
    ASSERT_NE(sres, nullptr);
    ibv_qp_init_attr sa{};
    sa.cap.max_recv_wr = sa.cap.max_send_wr = 1;
    sa.cap.max_recv_sge = sa.cap.max_send_sge = 1;
    rdma_cm_id* listen = nullptr;
    ASSERT_EQ(rdma_create_ep(&listen, sres, nullptr, &sa), 0) << strerror(errno);
    rdma_freeaddrinfo(sres);
    ASSERT_EQ(rdma_listen(listen, 0), 0);
    rdma_addrinfo* cres = info(port, false, client_type);
    ASSERT_NE(cres, nullptr);
    ibv_qp_init_attr ca{};
    ca.cap.max_send_wr = 1;
    ca.cap.max_send_sge = 1;
    if (client_type == IBV_QPT_RC) {
      ca.cap.max_recv_wr = 1;
      ca.cap.max_recv_sge = 1;
    }
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_create_ep(&id, cres, nullptr, &ca), 0) << strerror(errno);
    rdma_freeaddrinfo(cres);
    errno = 0;
    EXPECT_EQ(rdma_connect(id, nullptr), -1) << "client type " << client_type;
    EXPECT_EQ(errno, ECONNREFUSED);
    rdma_destroy_ep(id);
    rdma_destroy_ep(listen);
  }
}

}  // namespace
