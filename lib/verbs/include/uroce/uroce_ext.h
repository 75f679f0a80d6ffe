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
 * QP type). With selective repeat (docs/loss-recovery.md), a QP keeps the packets that arrive
 * ahead of a lost one and by default places each only when every earlier packet of the QP is in
 * place, so memory changes exactly as on a NIC that places in order: a program that polls a
 * message's last byte finds the whole message there, and an earlier RDMA WRITE resent into the
 * same bytes never lands over a later one. on != 0 places every packet as it arrives (less
 * copying and memory on a lossy path): then the last byte may appear while earlier bytes are
 * still old, and an earlier WRITE's resent packet may overwrite a later WRITE's bytes; only the
 * completion (or a later message) says a message is whole, and WRITEs in flight at once must
 * not target the same bytes. The device's `ooo_placement` setting gives every new QP's default.
 */
int uroce_qp_set_ooo_placement(struct ibv_qp* qp, int on);

#ifdef __cplusplus
}
#endif

#endif
