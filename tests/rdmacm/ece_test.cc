/**
 * @file ece_test.cc
 * @brief ECE through the RDMA CM inside one process, on the built-in device (uroce0 on the
 * in-process loopback port, 198.18.0.1): QPs made by rdma_create_ep offer selective repeat, the
 * REQ and REP carry it, both ends find the other's offer in rdma_get_remote_ece and end with
 * selective repeat on their QPs (ibv_query_ece), and a WRITE moves its bytes; an active side
 * that offers nothing (rdma_set_local_ece with no options) leaves both QPs on go-back-N.
 */
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr uint32_t kVendor = 0xFFFFFF;  // uroce's (lib/verbs/identity.h)
constexpr uint32_t kOffered = 1 | 2;    // selective repeat, peer timestamps

uint16_t next_port() {
  static std::atomic<uint16_t> port{static_cast<uint16_t>(30000 + getpid() % 20000)};
  return port++;
}

rdma_addrinfo* info(uint16_t port, bool passive) {
  rdma_addrinfo hints{};
  hints.ai_port_space = RDMA_PS_TCP;
  if (passive) hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* res = nullptr;
  const std::string p = std::to_string(port);
  EXPECT_EQ(rdma_getaddrinfo("198.18.0.1", p.c_str(), &hints, &res), 0) << strerror(errno);
  return res;
}

ibv_qp_init_attr qp_attr() {
  ibv_qp_init_attr a{};
  a.cap.max_send_wr = a.cap.max_recv_wr = 8;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_RC;
  a.sq_sig_all = 1;
  return a;
}

uint32_t qp_options(rdma_cm_id* id) {
  ibv_ece e{};
  EXPECT_EQ(ibv_query_ece(id->qp, &e), 0);
  EXPECT_EQ(e.vendor_id, kVendor);
  return e.options;
}

struct Outcome {
  ibv_ece remote{};
  uint32_t options = 0xdead;
};

/// Server: accepts one connection and reports what it saw; client_offer: what the client
/// sets with rdma_set_local_ece (nullptr: the QP's own offer).
void run(const ibv_ece* client_offer, Outcome* server, Outcome* client) {
  unsetenv("UROCE_CONFIG");  // the built-in device
  const uint16_t port = next_port();
  rdma_addrinfo* sres = info(port, true);
  ASSERT_NE(sres, nullptr);
  ibv_qp_init_attr sa = qp_attr();
  rdma_cm_id* listen = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen, sres, nullptr, &sa), 0) << strerror(errno);
  ASSERT_EQ(rdma_listen(listen, 1), 0) << strerror(errno);
  std::thread srv([&] {
    rdma_cm_id* id = nullptr;
    ASSERT_EQ(rdma_get_request(listen, &id), 0) << strerror(errno);
    ASSERT_EQ(rdma_get_remote_ece(id, &server->remote), 0);
    std::vector<uint8_t> rbuf(64, 0);
    ibv_mr* rmr = rdma_reg_msgs(id, rbuf.data(), rbuf.size());
    ASSERT_NE(rmr, nullptr);
    ASSERT_EQ(rdma_post_recv(id, nullptr, rbuf.data(), rbuf.size(), rmr), 0);
    ASSERT_EQ(rdma_accept(id, nullptr), 0) << strerror(errno);
    server->options = qp_options(id);
    ibv_wc wc;
    ASSERT_EQ(rdma_get_recv_comp(id, &wc), 1);  // the client's SEND
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(rbuf[63], 7);
    rdma_dereg_mr(rmr);
    rdma_disconnect(id);
    rdma_destroy_ep(id);
  });
  rdma_addrinfo* cres = info(port, false);
  ibv_qp_init_attr ca = qp_attr();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, cres, nullptr, &ca), 0) << strerror(errno);
  if (client_offer) {
    ibv_ece e = *client_offer;
    ASSERT_EQ(rdma_set_local_ece(id, &e), 0);
  }
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << strerror(errno);
  ASSERT_EQ(rdma_get_remote_ece(id, &client->remote), 0);
  client->options = qp_options(id);
  // A SEND over the agreed QPs, into the receive the server posted before accepting.
  std::vector<uint8_t> buf(64, 7);
  ibv_mr* mr = rdma_reg_msgs(id, buf.data(), buf.size());
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(rdma_post_send(id, nullptr, buf.data(), buf.size(), mr, 0), 0);
  ibv_wc wc;
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
  srv.join();
  rdma_dereg_mr(mr);
  rdma_disconnect(id);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen);
  rdma_freeaddrinfo(sres);
  rdma_freeaddrinfo(cres);
}

TEST(RdmacmEce, UroceEndsAgreeOnSelectiveRepeatAndTimestamps) {
  Outcome s, c;
  run(nullptr, &s, &c);
  EXPECT_EQ(s.remote.vendor_id, kVendor);  // the REQ's offer
  EXPECT_EQ(s.remote.options, kOffered);
  EXPECT_EQ(c.remote.vendor_id, kVendor);  // the REP's answer
  EXPECT_EQ(c.remote.options, kOffered);
  EXPECT_EQ(s.options, kOffered);
  EXPECT_EQ(c.options, kOffered);
}

TEST(RdmacmEce, AnOfferOfNothingLeavesBothOnGoBackN) {
  const ibv_ece none{kVendor, 0, 0};
  Outcome s, c;
  run(&none, &s, &c);
  EXPECT_EQ(s.remote.vendor_id, kVendor);
  EXPECT_EQ(s.remote.options, 0u);
  EXPECT_EQ(s.options, 0u);
  EXPECT_EQ(c.options, 0u);
}

TEST(RdmacmEce, BadArgumentsAreRefused) {
  EXPECT_EQ(rdma_set_local_ece(nullptr, nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
}

}  // namespace
