/**
 * @file uroce_ext.h
 * @brief uroce's public extensions of the verbs API (libibverbs.so.1, version node UROCE_1), in
 * the manner of a provider's direct verbs (mlx5dv). Only uroce's libibverbs has them: a program
 * that must also run on rdma-core's looks them up with dlsym(RTLD_DEFAULT, "...").
 *
 * Errors: an errno value (0 on success), as ibv_modify_qp returns them.
 */
#ifndef UROCE_UROCE_EXT_H
#define UROCE_UROCE_EXT_H

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_qp;

/**
 * Out-of-order placement for one RC QP, before it leaves INIT (EINVAL otherwise, or for another
 * QP type). With selective repeat (docs/loss-recovery.md), a QP places the packets that arrive
 * ahead of a lost one at once, but by default keeps the last packet of each SEND and RDMA WRITE
 * until every earlier packet of the QP is in place, so a program that polls a message's last
 * byte finds the whole message there, as on a NIC that places in order. on != 0 places that
 * packet at once too (less copying and memory on a lossy path): then the last byte may appear
 * while earlier bytes are still old, and only the completion (or a later message) says the
 * message is whole. The device's `ooo_placement` setting gives every new QP's default.
 */
int uroce_qp_set_ooo_placement(struct ibv_qp* qp, int on);

#ifdef __cplusplus
}
#endif

#endif
