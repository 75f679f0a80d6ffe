/**
 * @file compat.cc
 * @brief The IBVERBS_1.0 compat entry points (name@IBVERBS_1.0) and other symbols kept only
 * for old binaries.
 *
 * rdma-core's 1.0 ABI wraps every object in differently laid out *_1_0 structs. Programs built
 * since 2006 bind to the 1.1 versions; the 1.0 ones exist so that the symbol set equals the
 * system library's, and fail cleanly: NULL or -1 with errno = ENOSYS, or ENOSYS returned.
 */
#include <cerrno>

#include "verbs/objects.h"
#include "verbs/symver.h"

/// A 1.0 compat entry returning a pointer: NULL, errno = ENOSYS.
#define UROCE_COMPAT10_PTR(name)               \
  UROCE_EXPORT void* uroce_compat10_##name() { \
    errno = ENOSYS;                            \
    return nullptr;                            \
  }                                            \
  UROCE_COMPAT_VERSION(uroce_compat10_##name, name, "IBVERBS_1.0")
/// A 1.0 compat entry returning an int: `value` with errno = ENOSYS.
#define UROCE_COMPAT10_INT(name, value)      \
  UROCE_EXPORT int uroce_compat10_##name() { \
    errno = ENOSYS;                          \
    return value;                            \
  }                                          \
  UROCE_COMPAT_VERSION(uroce_compat10_##name, name, "IBVERBS_1.0")
#define UROCE_COMPAT10_VOID(name)              \
  UROCE_EXPORT void uroce_compat10_##name() {} \
  UROCE_COMPAT_VERSION(uroce_compat10_##name, name, "IBVERBS_1.0")

UROCE_COMPAT10_PTR(ibv_get_device_list);
UROCE_COMPAT10_VOID(ibv_free_device_list);
UROCE_COMPAT10_PTR(ibv_get_device_name);
UROCE_COMPAT10_INT(ibv_get_device_guid, 0);
UROCE_COMPAT10_PTR(ibv_open_device);
UROCE_COMPAT10_INT(ibv_close_device, -1);
UROCE_COMPAT10_INT(ibv_get_async_event, -1);
UROCE_COMPAT10_VOID(ibv_ack_async_event);
UROCE_COMPAT10_INT(ibv_query_device, ENOSYS);
UROCE_COMPAT10_INT(ibv_query_port, ENOSYS);
UROCE_COMPAT10_INT(ibv_query_gid, -1);
UROCE_COMPAT10_INT(ibv_query_pkey, -1);
UROCE_COMPAT10_PTR(ibv_alloc_pd);
UROCE_COMPAT10_INT(ibv_dealloc_pd, ENOSYS);
UROCE_COMPAT10_PTR(ibv_reg_mr);
UROCE_COMPAT10_INT(ibv_dereg_mr, ENOSYS);
UROCE_COMPAT10_PTR(ibv_create_cq);
UROCE_COMPAT10_INT(ibv_resize_cq, ENOSYS);
UROCE_COMPAT10_INT(ibv_destroy_cq, ENOSYS);
UROCE_COMPAT10_INT(ibv_get_cq_event, -1);
UROCE_COMPAT10_VOID(ibv_ack_cq_events);
UROCE_COMPAT10_PTR(ibv_create_srq);
UROCE_COMPAT10_INT(ibv_modify_srq, ENOSYS);
UROCE_COMPAT10_INT(ibv_query_srq, ENOSYS);
UROCE_COMPAT10_INT(ibv_destroy_srq, ENOSYS);
UROCE_COMPAT10_PTR(ibv_create_qp);
UROCE_COMPAT10_INT(ibv_query_qp, ENOSYS);
UROCE_COMPAT10_INT(ibv_modify_qp, ENOSYS);
UROCE_COMPAT10_INT(ibv_destroy_qp, ENOSYS);
UROCE_COMPAT10_PTR(ibv_create_ah);
UROCE_COMPAT10_INT(ibv_destroy_ah, ENOSYS);
UROCE_COMPAT10_INT(ibv_attach_mcast, ENOSYS);
UROCE_COMPAT10_INT(ibv_detach_mcast, ENOSYS);

/// ibv_register_driver@IBVERBS_1.1 (compat only): old-style provider registration, ignored.
UROCE_EXPORT void uroce_compat11_register_driver(const char*, void*) {}
UROCE_COMPAT_VERSION(uroce_compat11_register_driver, ibv_register_driver, "IBVERBS_1.1");
