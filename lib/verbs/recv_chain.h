/**
 * @file recv_chain.h
 * @brief Posts a chain of ibv_recv_wr through one engine call per WR, as ibv_post_recv(3) and
 * ibv_post_srq_recv(3) both document: stop at the first bad WR, return its errno and point
 * *bad_wr at it. Shared by the QP and the SRQ receive paths.
 */
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

#include "common/status.h"
#include "transport/verbs_types.h"
#include "verbs/objects.h"
#include "verbs/scratch.h"

namespace uroce::verbs {

/// post(const transport::RecvWr&) -> Status is called for each WR with the engine lock held.
template <typename Post>
int post_recv_chain(Runtime* rt, ibv_recv_wr* wr, ibv_recv_wr** bad, Post post) {
  Scratch<transport::Sge, transport::kMaxSge> scratch;
  transport::Sge* sges = scratch.v;
  int ret = 0;
  if (refuse_inherited(rt)) return EIO;
  std::lock_guard<std::mutex> g(rt->mu);
  for (; wr; wr = wr->next) {
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > transport::kMaxSge) {
      ret = EINVAL;
      break;
    }
    for (int i = 0; i < wr->num_sge; ++i)
      sges[i] = transport::Sge{wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
    Status st = post(transport::RecvWr{wr->wr_id, sges, static_cast<uint32_t>(wr->num_sge)});
    if (!st) {
      ret = st.code();
      break;
    }
  }
  if (ret && bad) *bad = wr;
  return ret;
}

}  // namespace uroce::verbs
