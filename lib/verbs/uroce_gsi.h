/**
 * @file uroce_gsi.h
 * @brief uroce's own C interface of libibverbs.so.1, version node UROCE_PRIVATE_1: QP1 (the
 * GSI, IBA Vol 1 §13.5.1) of an opened uroce device, for uroce's librdmacm.so.1 (lib/rdmacm),
 * which speaks the IBA CM over it. Not part of rdma-core's ABI; no other program uses it.
 *
 * A device's GSI is off until the first uroce_gsi_open() on one of its contexts and goes off
 * with the last uroce_gsi_close(). While on, MADs sent to QP 1 of the device's addresses are
 * queued (transport/gsi.h); the eventfd of uroce_gsi_fd() becomes readable when some wait, and
 * uroce_gsi_recv() takes them. uroce_gsi_send() queues a MAD and sends it at once when the
 * peer's MAC is known.
 *
 * Thread-safety: every call may come from any thread; each takes the device's engine lock.
 * Errors: -1 (or NULL) with errno.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ibv_context;
struct uroce_gsi;

/// One MAD: 256 bytes with the GIDs of both ends (IPv4 as ::ffff:a.b.c.d).
struct uroce_gsi_mad {
  uint8_t peer_gid[16];   ///< received: the sender; sent: the destination
  uint8_t local_gid[16];  ///< received: the address it came to; sent: our source address
  uint32_t peer_qpn;      ///< received: the sender's QP (1); sent: the destination QP (1)
  uint8_t mad[256];
};

/// Turns the device's GSI on (counted) and returns a handle; NULL + errno on failure.
struct uroce_gsi* uroce_gsi_open(struct ibv_context* ctx);
/// Turns it off when this was the last handle; frees the handle.
void uroce_gsi_close(struct uroce_gsi* gsi);
/// An eventfd, readable while MADs may wait (read it to clear, then call uroce_gsi_recv).
int uroce_gsi_fd(struct uroce_gsi* gsi);
/// Takes up to max received MADs; returns how many (0: none), -1 + errno: ENODEV when the
/// device is gone (its uroce-hostd did not come back; uroce_gsi_fd() was made readable then).
int uroce_gsi_recv(struct uroce_gsi* gsi, struct uroce_gsi_mad* out, int max);
/// Queues one MAD for sending. 0, or -1 + errno: EINVAL (local_gid is not the device's),
/// ENOMEM (send queue full).
int uroce_gsi_send(struct uroce_gsi* gsi, const struct uroce_gsi_mad* mad);

/// For a device bound to a kernel netdev (host mode): the GID index of the source address the
/// kernel's route to dst (16 bytes, IPv4 as ::ffff:a.b.c.d) picks, in *gid_index; dst one of
/// the device's own addresses gives its own index. 0, or -1 + errno: EOPNOTSUPP (the device
/// does not follow kernel routes: use the configured addresses), ENETUNREACH (no route through
/// this device's netdev), EADDRNOTAVAIL (the source is not in the GID table).
int uroce_route_gid(struct ibv_context* ctx, const uint8_t dst[16], int* gid_index);

/// The client number of a device shared through uroce-hostd (>= 1), or -1 (the device owns
/// its port alone). The daemon steers a CM MAD to the process whose number prefixes the
/// communication ID it echoes (docs/host-mode.md, "RDMA CM").
int uroce_shared_slot(struct ibv_context* ctx);

/// uroce_hostd_port's op.
enum { UROCE_HOSTD_RELEASE = 0, UROCE_HOSTD_LISTEN = 1, UROCE_HOSTD_BIND = 2 };

/// For a device shared through uroce-hostd: rdma_bind_addr (UROCE_HOSTD_BIND) or rdma_listen
/// (UROCE_HOSTD_LISTEN) on (ps, port, addr: 16 bytes, zero for any) claims the port in the
/// host's port space; UROCE_HOSTD_RELEASE gives one claim back. 0, or -1 + errno: EADDRINUSE
/// (another process holds the port), EOPNOTSUPP (not shared: the process keeps its port space
/// alone), EINVAL.
int uroce_hostd_port(struct ibv_context* ctx, int op, uint16_t ps, uint16_t port,
                     const uint8_t addr[16]);

#ifdef __cplusplus
}
#endif
