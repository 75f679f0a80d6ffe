/**
 * @file worker.h
 * @brief What uroce-hostd (main.cc) keeps per client and per worker: a client's session,
 * region and rings (its TX ring its owner worker's, one RX ring per worker), a worker's
 * queues, clients and counters. Plain data; main.cc's Daemon moves the frames.
 *
 * Thread-safety: a Worker's members are its own thread's, except the atomics (read by
 * worker 0 for the stats lines, the status file and the choice of a new client's owner) and
 * the inbox and port counters under their mutexes. A Client's TX side is its owner's; its
 * RxSide k is worker k's.
 */
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/port.h"
#include "common/time.h"
#include "hostd/local_hold.h"
#include "hostd/tx_guard.h"
#include "shm/doorbell.h"
#include "shm/region.h"
#include "shm/ring.h"

namespace uroce::hostd {

/// TxGuard::Verdict values (kOk and the reasons a frame is refused).
constexpr size_t kVerdicts = static_cast<size_t>(TxGuard::Verdict::kSport) + 1;

/// A counter one worker writes and any thread reads (print(), the status file): relaxed, as a
/// plain load and store on the writer's side.
using Count = std::atomic<uint64_t>;
inline void bump(Count& c, uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
inline uint64_t value(const Count& c) { return c.load(std::memory_order_relaxed); }

/// One client's frames through one worker (Daemon::total() sums the workers).
struct Counters {
  Count to_client{0};    ///< frames delivered into the client's RX ring
  Count from_client{0};  ///< frames the client sent
  Count to_wire{0};      ///< of those, sent to the netdev
  Count switched{0};     ///< of those, same-host: switched to a client
  Count dropped{0};      ///< for this client but its ring was full; or a bad descriptor
  Count cm_refused{0};   ///< CM MADs it sent that HostCm refused (another's ID, malformed)
  /// Frames it sent that TxGuard refused, by TxGuard::Verdict (kOk unused).
  std::array<Count, kVerdicts> refused{};
  void reset() {
    for (Count* c : {&to_client, &from_client, &to_wire, &switched, &dropped, &cm_refused})
      c->store(0, std::memory_order_relaxed);
    for (Count& c : refused) c.store(0, std::memory_order_relaxed);
  }
};

/// Counters summed over the workers, for print() and the status file.
struct Totals {
  uint64_t to_client = 0, from_client = 0, to_wire = 0, switched = 0, dropped = 0, cm_refused = 0;
  std::array<uint64_t, kVerdicts> refused{};
  void add(const Counters& c) {
    to_client += value(c.to_client);
    from_client += value(c.from_client);
    to_wire += value(c.to_wire);
    switched += value(c.switched);
    dropped += value(c.dropped);
    cm_refused += value(c.cm_refused);
    for (size_t v = 0; v < kVerdicts; ++v) refused[v] += value(c.refused[v]);
  }
};

/// A client's RX ring of one worker: only that worker writes it (RSS brings a client's frames
/// to any worker, and each delivers them into its own ring: no frame crosses workers).
struct RxSide {
  explicit RxSide(shm::RingView v) : ring(v) {}
  shm::Producer ring;
  bool published = false;          ///< frames published this round (wake check due)
  LocalHold::Receiver hold;        ///< the ring as a same-host receiver of this worker's switching
  std::atomic<uint32_t> depth{0};  ///< frames in flight, as of the worker's last status round
};

/// A connected client (after Welcome): its session, region and rings. Its owner worker polls
/// its TX ring and serves its control socket; every worker may deliver into its RX ring of its
/// own. Freed through the Reclaimer: workers read it from the steering table without a lock.
struct Client {
  int sock = -1;
  uint32_t block = 0;  ///< its QPN block, also its number at the daemon
  unsigned owner = 0;  ///< the worker it belongs to
  pid_t pid = 0;       ///< SO_PEERCRED
  uid_t uid = 0;
  std::string device;
  std::string command;  ///< /proc/<pid>/comm when it came
  shm::Region region;
  shm::Doorbell bell;      ///< the client's: kicked when it sleeps and frames arrive
  shm::Consumer tx;        ///< its TX ring (the owner's)
  std::deque<RxSide> rx;   ///< its RX rings, by worker
  LocalHold::Sender hold;  ///< its same-host frame waiting for a full receiver (the owner's)
  std::atomic<uint32_t> tx_depth{0};  ///< as of the owner's last status round
  /// A worker found the indices of its RX ring broken (ring.h "Trust"): the owner drops it.
  std::atomic<bool> rx_broken{false};
};

/// One worker: a thread with its own netdev queues (its Port), its own clients and its own
/// control sockets. What workers share is the Daemon's, under Daemon::mu_ (or atomic).
struct Worker {
  unsigned id = 0;
  std::unique_ptr<Port> port;
  int ep = -1;         ///< its control sockets, its doorbell (worker 0: the listening socket)
  shm::Doorbell bell;  ///< its own: its clients kick it when they publish to it asleep
  std::vector<std::unique_ptr<Client>> owned;  ///< its clients
  std::vector<Client*> woken;                  ///< got frames from it this round
  std::unique_ptr<Counters[]> counters;        ///< by QPN block; kept after a client left
  TxGuard guard;                               ///< what each of its clients may send
  std::vector<uint8_t> scratch;                ///< the copy of a client's frame being checked
  uint64_t link_version = 0;
  Timestamp last_round{};
  Count net_rx{0}, net_tx{0}, unknown{0};
  Count switched{0};         ///< same-host frames it switched between clients
  Count cpu_ns{0};           ///< its thread's CPU time in its loop, as of its last publish round
  uint64_t cpu_base_ns = 0;  ///< its thread's CPU time when its loop began
  Count busy_ns{0};          ///< time from the start of each round that moved frames to the next's
  Count stalls{0}, longest_stall_ns{0};
  std::atomic<uint32_t> clients{0};  ///< owned.size(), for the choice of a new client's owner
  /// Clients the accepting worker (0) handed over, not yet adopted.
  std::mutex inbox_mu;
  std::vector<std::unique_ptr<Client>> inbox;
  std::atomic<bool> has_inbox{false};
  /// Its port's counters, as of its last publish round (summed into the netdev's segment).
  std::mutex port_mu;
  PortCounters port_counters;
  std::thread thread;
  ~Worker() {
    if (ep >= 0) ::close(ep);
  }
};

}  // namespace uroce::hostd
