/**
 * @file qp_attr.h
 * @brief rdma_init_qp_attr(3): the QP attributes and mask that take an id's QP to INIT, RTR
 * or RTS for the connection the CM negotiated, as the kernel's CM computes them
 * (rdma_cm/ib_cm): INIT with the partition, port and access rights (REMOTE_WRITE, plus
 * REMOTE_READ and REMOTE_ATOMIC when the peer may issue READs: responder resources > 0;
 * none before a connection exists); RTR with the path (GRH to the peer's GID, our GID index,
 * hop limit 64, the id's TOS), path MTU, peer QPN, the starting PSN we advertised and our
 * responder resources; RTS with the peer's advertised starting PSN, the retry counts and our
 * initiator depth. XRC, as the kernel's cm_init_qp_rtr_attr/cm_init_qp_rts_attr for
 * IB_QPT_XRC_INI and _TGT: an XRC_SEND QP's RTR has no responder resources or RNR timer, an
 * XRC_RECV QP's RTS only the SQ PSN and ACK timeout. UD: INIT with the port space's Q_Key
 * (RDMA_UDP_QKEY), RTR, RTS with SQ PSN 0.
 *
 * PSNs: the Starting PSN of a REQ or REP is where its SENDER's receive queue starts (the
 * kernel CM sets its own rq_psn from the REQ/REP it sends and its sq_psn from the one it
 * receives): so RTR's rq_psn is our local_psn and RTS's sq_psn the peer's remote_psn.
 * tests/interop checks it against Linux rxe, with which swapped PSNs do not connect.
 */
#pragma once

#include <infiniband/verbs.h>

#include "rdmacm/cma.h"

namespace uroce::rdmacm {

/// Local ACK timeout of the RTS attributes: 4.096 us * 2^17 = 537 ms, as the Linux CM gives a
/// RoCE connection (packet lifetime 16, CMA_IBOE_PACKET_LIFETIME, + 1). With 7 retries a peer
/// must be silent for ~3.8 s before the QP fails: 67 ms (14) let a descheduled process on a
/// loaded 2-core machine end a transfer with RETRY_EXC_ERR.
inline constexpr uint8_t kLocalAckTimeout = 17;
/// RNR NAK timer of the RTR attributes: IBA code 0 = 655.36 ms, as the Linux CM gives every
/// connection (cm_init_qp_rtr_attr). With the 5 RNR retries pyverbs asks for, code 12 (0.64 ms)
/// left a receiver ~3 ms to post its next receive: a descheduled process on a loaded 2-core
/// machine ended rdma-core's test_rdmacm_async_traffic_external_qp with RNR_RETRY_EXC_ERR.
inline constexpr uint8_t kMinRnrTimer = 0;

/// Fills *attr for attr->qp_state (INIT, RTR or RTS) and sets *mask. EINVAL: another state,
/// or RTR/RTS before the connection has a peer.
int init_qp_attr(const Id& id, ibv_qp_attr* attr, int* mask);

}  // namespace uroce::rdmacm
