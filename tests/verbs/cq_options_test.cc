/**
 * @file cq_options_test.cc
 * @brief Completion options through the exported C API: the wc_flags ibv_create_cq_ex(3)
 * takes and refuses, completion timestamps (device clock and wall clock) against
 * ibv_query_rt_values_ex(3) and the clocks, what ibv_query_device_ex reports for them, and
 * ibv_modify_cq(3) event moderation seen on a completion channel.
 */
#include <poll.h>
#include <time.h>

#include <chrono>
#include <cstring>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

int64_t clock_ns(clockid_t id) {
  timespec t;
  clock_gettime(id, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

TEST(CqOptions, WcFlagsForRoceAreTakenTheRestRefused) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 8;
  // Everything that means something on RoCE, together.
  ca.wc_flags = uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
  ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &ca);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)), 0);
  // CVLAN, FLOW_TAG (raw packet QPs, flow steering), TM_INFO (tag matching), unknown bits.
  for (uint64_t flag : {uint64_t{IBV_WC_EX_WITH_CVLAN}, uint64_t{IBV_WC_EX_WITH_FLOW_TAG},
                        uint64_t{IBV_WC_EX_WITH_TM_INFO}, uint64_t{1} << 12, uint64_t{1} << 40}) {
    ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | flag;
    errno = 0;
    EXPECT_EQ(ibv_create_cq_ex(ctx, &ca), nullptr) << "wc_flags " << flag;
    EXPECT_EQ(errno, EOPNOTSUPP) << "wc_flags " << flag;
  }
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

TEST(CqOptions, DeviceReportsItsClockAndModerationCaps) {
  ibv_context* ctx = open_builtin();
  ASSERT_NE(ctx, nullptr);
  ibv_device_attr_ex a;
  std::memset(&a, 0, sizeof a);
  ASSERT_EQ(ibv_query_device_ex(ctx, nullptr, &a), 0);
  EXPECT_EQ(a.hca_core_clock, 1'000'000u);  // kHz: one tick per nanosecond
  EXPECT_EQ(a.completion_timestamp_mask, ~uint64_t{0} >> 1);
  EXPECT_EQ(a.cq_mod_caps.max_cq_count, 0xffff);
  EXPECT_EQ(a.cq_mod_caps.max_cq_period, 0xffff);
  // The raw clock is CLOCK_MONOTONIC.
  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  const int64_t before = clock_ns(CLOCK_MONOTONIC);
  ASSERT_EQ(ibv_query_rt_values_ex(ctx, &v), 0);
  const int64_t after = clock_ns(CLOCK_MONOTONIC);
  EXPECT_EQ(v.comp_mask, static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK));
  const int64_t raw = int64_t{v.raw_clock.tv_sec} * 1'000'000'000 + v.raw_clock.tv_nsec;
  EXPECT_GE(raw, before);
  EXPECT_LE(raw, after);
  EXPECT_LT(v.raw_clock.tv_nsec, 1'000'000'000);
  // Bad input: an unknown comp_mask bit.
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | (1u << 5);
  EXPECT_EQ(ibv_query_rt_values_ex(ctx, &v), EINVAL);
  EXPECT_EQ(ibv_close_device(ctx), 0);
}

/// a_ sends to b_, whose receive CQ is an extended CQ with both timestamps.
class TimestampTest : public QpPairTest {
 protected:
  void SetUp() override {
    ctx_ = open_builtin();
    ASSERT_NE(ctx_, nullptr);
    pd_ = ibv_alloc_pd(ctx_);
    ASSERT_NE(pd_, nullptr);
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 64;
    ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                  IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
    cqx_ = ibv_create_cq_ex(ctx_, &ca);
    ASSERT_NE(cqx_, nullptr);
    cq_a_ = ibv_create_cq(ctx_, 64, nullptr, nullptr, 0);
    cq_b_ = ibv_cq_ex_to_cq(cqx_);
    a_ = make_qp(IBV_QPT_RC, cq_a_, nullptr, false);
    b_ = make_qp(IBV_QPT_RC, cq_b_, nullptr, false);
    ASSERT_NE(a_, nullptr);
    ASSERT_NE(b_, nullptr);
    ASSERT_EQ(connect_qp(ctx_, a_, b_->qp_num, 1, 2), 0);
    ASSERT_EQ(connect_qp(ctx_, b_, a_->qp_num, 2, 1), 0);
  }
  ibv_cq_ex* cqx_ = nullptr;
};

TEST_F(TimestampTest, CompletionsCarryTheDeviceClockAndTheWallClock) {
  Buffer src(pd_, 64, kAllAccess);
  Buffer dst(pd_, 64 * 3, kAllAccess);
  for (uint64_t i = 0; i < 3; ++i) {
    ibv_sge s{dst.addr() + i * 64, 64, dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(i, &s);
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(b_, &rwr, &bad), 0);
  }
  const int64_t mono_before = clock_ns(CLOCK_MONOTONIC);
  const int64_t wall_before = clock_ns(CLOCK_REALTIME);
  for (int i = 0; i < 3; ++i) {
    ibv_sge sge{src.addr(), 64, src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    ASSERT_EQ(post_and_wait(wr).status, IBV_WC_SUCCESS);
  }
  // The receives completed before the sends' ACKs came back: all three are in the CQ.
  ibv_poll_cq_attr pa{};
  ASSERT_EQ(ibv_start_poll(cqx_, &pa), 0);
  std::vector<uint64_t> ts, wall;
  do {
    EXPECT_EQ(cqx_->status, IBV_WC_SUCCESS);
    EXPECT_EQ(ibv_wc_read_byte_len(cqx_), 64u);
    ts.push_back(ibv_wc_read_completion_ts(cqx_));
    wall.push_back(ibv_wc_read_completion_wallclock_ns(cqx_));
  } while (ibv_next_poll(cqx_) == 0);
  ibv_end_poll(cqx_);
  const int64_t mono_after = clock_ns(CLOCK_MONOTONIC);
  const int64_t wall_after = clock_ns(CLOCK_REALTIME);
  ASSERT_EQ(ts.size(), 3u);
  // Slack for the wall clock: it is converted at the read, and NTP may slew it meanwhile.
  constexpr int64_t kSlack = 1'000'000;
  for (size_t i = 0; i < ts.size(); ++i) {
    EXPECT_GE(static_cast<int64_t>(ts[i]), mono_before) << i;
    EXPECT_LE(static_cast<int64_t>(ts[i]), mono_after) << i;
    EXPECT_GE(static_cast<int64_t>(wall[i]), wall_before - kSlack) << i;
    EXPECT_LE(static_cast<int64_t>(wall[i]), wall_after + kSlack) << i;
    if (i > 0) {
      EXPECT_GE(ts[i], ts[i - 1]);
    }
  }
  // Each send waited for its completion, so the receives are at least that far apart: the
  // timestamps are not one value read at poll time.
  EXPECT_GT(ts[2], ts[0]);
}

/// Moderation on the channel CQ ecq_ (ChannelPairTest).
class ModerationTest : public ChannelPairTest {
 protected:
  /// One SEND a2 -> b2 into a posted receive; returns once the sender's completion is in, so
  /// the receive's completion is in ecq_ (the responder completes before it acknowledges).
  void send_one(Buffer& src, Buffer& dst) {
    ibv_sge rs{dst.addr(), static_cast<uint32_t>(dst.bytes.size()), dst.mr->lkey};
    ibv_recv_wr rwr = recv_wr(7, &rs);
    ibv_recv_wr* rbad = nullptr;
    ASSERT_EQ(ibv_post_recv(b2_, &rwr, &rbad), 0);
    ibv_sge s{src.addr(), static_cast<uint32_t>(src.bytes.size()), src.mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(a2_, &wr, &bad), 0);
    auto wcs = poll_n(cq_a_, 1);
    ASSERT_EQ(wcs.size(), 1u);
    EXPECT_EQ(wcs[0].status, IBV_WC_SUCCESS);
  }
  /// Takes one event off the channel (it must be ecq_'s) and acknowledges it.
  void take_event() {
    ibv_cq* cq = nullptr;
    void* cq_ctx = nullptr;
    ASSERT_EQ(ibv_get_cq_event(ch_, &cq, &cq_ctx), 0);
    EXPECT_EQ(cq, ecq_);
    ibv_ack_cq_events(cq, 1);
  }
  bool event_pending(int timeout_ms) {
    pollfd p{ch_->fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
  }
};

TEST_F(ModerationTest, BadAttributesAreRefused) {
  ibv_modify_cq_attr m{};
  EXPECT_EQ(ibv_modify_cq(ecq_, &m), EINVAL);  // mask 0
  m.attr_mask = IBV_CQ_ATTR_MODERATE | IBV_CQ_ATTR_RESERVED;
  EXPECT_EQ(ibv_modify_cq(ecq_, &m), EINVAL);
  m.attr_mask = 1u << 7;
  EXPECT_EQ(ibv_modify_cq(ecq_, &m), EINVAL);
  EXPECT_EQ(ibv_modify_cq(ecq_, nullptr), EINVAL);
  // The refused calls left the CQ unmoderated: the first completion signals.
  Buffer src(pd_, 32, kAllAccess);
  Buffer dst(pd_, 32, kAllAccess);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  send_one(src, dst);
  ASSERT_TRUE(event_pending(5000));
  take_event();
  EXPECT_EQ(poll_n(ecq_, 1).size(), 1u);
}

TEST_F(ModerationTest, CountHoldsTheEventUntilTheNthCompletion) {
  ibv_modify_cq_attr m{};
  m.attr_mask = IBV_CQ_ATTR_MODERATE;
  m.moderate.cq_count = 4;
  m.moderate.cq_period = 0;
  ASSERT_EQ(ibv_modify_cq(ecq_, &m), 0);
  Buffer src(pd_, 32, kAllAccess);
  Buffer dst(pd_, 32, kAllAccess);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  for (int i = 0; i < 3; ++i) send_one(src, dst);
  // Three completions are in the CQ, and no event (it is raised when a completion is added).
  EXPECT_FALSE(event_pending(0));
  send_one(src, dst);
  ASSERT_TRUE(event_pending(5000));
  take_event();
  EXPECT_EQ(poll_n(ecq_, 4).size(), 4u);
  EXPECT_FALSE(event_pending(0));  // one event for the four
}

TEST_F(ModerationTest, PeriodSendsTheEventThatLongAfterTheFirstCompletion) {
  ibv_modify_cq_attr m{};
  m.attr_mask = IBV_CQ_ATTR_MODERATE;
  m.moderate.cq_count = 1000;
  m.moderate.cq_period = 20'000;  // 20 ms
  ASSERT_EQ(ibv_modify_cq(ecq_, &m), 0);
  Buffer src(pd_, 32, kAllAccess);
  Buffer dst(pd_, 32, kAllAccess);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  const auto start = std::chrono::steady_clock::now();
  send_one(src, dst);
  // The progress thread (nobody else calls) fires the period's end.
  ASSERT_TRUE(event_pending(5000));
  const auto waited = std::chrono::steady_clock::now() - start;
  take_event();
  EXPECT_GE(waited, std::chrono::milliseconds(20));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_EQ(poll_n(ecq_, 1).size(), 1u);
  // Moderation off again: the next arm signals at the first completion, at once.
  m.moderate.cq_count = 0;
  m.moderate.cq_period = 0;
  ASSERT_EQ(ibv_modify_cq(ecq_, &m), 0);
  ASSERT_EQ(ibv_req_notify_cq(ecq_, 0), 0);
  send_one(src, dst);
  EXPECT_TRUE(event_pending(0));
  take_event();
  EXPECT_EQ(poll_n(ecq_, 1).size(), 1u);
}

}  // namespace
}  // namespace uroce::verbs_test
