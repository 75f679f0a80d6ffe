/**
 * @file channel.cc
 * @brief Event channels and events (rdma_create_event_channel(3), rdma_get_cm_event(3),
 * rdma_ack_cm_event(3)). The channel's fd is an eventfd in semaphore mode: readable while an
 * event waits, so programs poll it; O_NONBLOCK set on it makes rdma_get_cm_event fail with
 * EAGAIN instead of waiting, as rdma-core's.
 *
 * As rdma-core does in rdma_get_cm_event, taking a CONNECT_RESPONSE of an id that has a QP
 * moves the QP to RTR and RTS and sends the RTU, and the program sees ESTABLISHED (or
 * CONNECT_ERROR when the QP refuses the move); taking a REJECTED moves the QP to ERR.
 *
 * A destroyed channel is kept, its fd open, for the next kQuarantine destroys: programs such as
 * rping destroy the channel while their CM thread is on its way back into rdma_get_cm_event.
 * With the kernel's channel that thread is usually blocked in the kernel already and stays
 * there until the program exits; here it finds the channel marked destroyed and blocks too,
 * instead of reading a closed (or reused) fd from freed memory and failing with EBADF.
 */
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <deque>

#include "rdmacm/cma.h"
#include "rdmacm/export.h"
#include "rdmacm/qp_attr.h"

namespace uroce::rdmacm {

/// Moves the id's QP along INIT (access rights of the connection) -> RTR -> RTS. Requires mu.
int modify_qp_rtr_rts(Id* id) {
  if (!id->id.qp) return 0;
  for (ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
    ibv_qp_attr a{};
    a.qp_state = s;
    int mask = 0;
    if (int e = init_qp_attr(*id, &a, &mask)) return e;
    if (int e = ibv_modify_qp(id->id.qp, &a, mask)) return e;
  }
  return 0;
}

int modify_qp_err(Id* id) {
  if (!id->id.qp) return 0;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  return ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

namespace {

/// The post-processing of an event as the program takes it (see @file). Requires mu.
void post_process(Service& s, Event* e) {
  Id* id = e->owner;
  switch (e->post) {
    case Event::Post::kConnResp: {
      if (!id->id.qp) return;  // the program moves its QP and calls rdma_establish
      int err = conn_resp_ece(id);
      if (!err) err = modify_qp_rtr_rts(id);
      if (err || !id->dev->mgr->ready_to_use(id->conn, s.now())) {
        e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
        e->ev.status = -(err ? err : EINVAL);
        modify_qp_err(id);
        id->dev->mgr->cancel(id->conn, s.now());
        id->state = IdState::kClosed;
        return;
      }
      id->state = IdState::kEstablished;
      e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
      return;
    }
    case Event::Post::kRejected: modify_qp_err(id); return;
    case Event::Post::kNone: return;
  }
}

/// Destroyed channels not yet freed, oldest first (see @file). Service::mu.
constexpr size_t kQuarantine = 64;
std::deque<Channel*>& quarantine() {
  static auto* q = new std::deque<Channel*>();  // never destroyed: atexit handlers may use it
  return *q;
}

/// What a thread waiting on a destroyed channel does: wait for the program's exit, as a
/// thread blocked on the kernel's channel does.
[[noreturn]] void block_forever() {
  for (;;) pause();
}

bool is_destroyed(Service& s, Channel* ch) {
  std::lock_guard<std::mutex> g(s.mu);
  return ch->destroyed;
}

}  // namespace

int get_event(Channel* ch, rdma_cm_event** out) {
  Service& s = Service::get();
  if (is_destroyed(s, ch)) block_forever();
  for (;;) {
    uint64_t v;
    if (read(ch->ch.fd, &v, sizeof v) != sizeof v) return -1;  // errno: EAGAIN, EINTR ...
    std::unique_lock<std::mutex> g(s.mu);
    if (ch->destroyed) {
      g.unlock();
      block_forever();
    }
    if (ch->q.empty()) continue;
    Event* e = ch->q.front();
    ch->q.pop_front();
    if (e->dead) {
      delete e;
      continue;
    }
    post_process(s, e);
    e->owner->unacked++;
    *out = &e->ev;
    return 0;
  }
}

int complete(Id* id) {
  if (!id->sync) return 0;
  if (id->id.event) {
    rdma_ack_cm_event(id->id.event);
    id->id.event = nullptr;
  }
  rdma_cm_event* e = nullptr;
  if (get_event(channel_of(id->id.channel), &e)) return -1;
  id->id.event = e;
  if (e->status) {
    if (e->event == RDMA_CM_EVENT_REJECTED) return fail(ECONNREFUSED);
    return fail(e->status < 0 ? -e->status : e->status);
  }
  return 0;
}

}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;

UROCE_CM_EXPORT rdma_event_channel* rdma_create_event_channel(void) {
  auto* ch = new (std::nothrow) Channel;
  if (!ch) {
    errno = ENOMEM;
    return nullptr;
  }
  ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (ch->ch.fd < 0) {
    delete ch;
    return nullptr;
  }
  return &ch->ch;
}

UROCE_CM_EXPORT void rdma_destroy_event_channel(rdma_event_channel* channel) {
  if (!channel) return;
  Channel* ch = channel_of(channel);
  Channel* freed = nullptr;
  {
    std::lock_guard<std::mutex> g(Service::get().mu);
    for (Event* e : ch->q) delete e;
    ch->q.clear();
    ch->destroyed = true;
    quarantine().push_back(ch);
    if (quarantine().size() > kQuarantine) {
      freed = quarantine().front();
      quarantine().pop_front();
    }
  }
  if (freed) {
    close(freed->ch.fd);
    delete freed;
  }
}

UROCE_CM_EXPORT int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  if (!channel || !event) return fail(EINVAL);
  return get_event(channel_of(channel), event);
}

UROCE_CM_EXPORT int rdma_ack_cm_event(rdma_cm_event* event) {
  if (!event) return fail(EINVAL);
  Event* e = event_of(event);
  Service& s = Service::get();
  {
    std::lock_guard<std::mutex> g(s.mu);
    e->owner->unacked--;
  }
  s.acked.notify_all();
  delete e;
  return 0;
}

UROCE_CM_EXPORT const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}
