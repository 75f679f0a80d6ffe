/**
 * @file qp_stats_test.cc
 * @brief Per-QP records in the device's stats segment (lib/stats, what `uroce show qp` reads),
 * written by lib/verbs: a record per QP from ibv_create_qp, state/peer/PSNs after each
 * ibv_modify_qp, ERR after a fatal completion error, gone after ibv_destroy_qp. Read back with
 * lib/stats' reader from a private run directory ($UROCE_RUN_DIR).
 */
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "stats/reader.h"
#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

class QpStatsTest : public QpPairTest {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir("uroce-qpstats");
    ASSERT_FALSE(dir_.empty());
    setenv("UROCE_RUN_DIR", dir_.c_str(), 1);
    unsetenv("UROCE_STATS");
    open(IBV_QPT_RC);
  }
  /// The record of qpn in this process's segment, or nullptr (snap_ keeps the copy).
  const stats::QpRecord* record(uint32_t qpn) {
    snap_ = {};
    for (const stats::SegmentInfo& s : stats::list_segments(dir_)) {
      if (s.pid != getpid()) continue;
      std::string err;
      EXPECT_EQ(stats::read_segment(s.path, &snap_, &err), stats::ReadStatus::kOk) << err;
      for (const stats::QpRecord& r : snap_.qps)
        if (r.qpn == qpn) return &r;
    }
    return nullptr;
  }
  std::string dir_;
  stats::Snapshot snap_;
};

TEST_F(QpStatsTest, RecordsFollowCreateModifyErrorDestroy) {
  // The connected pair: RTS, peers and PSNs as connect_qp set them (a: sq 100 rq 200).
  const stats::QpRecord* ra = record(a_->qp_num);
  ASSERT_NE(ra, nullptr) << "no record for QP " << a_->qp_num;
  EXPECT_EQ(ra->type, 0u);  // RC
  EXPECT_EQ(ra->state, static_cast<uint32_t>(IBV_QPS_RTS));
  EXPECT_EQ(ra->peer_qpn, b_->qp_num);
  EXPECT_EQ(ra->sq_psn, 100u);
  EXPECT_EQ(ra->rq_psn, 200u);
  ibv_gid g;
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &g), 0);
  EXPECT_EQ(0, std::memcmp(ra->peer_gid, g.raw, 16));
  const stats::QpRecord* rb = record(b_->qp_num);
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(rb->peer_qpn, a_->qp_num);
  EXPECT_EQ(rb->sq_psn, 200u);

  // A new UD QP: RESET, type 2; INIT after a modify.
  ibv_qp* u = make_qp(IBV_QPT_UD, cq_a_, nullptr, false);
  ASSERT_NE(u, nullptr);
  const stats::QpRecord* ru = record(u->qp_num);
  ASSERT_NE(ru, nullptr);
  EXPECT_EQ(ru->type, 2u);
  EXPECT_EQ(ru->state, static_cast<uint32_t>(IBV_QPS_RESET));
  ibv_qp_attr at{};
  at.qp_state = IBV_QPS_INIT;
  at.port_num = 1;
  at.qkey = 0x11111111;
  ASSERT_EQ(ibv_modify_qp(u, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  ru = record(u->qp_num);
  ASSERT_NE(ru, nullptr);
  EXPECT_EQ(ru->state, static_cast<uint32_t>(IBV_QPS_INIT));
  const uint32_t u_qpn = u->qp_num;  // u is freed by ibv_destroy_qp
  ASSERT_EQ(ibv_destroy_qp(u), 0);
  EXPECT_EQ(record(u_qpn), nullptr);

  // A fatal completion error (write without remote rights) moves the target b to ERR.
  Buffer src(pd_, 64, kAllAccess);
  Buffer ro(pd_, 64, IBV_ACCESS_LOCAL_WRITE);
  ibv_sge sge{src.addr(), 64, src.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = ro.addr();
  wr.wr.rdma.rkey = ro.mr->rkey;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(a_, &wr, &bad), 0);
  auto wcs = poll_n(cq_a_, 1);
  ASSERT_EQ(wcs.size(), 1u);
  EXPECT_EQ(wcs[0].status, IBV_WC_REM_ACCESS_ERR);
  rb = record(b_->qp_num);
  ASSERT_NE(rb, nullptr);
  EXPECT_EQ(rb->state, static_cast<uint32_t>(IBV_QPS_ERR));
  ra = record(a_->qp_num);
  ASSERT_NE(ra, nullptr);
  EXPECT_EQ(ra->state, static_cast<uint32_t>(IBV_QPS_ERR));

  // Destroyed QPs leave the table.
  const uint32_t qa = a_->qp_num;
  ASSERT_EQ(ibv_destroy_qp(a_), 0);
  a_ = nullptr;
  EXPECT_EQ(record(qa), nullptr);
  EXPECT_NE(record(b_->qp_num), nullptr);
}

}  // namespace
}  // namespace uroce::verbs_test
