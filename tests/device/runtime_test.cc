/**
 * @file runtime_test.cc
 * @brief device::Runtime without the verbs layer, on the built-in loopback device: open() builds
 * the engine on the configured port with the configured addresses and MTU; its progress thread
 * alone carries a UD datagram from one QP to another and delivers the completion event to the
 * layer above through its EngineObserver methods; bad congestion-control parameters are EINVAL
 * with no engine built; the neighbour wait answers from the port's cache; a port whose service
 * (uroce-hostd) goes away: back within the grace, the QPs go on; past it, or refused, the
 * device is gone (DEVICE_FATAL, QPs flushed, EIO).
 */
#include "device/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
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
    events_cv.notify_all();
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

/// The loopback port behind a service that may go away, as a client of uroce-hostd sees it
/// (Port::service()); the test sets it under the engine lock.
class FlakyPort final : public Port {
 public:
  explicit FlakyPort(std::unique_ptr<Port> in) : in_(std::move(in)) {}

  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    return in_->rx_burst(h, max, now);
  }
  void flush() override { in_->flush(); }
  MacAddr mac() const override { return in_->mac(); }
  size_t max_frame_len() const override { return in_->max_frame_len(); }
  uint64_t link_speed_bps() const override { return in_->link_speed_bps(); }
  uint8_t* begin_frame(size_t n) override { return in_->begin_frame(n); }
  void end_frame(size_t len, const TxMeta& m) override { in_->end_frame(len, m); }
  bool resolve(const Gid& ip, MacAddr* mac) override { return in_->resolve(ip, mac); }
  uint64_t link_version() const override { return changes_; }
  Service service() const override { return service_; }
  void give_up(const std::string& why) override {
    why_ = why;
    set(Service::kGone);
  }
  std::string why_gone() const override { return why_; }

  void set(Service s) {
    service_ = s;
    ++changes_;
  }

 private:
  std::unique_ptr<Port> in_;
  Service service_ = Service::kUp;
  uint64_t changes_ = 0;
  std::string why_;
};

/// A runtime on the loopback port behind a FlakyPort, with two RC QPs connected to each other
/// (ACK timeout 14, 7 retries: a 0.55 s retry budget, shorter than Port::kServiceGraceMin) and
/// a receive posted on each.
class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(rt_.open(), 0);
    std::lock_guard<std::mutex> g(rt_.mu);
    auto flaky = std::make_unique<FlakyPort>(std::move(rt_.port));
    port_ = flaky.get();
    rt_.port = std::move(flaky);
    t::Engine& e = *rt_.engine;
    pd_ = e.alloc_pd().value();
    cq_ = e.create_cq(16).value();
    for (uint32_t& qpn : qp_) {
      t::QpInitAttr ia;
      ia.type = t::QpType::kRc;
      ia.pd = pd_;
      ia.send_cq = ia.recv_cq = cq_;
      ia.max_send_wr = ia.max_recv_wr = 4;
      ia.max_send_sge = ia.max_recv_sge = 1;
      qpn = e.create_qp(ia).value();
    }
    for (int i = 0; i < 2; ++i) {
      connect(qp_[i], qp_[1 - i], 14, 7);
      t::RecvWr r;
      r.wr_id = 10 + static_cast<uint64_t>(i);
      ASSERT_TRUE(e.post_recv(qp_[i], r));
    }
  }

  /// Takes qpn to RTS towards dqpn (this port) with that ACK timeout and retry count. mu held.
  void connect(uint32_t qpn, uint32_t dqpn, uint8_t timeout, uint8_t retry_cnt) {
    t::Engine& e = *rt_.engine;
    t::QpAttr a;
    a.qp_state = t::QpState::kInit;
    a.port_num = 1;
    ASSERT_TRUE(e.modify_qp(
        qpn, a, t::kAttrState | t::kAttrPkeyIndex | t::kAttrPort | t::kAttrAccessFlags));
    a.qp_state = t::QpState::kRtr;
    a.av.dgid = rt_.gids[0];  // the loopback port resolves every address to itself
    a.dest_qp_num = dqpn;
    ASSERT_TRUE(e.modify_qp(qpn, a,
                            t::kAttrState | t::kAttrAv | t::kAttrPathMtu | t::kAttrDestQpn |
                                t::kAttrRqPsn | t::kAttrMaxDestRdAtomic | t::kAttrMinRnrTimer));
    a.qp_state = t::QpState::kRts;
    a.timeout = timeout;
    a.retry_cnt = retry_cnt;
    ASSERT_TRUE(e.modify_qp(qpn, a,
                            t::kAttrState | t::kAttrTimeout | t::kAttrRetryCnt | t::kAttrRnrRetry |
                                t::kAttrSqPsn | t::kAttrMaxQpRdAtomic));
  }

  void set(Port::Service s) {
    std::lock_guard<std::mutex> g(rt_.mu);
    port_->set(s);
  }
  bool fatal_within(std::chrono::nanoseconds d) {
    std::unique_lock<std::mutex> l(rt_.events_mu);
    return rt_.events_cv.wait_for(l, d, [&] {
      return std::find(rt_.async_events.begin(), rt_.async_events.end(),
                       t::AsyncEventType::kDeviceFatal) != rt_.async_events.end();
    });
  }
  t::QpState state(uint32_t qpn) {
    std::lock_guard<std::mutex> g(rt_.mu);
    t::QpAttr a;
    EXPECT_TRUE(rt_.engine->query_qp(qpn, &a, nullptr));
    return a.qp_state;
  }
  /// Every QP in ERR, both receives flushed, the runtime gone and refusing a new start.
  void expect_gone() {
    EXPECT_TRUE(rt_.gone());
    EXPECT_EQ(rt_.start(), EIO);
    for (uint32_t q : qp_) EXPECT_EQ(state(q), t::QpState::kErr);
    std::lock_guard<std::mutex> g(rt_.mu);
    t::Cqe c[4];
    ASSERT_EQ(rt_.engine->poll_cq(cq_, c), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(c[i].status, t::WcStatus::kWrFlushErr);
      EXPECT_TRUE(c[i].wr_id == 10 || c[i].wr_id == 11);
    }
  }

  Recorder rt_{loopback_device("uroce_rt_service")};
  FlakyPort* port_ = nullptr;
  uint32_t pd_ = 0, cq_ = 0, qp_[2] = {};
};

TEST_F(ServiceTest, TheLongestRetryBudgetOfTheQpsThatSend) {
  std::lock_guard<std::mutex> g(rt_.mu);
  t::Engine& e = *rt_.engine;
  EXPECT_EQ(e.longest_retry_budget(), Duration::nanos(8 * (int64_t{4096} << 14)));
  t::QpInitAttr ia;
  ia.type = t::QpType::kRc;
  ia.pd = pd_;
  ia.send_cq = ia.recv_cq = cq_;
  ia.max_send_wr = ia.max_recv_wr = ia.max_send_sge = ia.max_recv_sge = 1;
  const uint32_t q = e.create_qp(ia).value();
  EXPECT_EQ(e.longest_retry_budget(), Duration::nanos(8 * (int64_t{4096} << 14)))
      << "a QP in RESET sends nothing";
  connect(q, qp_[0], 16, 2);
  EXPECT_EQ(e.longest_retry_budget(), Duration::nanos(3 * (int64_t{4096} << 16)));
  ASSERT_TRUE(e.destroy_qp(q));
  t::QpAttr a;
  a.qp_state = t::QpState::kErr;
  ASSERT_TRUE(e.modify_qp(qp_[0], a, t::kAttrState));
  ASSERT_TRUE(e.modify_qp(qp_[1], a, t::kAttrState));
  EXPECT_EQ(e.longest_retry_budget(), Duration{}) << "none sends";
}

TEST_F(ServiceTest, BackWithinTheGraceTheQpsGoOn) {
  set(Port::Service::kLost);
  // The grace is Port::kServiceGraceMin (the QPs' budget is shorter); back before it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  set(Port::Service::kUp);
  EXPECT_FALSE(fatal_within(std::chrono::nanoseconds(Port::kServiceGraceMin.ns) +
                            std::chrono::milliseconds(500)));
  EXPECT_FALSE(rt_.gone());
  for (uint32_t q : qp_) EXPECT_EQ(state(q), t::QpState::kRts);
  EXPECT_EQ(rt_.start(), 0);
}

TEST_F(ServiceTest, PastTheGraceTheDeviceIsGone) {
  const auto t0 = std::chrono::steady_clock::now();
  set(Port::Service::kLost);
  ASSERT_TRUE(fatal_within(std::chrono::seconds(10))) << "no DEVICE_FATAL";
  const auto took = std::chrono::steady_clock::now() - t0;
  const auto grace = std::chrono::nanoseconds(Port::kServiceGraceMin.ns);
  EXPECT_GE(took, grace) << "before the grace";
  EXPECT_LT(took, grace + std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> g(rt_.mu);
    EXPECT_EQ(port_->service(), Port::Service::kGone) << "the runtime gave up on it";
    EXPECT_NE(port_->why_gone().find("did not come back within 5.0 s"), std::string::npos)
        << port_->why_gone();
  }
  expect_gone();
}

TEST_F(ServiceTest, ARefusedServiceEndsTheDeviceAtOnce) {
  {
    std::lock_guard<std::mutex> g(rt_.mu);
    port_->give_up("the next service refused it");
  }
  ASSERT_TRUE(fatal_within(std::chrono::milliseconds(500)));
  expect_gone();
  std::lock_guard<std::mutex> g(rt_.events_mu);
  EXPECT_EQ(
      std::count(rt_.async_events.begin(), rt_.async_events.end(), t::AsyncEventType::kDeviceFatal),
      1);
}

}  // namespace
}  // namespace uroce::device
