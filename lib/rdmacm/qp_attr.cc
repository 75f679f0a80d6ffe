/**
 * @file qp_attr.cc
 * @brief rdma_init_qp_attr's computation (see qp_attr.h).
 */
#include "rdmacm/qp_attr.h"

#include <cerrno>
#include <cstring>

namespace uroce::rdmacm {

namespace {
bool is_ud(const Id& id) { return id.id.qp_type == IBV_QPT_UD || id.id.ps == RDMA_PS_UDP; }
bool has_peer(const Id& id) {
  return id.state == IdState::kConnResp || id.state == IdState::kReqRcvd ||
         id.state == IdState::kAccept || id.state == IdState::kEstablished;
}
}  // namespace

int init_qp_attr(const Id& id, ibv_qp_attr* attr, int* mask) {
  const ibv_qp_state want = attr->qp_state;
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = want;
  switch (want) {
    case IBV_QPS_INIT:
      attr->pkey_index = 0;
      attr->port_num = id.id.port_num ? id.id.port_num : 1;
      *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
      if (is_ud(id)) {
        attr->qkey = RDMA_UDP_QKEY;
        *mask |= IBV_QP_QKEY;
      } else {
        if (has_peer(id)) {
          attr->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
          if (id.responder_resources)
            attr->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
        }
        *mask |= IBV_QP_ACCESS_FLAGS;
      }
      return 0;
    case IBV_QPS_RTR:
      *mask = IBV_QP_STATE;
      if (is_ud(id)) return 0;
      if (!has_peer(id)) return EINVAL;
      attr->path_mtu = static_cast<ibv_mtu>(id.path_mtu);
      attr->dest_qp_num = id.remote_qpn;
      attr->rq_psn = id.local_psn;  // what our REQ/REP advertised (see qp_attr.h)
      attr->max_dest_rd_atomic = id.responder_resources;
      attr->min_rnr_timer = kMinRnrTimer;
      attr->ah_attr.is_global = 1;
      std::memcpy(attr->ah_attr.grh.dgid.raw, id.dgid.raw.data(), 16);
      attr->ah_attr.grh.sgid_index = static_cast<uint8_t>(id.sgid_index);
      attr->ah_attr.grh.hop_limit = 64;
      attr->ah_attr.grh.traffic_class = id.tos;
      attr->ah_attr.port_num = id.id.port_num ? id.id.port_num : 1;
      *mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
      if (id.id.qp_type != IBV_QPT_XRC_SEND)  // an initiator has no responder side
        *mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      return 0;
    case IBV_QPS_RTS:
      attr->sq_psn = is_ud(id) ? 0 : id.remote_psn;  // what the peer's REQ/REP advertised
      *mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
      if (is_ud(id)) return 0;
      if (!has_peer(id)) return EINVAL;
      attr->timeout = id.ack_timeout.value_or(kLocalAckTimeout);
      *mask |= IBV_QP_TIMEOUT;
      if (id.id.qp_type == IBV_QPT_XRC_RECV) return 0;  // a target sends no requests
      attr->retry_cnt = id.retry_count;
      attr->rnr_retry = id.rnr_retry;
      attr->max_rd_atomic = id.initiator_depth;
      *mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      return 0;
    default: return EINVAL;
  }
}

}  // namespace uroce::rdmacm
