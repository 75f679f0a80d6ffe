/**
 * @file runtime.cc
 * @brief The composition root of one device: opens the port, builds the engine, reads the
 * clock, and runs the progress model of docs/design.md, "Threads and progress".
 *
 * Progress comes from two places, both under the engine lock (Runtime::mu):
 *  - the application's own calls (post_send, post_recv, poll_cq, cq_ex start_poll) run
 *    progress_locked() a few times while it finds work;
 *  - a background thread per device, so that a passive side (the target of WRITE/READ, a
 *    process blocked in ibv_get_cq_event) still answers. What it does when is decided by
 *    device::ProgressPolicy (lib/device/progress_policy.h, with its tuning constants) from the
 *    clock and the application's calls (Runtime::last_app_call); this file reads the clock and
 *    the process's CPU use (AppCpu), and steps, spins, yields or sleeps as told.
 * Units: nanoseconds (Timestamp).
 */
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>
#include <string>

#include "device/progress_policy.h"
#include "ports/ports.h"
#include "verbs/gid_table.h"
#include "verbs/objects.h"
#ifdef UROCE_HAVE_DCQCN
#include "verbs/congestion.h"
#endif
#ifdef UROCE_HAVE_STATS
#include "stats/summary.h"
#include "verbs/capture_tap.h"
#endif

namespace uroce::verbs {

namespace {

using device::kDriveRounds;
using device::kRxBurst;

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

uint8_t mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return IBV_MTU_1024;
  }
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// At exit: stop every progress thread before lib/stats' own atexit handler unmaps the
/// counter segments the engines write (handlers run in reverse order of registration, and
/// this one is registered after the first segment exists). Application-driven progress stops
/// too; verbs calls from later atexit handlers still work but no longer progress the engine.
void stop_progress_at_exit() {
  std::lock_guard<std::mutex> g(runtime_mu());
  for (auto& [dev, rt] : open_runtimes()) {
    rt->stop.store(true);
    if (rt->thread.joinable()) rt->thread.join();
    std::lock_guard<std::mutex> l(rt->mu);
    rt->exiting = true;
    // A device the program never closed (librdmacm's, for one) reports its counters now.
    rt->print_counters("exit");
  }
}

}  // namespace

Timestamp now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec};
}

Runtime::~Runtime() {
  stop.store(true);
  if (thread.joinable()) thread.join();
  print_counters("close");
}

void Runtime::print_counters(const char* when) {
  // UROCE_PRINT_COUNTERS=1: the device's non-zero counters on stderr as it closes (or at exit
  // when it never closes), one line, for tests that check them after the program ends (its
  // stats segment goes with it).
  if (counters_printed) return;
  if (const char* env = getenv("UROCE_PRINT_COUNTERS"); env && *env && *env != '0' && engine) {
    counters_printed = true;
    const CounterBlock* c = engine_counters();
    std::string line = "uroce: " + dev->cfg.name + ": counters at " + when + ":";
    for (size_t i = 0; i < kCounterCount; ++i)
      if (uint64_t v = c->get(static_cast<Counter>(i)))
        line += " " + std::string(kCounterNames[i]) + "=" + std::to_string(v);
    PortCounters pc;  // stays all zero on a port that keeps no counters
    if (port) port->read_counters(&pc);
    auto add = [&line](const std::string& name, uint64_t v) {
      if (v) line += " " + name + "=" + std::to_string(v);
    };
    for (int p = 0; p < PortCounters::kPriorities; ++p) {
      const std::string prio = "_prio" + std::to_string(p);
      add("rx" + prio + "_packets", pc.rx_prio_packets[p]);
      add("tx" + prio + "_packets", pc.tx_prio_packets[p]);
      add("rx" + prio + "_pause", pc.rx_prio_pause[p]);
    }
    add("rx_packets_phy", pc.rx_packets_phy);
    add("rx_discards_phy", pc.rx_discards_phy);
    add("tx_pause_storm_warning_events", pc.tx_pause_storm_warning_events);
    add("tx_pause_storm_error_events", pc.tx_pause_storm_error_events);
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

CounterBlock* Runtime::engine_counters() {
#ifdef UROCE_HAVE_STATS
  if (stats) return stats->counters();
#endif
  return &counters;
}

Runtime::Progress Runtime::progress_locked(Timestamp t) {
  rx_now = t;
  last_rx = t;
  Progress p;
  p.rx = port->rx_burst(*this, kRxBurst, t);
  if (port->link_version() != link_version) follow_link_locked();
  p.tx = transmit_locked(t);
  return p;
}

void Runtime::follow_link_locked() {
  LinkState st;
  link_version = port->link_version();
  if (!port->link_state(&st)) return;
  ifindex = st.ifindex;
  if (uint32_t m = roce_path_mtu(st.mtu)) active_mtu = mtu_enum(std::min(dev->cfg.mtu, m));
  std::vector<Gid> table = merge_gid_table(gids, st.gids);
  if (table != gids) {
    gids = table;
    engine->set_gids(table);
    on_async_event({transport::AsyncEventType::kGidChange, 1});
  }
  if (st.up != link_up) {
    link_up = st.up;
    on_async_event(
        {st.up ? transport::AsyncEventType::kPortActive : transport::AsyncEventType::kPortErr, 1});
  }
}

size_t Runtime::transmit_locked(Timestamp t) {
  size_t n;
#ifdef UROCE_HAVE_STATS
  if (capture) {
    CaptureTap tap(*port, *capture);
    n = engine->poll_transmit(tap, *port, t);
  } else {
    n = engine->poll_transmit(*port, *port, t);
  }
#else
  n = engine->poll_transmit(*port, *port, t);
#endif
  port->flush();
  return n;
}

void drive_locked(Runtime* rt) { drive_locked(rt, now()); }

void drive_post_locked(Runtime* rt, Timestamp t) {
  if (rt->exiting) return;
  if (device::post_polls_rx(t, rt->last_rx)) {
    drive_locked(rt, t);
    return;
  }
  rt->last_app_call.store(t.ns, std::memory_order_relaxed);
  rt->transmit_locked(t);
}

void drive_locked(Runtime* rt, Timestamp t) {
  if (rt->exiting) return;
  rt->last_app_call.store(t.ns, std::memory_order_relaxed);
  for (int i = 0; i < kDriveRounds; ++i) {
    Runtime::Progress p = rt->progress_locked(t);
    if (!device::step_again(p.rx, p.tx, [rt] { return rt->engine->has_tx_work(); })) break;
  }
}

void Runtime::check_port_health() {
  PortCounters c;
  if (!port->read_counters(&c)) return;
  PortHealth::Report r = health.update(c);
  for (const std::string& line : r.lines)
    std::fprintf(stderr, "uroce: %s: %s\n", dev->cfg.name.c_str(), line.c_str());
  if (r.port_error) on_async_event({transport::AsyncEventType::kPortErr, 1});
}

void Runtime::on_frame(std::span<const uint8_t> frame, const RxMeta&) {
#ifdef UROCE_HAVE_STATS
  if (capture) capture->write(frame, false, wall_ns());
#endif
  engine->on_frame(frame, rx_now);
}

namespace {

/// Whether the progress thread shares its only CPU with busy application threads: the process
/// is pinned to one CPU, and its other threads used more than half of it over the last
/// kAppCpuPeriod (getrusage: the process's CPU time minus this thread's). Read at most once
/// per period (two syscalls).
class AppCpu {
 public:
  static constexpr Duration kAppCpuPeriod = Duration::millis(1);

  AppCpu() {
    cpu_set_t set;
    CPU_ZERO(&set);
    pinned_ = sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1;
  }

  bool busy(Timestamp t) {
    if (!pinned_) return false;
    if (t - last_ < kAppCpuPeriod) return busy_;
    const int64_t others = process_ns(RUSAGE_SELF) - process_ns(RUSAGE_THREAD);
    if (last_.ns != 0) busy_ = (others - others_) * 2 > (t - last_).ns;
    others_ = others;
    last_ = t;
    return busy_;
  }

 private:
  static int64_t process_ns(int who) {
    rusage u{};
    getrusage(who, &u);
    return (int64_t{u.ru_utime.tv_sec} + u.ru_stime.tv_sec) * 1'000'000'000 +
           (int64_t{u.ru_utime.tv_usec} + u.ru_stime.tv_usec) * 1'000;
  }

  bool pinned_ = false;
  bool busy_ = false;
  Timestamp last_{};
  int64_t others_ = 0;
};

void sleep_for(Duration d) {
  if (d.ns <= 0) return;
  timespec ts{static_cast<time_t>(d.ns / 1'000'000'000), static_cast<long>(d.ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

}  // namespace

void Runtime::start_thread() {
  thread = std::thread([this] {
    prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);  // 5 us: short sleeps stay short
    pthread_setname_np(pthread_self(), "uroce-progress");
    using Action = device::ProgressPolicy::Action;
    AppCpu app_cpu;
    device::ProgressPolicy policy(now());
    while (!stop.load(std::memory_order_relaxed)) {
      const Timestamp t = now();
      const device::ProgressPolicy::Decision look =
          policy.look(t, Timestamp{last_app_call.load(std::memory_order_relaxed)});
      if (look.action == Action::kSleep) {  // the application drives
        sleep_for(look.sleep);
        continue;
      }
      if (look.stats_due) {
        mu.lock();
      } else if (!mu.try_lock()) {  // an application call holds the engine
        sleep_for(policy.engine_busy().sleep);
        continue;
      }
      const bool follow_up = policy.app_called_recently() || app_cpu.busy(t);
      const size_t work = progress_locked(t).total();
      Timestamp deadline = Timestamp::never();
      if (device::ProgressPolicy::needs_deadline(work, follow_up))
        deadline = engine->next_deadline();
      if (look.stats_due) {  // QP rates and counters for `uroce show`
        stats_refresh_qps(this);
        check_port_health();
        stats_refresh_port(this);
        stats_refresh_capture(this);
      }
      mu.unlock();
      const device::ProgressPolicy::Decision next = policy.after_step(t, work, follow_up, deadline);
      switch (next.action) {
        case Action::kStep:
        case Action::kAgain: break;
        case Action::kSpin: cpu_relax(); break;
        case Action::kYield: sched_yield(); break;
        case Action::kSleep: sleep_for(next.sleep); break;
        case Action::kBackOff: sleep_for(policy.back_off_sleep(now(), deadline)); break;
      }
    }
  });
}

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
  if (it != open.end()) {
    it->second->open_count++;
    return it->second;
  }
  auto rt = std::make_unique<Runtime>(dev);
  std::string err;
  rt->port = open_port(dev->cfg, &err);
  if (!rt->port) {
    std::fprintf(stderr, "uroce: %s: cannot open port '%s': %s\n", dev->cfg.name.c_str(),
                 dev->cfg.port.c_str(), err.c_str());
    errno = ENODEV;
    return nullptr;
  }
  transport::EngineConfig ec;
  ec.mac = dev->cfg.mac ? *dev->cfg.mac : rt->port->mac();
  for (const auto& a : dev->cfg.addresses) ec.gids.push_back(a.gid);
  ec.max_mtu = dev->cfg.mtu;
  ec.link_speed_bps = rt->port->link_speed_bps();
  ec.roce_dscp = dev->cfg.roce_dscp;
  ec.cnp_dscp = dev->cfg.cnp_dscp;
  ec.ecn = dev->cfg.ecn;
  ec.dscp_to_prio = dev->cfg.dscp_to_prio;
  ec.loss_recovery = dev->cfg.loss_recovery == config::Device::LossRecovery::kSelective
                         ? transport::LossRecovery::kSelective
                         : transport::LossRecovery::kGoBackN;
  ec.vlan = dev->cfg.vlan;
#ifdef UROCE_HAVE_DCQCN
  if (config::cc_in_force(dev->cfg) != CcAlgorithm::kOff) {
    std::string cerr;
    rt->cc = make_congestion(dev->cfg, &cerr);
    if (!rt->cc) {
      std::fprintf(stderr, "uroce: %s: %s\n", dev->cfg.name.c_str(), cerr.c_str());
      errno = EINVAL;
      return nullptr;
    }
  }
  ec.cc = rt->cc.get();
#endif
  std::random_device rd;
  ec.key_seed = (uint64_t{rd()} << 32) | rd();
  rt->active_mtu = mtu_enum(dev->cfg.mtu);
  if (LinkState st; rt->port->link_state(&st)) {
    // Host mode: the GIDs are the netdev's addresses; the path MTU is what its MTU carries.
    rt->link_version = rt->port->link_version();
    rt->link_up = st.up;
    rt->ifindex = st.ifindex;
    ec.gids = st.gids;
    if (st.shared_slot >= 0) {  // shared through uroce-hostd: QPNs carry the client slot
      ec.qpn_tag_bits = kSharedQpnTagBits;
      ec.qpn_tag = static_cast<uint32_t>(st.shared_slot);
    }
    if (uint32_t m = roce_path_mtu(st.mtu)) rt->active_mtu = mtu_enum(std::min(dev->cfg.mtu, m));
    ec.max_mtu = 128u << rt->active_mtu;
  }
  rt->gids = ec.gids;
#ifdef UROCE_HAVE_STATS
  // Counters live in the device's shared-memory segment when it can be created; a failure
  // (no writable run dir) only costs visibility from outside the process.
  std::string serr;
  rt->stats =
      stats::StatsSegment::create(dev->cfg.name, stats::summarize(dev->cfg, dev->source), &serr);
  if (!rt->stats && getenv("UROCE_VERBS_DEBUG")) std::fprintf(stderr, "uroce: %s\n", serr.c_str());
#endif
  // Registered after the first stats segment (and after the port, whose driver may register
  // its own cleanup), so it runs before their handlers.
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(stop_progress_at_exit); });
  rt->engine = std::make_unique<transport::Engine>(ec, rt->engine_counters(), rt.get());
  stats_refresh_port(rt.get());
  rt->open_count = 1;
  rt->start_thread();
  Runtime* p = rt.release();
  open[dev] = p;
  return p;
}

void release_runtime(Runtime* rt) {
  std::unique_lock<std::mutex> g(runtime_mu());
  if (--rt->open_count > 0) return;
  // Last context gone: stop the engine and close the port. A later open starts afresh.
  open_runtimes().erase(rt->dev);
  g.unlock();
  delete rt;
}

bool runtime_is_open(DeviceEntry* dev) {
  std::lock_guard<std::mutex> g(runtime_mu());
  return open_runtimes().count(dev) != 0;
}

}  // namespace uroce::verbs
