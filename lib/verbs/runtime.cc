/**
 * @file runtime.cc
 * @brief The verbs side of the device runtime (lib/device runtime.h): one runtime per opened
 * device per process, shared by its contexts (acquire_runtime/release_runtime), and the engine's
 * events as rdma-core delivers them: a completion-channel event per armed CQ, ibv_async_event
 * records for ibv_get_async_event.
 */
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "verbs/objects.h"

namespace uroce::verbs {

namespace {

std::mutex& runtime_mu() {
  static std::mutex mu;
  return mu;
}

/// Runtimes of open devices (guarded by runtime_mu). Never destroyed: programs may still
/// close devices from atexit handlers.
std::unordered_map<DeviceEntry*, Runtime*>& open_runtimes() {
  static auto* m = new std::unordered_map<DeviceEntry*, Runtime*>();
  return *m;
}

}  // namespace

void Runtime::refresh_stats_locked() { stats_refresh_qps(this); }

void Runtime::on_cq_event(uint32_t cq_id) {
  auto it = cqs.find(cq_id);
  if (it == cqs.end()) return;
  Cq* cq = it->second;
  if (cq->channel) cq->channel->push(cq);
}

void Runtime::on_async_event(const transport::AsyncEvent& ev) {
  using T = transport::AsyncEventType;
  ibv_async_event out{};
  out.event_type = static_cast<ibv_event_type>(ev.type);
  Context* target = nullptr;
  switch (ev.type) {
    case T::kCqErr: {
      auto it = cqs.find(ev.id);
      if (it == cqs.end()) return;
      out.element.cq = it->second->base();
      target = it->second->ctx;
      break;
    }
    case T::kQpFatal:
    case T::kQpReqErr:
    case T::kQpAccessErr:
    case T::kCommEst:
    case T::kSqDrained:
    case T::kPathMig:
    case T::kPathMigErr:
    case T::kQpLastWqeReached: {
      auto it = qps.find(ev.id);
      if (it == qps.end()) return;
      out.element.qp = it->second->base();
      target = it->second->ctx;
      stats_update_qp(
          this, it->second,
          ev.type == T::kQpFatal || ev.type == T::kQpReqErr || ev.type == T::kQpAccessErr);
      break;
    }
    case T::kSrqErr:
    case T::kSrqLimitReached: {
      auto it = srqs.find(ev.id);
      if (it == srqs.end()) return;
      out.element.srq = &it->second->srq;
      target = it->second->ctx;
      break;
    }
    default:
      out.element.port_num = static_cast<int>(ev.id);
      for (Context* c : contexts) c->push_async(out);
      if (ev.type == T::kDeviceFatal) on_gsi_mad();  // librdmacm hears it from the GSI too
      return;
  }
  if (target) target->push_async(out);
}

void Context::push_async(const ibv_async_event& ev) {
  std::lock_guard<std::mutex> g(async_mu);
  async_q.push_back(ev);
  uint8_t b = 1;
  ssize_t r = write(async_wr, &b, 1);
  (void)r;
}

void Channel::push(Cq* cq) {
  std::lock_guard<std::mutex> g(mu);
  q.push_back(cq);
  uint8_t b = 1;
  ssize_t r = write(wr_fd, &b, 1);
  (void)r;
}

Runtime* acquire_runtime(DeviceEntry* dev) {
  std::lock_guard<std::mutex> g(runtime_mu());
  auto& open = open_runtimes();
  auto it = open.find(dev);
  if (it != open.end() && it->second->pid != getpid()) {
    // Inherited through fork: the parent's runtime (its port, engine and thread are the
    // parent's). Left alone; this process opens its own.
    open.erase(it);
    it = open.end();
  }
  if (it != open.end()) {
    it->second->open_count++;
    return it->second;
  }
  auto rt = std::make_unique<Runtime>(dev);
  if (int err = rt->open()) {
    errno = err;
    return nullptr;
  }
  rt->open_count = 1;
  Runtime* p = rt.release();
  open[dev] = p;
  return p;
}

void release_runtime(Runtime* rt) {
  std::unique_lock<std::mutex> g(runtime_mu());
  if (--rt->open_count > 0) return;
  if (rt->pid != getpid()) return;  // the parent's (a context inherited through fork)
  // Last context gone: stop the engine and close the port. A later open starts afresh.
  open_runtimes().erase(rt->dev);
  g.unlock();
  delete rt;
}

bool runtime_is_open(DeviceEntry* dev) {
  std::lock_guard<std::mutex> g(runtime_mu());
  auto it = open_runtimes().find(dev);
  return it != open_runtimes().end() && it->second->pid == getpid();
}

}  // namespace uroce::verbs
