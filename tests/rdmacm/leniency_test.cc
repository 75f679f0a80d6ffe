/**
 * @file leniency_test.cc
 * @brief The RDMA CM takes what the Linux kernel's CM takes (docs/limits.md, "What the kernel
 * lets through"), in one process on the built-in device (uroce0 on the in-process loopback
 * port, 198.18.0.1): retry counts above 7 (fio's rdma engine asks for 10) connect, with 7 on
 * both QPs; the REQ carries flow_control; the passive QP's traffic class is the REQ's;
 * rdma_reject_ece says "vendor option not supported"; rdma_listen binds an unbound id;
 * RDMA_OPTION_ID_REUSEADDR shares a bound port and AFONLY keeps an IPv6 wildcard to IPv6,
 * both with the kernel's state rules; loopback addresses are wildcards; rdma_getaddrinfo
 * without node and service answers with the hints' addresses; rdma_migrate_id acks a
 * synchronous id's last event and moves untaken events to the new channel (ucma_migrate_id);
 * RDMA_OPTION_IB_PATH resolves the route from a path record (ucma_set_ib_path).
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace {

uint16_t next_port() {
  static std::atomic<uint16_t> port{static_cast<uint16_t>(20000 + getpid() % 10000)};
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

ibv_qp_init_attr qp_init() {
  ibv_qp_init_attr a{};
  a.cap.max_send_wr = a.cap.max_recv_wr = 8;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_RC;
  return a;
}

ibv_qp_attr query(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  EXPECT_EQ(ibv_query_qp(qp, &a, IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_AV, &ia), 0);
  return a;
}

/// One connection between two rdma_create_ep ids; `client` and `server` are the conn_params
/// of rdma_connect and rdma_accept; `server_tos`: RDMA_OPTION_ID_TOS of the listener; `reject`:
/// the server answers with rdma_reject_ece instead. What each side saw:
struct Seen {
  int connect_ret = -1, connect_errno = 0;
  int reject_status = 0;     ///< the client's REJECTED event's status
  rdma_conn_param req{};     ///< the server's CONNECT_REQUEST
  ibv_qp_attr client_qp{};   ///< after the connection
  ibv_qp_attr server_qp{};   ///< after the connection
  ibv_qp_attr client_rts{};  ///< rdma_init_qp_attr(RTS) of the client once connected
  int client_rts_mask = 0;
};

Seen run(rdma_conn_param client, rdma_conn_param server, uint8_t server_tos = 0,
         bool reject = false) {
  unsetenv("UROCE_CONFIG");  // the built-in device
  Seen seen;
  const uint16_t port = next_port();
  rdma_addrinfo* sres = info(port, true);
  rdma_addrinfo* cres = info(port, false);
  ibv_qp_init_attr sa = qp_init();
  rdma_cm_id* listen = nullptr;
  EXPECT_EQ(rdma_create_ep(&listen, sres, nullptr, &sa), 0) << strerror(errno);
  if (server_tos) {
    EXPECT_EQ(
        rdma_set_option(listen, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &server_tos, sizeof server_tos),
        0);
  }
  EXPECT_EQ(rdma_listen(listen, 1), 0) << strerror(errno);
  rdma_cm_id* sid = nullptr;
  std::thread srv([&] {
    ASSERT_EQ(rdma_get_request(listen, &sid), 0) << strerror(errno);
    seen.req = sid->event->param.conn;
    if (reject) {
      EXPECT_EQ(rdma_reject_ece(sid, nullptr, 0), 0) << strerror(errno);
      return;
    }
    EXPECT_EQ(rdma_accept(sid, &server), 0) << strerror(errno);
    seen.server_qp = query(sid->qp);
  });
  ibv_qp_init_attr ca = qp_init();
  rdma_cm_id* cid = nullptr;
  EXPECT_EQ(rdma_create_ep(&cid, cres, nullptr, &ca), 0) << strerror(errno);
  seen.connect_ret = rdma_connect(cid, &client);
  seen.connect_errno = errno;
  srv.join();
  if (seen.connect_ret == 0) {
    seen.client_qp = query(cid->qp);
    seen.client_rts.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(rdma_init_qp_attr(cid, &seen.client_rts, &seen.client_rts_mask), 0);
    rdma_disconnect(cid);
  } else if (cid->event && cid->event->event == RDMA_CM_EVENT_REJECTED) {
    seen.reject_status = cid->event->status;
  }
  rdma_destroy_ep(cid);
  if (sid) rdma_destroy_ep(sid);
  rdma_destroy_ep(listen);
  rdma_freeaddrinfo(sres);
  rdma_freeaddrinfo(cres);
  return seen;
}

rdma_conn_param param(uint8_t retry, uint8_t rnr) {
  rdma_conn_param p{};
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.retry_count = retry;
  p.rnr_retry_count = rnr;
  return p;
}

TEST(RdmacmLeniency, RetryCountsAboveSevenConnectWithSeven) {
  // fio's rdma engine: retry_count 10 on connect; here both sides also ask for 10 RNR retries.
  Seen s = run(param(10, 10), param(10, 10));
  ASSERT_EQ(s.connect_ret, 0) << strerror(s.connect_errno);
  // Expect: the kernel's min_t(u8, 7, ...): 7 in the REQ, the REP and on both QPs.
  EXPECT_EQ(s.req.retry_count, 7);
  EXPECT_EQ(s.req.rnr_retry_count, 7);
  EXPECT_EQ(s.client_qp.retry_cnt, 7);
  EXPECT_EQ(s.client_qp.rnr_retry, 7);
  EXPECT_EQ(s.server_qp.retry_cnt, 7);
  EXPECT_EQ(s.server_qp.rnr_retry, 7);
  EXPECT_TRUE(s.client_rts_mask & IBV_QP_RETRY_CNT);
  EXPECT_EQ(s.client_rts.retry_cnt, 7);
}

TEST(RdmacmLeniency, EachSidesRnrRetryIsWhatThePeerAskedFor) {
  // IBA: the REQ's RNR retry count is the passive QP's, the REP's the active QP's (the
  // kernel's cm_init_qp_rts_attr); the retry count is the REQ's on both.
  Seen s = run(param(5, 3), param(6, 2));
  ASSERT_EQ(s.connect_ret, 0) << strerror(s.connect_errno);
  EXPECT_EQ(s.client_qp.retry_cnt, 5);
  EXPECT_EQ(s.server_qp.retry_cnt, 5);
  EXPECT_EQ(s.server_qp.rnr_retry, 3);
  EXPECT_EQ(s.client_qp.rnr_retry, 2);
}

TEST(RdmacmLeniency, TheReqCarriesFlowControl) {
  rdma_conn_param c = param(7, 7);
  c.flow_control = 1;
  Seen s = run(c, param(7, 7));
  ASSERT_EQ(s.connect_ret, 0) << strerror(s.connect_errno);
  EXPECT_EQ(s.req.flow_control, 1);
}

TEST(RdmacmLeniency, ThePassiveQpTakesTheReqsTrafficClass) {
  // The listener's TOS is not the connection's: the REQ's primary path is (cm_req_handler).
  Seen s = run(param(7, 7), param(7, 7), 0x40);
  ASSERT_EQ(s.connect_ret, 0) << strerror(s.connect_errno);
  EXPECT_EQ(s.server_qp.ah_attr.grh.traffic_class, 0);
  EXPECT_EQ(s.client_qp.ah_attr.grh.traffic_class, 0);
}

TEST(RdmacmLeniency, RejectEceSaysVendorOptionNotSupported) {
  Seen s = run(param(7, 7), param(7, 7), 0, true);
  EXPECT_EQ(s.connect_ret, -1);
  EXPECT_EQ(s.connect_errno, ECONNREFUSED);
  EXPECT_EQ(s.reject_status, 35);  // IBA 1.4 REJ reason, as rdma-core's rdma_reject_ece
}

sockaddr_in ipv4(const char* addr, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, addr, &a.sin_addr);
  return a;
}

int set_int(rdma_cm_id* id, int optname, int v) {
  return rdma_set_option(id, RDMA_OPTION_ID, optname, &v, sizeof v);
}

TEST(RdmacmLeniency, GetaddrinfoWithoutNodeOrServiceAnswersWithTheHintsAddresses) {
  sockaddr_in dst = ipv4("198.18.0.1", 7471);
  sockaddr_in src = ipv4("198.18.0.1", 0);
  rdma_addrinfo hints{};
  hints.ai_qp_type = IBV_QPT_RC;
  hints.ai_port_space = RDMA_PS_TCP;
  hints.ai_dst_addr = reinterpret_cast<sockaddr*>(&dst);
  hints.ai_dst_len = sizeof dst;
  hints.ai_src_addr = reinterpret_cast<sockaddr*>(&src);
  hints.ai_src_len = sizeof src;
  rdma_addrinfo* r = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, nullptr, &hints, &r), 0) << strerror(errno);
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->ai_dst_len, sizeof dst);
  EXPECT_EQ(std::memcmp(r->ai_dst_addr, &dst, sizeof dst), 0);
  ASSERT_EQ(r->ai_src_len, sizeof src);
  EXPECT_EQ(std::memcmp(r->ai_src_addr, &src, sizeof src), 0);
  EXPECT_EQ(r->ai_qp_type, IBV_QPT_RC);
  EXPECT_EQ(r->ai_port_space, RDMA_PS_TCP);
  rdma_freeaddrinfo(r);
  EXPECT_EQ(rdma_getaddrinfo(nullptr, nullptr, nullptr, &r), -1);
  EXPECT_EQ(errno, EINVAL);
}

TEST(RdmacmLeniency, LoopbackAddressesAreWildcards) {
  unsetenv("UROCE_CONFIG");
  // A bind to 127.0.0.1 binds no device (libfabric's verbs provider probes with it).
  sockaddr_in lo = ipv4("127.0.0.1", 0);
  rdma_cm_id* b = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &b, nullptr, RDMA_PS_TCP), 0);
  EXPECT_EQ(rdma_bind_addr(b, reinterpret_cast<sockaddr*>(&lo)), 0) << strerror(errno);
  EXPECT_EQ(rdma_destroy_id(b), 0);
  // A resolve to it reaches this host's first address (cma_resolve_loopback).
  rdma_cm_id* r = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &r, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in to = ipv4("127.0.0.1", 7472);
  ASSERT_EQ(rdma_resolve_addr(r, nullptr, reinterpret_cast<sockaddr*>(&to), 100), 0)
      << strerror(errno);
  char text[INET6_ADDRSTRLEN] = {};
  const auto* d = reinterpret_cast<const sockaddr_in*>(&r->route.addr.dst_addr);
  inet_ntop(AF_INET, &d->sin_addr, text, sizeof text);
  EXPECT_STREQ(text, "198.18.0.1");
  EXPECT_NE(r->verbs, nullptr);
  EXPECT_EQ(rdma_destroy_id(r), 0);
}

/// Runs f on a thread and waits for it at most 10 s; false if it has not returned by then
/// (the thread is left behind, blocked: the test has failed).
template <typename F>
bool returns_in_time(F f) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto st = std::make_shared<State>();
  std::thread([st, f] {
    f();
    std::lock_guard<std::mutex> g(st->mu);
    st->done = true;
    st->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> g(st->mu);
  return st->cv.wait_for(g, std::chrono::seconds(10), [&] { return st->done; });
}

TEST(RdmacmLeniency, MigratingASyncIdAcksItsLastEventFirst) {
  unsetenv("UROCE_CONFIG");
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);  // synchronous
  sockaddr_in to = ipv4("198.18.0.1", 7473);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 100), 0);
  ASSERT_NE(id->event, nullptr);  // ADDR_RESOLVED, held by the id until its next call
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  int ret = -2;
  ASSERT_TRUE(returns_in_time([&] { ret = rdma_migrate_id(id, ch); })) << "rdma_migrate_id hangs";
  EXPECT_EQ(ret, 0);
  EXPECT_EQ(id->channel, ch);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(ch);
}

TEST(RdmacmLeniency, MigratingAnIdMovesTheEventsNotYetTaken) {
  unsetenv("UROCE_CONFIG");
  rdma_event_channel* from = rdma_create_event_channel();
  rdma_event_channel* to_ch = rdma_create_event_channel();
  ASSERT_TRUE(from && to_ch);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(from, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in to = ipv4("198.18.0.1", 7474);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 100), 0);
  // ADDR_RESOLVED waits on `from`, untaken: the kernel's ucma_migrate_id moves it along.
  int ret = -2;
  ASSERT_TRUE(returns_in_time([&] { ret = rdma_migrate_id(id, to_ch); }))
      << "rdma_migrate_id hangs";
  ASSERT_EQ(ret, 0);
  int flags = fcntl(to_ch->fd, F_GETFL);
  ASSERT_EQ(fcntl(to_ch->fd, F_SETFL, flags | O_NONBLOCK), 0);
  rdma_cm_event* ev = nullptr;
  ASSERT_EQ(rdma_get_cm_event(to_ch, &ev), 0) << strerror(errno);
  EXPECT_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(ev->id, id);
  EXPECT_EQ(rdma_ack_cm_event(ev), 0);
  // Nothing is left for the old channel.
  flags = fcntl(from->fd, F_GETFL);
  ASSERT_EQ(fcntl(from->fd, F_SETFL, flags | O_NONBLOCK), 0);
  EXPECT_EQ(rdma_get_cm_event(from, &ev), -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(from);
  rdma_destroy_event_channel(to_ch);
}

TEST(RdmacmLeniency, AnIbPathRecordResolvesTheRoute) {
  unsetenv("UROCE_CONFIG");
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  ibv_path_data pd[2] = {};
  pd[0].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_ALTERNATE;  // not the primary
  pd[1].flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
  pd[1].path.mtu = (2 << 6) | IBV_MTU_1024;
  pd[1].path.tclass = 0x20;
  // Before the address is resolved: EINVAL (the kernel's rdma_set_ib_path).
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof pd), -1);
  EXPECT_EQ(errno, EINVAL);
  sockaddr_in to = ipv4("198.18.0.1", 7475);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&to), 100), 0);
  rdma_cm_event* ev = nullptr;
  ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
  EXPECT_EQ(ev->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  rdma_ack_cm_event(ev);
  // Not whole records, or no primary bidirectional one: EINVAL.
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof pd - 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof pd[0]), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, pd, sizeof pd), 0)
      << strerror(errno);
  ASSERT_EQ(rdma_get_cm_event(ch, &ev), 0);
  EXPECT_EQ(ev->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
  rdma_ack_cm_event(ev);
  ASSERT_EQ(id->route.num_paths, 1);
  EXPECT_EQ(id->route.path_rec->mtu, IBV_MTU_1024);
  EXPECT_EQ(id->route.path_rec->traffic_class, 0x20);
  EXPECT_EQ(rdma_destroy_id(id), 0);
  rdma_destroy_event_channel(ch);
}

TEST(RdmacmLeniency, ListenOnAnUnboundIdBindsTheWildcard) {
  unsetenv("UROCE_CONFIG");
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_listen(id, 0), 0) << strerror(errno);  // backlog 0: the kernel's maximum
  EXPECT_NE(rdma_get_src_port(id), 0);
  EXPECT_EQ(id->route.addr.src_addr.sa_family, AF_INET);
  EXPECT_EQ(rdma_destroy_id(id), 0);
}

TEST(RdmacmLeniency, ReuseAddrSharesABoundPortUntilOneListens) {
  unsetenv("UROCE_CONFIG");
  const uint16_t port = next_port();
  sockaddr_in a = ipv4("198.18.0.1", port);
  rdma_cm_id *x = nullptr, *y = nullptr, *z = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &x, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_create_id(nullptr, &y, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_create_id(nullptr, &z, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(set_int(x, RDMA_OPTION_ID_REUSEADDR, 1), 0);
  ASSERT_EQ(set_int(y, RDMA_OPTION_ID_REUSEADDR, 1), 0);
  ASSERT_EQ(rdma_bind_addr(x, reinterpret_cast<sockaddr*>(&a)), 0) << strerror(errno);
  // Expect: a second id with REUSEADDR shares the port; one without does not.
  EXPECT_EQ(rdma_bind_addr(y, reinterpret_cast<sockaddr*>(&a)), 0) << strerror(errno);
  EXPECT_EQ(rdma_bind_addr(z, reinterpret_cast<sockaddr*>(&a)), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  // A listening port is not shared (the kernel's rdma_listen: cma_check_port).
  EXPECT_EQ(rdma_listen(x, 1), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  EXPECT_EQ(rdma_destroy_id(y), 0);
  EXPECT_EQ(rdma_listen(x, 1), 0) << strerror(errno);
  // Turning it on is refused once the id listens; binding next to a listener too.
  EXPECT_EQ(set_int(x, RDMA_OPTION_ID_REUSEADDR, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(set_int(z, RDMA_OPTION_ID_REUSEADDR, 1), 0);
  EXPECT_EQ(rdma_bind_addr(z, reinterpret_cast<sockaddr*>(&a)), -1);
  EXPECT_EQ(errno, EADDRINUSE);
  // AFONLY: only before the id listens or connects.
  EXPECT_EQ(set_int(x, RDMA_OPTION_ID_AFONLY, 1), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(set_int(z, RDMA_OPTION_ID_AFONLY, 1), 0);
  EXPECT_EQ(rdma_destroy_id(x), 0);
  EXPECT_EQ(rdma_destroy_id(z), 0);
}

}  // namespace
