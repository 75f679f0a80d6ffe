/**
 * @file private_abi.cc
 * @brief rdma-core's private provider node IBVERBS_PRIVATE_<N> (N from the installed library,
 * private_abi.h): every symbol libmlx5.so.1 and libefa.so.1 import.
 *
 * Those vendor libraries are linked BIND_NOW, so perftest does not even start unless all of
 * these resolve. Their constructors register a driver (verbs_register_driver_<N>): accepted and
 * ignored, since uroce lists only its own devices. Nothing else here runs unless a vendor
 * device is opened, which cannot happen; every command fails with EOPNOTSUPP.
 * The real prototypes are in rdma-core's <infiniband/driver.h>, which is not installed; only
 * the return conventions matter here (int errno, pointer + errno, void).
 */
#include <cerrno>

#include "verbs/objects.h"
#include "verbs/symver.h"

#define UROCE_CAT2(a, b) a##b
#define UROCE_CAT(a, b) UROCE_CAT2(a, b)

/// A provider command: returns EOPNOTSUPP.
#define UROCE_CMD(name) \
  UROCE_EXPORT int name(...) { return EOPNOTSUPP; }

UROCE_CMD(ibv_cmd_advise_mr)
UROCE_CMD(ibv_cmd_alloc_dm)
UROCE_CMD(ibv_cmd_alloc_mw)
UROCE_CMD(ibv_cmd_alloc_pd)
UROCE_CMD(ibv_cmd_attach_mcast)
UROCE_CMD(ibv_cmd_close_xrcd)
UROCE_CMD(ibv_cmd_create_ah)
UROCE_CMD(ibv_cmd_create_counters)
UROCE_CMD(ibv_cmd_create_cq)
UROCE_CMD(ibv_cmd_create_cq_ex)
UROCE_CMD(ibv_cmd_create_flow)
UROCE_CMD(ibv_cmd_create_flow_action_esp)
UROCE_CMD(ibv_cmd_create_qp)
UROCE_CMD(ibv_cmd_create_qp_ex)
UROCE_CMD(ibv_cmd_create_qp_ex2)
UROCE_CMD(ibv_cmd_create_rwq_ind_table)
UROCE_CMD(ibv_cmd_create_srq)
UROCE_CMD(ibv_cmd_create_srq_ex)
UROCE_CMD(ibv_cmd_create_wq)
UROCE_CMD(ibv_cmd_dealloc_mw)
UROCE_CMD(ibv_cmd_dealloc_pd)
UROCE_CMD(ibv_cmd_dereg_mr)
UROCE_CMD(ibv_cmd_destroy_ah)
UROCE_CMD(ibv_cmd_destroy_counters)
UROCE_CMD(ibv_cmd_destroy_cq)
UROCE_CMD(ibv_cmd_destroy_flow)
UROCE_CMD(ibv_cmd_destroy_flow_action)
UROCE_CMD(ibv_cmd_destroy_qp)
UROCE_CMD(ibv_cmd_destroy_rwq_ind_table)
UROCE_CMD(ibv_cmd_destroy_srq)
UROCE_CMD(ibv_cmd_destroy_wq)
UROCE_CMD(ibv_cmd_detach_mcast)
UROCE_CMD(ibv_cmd_free_dm)
UROCE_CMD(ibv_cmd_get_context)
UROCE_CMD(ibv_cmd_modify_cq)
UROCE_CMD(ibv_cmd_modify_flow_action_esp)
UROCE_CMD(ibv_cmd_modify_qp)
UROCE_CMD(ibv_cmd_modify_qp_ex)
UROCE_CMD(ibv_cmd_modify_srq)
UROCE_CMD(ibv_cmd_modify_wq)
UROCE_CMD(ibv_cmd_open_qp)
UROCE_CMD(ibv_cmd_open_xrcd)
UROCE_CMD(ibv_cmd_post_recv)
UROCE_CMD(ibv_cmd_post_send)
UROCE_CMD(ibv_cmd_post_srq_recv)
UROCE_CMD(ibv_cmd_query_context)
UROCE_CMD(ibv_cmd_query_device_any)
UROCE_CMD(ibv_cmd_query_mr)
UROCE_CMD(ibv_cmd_query_port)
UROCE_CMD(ibv_cmd_query_qp)
UROCE_CMD(ibv_cmd_query_srq)
UROCE_CMD(ibv_cmd_read_counters)
UROCE_CMD(ibv_cmd_reg_dm_mr)
UROCE_CMD(ibv_cmd_reg_dmabuf_mr)
UROCE_CMD(ibv_cmd_reg_mr)
UROCE_CMD(ibv_cmd_req_notify_cq)
UROCE_CMD(ibv_cmd_rereg_mr)
UROCE_CMD(ibv_cmd_resize_cq)

/// Returns a negative errno (it would otherwise return the number of completions).
UROCE_EXPORT int ibv_cmd_poll_cq(...) { return -EOPNOTSUPP; }

UROCE_EXPORT int execute_ioctl(...) { return EOPNOTSUPP; }
UROCE_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, ...) { return num_attrs; }
UROCE_EXPORT void __verbs_log(verbs_context*, const char*, ...) {}

UROCE_EXPORT void* _verbs_init_and_alloc_context(...) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT ibv_context* verbs_open_device(ibv_device*, void*) {
  errno = EOPNOTSUPP;
  return nullptr;
}
UROCE_EXPORT void verbs_init_cq(ibv_cq*, ibv_context*, ibv_comp_channel*, void*) {}
UROCE_EXPORT void verbs_set_ops(verbs_context*, const void*) {}
UROCE_EXPORT void verbs_uninit_context(verbs_context*) {}
UROCE_EXPORT int ibv_read_ibdev_sysfs_file(char*, size_t, const char*, const char*, ...) {
  errno = ENOENT;
  return -1;
}

/// Read by providers when a device is hot-unplugged; never set here.
extern "C" {
__attribute__((visibility("default"))) bool verbs_allow_disassociate_destroy = false;
}

/// Provider registration from libmlx5/libefa constructors: accepted and ignored.
UROCE_EXPORT void UROCE_CAT(verbs_register_driver_, UROCE_VERBS_PRIVATE_ABI)(const void*) {}
