/**
 * @file port_pipeline_test.cc
 * @brief drivers/pipeline/port_pipeline.h over a fake FrameIo with injected time: scheduling
 * order (CNP class strict, DRR), PFC pause of a priority until its quanta expire, XOFF/XON from
 * the RX backlog, self-loopback, counters, the kMaxQueued refusal, and a TX queue that takes
 * part of a burst (every buffer comes back exactly once). Priorities as rx_class.h classifies.
 */
#include "pipeline/port_pipeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <memory>
#include <set>
#include <vector>

#include "transport/wire/pfc.h"

namespace uroce::pipeline {
namespace {

constexpr MacAddr kOurMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x01}};
constexpr MacAddr kPeerMac{{0x02, 0x00, 0x00, 0x00, 0x00, 0x02}};
constexpr size_t kMaxFrame = 4224;
constexpr uint64_t kLinkBps = 10'000'000'000ull;  ///< pause quantum = 51.2 ns

/// One frame a TX queue took: its queue and bytes.
struct Sent {
  uint16_t queue;
  std::vector<uint8_t> bytes;
};

/// Buffers from the heap; checks every buffer comes back once, through free() or tx_burst().
class FakeIo : public FrameIo {
 public:
  size_t capacity = 1024;                            ///< buffers out at most
  size_t take = std::numeric_limits<size_t>::max();  ///< frames tx_burst() takes per call
  std::vector<Sent> sent;
  size_t freed = 0;

  ~FakeIo() override {
    for (void* h : live_) delete static_cast<std::vector<uint8_t>*>(h);
  }

  bool alloc(Frame* f) override {
    if (live_.size() >= capacity) return false;
    auto* b = new std::vector<uint8_t>(kMaxFrame + 128);
    live_.insert(b);
    *f = Frame{b, b->data(), static_cast<uint32_t>(b->size())};
    return true;
  }
  void free(const Frame* frames, size_t n) override {
    for (size_t i = 0; i < n; ++i) release(frames[i].handle);
    freed += n;
  }
  size_t tx_burst(uint16_t queue, Frame* frames, size_t n) override {
    const size_t k = std::min(n, take);
    for (size_t i = 0; i < k; ++i) {
      sent.push_back({queue, {frames[i].data, frames[i].data + frames[i].len}});
      release(frames[i].handle);
    }
    return k;
  }
  size_t live() const { return live_.size(); }

 private:
  void release(void* h) {
    if (live_.erase(h) != 1) {
      ADD_FAILURE() << "buffer returned twice or never allocated";
      return;
    }
    delete static_cast<std::vector<uint8_t>*>(h);
  }
  std::set<void*> live_;
};

/// Records what the pipeline loops back.
struct Handler : FrameHandler {
  std::vector<std::vector<uint8_t>> frames;
  void on_frame(std::span<const uint8_t> f, const RxMeta&) override {
    frames.emplace_back(f.begin(), f.end());
  }
};

/// An Ethernet + IPv4 frame of len bytes with DSCP dscp (ECN ecn), UDP to 4791 when rocev2,
/// tagged with `tag` at byte 50.
std::vector<uint8_t> ip_frame(MacAddr dst, uint8_t dscp, size_t len, uint8_t tag,
                              bool rocev2 = false, uint8_t ecn = 0) {
  std::vector<uint8_t> f(len, 0);
  std::memcpy(f.data(), dst.b.data(), 6);
  std::memcpy(f.data() + 6, kPeerMac.b.data(), 6);
  f[12] = 0x08;  // IPv4
  f[14] = 0x45;
  f[15] = static_cast<uint8_t>(dscp << 2 | ecn);
  f[23] = rocev2 ? 17 : 6;  // UDP or TCP
  f[36] = 0x12;             // destination port 4791
  f[37] = 0xB7;
  f[50] = tag;
  return f;
}

class PipelineTest : public ::testing::Test {
 protected:
  void make(uint16_t queues = 1) {
    pipe_ = std::make_unique<PortPipeline>(
        io_, dev_, PipelineParams{kOurMac, kMaxFrame, queues, kLinkBps}, [this] { return now_; });
  }
  /// Sends a non-RoCE frame to the peer on priority prio; false when begin_frame() refused.
  bool send(uint8_t prio, uint8_t tag, size_t len = 100) {
    return send_bytes(ip_frame(kPeerMac, 0, len, tag), prio);
  }
  bool send_bytes(const std::vector<uint8_t>& f, uint8_t prio) {
    uint8_t* b = pipe_->begin_frame(f.size());
    if (!b) return false;
    std::memcpy(b, f.data(), f.size());
    pipe_->end_frame(f.size(), TxMeta{prio, false});
    return true;
  }
  /// Fills TX queue 0's burst while the driver takes nothing, so later frames queue by priority.
  void block_queue0() {
    io_.take = 0;
    for (size_t i = 0; i < kBurst; ++i) ASSERT_TRUE(send(0, 0xEE));
    ASSERT_TRUE(pipe_->tx_pending());
    ASSERT_TRUE(io_.sent.empty());
  }
  /// The tags of the sent frames other than the blocking ones, in order.
  std::vector<uint8_t> tags() const {
    std::vector<uint8_t> t;
    for (const Sent& s : io_.sent)
      if (s.bytes[50] != 0xEE) t.push_back(s.bytes[50]);
    return t;
  }
  PortCounters counters() {
    PortCounters c;
    pipe_->fill_counters(&c);
    return c;
  }

  FakeIo io_;
  config::Device dev_;
  Timestamp now_{1'000'000'000};
  std::unique_ptr<PortPipeline> pipe_;
};

TEST_F(PipelineTest, IdleFrameGoesStraightToItsTxQueue) {
  make(4);
  ASSERT_TRUE(send(3, 1, 200));
  ASSERT_TRUE(send(5, 2, 300));
  EXPECT_EQ(pipe_->queued(), 0u);  // fast path: no priority queue involved
  pipe_->flush();
  ASSERT_EQ(io_.sent.size(), 2u);
  EXPECT_EQ(io_.sent[0].queue, 1);  // priority % queues; queues flushed in order
  EXPECT_EQ(io_.sent[0].bytes.size(), 300u);
  EXPECT_EQ(io_.sent[1].queue, 3);
  EXPECT_EQ(io_.sent[1].bytes.size(), 200u);
  PortCounters c = counters();
  EXPECT_EQ(c.tx_prio_packets[3], 1u);
  EXPECT_EQ(c.tx_prio_bytes[3], 200u);
  EXPECT_EQ(c.tx_prio_packets[5], 1u);
  EXPECT_EQ(c.tx_prio_bytes[5], 300u);
  EXPECT_EQ(io_.live(), 0u);
}

TEST_F(PipelineTest, CnpClassIsStrict) {
  make();  // cnp_dscp 48 -> priority 6, strict
  block_queue0();
  ASSERT_TRUE(send(0, 1));
  ASSERT_TRUE(send(1, 2));
  ASSERT_TRUE(send(6, 3));  // queued last, sent first
  EXPECT_EQ(pipe_->queued(), 3u);
  EXPECT_EQ(counters().tx_prio_queue_depth[6], 100u);
  io_.take = std::numeric_limits<size_t>::max();
  pipe_->flush();
  EXPECT_EQ(tags(), (std::vector<uint8_t>{3, 1, 2}));
  EXPECT_EQ(pipe_->queued(), 0u);
  EXPECT_EQ(counters().tx_prio_queue_depth[6], 0u);
}

TEST_F(PipelineTest, OtherPrioritiesShareByDeficitRoundRobin) {
  make();
  block_queue0();
  // 4000-byte frames, quantum 9216: two frames per turn, so 0,0,1,1,0,0,1,1 (FIFO: 0 x4, 1 x4).
  for (uint8_t i = 0; i < 4; ++i) ASSERT_TRUE(send(0, static_cast<uint8_t>(10 + i), 4000));
  for (uint8_t i = 0; i < 4; ++i) ASSERT_TRUE(send(1, static_cast<uint8_t>(20 + i), 4000));
  io_.take = std::numeric_limits<size_t>::max();
  pipe_->flush();
  EXPECT_EQ(tags(), (std::vector<uint8_t>{10, 11, 20, 21, 12, 13, 22, 23}));
}

TEST_F(PipelineTest, PfcPauseStopsAPriorityUntilItsQuantaExpire) {
  dev_.pfc.enabled[3] = true;
  make();
  wire::PauseFrame p;
  p.class_enable = 1u << 3;
  p.quanta[3] = 0xFFFF;  // 65535 x 51.2 ns = 3.36 ms
  std::array<uint8_t, wire::kMacControlFrameLen> pfc{};
  wire::build_pause_frame(pfc, kPeerMac, p);
  EXPECT_TRUE(pipe_->on_control_frame(pfc, now_));
  EXPECT_FALSE(pipe_->on_control_frame(ip_frame(kOurMac, 0, 100, 0), now_));

  ASSERT_TRUE(send(3, 1));
  ASSERT_TRUE(send(1, 2));
  now_ = now_ + Duration::micros(1);
  pipe_->flush();
  EXPECT_EQ(tags(), (std::vector<uint8_t>{2}));  // priority 3 waits
  EXPECT_EQ(counters().tx_prio_queue_depth[3], 100u);
  now_ = now_ + Duration::millis(4);
  pipe_->flush();
  EXPECT_EQ(tags(), (std::vector<uint8_t>{2, 1}));
  const PortCounters c = counters();
  EXPECT_EQ(c.rx_prio_pause[3], 1u);
  EXPECT_EQ(c.tx_prio_queue_depth[3], 0u);
  EXPECT_GT(c.rx_prio_pause_duration[3], 3000u);  // µs, brought up to date by the clock
}

TEST_F(PipelineTest, BacklogAboveXoffSendsXoffAndBelowXonSendsXon) {
  dev_.pfc.enabled[3] = true;
  dev_.pfc.xoff_bytes = 3000;
  dev_.pfc.xon_bytes = 1000;
  make();
  for (int i = 0; i < 4; ++i) pipe_->on_rx_frame(ip_frame(kOurMac, 24, 1000, 0, true));
  pipe_->after_poll(now_);
  ASSERT_EQ(io_.sent.size(), 1u);
  EXPECT_EQ(io_.sent[0].queue, 0);
  wire::MacControlFrame xoff;
  ASSERT_EQ(wire::parse_mac_control(io_.sent[0].bytes, &xoff), wire::MacControlParse::kOk);
  EXPECT_TRUE(xoff.pause.class_enable & (1u << 3));
  EXPECT_GT(xoff.pause.quanta[3], 0);
  EXPECT_EQ(std::memcmp(io_.sent[0].bytes.data() + 6, kOurMac.b.data(), 6), 0);

  now_ = now_ + Duration::micros(10);
  pipe_->on_rx_frame(ip_frame(kOurMac, 24, 500, 0, true));  // 500 <= xon_bytes
  pipe_->after_poll(now_);
  ASSERT_EQ(io_.sent.size(), 2u);
  wire::MacControlFrame xon;
  ASSERT_EQ(wire::parse_mac_control(io_.sent[1].bytes, &xon), wire::MacControlParse::kOk);
  EXPECT_TRUE(xon.pause.class_enable & (1u << 3));
  EXPECT_EQ(xon.pause.quanta[3], 0);
  EXPECT_EQ(counters().tx_prio_pause[3], 2u);
  EXPECT_EQ(io_.live(), 0u);
}

TEST_F(PipelineTest, NoPauseFramesWithoutXoffBytes) {
  dev_.pfc.enabled[3] = true;  // xoff_bytes 0: the port never sends PFC
  make();
  for (int i = 0; i < 10; ++i) pipe_->on_rx_frame(ip_frame(kOurMac, 24, 1000, 0, true));
  pipe_->after_poll(now_);
  EXPECT_TRUE(io_.sent.empty());
}

TEST_F(PipelineTest, RoceFrameToOurOwnMacIsLoopedBackOnTheNextPoll) {
  make();
  const std::vector<uint8_t> f = ip_frame(kOurMac, 26, 120, 7, true);  // DSCP 26 -> priority 3
  ASSERT_TRUE(send_bytes(f, 3));
  ASSERT_TRUE(send_bytes(ip_frame(kOurMac, 26, 120, 8, false), 3));  // not RoCE: to the driver
  pipe_->flush();
  ASSERT_EQ(io_.sent.size(), 1u);
  EXPECT_EQ(io_.sent[0].bytes[50], 8);
  ASSERT_TRUE(pipe_->has_loopback());

  Handler h;
  EXPECT_EQ(pipe_->loop_back(h), 1u);
  ASSERT_EQ(h.frames.size(), 1u);
  EXPECT_EQ(h.frames[0], f);
  EXPECT_FALSE(pipe_->has_loopback());
  EXPECT_EQ(pipe_->loop_back(h), 0u);
  const PortCounters c = counters();
  EXPECT_EQ(c.rx_prio_packets[3], 1u);
  EXPECT_EQ(c.rx_prio_bytes[3], 120u);
  EXPECT_EQ(c.tx_prio_packets[3], 1u);  // only the frame that went to the driver
  EXPECT_EQ(io_.live(), 0u);
}

TEST_F(PipelineTest, ReceivedFramesCountPerPriorityWithCeMarks) {
  dev_.trust = config::Device::Trust::kDscp;
  make();
  pipe_->on_rx_frame(ip_frame(kOurMac, 24, 300, 0, true, 3));  // CE
  pipe_->on_rx_frame(ip_frame(kOurMac, 24, 300, 0, true, 3));  // CE
  pipe_->on_rx_frame(ip_frame(kOurMac, 24, 200, 0, true, 2));  // ECT(0)
  pipe_->on_rx_frame(ip_frame(kOurMac, 24, 200, 0, true, 1));  // ECT(1)
  pipe_->on_rx_frame(ip_frame(kOurMac, 48, 64, 0, true));
  const PortCounters c = counters();
  EXPECT_EQ(c.rx_prio_packets[3], 4u);
  EXPECT_EQ(c.rx_prio_bytes[3], 1000u);
  EXPECT_EQ(c.rx_prio_marked[3], 2u);
  EXPECT_EQ(c.rx_prio_packets[6], 1u);
  EXPECT_EQ(c.rx_prio_marked[6], 0u);
}

TEST_F(PipelineTest, RefusesFramesBeyondMaxQueuedUntilTheQueuesDrain) {
  make();
  io_.capacity = kBurst + kMaxQueued + 10;
  io_.take = 0;
  size_t accepted = 0;
  while (accepted < 2 * kMaxQueued && send(1, 1)) ++accepted;
  EXPECT_EQ(accepted, kBurst + kMaxQueued);  // one full burst, then kMaxQueued queued
  EXPECT_EQ(pipe_->queued(), kMaxQueued);
  EXPECT_EQ(pipe_->begin_frame(100), nullptr);
  EXPECT_EQ(pipe_->begin_frame(kMaxFrame + 1), nullptr);
  io_.take = std::numeric_limits<size_t>::max();
  EXPECT_TRUE(send(1, 2));  // begin_frame() flushes, then has room
  for (int i = 0; i < 100 && (pipe_->queued() || pipe_->tx_pending()); ++i) pipe_->flush();
  EXPECT_EQ(io_.sent.size(), accepted + 1);
  EXPECT_EQ(io_.live(), 0u);
}

TEST_F(PipelineTest, EmptyPoolRefusesAFrame) {
  make();
  io_.capacity = 0;
  EXPECT_EQ(pipe_->begin_frame(100), nullptr);
}

TEST_F(PipelineTest, PartlyTakenBurstKeepsTheRestInOrder) {
  make();
  io_.take = 5;
  for (uint8_t i = 0; i < 12; ++i) ASSERT_TRUE(send(2, i));
  pipe_->flush();
  EXPECT_EQ(io_.sent.size(), 5u);  // the queue was full: the rest waits for the next flush
  EXPECT_TRUE(pipe_->tx_pending());
  pipe_->flush();
  pipe_->flush();
  EXPECT_FALSE(pipe_->tx_pending());
  std::vector<uint8_t> want;
  for (uint8_t i = 0; i < 12; ++i) want.push_back(i);
  EXPECT_EQ(tags(), want);
  EXPECT_EQ(io_.freed, 0u);
  EXPECT_EQ(io_.live(), 0u);
}

TEST_F(PipelineTest, DestructionReturnsEveryHeldBuffer) {
  make(2);
  io_.take = 0;
  for (uint8_t i = 0; i < 40; ++i) ASSERT_TRUE(send(static_cast<uint8_t>(i % 4), i));
  ASSERT_TRUE(send_bytes(ip_frame(kOurMac, 0, 80, 0, true), 0));  // loopback
  ASSERT_NE(pipe_->begin_frame(100), nullptr);                    // a frame being built
  EXPECT_EQ(io_.live(), 42u);
  pipe_.reset();
  EXPECT_EQ(io_.live(), 0u);
  EXPECT_EQ(io_.freed, 42u);
}

}  // namespace
}  // namespace uroce::pipeline
