/**
 * @file objects.h
 * @brief The verbs objects behind the C handles of <infiniband/verbs.h>, and the verbs side of
 * the device runtime (lib/device runtime.h: port + engine + engine lock + progress thread) they
 * share.
 *
 * Every object embeds its rdma-core struct as its FIRST member, so the pointer a program holds
 * (ibv_pd*, ibv_cq*, ...) converts back with from_ibv(). The context embeds struct
 * verbs_context, whose last member is the struct ibv_context programs see (docs/design.md, "The
 * ABI contract").
 *
 * Locking: Runtime::mu is the engine lock (the engine is not thread-safe). Every engine call
 * and every change to the Runtime's object maps happen under it. Channel and async queues have
 * their own small mutexes, taken after (never before) the engine lock.
 */
#pragma once

#include <infiniband/verbs.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/time.h"
#include "config/config.h"
#include "device/runtime.h"
#include "transport/engine.h"
#include "verbs/ibta15.h"

namespace uroce::verbs {

struct Context;
struct Ah;
struct Channel;
struct Cq;
struct Mr;
struct Mw;
struct Pd;
struct Qp;
struct Srq;
struct Td;
struct Xrcd;

/// Compares values of two different enums (engine vs verbs.h) in static_asserts.
template <typename A, typename B>
constexpr bool same_value(A a, B b) {
  return static_cast<long long>(a) == static_cast<long long>(b);
}

/// Converts a C handle back to the object that embeds it as first member.
template <typename T, typename C>
T* from_ibv(C* p) {
  return reinterpret_cast<T*>(p);
}

/// One listed device. Lives for the whole process (programs keep ibv_device pointers).
struct DeviceEntry {
  ibv_device dev;      ///< what ibv_get_device_list hands out; first member
  config::Device cfg;  ///< its configuration (refreshed while not open)
  std::string source;  ///< the configuration file it came from, or "built-in"
  uint64_t guid = 0;   ///< node GUID, host order (EUI-64 of the MAC)
  int index = 0;       ///< ibv_get_device_index
};

static_assert(same_value(IBV_MTU_256, 1) && same_value(IBV_MTU_1024, 3) &&
              same_value(IBV_MTU_4096, 5));  // device::mtu_code()

/// The device runtime of one opened device, shared by every context opened on it, with what the
/// ABI needs of it: the objects by engine id (the engine's events name ids), the contexts its
/// port events go to, and the GSI eventfd. Turns engine events into completion-channel and
/// async events (runtime.cc).
struct Runtime final : device::Runtime {
  explicit Runtime(DeviceEntry* d) : device::Runtime(d->cfg, d->source), dev(d) {}
  ~Runtime() override { shut_down(); }  // the progress thread calls the methods below

  DeviceEntry* dev;
  int open_count = 0;          ///< contexts using it (global registry lock)
  const pid_t pid = getpid();  ///< the process it belongs to (a fork child has its own)

  // Objects by engine id, for observer callbacks (guarded by mu).
  std::unordered_map<uint32_t, Cq*> cqs;
  std::unordered_map<uint32_t, Qp*> qps;
  std::unordered_map<uint32_t, Srq*> srqs;
  std::vector<Context*> contexts;

  /// XRC domains opened on a file, by (st_dev, st_ino): the engine's domain and how many
  /// ibv_xrcd handles of the process share it (xrc.cc; mu).
  struct FileXrcd {
    uint32_t id = 0;
    int opens = 0;
  };
  std::map<std::pair<uint64_t, uint64_t>, FileXrcd> file_xrcds;

  int gsi_fd = -1;    ///< eventfd: GSI MADs wait (gsi_api.cc; mu)
  int gsi_users = 0;  ///< uroce_gsi_open handles (mu)

  // transport::EngineObserver (called with mu held)
  void on_cq_event(uint32_t cq_id) override;
  void on_async_event(const transport::AsyncEvent& ev) override;
  void on_gsi_mad() override;  // gsi_api.cc

 protected:
  /// The per-QP records of the stats segment (qp_stats.cc).
  void refresh_stats_locked() override;
};

/// An opened device.
struct Context {
  verbs_context vctx;  ///< first member; programs see &vctx.context
  DeviceEntry* dev = nullptr;
  Runtime* rt = nullptr;
  int async_wr = -1;  ///< write end of the async event pipe
  std::mutex async_mu;
  std::deque<ibv_async_event> async_q;
  /// Per QP/CQ/SRQ (its ibv_* pointer): how many of its events ibv_get_async_event handed out
  /// (async_mu). Its destroy waits until the program has acknowledged that many.
  std::unordered_map<const void*, uint32_t> async_reported;
  std::atomic<int> children{0};  ///< PDs, CQs, channels, QPs, SRQs still open

  /// Objects the engine does not call back about, so ibv_close_device can release them.
  std::mutex obj_mu;
  std::unordered_set<Pd*> pds;
  std::unordered_set<Mr*> mrs;
  std::unordered_set<Mw*> mws;
  std::unordered_set<Ah*> ahs;
  std::unordered_set<Channel*> channels;
  std::unordered_set<Td*> tds;
  std::unordered_set<Xrcd*> xrcds;
  template <typename T>
  void track(std::unordered_set<T*>& set, T* obj) {
    std::lock_guard<std::mutex> g(obj_mu);
    set.insert(obj);
  }
  template <typename T>
  void untrack(std::unordered_set<T*>& set, T* obj) {
    std::lock_guard<std::mutex> g(obj_mu);
    set.erase(obj);
  }

  ibv_context* ibv() { return &vctx.context; }
  /// Queues an async event and makes async_fd readable (any thread; takes async_mu).
  void push_async(const ibv_async_event& ev);
  /// For ibv_destroy_qp/cq/srq, once the engine raises no more events about `object` (its
  /// ibv_qp*, ibv_cq* or ibv_srq*): drops its events not read yet and waits, on the object's
  /// own mutex and condition, until *completed (its acknowledged-events count) reaches the
  /// number handed out, as rdma-core does (ibv_get_async_event(3)). No event then names a
  /// freed object. (device.cc)
  void settle_async(const void* object, pthread_mutex_t* mu, pthread_cond_t* cond,
                    const unsigned int* completed);
};

/// The QP, CQ or SRQ an async event is about (its ibv_* pointer; nullptr for port and device
/// events) and where its acknowledgements are counted: that object's mutex, condition and
/// acknowledged-events field.
struct AsyncTarget {
  const void* object = nullptr;
  pthread_mutex_t* mu = nullptr;
  pthread_cond_t* cond = nullptr;
  unsigned int* completed = nullptr;
};
AsyncTarget async_target(const ibv_async_event& ev);

/// A call on a context inherited through fork (device::Runtime::inherited()): reports it (one
/// line, once) and says the caller must fail with EIO.
inline bool refuse_inherited(Runtime* rt) {
  if (!rt->inherited()) return false;
  rt->report_inherited();
  return true;
}

/// A call that creates or modifies an object, or queries the device or its port, on a device
/// that is gone (device::Runtime::gone(): its uroce-hostd did not come back): the caller fails
/// with EIO, as the kernel's uverbs after a device's removal. Polls, posts (flushed), QP and CQ
/// queries and destroys still work.
inline bool refuse_gone(Runtime* rt) { return rt->gone(); }

inline Context* ctx_of(ibv_context* c) {
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<uint8_t*>(c) -
                                                offsetof(verbs_context, context));
  return from_ibv<Context>(vctx);
}

/// A protection domain, or a parent domain (ibv_alloc_parent_domain(3); domain.cc).
struct Pd {
  ibv_pd pd;
  uint32_t id = 0;          ///< the engine's PD (a parent domain's is its protection's)
  std::atomic<int> ahs{0};  ///< AHs (the engine does not know them)
  /// A plain PD: the parent domains made from it. A parent domain: the QPs, CQs, SRQs, MRs
  /// and MWs created through it. Either way ibv_dealloc_pd is EBUSY while it is not 0.
  std::atomic<int> users{0};
  // Parent domain only (protection != nullptr).
  Pd* protection = nullptr;  ///< the PD it was made from
  Td* td = nullptr;          ///< its thread domain, if any
  void* (*alloc)(ibv_pd*, void*, size_t, size_t, uint64_t) = nullptr;  ///< custom allocator
  void (*free)(ibv_pd*, void*, void*, uint64_t) = nullptr;
  void* pd_context = nullptr;
};

/// A thread domain (ibv_alloc_td(3); domain.cc).
struct Td {
  ibv_td td;
  std::atomic<int> users{0};  ///< parent domains using it (ibv_dealloc_td: EBUSY)
};

/// An XRC domain handle (ibv_open_xrcd(3); xrc.cc). Handles opened on the same file share
/// one engine domain (Runtime::file_xrcds).
struct Xrcd {
  ibv_xrcd xrcd;    ///< first member
  uint32_t id = 0;  ///< the engine's XRC domain
  bool on_file = false;
  std::pair<uint64_t, uint64_t> file{};  ///< (st_dev, st_ino) when on_file
  Context* ctx = nullptr;
};

struct Mr {
  ibv_mr mr;
  uint64_t iova = 0;    ///< the address the keys reach mr.addr by (ibv_reg_mr_iova(3))
  uint32_t access = 0;  ///< the engine's Access bits (kAccessOnDemand included)
};

/// A memory window; mw.handle is its R_Key at allocation (the engine names it by the upper 24
/// bits, which no bind changes).
struct Mw {
  ibv_mw mw;
};

struct Channel {
  ibv_comp_channel ch;  ///< ch.fd is the read end of a pipe
  int wr_fd = -1;
  std::mutex mu;
  std::deque<Cq*> q;        ///< CQs with a pending event, in order
  std::atomic<int> cqs{0};  ///< CQs attached (EBUSY on destroy)
  /// Queues one event for cq and makes the fd readable.
  void push(Cq* cq);
};

struct Cq {
  ibv_cq_ex cq;  ///< ibv_cq is its prefix
  uint32_t id = 0;
  Context* ctx = nullptr;
  Channel* channel = nullptr;
  uint64_t wc_flags = 0;  ///< ibv_create_cq_ex wc_flags
  Pd* parent = nullptr;   ///< IBV_CQ_INIT_ATTR_MASK_PD's parent domain
  Pd* mem_pd = nullptr;   ///< the parent domain whose allocator holds this object (domain.h)
  transport::Cqe cur;     ///< the entry start_poll/next_poll made current
  std::atomic<int> qps{0};

  ibv_cq* base() { return reinterpret_cast<ibv_cq*>(&cq); }
};
inline Cq* cq_of(ibv_cq* c) { return from_ibv<Cq>(c); }

/// Work requests built through the ibv_wr_* API between wr_start and wr_complete.
struct WrBatch {
  struct Item {
    transport::SendWr wr;
    std::vector<transport::Sge> sges;
    std::vector<uint8_t> inline_data;
    transport::AddressVector av;
  };
  std::vector<Item> items;
  int error = 0;  ///< first error seen while building
};

struct Qp {
  ibv_qp_ex qpx;  ///< ibv_qp is its prefix (qp_base)
  /// rdma-core 45's ibv_qp_ex member after rdma-core 44's (ibta15.h IbvQpEx45): the next
  /// member, no padding (ibv_qp_ex's size is a multiple of a pointer's alignment).
  WrFlushFn wr_flush = nullptr;
  uint32_t qpn = 0;
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  Srq* srq = nullptr;
  Xrcd* xrcd = nullptr;  ///< XRC_RECV: its domain
  bool has_ex = false;   ///< created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
  uint64_t send_ops_flags = 0;
  std::mutex wr_mu;  ///< held from wr_start to wr_complete/abort
  WrBatch batch;
  void* stats_rec = nullptr;  ///< its stats::QpRecord (rt->mu), if any
  Pd* mem_pd = nullptr;       ///< the parent domain whose allocator holds this object (domain.h)

  ibv_qp* base() { return &qpx.qp_base; }
};
inline Qp* qp_of(ibv_qp* q) { return from_ibv<Qp>(q); }

static_assert(sizeof(ibv_qp_ex) % alignof(WrFlushFn) == 0);

struct Srq {
  ibv_srq srq;
  uint32_t id = 0;  ///< the engine's SRQ; an XRC SRQ's number (ibv_get_srq_num(3))
  Context* ctx = nullptr;
  Pd* pd = nullptr;
  Xrcd* xrcd = nullptr;  ///< IBV_SRQT_XRC: its domain and the CQ its receives complete on
  Cq* cq = nullptr;
  std::atomic<int> qps{0};
  Pd* mem_pd = nullptr;  ///< the parent domain whose allocator holds this object (domain.h)
};

struct Ah {
  ibv_ah ah;
  transport::AddressVector av;
};

// ---- Shared helpers (defined in the .cc files named) ----------------------------------------

using device::now;  ///< CLOCK_MONOTONIC as a Timestamp (lib/device runtime.h)
/// Application-driven progress (device::Runtime::drive_locked). Requires rt->mu.
inline void drive_locked(Runtime* rt, Timestamp t) { rt->drive_locked(t); }
inline void drive_locked(Runtime* rt) { rt->drive_locked(now()); }
/// Progress after a post (device::Runtime::drive_post_locked). Requires rt->mu.
inline void drive_post_locked(Runtime* rt, Timestamp t) { rt->drive_post_locked(t); }
/// Opens (or shares) the runtime of a device; nullptr + errno on failure (runtime.cc).
Runtime* acquire_runtime(DeviceEntry* dev);
void release_runtime(Runtime* rt);
/// True while a context of the device is open (its configuration must not change).
bool runtime_is_open(DeviceEntry* dev);
/// Fills the context's ibv_context_ops and verbs_context ops (ops_table.cc).
void fill_ops(Context* ctx);
/// Converts a ibv_ah_attr to the engine's AV; EINVAL when it is not usable on RoCE (qp.cc).
int to_av(Runtime* rt, const ibv_ah_attr& a, transport::AddressVector* av);
void from_av(const transport::AddressVector& av, ibv_ah_attr* a);
/// Engine completion -> ibv_wc (cq.cc).
void to_wc(const transport::Cqe& c, ibv_wc* wc);
/// Per-QP records of the stats segment (qp_stats.cc); all require rt->mu; no-ops without
/// a segment. add at create_qp, update after modify_qp and QP events (state, peer, PSNs,
/// DCQCN rate; in_error: the event says the QP is in ERR even if the engine is still moving it
/// there), remove at destroy_qp; refresh_rates rewrites every QP's rate.
void stats_add_qp(Runtime* rt, Qp* qp, uint32_t type);
void stats_update_qp(Runtime* rt, Qp* qp, bool in_error = false);
void stats_remove_qp(Runtime* rt, Qp* qp);
void stats_refresh_qps(Runtime* rt);
/// Device capability limits reported by query_device (query.cc).
void fill_device_attr(Context* ctx, ibv_device_attr* a);

// ops (the functions reached through ibv_context_ops / verbs_context)
int op_poll_cq(ibv_cq* cq, int n, ibv_wc* wc);
int op_req_notify_cq(ibv_cq* cq, int solicited_only);
int op_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad);
// memory windows (pd_mr.cc)
ibv_mw* op_alloc_mw(ibv_pd* pd, ibv_mw_type type);
int op_dealloc_mw(ibv_mw* mw);
int op_bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind);
int op_advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg,
                 uint32_t num_sge);
/// Makes s a bind of mw to b, the window getting rkey (ibv_post_send, ibv_wr_bind_mw,
/// ibv_bind_mw).
void to_bind_wr(const ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info& b, transport::SendWr* s);
int op_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad);
int op_query_port(ibv_context* c, uint8_t port, ibv_port_attr* attr, size_t len);
int op_query_device_ex(ibv_context* c, const ibv_query_device_ex_input* in,
                       ibv_device_attr_ex* attr, size_t len);
ibv_cq_ex* op_create_cq_ex(ibv_context* c, ibv_cq_init_attr_ex* attr);
ibv_qp* op_create_qp_ex(ibv_context* c, ibv_qp_init_attr_ex* attr);
ibv_srq* op_create_srq_ex(ibv_context* c, ibv_srq_init_attr_ex* attr);
// XRC (xrc.cc)
ibv_xrcd* op_open_xrcd(ibv_context* c, ibv_xrcd_init_attr* attr);
int op_close_xrcd(ibv_xrcd* xrcd);
int op_get_srq_num(ibv_srq* srq, uint32_t* srq_num);
/// Closes one handle of an XRC domain: the engine's domain goes with the last (EBUSY while an
/// SRQ or QP is in it, the handle then kept). Requires rt->mu.
int close_xrcd_locked(Runtime* rt, Xrcd* x);
int op_modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr);
int op_query_rt_values(ibv_context* c, ibv_values_ex* values);
// thread and parent domains (domain.cc)
ibv_td* op_alloc_td(ibv_context* c, ibv_td_init_attr* attr);
int op_dealloc_td(ibv_td* td);
ibv_pd* op_alloc_parent_domain(ibv_context* c, ibv_parent_domain_init_attr* attr);
/// Fills the wr_* pointers of a QP created with send ops flags (qp_ex.cc).
void fill_qp_ex(Qp* qp);

}  // namespace uroce::verbs
