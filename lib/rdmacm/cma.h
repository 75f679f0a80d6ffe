/**
 * @file cma.h
 * @brief The objects behind uroce's librdmacm handles (<rdma/rdma_cma.h>) and the process's
 * connection-manager service that joins them to the IBA CM state machine (lib/cm/manager.h)
 * of each device and its QP1 (lib/verbs/uroce_gsi.h).
 *
 * Layout: every handle embeds its rdma-core struct as its FIRST member (Id: rdma_cm_id,
 * Channel: rdma_event_channel, Event: rdma_cm_event), so the pointer a program holds converts
 * back with a cast. Programs read these structs directly (id->verbs, id->qp, id->route,
 * event->param.conn.private_data), so their fields are kept filled as librdmacm does.
 *
 * Threads and locks: one mutex, Service::mu, guards every Id, Channel queue, Device and
 * Manager. A background thread (service.cc) waits on the devices' GSI eventfds and the
 * managers' next deadline, feeds MADs and time to the managers and turns their events into
 * rdma_cm events. Calls into libibverbs (ibv_modify_qp, uroce_gsi_send) may be made with mu
 * held: libibverbs never calls back into librdmacm, so the order is always mu -> engine lock.
 * Nothing blocks with mu held except on a condition variable that releases it.
 */
#pragma once

#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cm/manager.h"
#include "common/time.h"
#include "common/types.h"
#include "rdmacm/addr.h"
#include "verbs/uroce_gsi.h"

namespace uroce::rdmacm {

struct Id;

/// What rdma_get_cm_event hands out; rdma_ack_cm_event frees it.
struct Event {
  rdma_cm_event ev{};  ///< first member
  Id* owner = nullptr;
  bool dead = false;  ///< its id was destroyed before the event was taken: skipped
  /// Work done when the program takes the event, as librdmacm does in rdma_get_cm_event.
  enum class Post : uint8_t { kNone, kConnResp, kRejected } post = Post::kNone;
  uint8_t data[256]{};  ///< private data the event points at
};

/// An event channel: ch.fd is an eventfd in semaphore mode, one count per queued event.
struct Channel {
  rdma_event_channel ch{};  ///< first member
  std::deque<Event*> q;     ///< Service::mu
  bool destroyed = false;   ///< Service::mu; kept a while after rdma_destroy_event_channel
};

enum class IdState : uint8_t {
  kIdle,
  kBound,
  kAddrResolved,
  kRouteResolved,
  kListen,
  kConnect,   ///< active: REQ (or SIDR_REQ) sent
  kConnResp,  ///< active: REP received, RTU not yet sent
  kReqRcvd,   ///< passive: CONNECT_REQUEST delivered, not yet answered
  kAccept,    ///< passive: REP sent, waiting for the RTU
  kEstablished,
  kDisconnected,
  kClosed,  ///< rejected, unreachable or given up
};

/// One opened uroce device: its verbs context, QP1, CM state machine and default PD.
struct Device {
  int index = 0;  ///< config order = libibverbs' device order
  std::string name;
  ibv_context* verbs = nullptr;
  uroce_gsi* gsi = nullptr;
  ibv_pd* pd = nullptr;
  /// The XRC domain of the ids' XRC_RECV QPs and XRC SRQs that name none (fd -1, opened on
  /// first use, as librdmacm's ucma_get_xrcd): ep.cc xrcd_of().
  ibv_xrcd* xrcd = nullptr;
  std::unique_ptr<cm::Manager> mgr;
  uint8_t active_mtu = IBV_MTU_1024;
  uint8_t max_responder_resources = 1;  ///< max_qp_rd_atom (clamped to 255)
  uint8_t max_initiator_depth = 1;      ///< max_qp_init_rd_atom
  std::map<uint64_t, int> listens;      ///< service ID -> listeners using it
  /// Shared through uroce-hostd: the daemon holds the port space and steers CM MADs.
  bool shared = false;
  /// The device is gone (uroce_gsi_recv: ENODEV): its ids got RDMA_CM_EVENT_DEVICE_REMOVAL.
  bool removed = false;
};

/// An rdma_cm_id and the connection behind it.
struct Id {
  rdma_cm_id id{};  ///< first member
  IdState state = IdState::kIdle;
  bool sync = false;       ///< created without a channel: calls wait for their event
  Channel* own = nullptr;  ///< the channel created for a sync id
  Device* dev = nullptr;
  Gid sgid, dgid;
  int sgid_index = 0;
  uint16_t sport = 0, dport = 0;  ///< host order
  uint8_t tos = 0;
  bool reuseaddr = false;  ///< RDMA_OPTION_ID_REUSEADDR
  bool afonly = false;     ///< RDMA_OPTION_ID_AFONLY: an IPv6 wildcard listens on IPv6 only
  /// RDMA_OPTION_ID_ACK_TIMEOUT: the RTS attributes' local ACK timeout (qp_attr.h); unset:
  /// kLocalAckTimeout.
  std::optional<uint8_t> ack_timeout;
  // Connection (see qp_attr.h for how they become QP attributes).
  uint32_t conn = 0;  ///< the manager's local communication ID (0: none)
  /// Starting PSNs of our REQ/REP (local: our receive PSN) and of the peer's (remote: our send
  /// PSN); qp_attr.h.
  uint32_t local_psn = 0, remote_psn = 0;
  uint32_t remote_qpn = 0, remote_qkey = 0;
  uint8_t responder_resources = 0;  ///< our max_dest_rd_atomic
  uint8_t initiator_depth = 0;      ///< our max_rd_atomic
  uint8_t retry_count = 7, rnr_retry = 7;
  uint8_t path_mtu = IBV_MTU_1024;
  ibv_sa_path_rec path{};  ///< id.route.path_rec points here once the route is resolved
  std::unique_ptr<ibv_qp_init_attr> ep_qp_attr;  ///< rdma_create_ep passive: QP per request
  std::vector<uint8_t> connect_data;             ///< rdma_create_ep: ai_connect
  std::vector<Device*> listening;                ///< devices whose manager listens for this id
  bool port_claimed = false;                     ///< sport is ours in Service's port table
  Device* host_bound = nullptr;     ///< the shared device whose host port space holds its bind
  bool disconnected_event = false;  ///< DISCONNECTED was queued (once per connection)
  int unacked = 0;  ///< events taken by the program and not acked (destroy waits for them)
  /// ECE (ece.cc): what this side offers or took, and what the peer's REQ or REP carried.
  ibv_ece local_ece{}, remote_ece{};
};

/// ECE of a QP rdma_create_qp made for id (ece.cc): its offer, or what it takes of the REQ.
int init_ece(Id* id, ibv_qp* qp);
/// ECE of the REP: what the active side's QP takes before RTR.
int conn_resp_ece(Id* id);

inline Id* id_of(rdma_cm_id* p) { return reinterpret_cast<Id*>(p); }
inline Channel* channel_of(rdma_event_channel* p) { return reinterpret_cast<Channel*>(p); }
inline Event* event_of(rdma_cm_event* p) { return reinterpret_cast<Event*>(p); }

/// The process's connection-manager service (service.cc).
class Service {
 public:
  /// The service, created on first use (reads the uroce configuration).
  static Service& get();

  std::mutex mu;
  std::condition_variable acked;  ///< an event was acked (destroy/migrate wait on it)

  /// Every address of every device, for address resolution: the configured ones (config
  /// order), then the GID tables of the devices bound to kernel netdevs, read now (host mode:
  /// they follow the netdev's addresses; such devices are opened here). Requires mu.
  const std::vector<LocalAddr>& addrs();
  /// The local address to reach dst from: src when given (it must be ours, same family); dst
  /// itself when it is ours; else the kernel's route through a host-mode device; else the
  /// configured address whose prefix covers dst, longest first. Requires mu.
  std::optional<LocalAddr> route_to(const std::optional<Gid>& src, const Gid& dst);
  /// Opens the device (verbs context, QP1, manager) on first use. Requires mu.
  /// nullptr + errno when it cannot be opened.
  Device* open_device(int index);
  /// The opened device whose context is `verbs`, or nullptr. Requires mu.
  Device* device_of(ibv_context* verbs);

  /// Queues an event for the program on `ch` (the id's channel by default). Requires mu.
  Event* deliver(Id* id, rdma_cm_event_type type, int status, Channel* ch = nullptr);

  /// Connection of the manager -> id (mu).
  void map_conn(Id* id);
  void unmap_conn(Id* id);
  /// Listeners (mu).
  void add_listener(Id* id) { listeners_.push_back(id); }
  void remove_listener(Id* id);
  /// A free ephemeral port, or the port itself when it is free for (ps, gid), or shared:
  /// bound by ids that all set RDMA_OPTION_ID_REUSEADDR (`reuse`), none listening, as the
  /// kernel's cma_check_port allows. 0: in use.
  uint16_t claim_port(uint16_t ps, const Gid& gid, uint16_t port, bool reuse = false);
  void release_port(uint16_t ps, const Gid& gid, uint16_t port);
  /// rdma_listen on a bound port: it must be the port's only id (a listening port is never
  /// shared, the kernel's rdma_listen). false: another id shares it (EADDRINUSE).
  bool listen_port(uint16_t ps, const Gid& gid, uint16_t port);

  /// Runs the managers' timers and wakes the thread (after a call that armed a timer).
  void kick();
  static Timestamp now();

 private:
  Service();
  void thread_main();
  void on_manager_event(Device* dev, cm::Event& e);
  void on_connect_request(Device* dev, cm::Event& e);
  void on_sidr_request(Device* dev, cm::Event& e);
  /// The device is gone: RDMA_CM_EVENT_DEVICE_REMOVAL to every id that uses it (its
  /// connections and the listeners bound to it), as the kernel's rdma_cm on a removal.
  void on_device_removed(Device* dev);
  Id* listener_for(Device* dev, uint64_t service_id, const Gid& dst);

  std::vector<LocalAddr> config_addrs_;  ///< from the configuration file
  std::vector<LocalAddr> addrs_;         ///< config_addrs_ + host-mode GID tables (addrs())
  std::vector<std::string> names_;       ///< device names, config order
  std::vector<bool> netdev_;             ///< by index: bound to a kernel netdev (host mode)
  std::vector<std::unique_ptr<Device>> devices_;  ///< opened ones, by index (may be null)
  std::map<std::pair<Device*, uint32_t>, Id*> conns_;
  std::vector<Id*> listeners_;
  /// Who holds a bound (ps, gid, port).
  struct PortUse {
    int ids = 0;             ///< ids bound to it
    bool reuse = false;      ///< all of them set REUSEADDR
    bool listening = false;  ///< one of them listens
  };
  std::map<std::tuple<uint16_t, std::array<uint8_t, 16>, uint16_t>, PortUse> ports_;
  uint16_t next_port_ = 0;
  int wake_fd_ = -1;
  std::thread thread_;
  bool stop_ = false;
};

/// Waits for the next event of a sync id and leaves it in id->id.event; -1 + errno when it
/// reports an error (rdma-core's ucma_complete).
int complete(Id* id);

}  // namespace uroce::rdmacm
