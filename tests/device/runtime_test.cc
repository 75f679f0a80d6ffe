/**
 * @file runtime_test.cc
 * @brief device::Runtime without the verbs layer, on the built-in loopback device: open() builds
 * the engine on the configured port with the configured addresses and MTU; its progress thread
 * alone carries a UD datagram from one QP to another and delivers the completion event to the
 * layer above through its EngineObserver methods; bad congestion-control parameters are EINVAL
 * with no engine built; the neighbour wait answers from the port's cache.
 */
#include "device/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <vector>

#include "config/config.h"

namespace uroce::device {
namespace {

namespace t = transport;

config::Device loopback_device(const char* name) {
  config::Device d = config::builtin().devices.at(0);
  d.name = name;  // its own stats segment, apart from other tests' devices
  return d;
}

/// The layer above as a test sees it: records the engine's events.
class Recorder final : public Runtime {
 public:
  explicit Recorder(const config::Device& d) : Runtime(d, "built-in") {}
  ~Recorder() override { shut_down(); }

  void on_cq_event(uint32_t cq_id) override {
    std::lock_guard<std::mutex> g(events_mu);
    cq_events.push_back(cq_id);
    events_cv.notify_all();
  }
  void on_async_event(const t::AsyncEvent& ev) override {
    std::lock_guard<std::mutex> g(events_mu);
    async_events.push_back(ev.type);
  }

  std::mutex events_mu;
  std::condition_variable events_cv;
  std::vector<uint32_t> cq_events;
  std::vector<t::AsyncEventType> async_events;
};

TEST(DeviceRuntime, OpensTheConfiguredPortAndEngine) {
  config::Device d = loopback_device("uroce_rt_open");
  d.mtu = 2048;
  Recorder rt(d);
  ASSERT_EQ(rt.open(), 0);
  ASSERT_NE(rt.port, nullptr);
  ASSERT_NE(rt.engine, nullptr);
  ASSERT_EQ(rt.gids.size(), d.addresses.size());
  EXPECT_EQ(rt.gids[0], d.addresses[0].gid);
  EXPECT_EQ(rt.active_mtu, mtu_code(2048));
  EXPECT_EQ(mtu_code(2048), 4);
  EXPECT_EQ(mtu_code(4096), 5);
  EXPECT_EQ(mtu_code(256), 1);
  EXPECT_EQ(mtu_code(1000), 3);  // not an MTU: 1024's code
  EXPECT_TRUE(rt.link_up);
  rt.shut_down();
  rt.shut_down();  // idempotent
}

TEST(DeviceRuntime, ThreadAloneDeliversADatagramAndItsCompletionEvent) {
  Recorder rt(loopback_device("uroce_rt_ud"));
  ASSERT_EQ(rt.open(), 0);
  std::vector<uint8_t> src(256), dst(40 + 256, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  uint32_t pd, scq, rcq, qa, qb;
  t::MrKeys ks, kd;
  t::AddressVector av;
  {
    std::lock_guard<std::mutex> g(rt.mu);
    t::Engine& e = *rt.engine;
    pd = e.alloc_pd().value();
    scq = e.create_cq(16).value();
    rcq = e.create_cq(16).value();
    ks = e.reg_mr(pd, reinterpret_cast<uint64_t>(src.data()), src.size(), t::kAccessLocalWrite)
             .value();
    kd = e.reg_mr(pd, reinterpret_cast<uint64_t>(dst.data()), dst.size(), t::kAccessLocalWrite)
             .value();
    uint32_t q[2];
    for (uint32_t& qpn : q) {
      t::QpInitAttr ia;
      ia.type = t::QpType::kUd;
      ia.pd = pd;
      ia.send_cq = scq;
      ia.recv_cq = rcq;
      ia.max_send_wr = ia.max_recv_wr = 4;
      ia.max_send_sge = ia.max_recv_sge = 1;
      qpn = e.create_qp(ia).value();
      t::QpAttr a;
      a.qp_state = t::QpState::kInit;
      a.qkey = 0x1234;
      a.pkey_index = 0;
      a.port_num = 1;
      ASSERT_TRUE(
          e.modify_qp(qpn, a, t::kAttrState | t::kAttrPkeyIndex | t::kAttrPort | t::kAttrQkey));
      a.qp_state = t::QpState::kRtr;
      ASSERT_TRUE(e.modify_qp(qpn, a, t::kAttrState));
      a.qp_state = t::QpState::kRts;
      a.sq_psn = 0;
      ASSERT_TRUE(e.modify_qp(qpn, a, t::kAttrState | t::kAttrSqPsn));
    }
    qa = q[0];
    qb = q[1];
    t::Sge rs{reinterpret_cast<uint64_t>(dst.data()), static_cast<uint32_t>(dst.size()), kd.lkey};
    t::RecvWr r;
    r.wr_id = 7;
    r.sg = &rs;
    r.num_sge = 1;
    ASSERT_TRUE(e.post_recv(qb, r));
    ASSERT_TRUE(e.req_notify_cq(rcq, false));
    av.dgid = rt.gids[0];  // the loopback port resolves every address to itself
    av.sgid_index = 0;
    av.hop_limit = 64;
    t::Sge sg{reinterpret_cast<uint64_t>(src.data()), static_cast<uint32_t>(src.size()), ks.lkey};
    t::SendWr w;
    w.wr_id = 9;
    w.opcode = t::WrOpcode::kSend;
    w.send_flags = t::kSendSignaled;
    w.sg = &sg;
    w.num_sge = 1;
    w.ah = &av;
    w.remote_qpn = qb;
    w.remote_qkey = 0x1234;
    // Posted without any application-driven progress: only the progress thread sends it,
    // receives it and raises the receive CQ's event.
    ASSERT_TRUE(e.post_send(qa, w, now()));
  }
  {
    std::unique_lock<std::mutex> l(rt.events_mu);
    ASSERT_TRUE(rt.events_cv.wait_for(l, std::chrono::seconds(10), [&] {
      return !rt.cq_events.empty();
    })) << "no completion event from the progress thread";
    EXPECT_EQ(rt.cq_events, std::vector<uint32_t>{rcq});
  }
  std::lock_guard<std::mutex> g(rt.mu);
  t::Cqe c[4];
  ASSERT_EQ(rt.engine->poll_cq(rcq, c), 1u);
  EXPECT_EQ(c[0].status, t::WcStatus::kSuccess);
  EXPECT_EQ(c[0].wr_id, 7u);
  EXPECT_EQ(c[0].byte_len, 40 + src.size());  // GRH + payload
  EXPECT_EQ(std::memcmp(dst.data() + 40, src.data(), src.size()), 0);
  EXPECT_TRUE(rt.async_events.empty());
}

TEST(DeviceRuntime, BadCongestionParametersAreEinval) {
  config::Device d = loopback_device("uroce_rt_badcc");
  d.dcqcn.params["no_such_dcqcn_parameter"] = 1;
  Recorder rt(d);
  EXPECT_EQ(rt.open(), EINVAL);
  EXPECT_EQ(rt.engine, nullptr);
}

TEST(DeviceRuntime, NeighbourOfTheLoopbackPortResolvesAtOnce) {
  Recorder rt(loopback_device("uroce_rt_neigh"));
  ASSERT_EQ(rt.open(), 0);
  MacAddr mac;
  ASSERT_TRUE(rt.resolve_neighbor(rt.gids[0], &mac));
  EXPECT_EQ(mac, rt.port->mac());
}

}  // namespace
}  // namespace uroce::device
