/**
 * @file runtime.cc
 * @brief The composition root of one device (runtime.h): opens the port, builds the engine,
 * reads the clock, and runs the progress model of docs/design.md, "Threads and progress", as
 * ProgressPolicy (progress_policy.h, with its tuning constants) decides it.
 * Units: nanoseconds (Timestamp).
 */
#include "device/runtime.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "common/sched_slice.h"
#include "device/gid_table.h"
#include "device/neighbor_wait.h"
#include "device/progress_policy.h"
#include "ports/ports.h"
#ifdef UROCE_HAVE_DCQCN
#include "device/congestion.h"
#endif
#ifdef UROCE_HAVE_STATS
#include "device/capture_tap.h"
#include "stats/summary.h"
#endif

namespace uroce::device {

namespace {

/// Runtimes whose progress thread started and that are not shut down (guarded by live_mu).
/// Never destroyed: programs may still close devices from atexit handlers.
std::mutex& live_mu() {
  static std::mutex mu;
  return mu;
}
std::vector<Runtime*>& live() {
  static auto* v = new std::vector<Runtime*>();
  return *v;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Whether the progress thread shares its only CPU with busy application threads: the process
/// is pinned to one CPU, and its other threads used more than half of it over the last
/// kAppCpuPeriod (getrusage: the process's CPU time minus this thread's). Not tuned values:
/// the period is short against the scheduler's time slice (a few ms), so a change of the
/// application's behaviour is seen within one slice, and long against the cost of a reading
/// (two getrusage calls, 2.6-14 us here, bench/raw/poll_costs: about 1 % of a core at most,
/// only in a process pinned to one CPU); "more than half" means the application threads, not this
/// one, are what keeps the CPU busy.
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

/// Incremented in every forked child (fork_child()): runtimes of an earlier generation are the
/// parent's.
std::atomic<uint64_t> g_fork_generation{0};

/// fork: every runtime's engine lock is held across it, so the child's copy of each engine is
/// consistent and unlocked (a progress thread that held it does not exist there); the child
/// counts a new generation, which makes every runtime it inherited refuse calls.
void fork_prepare() {
  live_mu().lock();
  for (Runtime* rt : live()) rt->mu.lock();
}
void fork_parent() {
  for (Runtime* rt : live()) rt->mu.unlock();
  live_mu().unlock();
}
void fork_child() {
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  for (Runtime* rt : live()) rt->mu.unlock();
  live_mu().unlock();
}

/// mtu_code of the path MTU a netdev of MTU netdev_mtu carries for a device configured with
/// cfg_mtu; `otherwise` when that MTU carries no RoCE frame at all.
uint8_t path_mtu_code(uint32_t cfg_mtu, uint32_t netdev_mtu, uint8_t otherwise) {
  const uint32_t m = roce_path_mtu(netdev_mtu);
  return m ? mtu_code(std::min(cfg_mtu, m)) : otherwise;
}

/// The RoCEv2 entries of a GID table whose RoCE v1 entries start at v1_base.
std::vector<Gid> v2_entries(const std::vector<Gid>& table, size_t v1_base) {
  const size_t n = std::min(table.size(), v1_base);
  return std::vector<Gid>(table.begin(), table.begin() + static_cast<ptrdiff_t>(n));
}

void sleep_for(Duration d) {
  if (d.ns <= 0) return;
  timespec ts{static_cast<time_t>(d.ns / 1'000'000'000), static_cast<long>(d.ns % 1'000'000'000)};
  nanosleep(&ts, nullptr);
}

}  // namespace

Timestamp now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Timestamp{int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec};
}

uint8_t mtu_code(uint32_t bytes) {
  switch (bytes) {
    case 256: return 1;
    case 512: return 2;
    case 2048: return 4;
    case 4096: return 5;
    default: return 3;
  }
}

Runtime::Runtime(const config::Device& c, std::string src)
    : cfg(c),
      source(std::move(src)),
      fork_generation_(g_fork_generation.load(std::memory_order_relaxed)),
      owner_pid_(getpid()) {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(fork_prepare, fork_parent, fork_child); });
}

bool Runtime::inherited() const {
  return fork_generation_ != g_fork_generation.load(std::memory_order_relaxed);
}

void Runtime::report_inherited() {
  if (inherited_reported_.exchange(true)) return;
  std::fprintf(stderr,
               "uroce: %s: this context was opened by process %d, which forked this one; its "
               "resources stay the parent's: open the device again in this process\n",
               cfg.name.c_str(), static_cast<int>(owner_pid_));
}

Runtime::~Runtime() { shut_down(); }

void Runtime::shut_down() {
  {
    std::lock_guard<std::mutex> g(live_mu());
    if (live_) std::erase(live(), this);
    live_ = false;
  }
  stop_.store(true);
  if (thread_.joinable()) {
    // In a forked child the thread does not exist: joining would wait forever.
    if (getpid() == thread_pid_) {
      kick_thread();
      thread_.join();
    } else {
      thread_.detach();
    }
  }
  if (wake_efd_ >= 0 && getpid() == thread_pid_) {
    close(wake_efd_);
    wake_efd_ = -1;
  }
  print_counters("close");
}

void Runtime::stop_at_exit() {
  // A forked child's exit: the runtime (and its thread, its lock's holder) is the parent's.
  if (getpid() != thread_pid_) return;
  stop_.store(true);
  kick_thread();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> l(mu);
  exiting = true;
  // A device the program never closed (librdmacm's, for one) reports its counters now.
  print_counters("exit");
}

/// At exit: stop every progress thread before lib/stats' own atexit handler unmaps the
/// counter segments the engines write (handlers run in reverse order of registration, and
/// this one is registered after the first segment exists). Application-driven progress stops
/// too; verbs calls from later atexit handlers still work but no longer progress the engine.
void Runtime::stop_all_at_exit() {
  std::lock_guard<std::mutex> g(live_mu());
  for (Runtime* rt : live()) rt->stop_at_exit();
}

void Runtime::print_counters(const char* when) {
  // UROCE_PRINT_COUNTERS=1: the device's non-zero counters on stderr as it closes (or at exit
  // when it never closes), one line, for tests that check them after the program ends (its
  // stats segment goes with it).
  if (counters_printed_) return;
  if (const char* env = getenv("UROCE_PRINT_COUNTERS"); env && *env && *env != '0' && engine) {
    counters_printed_ = true;
    const CounterBlock* c = engine_counters();
    std::string line = "uroce: " + cfg.name + ": counters at " + when + ":";
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
  p.rx = port->rx_burst(*this, tuning.rx_burst, t);
  if (port->link_version() != link_version) {
    follow_link_locked();
    follow_service_locked(t);
  } else if (!lost_at_.is_never()) {
    follow_service_locked(t);
  }
  p.tx = transmit_locked(t);
  return p;
}

void Runtime::follow_link_locked() {
  LinkState st;
  link_version = port->link_version();
  if (!port->link_state(&st)) return;
  ifindex = st.ifindex;
  active_mtu = path_mtu_code(cfg.mtu, st.mtu, active_mtu);
  // The RoCEv2 entries are merged slot by slot; RoCE v1 ones (roce_v1) follow them again.
  const std::vector<Gid> v2 = merge_gid_table(v2_entries(gids, gid_v1_base), st.gids);
  std::vector<Gid> table = gid_table(v2, cfg.roce_v1);
  if (table != gids) {
    gids = table;
    gid_v1_base = cfg.roce_v1 ? v2.size() : SIZE_MAX;
    engine->set_gids(table, gid_v1_base);
    on_async_event({transport::AsyncEventType::kGidChange, 1});
  }
  if (st.up != link_up) {
    link_up = st.up;
    on_async_event(
        {st.up ? transport::AsyncEventType::kPortActive : transport::AsyncEventType::kPortErr, 1});
  }
}

void Runtime::follow_service_locked(Timestamp t) {
  if (gone()) return;
  const char* name = cfg.name.c_str();
  switch (port->service()) {
    case Port::Service::kUp:
      if (!lost_at_.is_never())
        std::fprintf(stderr, "uroce: %s: uroce-hostd is back after %.3f s; the QPs go on\n", name,
                     (t - lost_at_).secs());
      lost_at_ = Timestamp::never();
      return;
    case Port::Service::kLost:
      if (lost_at_.is_never()) {
        lost_at_ = t;
        grace_ = std::clamp(engine->longest_retry_budget(), Port::kServiceGraceMin,
                            Port::kServiceGraceMax);
        std::fprintf(stderr,
                     "uroce: %s: uroce-hostd went away; waiting up to %.1f s for it to come back "
                     "(the QPs' longest retry budget)\n",
                     name, grace_.secs());
        return;
      }
      if (t - lost_at_ < grace_) return;
      char why[128];
      std::snprintf(why, sizeof why, "uroce-hostd did not come back within %.1f s", grace_.secs());
      port->give_up(why);
      break;
    case Port::Service::kGone: break;
  }
  // The device is gone: as a NIC that died, DEVICE_FATAL and every QP flushed.
  gone_.store(true, std::memory_order_release);
  lost_at_ = Timestamp::never();
  std::fprintf(stderr, "uroce: %s: the device is gone: %s\n", name, port->why_gone().c_str());
  engine->fail_all_qps();
  on_async_event({transport::AsyncEventType::kDeviceFatal, 0});
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

void Runtime::drive_post_locked(Timestamp t) {
  if (exiting) return;
  if (blocked_) wake_thread_locked();
  if (post_polls_rx(t, last_rx, tuning)) {
    drive_locked(t);
    return;
  }
  last_app_call.store(t.ns, std::memory_order_relaxed);
  transmit_locked(t);
}

void Runtime::drive_locked(Timestamp t) {
  if (exiting) return;
  if (blocked_) wake_thread_locked();
  last_app_call.store(t.ns, std::memory_order_relaxed);
  for (int i = 0; i < tuning.drive_rounds; ++i) {
    Progress p = progress_locked(t);
    if (!step_again(
            p.rx, p.tx, [this] { return engine->has_tx_work(); }, tuning))
      break;
  }
}

bool Runtime::resolve_neighbor(const Gid& g, MacAddr* mac) {
  std::unique_lock<std::mutex> l(mu);
  return wait_for_neighbor([&] { return port->resolve(g, mac); }, [&] { drive_locked(now()); },
                           [] { return now(); },
                           [&] {
                             l.unlock();  // let the progress thread and other callers in meanwhile
                             sleep_for(kNeighborWaitPause);
                             l.lock();
                           });
}

void Runtime::check_port_health() {
  PortCounters c;
  if (!port->read_counters(&c)) return;
  PortHealth::Report r = health.update(c);
  for (const std::string& line : r.lines)
    std::fprintf(stderr, "uroce: %s: %s\n", cfg.name.c_str(), line.c_str());
  if (r.port_error) on_async_event({transport::AsyncEventType::kPortErr, 1});
}

int Runtime::on_qp_connect(uint32_t qpn, const Gid& dgid, uint32_t dqpn, uint16_t sport) {
  return port ? port->qp_connection(qpn, &dgid, dqpn, sport) : 0;
}

void Runtime::on_qp_disconnect(uint32_t qpn) {
  if (port) port->qp_connection(qpn, nullptr, 0, 0);
}

void Runtime::on_frame(std::span<const uint8_t> frame, const RxMeta&) {
#ifdef UROCE_HAVE_STATS
  if (capture) capture->write(frame, false, wall_ns());
#endif
  engine->on_frame(frame, rx_now);
}

void Runtime::wake_thread_locked() {
  blocked_ = false;
  kick_thread();
}

void Runtime::kick_thread() {
  if (wake_efd_ < 0) return;
  const uint64_t one = 1;
  const ssize_t r = write(wake_efd_, &one, sizeof one);
  (void)r;  // EAGAIN: the counter is full, so the thread wakes anyway
}

bool Runtime::block_on_port() {
  Timestamp deadline;
  {
    std::lock_guard<std::mutex> l(mu);
    if (engine->has_tx_work() || !port->prepare_sleep()) return false;
    // What `uroce show` reads stays as it is now for the whole block: up to date.
    refresh_stats_locked();
    refresh_port_stats_locked();
    // Under the same lock as blocked_: an application call after this sees blocked_ and wakes
    // the thread; one before it set its timers already.
    deadline = engine->next_deadline();
    blocked_ = true;
  }
  const Timestamp t = now();
  const Duration d = until(kBlockMax, deadline, t);
  pollfd fds[2] = {{port->wake_fd(), POLLIN, 0}, {wake_efd_, POLLIN, 0}};
  const timespec ts{static_cast<time_t>(d.ns / 1'000'000'000),
                    static_cast<long>(d.ns % 1'000'000'000)};
  ppoll(fds, 2, &ts, nullptr);
  std::lock_guard<std::mutex> l(mu);
  blocked_ = false;
  port->end_sleep();
  uint64_t v;
  const ssize_t r = read(wake_efd_, &v, sizeof v);
  (void)r;
  return true;
}

void Runtime::start_thread() {
  {
    std::lock_guard<std::mutex> g(live_mu());
    live().push_back(this);
    live_ = true;
  }
  thread_pid_ = getpid();
  thread_ = std::thread([this] { run(); });
}

void Runtime::run() {
  // 5 us: short sleeps stay short. Linux's default 50 us adds 45-50 us to every sleep, 5 us
  // adds 2-5 us over the most precise setting (bench/RESULTS.md, "one at a time", timer slack).
  prctl(PR_SET_TIMERSLACK, 5000UL, 0, 0, 0);
  pthread_setname_np(pthread_self(), "uroce-progress");
  if (tuning.slice.ns > 0) {
    std::string why;
    if (request_slice(tuning.slice, &why).ns == 0 && getenv("UROCE_VERBS_DEBUG"))
      std::fprintf(stderr, "uroce: %s: progress thread keeps the default slice: %s\n",
                   cfg.name.c_str(), why.c_str());
  }
  using Action = ProgressPolicy::Action;
  AppCpu app_cpu;
  ProgressPolicy policy(now(), tuning);
  while (!stop_.load(std::memory_order_relaxed)) {
    const Timestamp t = now();
    const ProgressPolicy::Decision look =
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
    if (ProgressPolicy::needs_deadline(work, follow_up)) deadline = engine->next_deadline();
    if (look.stats_due) {  // QP rates and counters for `uroce show`
      refresh_stats_locked();
      check_port_health();
      refresh_port_stats_locked();
      refresh_capture_locked();
    }
    mu.unlock();
    const ProgressPolicy::Decision next = policy.after_step(t, work, follow_up, deadline);
    switch (next.action) {
      case Action::kStep:
      case Action::kAgain: break;
      case Action::kSpin: cpu_relax(); break;
      case Action::kYield: sched_yield(); break;
      case Action::kSleep: sleep_for(next.sleep); break;
      case Action::kBackOff: {
        const Timestamp t2 = now();
        if (wake_efd_ >= 0 && policy.block(t2) && block_on_port()) break;
        sleep_for(policy.back_off_sleep(t2, deadline));
        break;
      }
    }
  }
}

int Runtime::open() {
  std::string err;
  PortView view;
  switch (defer_port(cfg, &view, &err)) {
    case Deferral::kOpenNow: return start();
    case Deferral::kRefused:
      std::fprintf(stderr, "uroce: %s: cannot open port '%s': %s\n", cfg.name.c_str(),
                   cfg.port.c_str(), err.c_str());
      return ENODEV;
    case Deferral::kDeferred: break;
  }
  // What start() takes from the port's link state, from the view instead.
  std::lock_guard<std::mutex> l(mu);
  link_up = view.link.up;
  ifindex = view.link.ifindex;
  view_speed_bps = view.link_speed_bps;
  active_mtu = path_mtu_code(cfg.mtu, view.link.mtu, mtu_code(cfg.mtu));
  gid_v1_base = cfg.roce_v1 ? view.link.gids.size() : SIZE_MAX;
  gids = gid_table(view.link.gids, cfg.roce_v1);
  return 0;
}

int Runtime::start() {
  if (inherited()) {
    report_inherited();
    return EIO;
  }
  if (gone()) return EIO;
  std::lock_guard<std::mutex> s(start_mu_);
  if (started()) return 0;
  // mu: queries of a deferred device read what this sets; the progress thread starts last.
  std::unique_lock<std::mutex> l(mu);
  const std::vector<Gid> viewed = gids;  // the table open() showed (deferred), else empty
  const bool viewed_up = link_up;
  std::string err;
  port = open_port(cfg, &err);
  if (!port) {
    std::fprintf(stderr, "uroce: %s: cannot open port '%s': %s\n", cfg.name.c_str(),
                 cfg.port.c_str(), err.c_str());
    return ENODEV;
  }
  transport::EngineConfig ec;
  ec.mac = cfg.mac ? *cfg.mac : port->mac();
  for (const auto& a : cfg.addresses) ec.gids.push_back(a.gid);
  ec.max_mtu = cfg.mtu;
  ec.link_speed_bps = port->link_speed_bps();
  ec.roce_dscp = cfg.roce_dscp;
  ec.cnp_dscp = cfg.cnp_dscp;
  ec.ecn = cfg.ecn;
  ec.rxe_flush_icrc = cfg.rxe_flush_icrc;
  ec.dscp_to_prio = cfg.dscp_to_prio;
  ec.loss_recovery = cfg.loss_recovery == config::Device::LossRecovery::kSelective
                         ? transport::LossRecovery::kSelective
                         : transport::LossRecovery::kGoBackN;
  ec.peer_timestamps = cfg.peer_timestamps;
  ec.ooo_placement = cfg.ooo_placement;
  ec.vlan = cfg.vlan;
#ifdef UROCE_HAVE_DCQCN
  if (config::cc_in_force(cfg) != CcAlgorithm::kOff) {
    std::string cerr;
    cc = make_congestion(cfg, &cerr);
    if (!cc) {
      std::fprintf(stderr, "uroce: %s: %s\n", cfg.name.c_str(), cerr.c_str());
      port.reset();
      return EINVAL;
    }
  }
  ec.cc = cc.get();
#endif
  std::random_device rd;
  ec.key_seed = (uint64_t{rd()} << 32) | rd();
  active_mtu = mtu_code(cfg.mtu);
  if (LinkState st; port->link_state(&st)) {
    // Host mode: the GIDs are the netdev's addresses; the path MTU is what its MTU carries.
    link_version = port->link_version();
    link_up = st.up;
    ifindex = st.ifindex;
    // After a deferred open, every GID keeps the index queries showed (merge_gid_table).
    ec.gids = merge_gid_table(v2_entries(viewed, gid_v1_base), st.gids);
    if (st.shared_slot >= 0) {  // shared through uroce-hostd: QPNs in the daemon's block
      ec.qpn_block_bits = st.qpn_block_bits;
      ec.qpn_block = static_cast<uint32_t>(st.shared_slot);
    }
    active_mtu = path_mtu_code(cfg.mtu, st.mtu, active_mtu);
    ec.max_mtu = 128u << active_mtu;
  }
  // RoCE v1 GIDs ([device] roce_v1) after the RoCEv2 ones: every RoCEv2 index stays.
  ec.gid_v1_base = cfg.roce_v1 ? ec.gids.size() : SIZE_MAX;
  ec.gids = gid_table(ec.gids, cfg.roce_v1);
  gids = ec.gids;
  gid_v1_base = ec.gid_v1_base;
#ifdef UROCE_HAVE_STATS
  // Counters live in the device's shared-memory segment when it can be created; a failure
  // (no writable run dir) only costs visibility from outside the process.
  std::string serr;
  stats = stats::StatsSegment::create(cfg.name, stats::summarize(cfg, source), &serr);
  if (!stats && getenv("UROCE_VERBS_DEBUG")) std::fprintf(stderr, "uroce: %s\n", serr.c_str());
#endif
  // Registered after the first stats segment (and after the port, whose driver may register
  // its own cleanup), so it runs before their handlers.
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(stop_all_at_exit); });
  engine = std::make_unique<transport::Engine>(ec, engine_counters(), this);
  refresh_port_stats_locked();
  // The netdev changed between a deferred open and now: the events a running port raises.
  if (!viewed.empty() && gids != viewed) on_async_event({transport::AsyncEventType::kGidChange, 1});
  if (!viewed.empty() && link_up != viewed_up)
    on_async_event(
        {link_up ? transport::AsyncEventType::kPortActive : transport::AsyncEventType::kPortErr,
         1});
  // A port with a doorbell lets the idle thread block on it (block_on_port()).
  if (port->wake_fd() >= 0 && wake_efd_ < 0) wake_efd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  started_.store(true, std::memory_order_release);
  // start_thread() takes live_mu, which stop_all_at_exit() holds while it takes mu: never mu
  // first.
  l.unlock();
  start_thread();
  return 0;
}

}  // namespace uroce::device
