/**
 * @file device.cc
 * @brief Device list, names, GUIDs, open/close, and async events (ibv_get_device_list(3),
 * ibv_open_device(3), ibv_get_async_event(3)).
 *
 * Listing reads the configuration (lib/config: $UROCE_CONFIG, ./uroce.toml,
 * /etc/uroce/uroce.toml, else the built-in loopback device uroce0) and opens no port, so a
 * program that only lists devices starts no EAL. ibv_open_device opens the port and the
 * engine (runtime.cc), shared by every context on the same device; for a host-mode device
 * that uroce-hostd serves, the port and engine wait for the first call that needs them
 * (device::Runtime::open), so opening and querying start no EAL either.
 */
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "verbs/domain.h"
#include "verbs/objects.h"
#include "verbs/symver.h"

namespace uroce::verbs {
namespace {

std::mutex& registry_mu() {
  static std::mutex mu;
  return mu;
}

/// Every device ever listed; never freed (programs keep ibv_device pointers).
std::vector<DeviceEntry*>& registry() {
  static auto* v = new std::vector<DeviceEntry*>();
  return *v;
}

#ifndef UROCE_HAVE_CONFIG
/// Used only while lib/config is not built: the built-in configuration of config.h.
std::optional<config::Config> fallback_load(std::string*) {
  config::Config c;
  c.source = "built-in";
  config::Device d;
  config::Address a;
  Gid::parse("198.18.0.1", &a.gid);
  a.prefix = 15;
  d.addresses.push_back(a);
  c.devices.push_back(d);
  return c;
}
#endif

std::optional<config::Config> load_config(std::string* err) {
#ifdef UROCE_HAVE_CONFIG
  return config::load(err);
#else
  return fallback_load(err);
#endif
}

/// A locally administered MAC from the device name (FNV-1a), used when none is configured.
MacAddr name_mac(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  MacAddr m;
  m.b = {0x02,
         static_cast<uint8_t>(h >> 32),
         static_cast<uint8_t>(h >> 24),
         static_cast<uint8_t>(h >> 16),
         static_cast<uint8_t>(h >> 8),
         static_cast<uint8_t>(h)};
  return m;
}

/// EUI-64 of a MAC (flip the U/L bit, insert ff:fe), host order.
uint64_t eui64(const MacAddr& m) {
  uint8_t e[8] = {
      static_cast<uint8_t>(m.b[0] ^ 2), m.b[1], m.b[2], 0xff, 0xfe, m.b[3], m.b[4], m.b[5]};
  uint64_t g = 0;
  for (uint8_t x : e) g = (g << 8) | x;
  return g;
}

void fill_entry(DeviceEntry* e, const config::Device& d, int index) {
  e->cfg = d;
  e->index = index;
  e->guid = eui64(d.mac ? *d.mac : name_mac(d.name));
  std::memset(&e->dev, 0, sizeof e->dev);
  e->dev.node_type = IBV_NODE_CA;
  e->dev.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(e->dev.name, sizeof e->dev.name, "%s", d.name.c_str());
  std::snprintf(e->dev.dev_name, sizeof e->dev.dev_name, "uverbs%d", index);
  std::snprintf(e->dev.dev_path, sizeof e->dev.dev_path, "/sys/class/infiniband_verbs/uverbs%d",
                index);
  std::snprintf(e->dev.ibdev_path, sizeof e->dev.ibdev_path, "/sys/class/infiniband/%s",
                d.name.c_str());
}

DeviceEntry* entry_of(ibv_device* d) { return from_ibv<DeviceEntry>(d); }

}  // namespace
}  // namespace uroce::verbs

using namespace uroce::verbs;  // NOLINT: C entry points below

// ---- Device list --------------------------------------------------------------------------

UROCE_EXPORT ibv_device** uroce_get_device_list_1_1(int* num) {
  std::lock_guard<std::mutex> g(registry_mu());
  std::string err;
  auto cfg = load_config(&err);
  if (!cfg) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    if (num) *num = 0;
    errno = EINVAL;
    return nullptr;
  }
  auto& reg = registry();
  std::vector<DeviceEntry*> listed;
  for (size_t i = 0; i < cfg->devices.size(); ++i) {
    const auto& d = cfg->devices[i];
    DeviceEntry* e = nullptr;
    for (DeviceEntry* x : reg)
      if (x->cfg.name == d.name) e = x;
    if (!e) {
      e = new DeviceEntry();
      fill_entry(e, d, static_cast<int>(reg.size()));
      e->source = cfg->source;
      reg.push_back(e);
    } else if (!runtime_is_open(e)) {
      fill_entry(e, d, e->index);
      e->source = cfg->source;
    }
    listed.push_back(e);
  }
  auto** out = static_cast<ibv_device**>(calloc(listed.size() + 1, sizeof(ibv_device*)));
  if (!out) {
    errno = ENOMEM;
    return nullptr;
  }
  for (size_t i = 0; i < listed.size(); ++i) out[i] = &listed[i]->dev;
  if (num) *num = static_cast<int>(listed.size());
  return out;
}
UROCE_DEFAULT_VERSION(uroce_get_device_list_1_1, ibv_get_device_list, "IBVERBS_1.1");

UROCE_EXPORT void uroce_free_device_list_1_1(ibv_device** list) { free(list); }
UROCE_DEFAULT_VERSION(uroce_free_device_list_1_1, ibv_free_device_list, "IBVERBS_1.1");

UROCE_EXPORT const char* uroce_get_device_name_1_1(ibv_device* d) { return d ? d->name : nullptr; }
UROCE_DEFAULT_VERSION(uroce_get_device_name_1_1, ibv_get_device_name, "IBVERBS_1.1");

UROCE_EXPORT __be64 uroce_get_device_guid_1_1(ibv_device* d) { return htobe64(entry_of(d)->guid); }
UROCE_DEFAULT_VERSION(uroce_get_device_guid_1_1, ibv_get_device_guid, "IBVERBS_1.1");

UROCE_EXPORT int ibv_get_device_index(ibv_device* d) { return d ? entry_of(d)->index : -1; }

// ---- Open / close -------------------------------------------------------------------------

UROCE_EXPORT ibv_context* uroce_open_device_1_1(ibv_device* d) {
  if (!d) {
    errno = EINVAL;
    return nullptr;
  }
  DeviceEntry* e = entry_of(d);
  Runtime* rt;
  {
    std::lock_guard<std::mutex> g(registry_mu());  // listing must not refresh e->cfg meanwhile
    rt = acquire_runtime(e);
  }
  if (!rt) return nullptr;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    int saved = errno;
    release_runtime(rt);
    errno = saved;
    return nullptr;
  }
  // cmd_fd: there is no kernel uverbs device, but programs dup(), poll() or fstat() the
  // context's command fd (rdma-core's suite dups it to try ibv_import_device), so each context
  // owns an open /dev/null, as `uroce rdma-ns` makes /dev/infiniband/uverbs<i>. Nothing is
  // ever read from or written to it; ibv_close_device closes it.
  int cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (cmd_fd < 0) {
    int saved = errno;
    close(fds[0]);
    close(fds[1]);
    release_runtime(rt);
    errno = saved;
    return nullptr;
  }
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* ctx = new Context();
  std::memset(&ctx->vctx, 0, sizeof ctx->vctx);
  ctx->dev = e;
  ctx->rt = rt;
  ctx->async_wr = fds[1];
  fill_ops(ctx);
  ctx->vctx.sz = sizeof(verbs_context);
  ibv_context* c = ctx->ibv();
  c->device = d;
  c->cmd_fd = cmd_fd;
  c->async_fd = fds[0];
  c->num_comp_vectors = 1;
  c->abi_compat = __VERBS_ABI_IS_EXTENDED;
  pthread_mutex_init(&c->mutex, nullptr);
  {
    std::lock_guard<std::mutex> g(rt->mu);
    rt->contexts.push_back(ctx);
  }
  // The port is up as soon as it is open.
  ibv_async_event ev{};
  ev.event_type = IBV_EVENT_PORT_ACTIVE;
  ev.element.port_num = 1;
  ctx->push_async(ev);
  return c;
}
UROCE_DEFAULT_VERSION(uroce_open_device_1_1, ibv_open_device, "IBVERBS_1.1");

UROCE_EXPORT int uroce_close_device_1_1(ibv_context* c) {
  // As rdma-core: closing always succeeds and releases what the program left open (perftest's
  // ib_send_bw client, for one, never destroys its receive CQ). QPs, SRQs and CQs leave the
  // engine so that no callback reaches this context again, then MRs, AHs, PDs and channels.
  Context* ctx = ctx_of(c);
  Runtime* rt = ctx->rt;
  int left = ctx->children.load();
  if (left > 0 && getenv("UROCE_VERBS_DEBUG"))
    std::fprintf(stderr, "uroce: ibv_close_device: releasing %d objects still open\n", left);
  // QPs, SRQs, CQs and PDs are freed after the engine lock is released: a parent domain's
  // free callback (domain.h) is the application's code.
  std::vector<Qp*> qps;
  std::vector<Srq*> srqs;
  std::vector<Cq*> cqs;
  std::vector<Pd*> pds;
  {
    std::lock_guard<std::mutex> g(rt->mu);
    std::erase_if(rt->qps, [&](const auto& kv) {
      if (kv.second->ctx != ctx) return false;
      rt->engine->destroy_qp(kv.first);
      stats_remove_qp(rt, kv.second);
      qps.push_back(kv.second);
      return true;
    });
    std::erase_if(rt->srqs, [&](const auto& kv) {
      if (kv.second->ctx != ctx) return false;
      rt->engine->destroy_srq(kv.first);
      srqs.push_back(kv.second);
      return true;
    });
    std::erase_if(rt->cqs, [&](const auto& kv) {
      if (kv.second->ctx != ctx) return false;
      rt->engine->destroy_cq(kv.first);
      cqs.push_back(kv.second);
      return true;
    });
    std::lock_guard<std::mutex> o(ctx->obj_mu);
    for (Xrcd* x : ctx->xrcds) {
      (void)close_xrcd_locked(rt, x);  // its SRQs and QPs of this context are gone
      delete x;
    }
    for (Mr* m : ctx->mrs) {
      rt->engine->dereg_mr(m->mr.lkey);
      delete m;
    }
    for (Mw* m : ctx->mws) {
      rt->engine->dealloc_mw(m->mw.handle);
      delete m;
    }
    for (Ah* a : ctx->ahs) delete a;
    for (Pd* p : ctx->pds) {
      if (!p->protection) rt->engine->dealloc_pd(p->id);  // a parent domain's is its PD's
      pds.push_back(p);
    }
    for (Td* t : ctx->tds) delete t;
    for (Channel* ch : ctx->channels) {
      close(ch->ch.fd);
      close(ch->wr_fd);
      delete ch;
    }
    std::erase(rt->contexts, ctx);
  }
  for (Qp* q : qps) delete_obj(q, kResQp);
  for (Srq* q : srqs) delete_obj(q, kResSrq);
  for (Cq* q : cqs) delete_obj(q, kResCq);
  for (Pd* p : pds) delete p;
  release_runtime(rt);
  close(c->async_fd);
  close(ctx->async_wr);
  close(c->cmd_fd);
  pthread_mutex_destroy(&c->mutex);
  delete ctx;
  return 0;
}
UROCE_DEFAULT_VERSION(uroce_close_device_1_1, ibv_close_device, "IBVERBS_1.1");

// ---- Async events -------------------------------------------------------------------------

uroce::verbs::AsyncTarget uroce::verbs::async_target(const ibv_async_event& ev) {
  switch (ev.event_type) {
    case IBV_EVENT_CQ_ERR: {
      ibv_cq* cq = ev.element.cq;
      return {cq, &cq->mutex, &cq->cond, &cq->async_events_completed};
    }
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED:
    case IBV_EVENT_PATH_MIG:
    case IBV_EVENT_PATH_MIG_ERR:
    case IBV_EVENT_QP_LAST_WQE_REACHED: {
      ibv_qp* qp = ev.element.qp;
      return {qp, &qp->mutex, &qp->cond, &qp->events_completed};
    }
    case IBV_EVENT_SRQ_ERR:
    case IBV_EVENT_SRQ_LIMIT_REACHED: {
      ibv_srq* srq = ev.element.srq;
      return {srq, &srq->mutex, &srq->cond, &srq->events_completed};
    }
    default: return {};
  }
}

void Context::settle_async(const void* object, pthread_mutex_t* mu, pthread_cond_t* cond,
                           const unsigned int* completed) {
  uint32_t reported = 0;
  {
    std::lock_guard<std::mutex> g(async_mu);
    const size_t dropped = std::erase_if(
        async_q, [&](const ibv_async_event& e) { return async_target(e).object == object; });
    // And their bytes, so that async_fd is readable only while an event waits. (A reader that
    // took one of those bytes already finds no event and reads on: ibv_get_async_event.)
    int avail = 0;
    if (dropped && ioctl(ibv()->async_fd, FIONREAD, &avail) == 0) {
      size_t n = std::min(dropped, static_cast<size_t>(std::max(avail, 0)));
      uint8_t sink[64];
      while (n > 0) {
        const ssize_t r = read(ibv()->async_fd, sink, std::min(n, sizeof sink));
        if (r <= 0) break;
        n -= static_cast<size_t>(r);
      }
    }
    if (auto it = async_reported.find(object); it != async_reported.end()) {
      reported = it->second;
      async_reported.erase(it);
    }
  }
  pthread_mutex_lock(mu);
  while (*completed != reported) pthread_cond_wait(cond, mu);
  pthread_mutex_unlock(mu);
}

UROCE_EXPORT int uroce_get_async_event_1_1(ibv_context* c, ibv_async_event* ev) {
  Context* ctx = ctx_of(c);
  for (;;) {
    uint8_t b;
    if (read(c->async_fd, &b, 1) != 1) return -1;  // a signal: -1/EINTR, as in rdma-core
    std::lock_guard<std::mutex> g(ctx->async_mu);
    if (ctx->async_q.empty()) continue;
    *ev = ctx->async_q.front();
    ctx->async_q.pop_front();
    if (const void* object = async_target(*ev).object) ctx->async_reported[object]++;
    return 0;
  }
}
UROCE_DEFAULT_VERSION(uroce_get_async_event_1_1, ibv_get_async_event, "IBVERBS_1.1");

UROCE_EXPORT void uroce_ack_async_event_1_1(ibv_async_event* ev) {
  // Counted under the object's mutex and signalled: its destroy waits for it (settle_async).
  const AsyncTarget t = async_target(*ev);
  if (!t.object) return;
  pthread_mutex_lock(t.mu);
  ++*t.completed;
  pthread_cond_signal(t.cond);
  pthread_mutex_unlock(t.mu);
}
UROCE_DEFAULT_VERSION(uroce_ack_async_event_1_1, ibv_ack_async_event, "IBVERBS_1.1");

// ---- Fork support -------------------------------------------------------------------------
// As rdma-core without ibv_fork_init on a kernel that copies pinned pages: resources created
// before a fork stay the parent's; a child that opens a device gets a runtime (and, shared
// through uroce-hostd, a session) of its own, and calls on inherited contexts fail with EIO
// (device::Runtime::inherited). Memory is never pinned by a kernel driver, so the registered
// ranges need no madvise(DONTFORK).

UROCE_EXPORT int ibv_fork_init(void) { return 0; }
UROCE_EXPORT ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
UROCE_EXPORT int ibv_dontfork_range(void*, size_t) { return 0; }
UROCE_EXPORT int ibv_dofork_range(void*, size_t) { return 0; }
