/**
 * @file cq.cc
 * @brief Completion queues and completion channels: ibv_create_cq(3), ibv_create_cq_ex(3)
 * (start_poll/next_poll/end_poll and the read_* accessors), ibv_resize_cq(3),
 * ibv_req_notify_cq(3), ibv_create_comp_channel(3), ibv_get_cq_event(3).
 *
 * A completion channel's fd is the read end of a pipe: one byte per queued event, so it works
 * with poll/epoll and with O_NONBLOCK set by the program. Events come from the engine's
 * EngineObserver::on_cq_event (runtime.cc) once per arm (ibv_req_notify_cq).
 *
 * Extended CQs (ibv_create_cq_ex) take the wc_flags that mean something on RoCE: byte_len, imm,
 * qp_num, src_qp, sl, slid and dlid_path_bits (0: RoCE has no LIDs) and the two completion
 * timestamps; CVLAN and FLOW_TAG (raw packet QPs and flow steering) and TM_INFO (hardware tag
 * matching) are EOPNOTSUPP, as is any unknown bit. The timestamp is the engine's time when it
 * generated the completion (transport Cqe::ts): the device clock is CLOCK_MONOTONIC in
 * nanoseconds (hca_core_clock 1 GHz, ibv_query_rt_values_ex's raw clock), and the wall-clock
 * reading adds CLOCK_REALTIME - CLOCK_MONOTONIC as of the read.
 *
 * ibv_modify_cq(3) sets event moderation (transport Engine::modify_cq): an armed CQ's event
 * comes at its cq_count-th completion or cq_period microseconds after the first, whichever is
 * first.
 *
 * The `sl` of a UD receive completion (it has IBV_WC_GRH) is the RoCE packet type, as
 * ConnectX (mlx5) reports it on RoCE ports: bit 3 = the frame had a UDP header (RoCEv2), bits
 * 2..0 = its L3 header (0 GRH / RoCEv1, 1 IPv6, 2 IPv4). A RoCE frame has no service level of
 * its own, and UCX's ud_verbs (1.10 to 1.17) reads these bits to find where the destination
 * address sits in the 40-byte GRH slot; with anything else it drops every IPv4 datagram.
 */
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/domain.h"
#include "verbs/objects.h"
#include "verbs/scratch.h"
#include "verbs/symver.h"

namespace uroce::verbs {

namespace {

constexpr int kMaxCqe = static_cast<int>(transport::kMaxCqe);  // the engine's limit
constexpr uint64_t kSupportedWcFlags = uint64_t{IBV_WC_STANDARD_FLAGS} |
                                       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

static_assert(static_cast<int>(transport::WcStatus::kGeneralErr) == IBV_WC_GENERAL_ERR);
static_assert(static_cast<int>(transport::WcStatus::kRemAccessErr) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(transport::WcOpcode::kRecvRdmaWithImm) == IBV_WC_RECV_RDMA_WITH_IMM);
static_assert(static_cast<int>(transport::WcOpcode::kFetchAdd) == IBV_WC_FETCH_ADD);
static_assert(static_cast<int>(transport::WcOpcode::kAtomicWrite) == IBV_WC_ATOMIC_WRITE &&
              static_cast<int>(transport::WcOpcode::kFlush) == kIbvWcFlush);
static_assert(same_value(transport::kWcGrh, IBV_WC_GRH) &&
              same_value(transport::kWcWithImm, IBV_WC_WITH_IMM) &&
              same_value(transport::kWcWithInv, IBV_WC_WITH_INV));

Cq* cqx(ibv_cq_ex* c) { return from_ibv<Cq>(c); }

/// RoCE packet type in a UD receive completion's sl (file comment).
constexpr uint8_t kSlRoceUdp = 0x8;
constexpr uint8_t kSlL3Ipv6 = 0x1;
constexpr uint8_t kSlL3Ipv4 = 0x2;

constexpr uint8_t kSlL3Grh = 0x0;  ///< RoCE v1: a GRH and no UDP header

/// The sl reported for a completion: the RoCE packet type for UD receives, else the engine's.
uint8_t wc_sl(const transport::Cqe& c) {
  if (!(c.wc_flags & transport::kWcGrh)) return c.sl;
  if (c.roce_v1) return kSlL3Grh;
  return kSlRoceUdp | (c.ipv4 ? kSlL3Ipv4 : kSlL3Ipv6);
}

/// Pops one completion of cq into cq->cur; false when empty. drive: run progress first.
bool pop_one(Cq* cq, bool drive) {
  Runtime* rt = cq->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  if (drive) drive_locked(rt);
  transport::Cqe e;
  if (rt->engine->poll_cq(cq->id, std::span<transport::Cqe>(&e, 1)) == 0) return false;
  cq->cur = e;
  cq->cq.status = static_cast<ibv_wc_status>(e.status);
  cq->cq.wr_id = e.wr_id;
  return true;
}

int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  return pop_one(cqx(c), true) ? 0 : ENOENT;
}
int next_poll(ibv_cq_ex* c) { return pop_one(cqx(c), false) ? 0 : ENOENT; }
void end_poll(ibv_cq_ex*) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return static_cast<ibv_wc_opcode>(cqx(c)->cur.opcode); }
uint32_t read_vendor_err(ibv_cq_ex* c) { return cqx(c)->cur.vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return cqx(c)->cur.byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return cqx(c)->cur.imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return cqx(c)->cur.qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return cqx(c)->cur.src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return cqx(c)->cur.wc_flags; }
uint32_t read_slid(ibv_cq_ex*) { return 0; }
uint8_t read_sl(ibv_cq_ex* c) { return wc_sl(cqx(c)->cur); }
uint8_t read_dlid_path_bits(ibv_cq_ex*) { return 0; }
uint64_t read_completion_ts(ibv_cq_ex* c) { return static_cast<uint64_t>(cqx(c)->cur.ts.ns); }
uint16_t read_cvlan(ibv_cq_ex*) { return 0; }
uint32_t read_flow_tag(ibv_cq_ex*) { return 0; }
void read_tm_info(ibv_cq_ex*, ibv_wc_tm_info* tm) { std::memset(tm, 0, sizeof *tm); }
uint64_t read_completion_wallclock_ns(ibv_cq_ex* c) {
  timespec r;
  clock_gettime(CLOCK_REALTIME, &r);
  const int64_t wall = int64_t{r.tv_sec} * 1'000'000'000 + r.tv_nsec;
  return static_cast<uint64_t>(cqx(c)->cur.ts.ns + (wall - now().ns));
}

Cq* create_cq_obj(ibv_context* c, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector, uint64_t wc_flags, Pd* parent = nullptr) {
  Context* ctx = ctx_of(c);
  if (cqe < 1 || cqe > kMaxCqe || comp_vector < 0 || comp_vector >= c->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  if (channel && channel->context != c) {
    errno = EINVAL;
    return nullptr;
  }
  Runtime* rt = ctx->rt;
  if (int err = rt->start()) {  // a deferred open (device::Runtime::open) opens the port here
    errno = err;
    return nullptr;
  }
  auto* cq = new_obj<Cq>(parent, kResCq);
  if (!cq) return nullptr;
  std::memset(&cq->cq, 0, sizeof cq->cq);
  {
    std::lock_guard<std::mutex> g(rt->mu);
    auto r = rt->engine->create_cq(static_cast<uint32_t>(cqe));
    if (!r) {
      delete_obj(cq, kResCq);
      errno = r.status().code();
      return nullptr;
    }
    cq->id = r.value();
    rt->cqs[cq->id] = cq;
  }
  cq->ctx = ctx;
  cq->channel = channel ? from_ibv<Channel>(channel) : nullptr;
  if (cq->channel) {
    cq->channel->cqs++;
    __atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
  }
  cq->wc_flags = wc_flags;
  cq->parent = parent;
  if (parent) hold_domain(&parent->pd);
  ibv_cq_ex& x = cq->cq;
  x.context = c;
  x.channel = channel;
  x.cq_context = cq_context;
  x.handle = cq->id;
  x.cqe = cqe;
  pthread_mutex_init(&x.mutex, nullptr);
  pthread_cond_init(&x.cond, nullptr);
  x.start_poll = start_poll;
  x.next_poll = next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_byte_len = read_byte_len;
  x.read_imm_data = read_imm_data;
  x.read_qp_num = read_qp_num;
  x.read_src_qp = read_src_qp;
  x.read_wc_flags = read_wc_flags;
  x.read_slid = read_slid;
  x.read_sl = read_sl;
  x.read_dlid_path_bits = read_dlid_path_bits;
  x.read_completion_ts = read_completion_ts;
  x.read_cvlan = read_cvlan;
  x.read_flow_tag = read_flow_tag;
  x.read_tm_info = read_tm_info;
  x.read_completion_wallclock_ns = read_completion_wallclock_ns;
  ctx->children++;
  return cq;
}

}  // namespace

void to_wc(const transport::Cqe& c, ibv_wc* wc) {
  wc->wr_id = c.wr_id;
  wc->status = static_cast<ibv_wc_status>(c.status);
  wc->opcode = static_cast<ibv_wc_opcode>(c.opcode);
  wc->vendor_err = c.vendor_err;
  wc->byte_len = c.byte_len;
  wc->imm_data = c.imm_data;
  wc->qp_num = c.qp_num;
  wc->src_qp = c.src_qp;
  wc->wc_flags = c.wc_flags;
  wc->pkey_index = c.pkey_index;
  wc->slid = 0;
  wc->sl = wc_sl(c);
  wc->dlid_path_bits = 0;
}

int op_poll_cq(ibv_cq* c, int n, ibv_wc* wc) {
  if (n < 0) return -1;
  Cq* cq = cq_of(c);
  Runtime* rt = cq->ctx->rt;
  if (refuse_inherited(rt)) return -EIO;
  constexpr int kBatch = 32;
  Scratch<transport::Cqe, kBatch> scratch;  // engine->poll_cq() writes what it returns
  transport::Cqe* buf = scratch.v;
  std::lock_guard<std::mutex> g(rt->mu);
  drive_locked(rt);
  int done = 0;
  while (done < n) {
    size_t want = static_cast<size_t>(std::min(kBatch, n - done));
    size_t got = rt->engine->poll_cq(cq->id, std::span<transport::Cqe>(buf, want));
    for (size_t i = 0; i < got; ++i) to_wc(buf[i], &wc[done + static_cast<int>(i)]);
    done += static_cast<int>(got);
    if (got < want) break;
  }
  return done;
}

int op_req_notify_cq(ibv_cq* c, int solicited_only) {
  Cq* cq = cq_of(c);
  Runtime* rt = cq->ctx->rt;
  if (refuse_inherited(rt)) return EIO;
  std::lock_guard<std::mutex> g(rt->mu);
  return rt->engine->req_notify_cq(cq->id, solicited_only != 0).code();
}

/// ibv_modify_cq(3): IBV_CQ_ATTR_MODERATE is the only attribute. EINVAL: no attr, mask 0 or
/// unknown bits (as rdma-core's ibv_cmd_modify_cq). Both values' whole 16-bit range is within
/// cq_mod_caps.
int op_modify_cq(ibv_cq* c, ibv_modify_cq_attr* attr) {
  if (!attr || attr->attr_mask == 0 || (attr->attr_mask & ~uint32_t{IBV_CQ_ATTR_MODERATE}))
    return EINVAL;
  Cq* cq = cq_of(c);
  Runtime* rt = cq->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  return rt->engine
      ->modify_cq(cq->id, attr->moderate.cq_count, Duration::micros(attr->moderate.cq_period))
      .code();
}

/// ibv_query_rt_values_ex(3): the device clock (CLOCK_MONOTONIC, the completion timestamps'
/// clock) as a timespec. EINVAL: a comp_mask bit other than IBV_VALUES_MASK_RAW_CLOCK.
int op_query_rt_values(ibv_context*, ibv_values_ex* values) {
  if (!values || (values->comp_mask & ~uint32_t{IBV_VALUES_MASK_RAW_CLOCK})) return EINVAL;
  if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
    const Timestamp t = now();
    values->raw_clock.tv_sec = static_cast<time_t>(t.ns / 1'000'000'000);
    values->raw_clock.tv_nsec = static_cast<long>(t.ns % 1'000'000'000);
  }
  return 0;
}

ibv_cq_ex* op_create_cq_ex(ibv_context* c, ibv_cq_init_attr_ex* a) {
  if (!a || (a->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD})) {
    errno = EINVAL;
    return nullptr;
  }
  if (a->wc_flags & ~kSupportedWcFlags) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
      (a->flags &
       ~uint32_t{IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN})) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (a->cqe > static_cast<uint32_t>(kMaxCqe)) {
    errno = EINVAL;
    return nullptr;
  }
  Pd* parent = nullptr;
  if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
    // A parent domain of this context (ibv_alloc_parent_domain(3)); a plain PD is EINVAL.
    if (!a->parent_domain || a->parent_domain->context != c ||
        !from_ibv<Pd>(a->parent_domain)->protection) {
      errno = EINVAL;
      return nullptr;
    }
    parent = from_ibv<Pd>(a->parent_domain);
  }
  Cq* cq = create_cq_obj(c, static_cast<int>(a->cqe), a->cq_context, a->channel,
                         static_cast<int>(a->comp_vector), a->wc_flags, parent);
  return cq ? &cq->cq : nullptr;
}

}  // namespace uroce::verbs

using namespace uroce::verbs;  // NOLINT: C entry points below

UROCE_EXPORT ibv_cq* uroce_create_cq_1_1(ibv_context* c, int cqe, void* cq_context,
                                         ibv_comp_channel* channel, int comp_vector) {
  Cq* cq = create_cq_obj(c, cqe, cq_context, channel, comp_vector, IBV_WC_STANDARD_FLAGS);
  return cq ? cq->base() : nullptr;
}
UROCE_DEFAULT_VERSION(uroce_create_cq_1_1, ibv_create_cq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_resize_cq_1_1(ibv_cq* c, int cqe) {
  Cq* cq = cq_of(c);
  if (cqe < 1 || cqe > (1 << 20)) return EINVAL;
  Runtime* rt = cq->ctx->rt;
  std::lock_guard<std::mutex> g(rt->mu);
  uroce::Status s = rt->engine->resize_cq(cq->id, static_cast<uint32_t>(cqe));
  if (!s) return s.code();
  c->cqe = cqe;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_resize_cq_1_1, ibv_resize_cq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_destroy_cq_1_1(ibv_cq* c) {
  Cq* cq = cq_of(c);
  Runtime* rt = cq->ctx->rt;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    uroce::Status s = rt->engine->destroy_cq(cq->id);
    if (!s) return s.code();
    rt->cqs.erase(cq->id);
  }
  cq->ctx->settle_async(c, &c->mutex, &c->cond, &c->async_events_completed);
  if (cq->channel) {
    std::lock_guard<std::mutex> g(cq->channel->mu);
    std::erase(cq->channel->q, cq);
    cq->channel->cqs--;
    __atomic_sub_fetch(&cq->channel->ch.refcnt, 1, __ATOMIC_RELAXED);
  }
  if (cq->parent) release_domain(&cq->parent->pd);
  cq->ctx->children--;
  pthread_mutex_destroy(&cq->cq.mutex);
  pthread_cond_destroy(&cq->cq.cond);
  delete_obj(cq, kResCq);
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_destroy_cq_1_1, ibv_destroy_cq, "IBVERBS_1.1");

UROCE_EXPORT int uroce_get_cq_event_1_1(ibv_comp_channel* ch, ibv_cq** cq, void** cq_context) {
  Channel* chan = from_ibv<Channel>(ch);
  for (;;) {
    uint8_t b;
    // A signal ends the wait with -1/EINTR, as rdma-core's read() does: applications (qperf)
    // leave a blocking wait at the end of a timed test that way.
    if (read(ch->fd, &b, 1) != 1) return -1;
    std::lock_guard<std::mutex> g(chan->mu);
    if (chan->q.empty()) continue;  // its CQ was destroyed meanwhile
    Cq* c = chan->q.front();
    chan->q.pop_front();
    *cq = c->base();
    *cq_context = c->cq.cq_context;
    return 0;
  }
}
UROCE_DEFAULT_VERSION(uroce_get_cq_event_1_1, ibv_get_cq_event, "IBVERBS_1.1");

UROCE_EXPORT void uroce_ack_cq_events_1_1(ibv_cq* cq, unsigned int n) {
  __atomic_add_fetch(&cq->comp_events_completed, n, __ATOMIC_RELAXED);
}
UROCE_DEFAULT_VERSION(uroce_ack_cq_events_1_1, ibv_ack_cq_events, "IBVERBS_1.1");

UROCE_EXPORT ibv_comp_channel* ibv_create_comp_channel(ibv_context* c) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* ch = new Channel();
  ch->ch.context = c;
  ch->ch.fd = fds[0];
  ch->ch.refcnt = 0;
  ch->wr_fd = fds[1];
  ctx_of(c)->children++;
  ctx_of(c)->track(ctx_of(c)->channels, ch);
  return &ch->ch;
}

UROCE_EXPORT int ibv_destroy_comp_channel(ibv_comp_channel* c) {
  Channel* ch = from_ibv<Channel>(c);
  if (ch->cqs.load() > 0) return EBUSY;
  ctx_of(c->context)->children--;
  ctx_of(c->context)->untrack(ctx_of(c->context)->channels, ch);
  close(c->fd);
  close(ch->wr_fd);
  delete ch;
  return 0;
}
