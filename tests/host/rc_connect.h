/**
 * @file rc_connect.h
 * @brief An RC QP taken INIT -> RTR -> RTS towards a QP of this host (the test programs the
 * hostd.* cases run: both QPs in one process, MTU 1024, PSNs 0, ACK timeout 14, 7 retries).
 */
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

namespace hostd_test {

/// false when one of the three ibv_modify_qp calls fails (errno set by it).
inline bool connect_rc(ibv_qp* qp, uint32_t dqpn, const ibv_gid& gid, int gid_index) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return false;
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dqpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return false;
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

}  // namespace hostd_test
