/**
 * @file ops_table.cc
 * @brief Fills struct ibv_context_ops and the extended ops of struct verbs_context.
 *
 * The inline verbs of <infiniband/verbs.h> (ibv_poll_cq, ibv_post_send, ibv_create_cq_ex,
 * ibv_query_device_ex, ...) jump through these pointers. Every pointer is set: to the real
 * operation, or to a stub that fails like rdma-core's dummy ops (EOPNOTSUPP, or NULL with
 * errno = EOPNOTSUPP). verbs_get_ctx_op() finds an op only when vctx->sz covers it, so the
 * context sets sz to sizeof(struct verbs_context) (docs/design.md, "The ABI contract").
 */
#include <cerrno>

#include "verbs/objects.h"

namespace uroce::verbs {

namespace {

template <typename R>
R* fail_null() {
  errno = EOPNOTSUPP;
  return nullptr;
}

void* compat_stub() {
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // namespace

void fill_ops(Context* ctx) {
  verbs_context& v = ctx->vctx;
  ibv_context_ops& o = v.context.ops;

  // ---- struct ibv_context_ops ----
  o._compat_query_device = [](ibv_context*, ibv_device_attr*) { return EOPNOTSUPP; };
  o._compat_query_port = [](ibv_context*, uint8_t, _compat_ibv_port_attr*) { return EOPNOTSUPP; };
  o._compat_alloc_pd = compat_stub;
  o._compat_dealloc_pd = compat_stub;
  o._compat_reg_mr = compat_stub;
  o._compat_rereg_mr = compat_stub;
  o._compat_dereg_mr = compat_stub;
  o.alloc_mw = op_alloc_mw;
  o.bind_mw = op_bind_mw;
  o.dealloc_mw = op_dealloc_mw;
  o._compat_create_cq = compat_stub;
  o.poll_cq = op_poll_cq;
  o.req_notify_cq = op_req_notify_cq;
  o._compat_cq_event = compat_stub;
  o._compat_resize_cq = compat_stub;
  o._compat_destroy_cq = compat_stub;
  o._compat_create_srq = compat_stub;
  o._compat_modify_srq = compat_stub;
  o._compat_query_srq = compat_stub;
  o._compat_destroy_srq = compat_stub;
  o.post_srq_recv = op_post_srq_recv;
  o._compat_create_qp = compat_stub;
  o._compat_query_qp = compat_stub;
  o._compat_modify_qp = compat_stub;
  o._compat_destroy_qp = compat_stub;
  o.post_send = op_post_send;
  o.post_recv = op_post_recv;
  o._compat_create_ah = compat_stub;
  o._compat_destroy_ah = compat_stub;
  o._compat_attach_mcast = compat_stub;
  o._compat_detach_mcast = compat_stub;
  o._compat_async_event = compat_stub;

  // ---- struct verbs_context (extended ops) ----
  v.query_port = op_query_port;
  v.advise_mr = op_advise_mr;
  v.alloc_null_mr = [](ibv_pd*) { return fail_null<ibv_mr>(); };
  v.read_counters = [](ibv_counters*, uint64_t*, uint32_t, uint32_t) { return EOPNOTSUPP; };
  v.attach_counters_point_flow = [](ibv_counters*, ibv_counter_attach_attr*, ibv_flow*) {
    return EOPNOTSUPP;
  };
  v.create_counters = [](ibv_context*, ibv_counters_init_attr*) {
    return fail_null<ibv_counters>();
  };
  v.destroy_counters = [](ibv_counters*) { return EOPNOTSUPP; };
  v.reg_dm_mr = [](ibv_pd*, ibv_dm*, uint64_t, size_t, unsigned int) {
    return fail_null<ibv_mr>();
  };
  v.alloc_dm = [](ibv_context*, ibv_alloc_dm_attr*) { return fail_null<ibv_dm>(); };
  v.free_dm = [](ibv_dm*) { return EOPNOTSUPP; };
  v.modify_flow_action_esp = [](ibv_flow_action*, ibv_flow_action_esp_attr*) { return EOPNOTSUPP; };
  v.destroy_flow_action = [](ibv_flow_action*) { return EOPNOTSUPP; };
  v.create_flow_action_esp = [](ibv_context*, ibv_flow_action_esp_attr*) {
    return fail_null<ibv_flow_action>();
  };
  v.modify_qp_rate_limit = [](ibv_qp*, ibv_qp_rate_limit_attr*) { return EOPNOTSUPP; };
  v.alloc_parent_domain = op_alloc_parent_domain;
  v.dealloc_td = op_dealloc_td;
  v.alloc_td = op_alloc_td;
  v.modify_cq = op_modify_cq;
  v.post_srq_ops = [](ibv_srq*, ibv_ops_wr* op, ibv_ops_wr** bad) {
    if (bad) *bad = op;
    return EOPNOTSUPP;
  };
  v.destroy_rwq_ind_table = [](ibv_rwq_ind_table*) { return EOPNOTSUPP; };
  v.create_rwq_ind_table = [](ibv_context*, ibv_rwq_ind_table_init_attr*) {
    return fail_null<ibv_rwq_ind_table>();
  };
  v.destroy_wq = [](ibv_wq*) { return EOPNOTSUPP; };
  v.modify_wq = [](ibv_wq*, ibv_wq_attr*) { return EOPNOTSUPP; };
  v.create_wq = [](ibv_context*, ibv_wq_init_attr*) { return fail_null<ibv_wq>(); };
  v.query_rt_values = op_query_rt_values;
  v.create_cq_ex = op_create_cq_ex;
  v.priv = nullptr;
  v.query_device_ex = op_query_device_ex;
  v.ibv_destroy_flow = [](ibv_flow*) { return EOPNOTSUPP; };
  v.ABI_placeholder2 = [] {};
  v.ibv_create_flow = [](ibv_qp*, ibv_flow_attr*) { return fail_null<ibv_flow>(); };
  v.ABI_placeholder1 = [] {};
  v.open_qp = [](ibv_context*, ibv_qp_open_attr*) { return fail_null<ibv_qp>(); };
  v.create_qp_ex = op_create_qp_ex;
  v.get_srq_num = op_get_srq_num;
  v.create_srq_ex = op_create_srq_ex;
  v.open_xrcd = op_open_xrcd;
  v.close_xrcd = op_close_xrcd;
}

}  // namespace uroce::verbs
