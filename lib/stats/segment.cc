/**
 * @file segment.cc
 * @brief Creating, publishing and removing a statistics segment (segment.h).
 */
#include "stats/segment.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "stats/proc.h"
#include "stats/reader.h"

namespace uroce::stats {

namespace {

constexpr size_t kAlign = 64;
size_t align_up(size_t v) { return (v + kAlign - 1) & ~(kAlign - 1); }

/// Segments of this process still open, so atexit can remove them when destructors do not
/// run (e.g. runtimes that are deliberately never destroyed).
std::mutex& live_mu() {
  static std::mutex mu;
  return mu;
}
std::set<StatsSegment*>& live() {
  static auto* s = new std::set<StatsSegment*>();
  return *s;
}

/// True the first time this process names `dir`.
bool first_in(const std::string& dir) {
  static std::mutex mu;
  static auto* seen = new std::set<std::string>();
  std::lock_guard<std::mutex> g(mu);
  return seen->insert(dir).second;
}

/// False when dir lies on a filesystem that may write to a disk: a store into a segment mapped
/// from one can fault and wait for the filesystem's journal, under the engine's lock.
bool memory_backed(const std::string& dir) {
  struct statfs fs {};
  if (::statfs(dir.c_str(), &fs) != 0) return true;  // open() below says what is wrong
  return fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC;
}

}  // namespace

void close_all_at_exit() {
  std::lock_guard<std::mutex> g(live_mu());
  for (StatsSegment* s : live()) s->retire();
}

std::unique_ptr<StatsSegment> StatsSegment::create(std::string_view device,
                                                   const ConfigSummary& config, std::string* err,
                                                   const CreateOptions& opts) {
  auto fail = [&](const std::string& what) -> std::unique_ptr<StatsSegment> {
    if (err) *err = what;
    return nullptr;
  };
  if (const char* env = std::getenv("UROCE_STATS");
      env && (std::string_view(env) == "0" || std::string_view(env) == "off"))
    return fail("stats segment: disabled by UROCE_STATS=" + std::string(env));
  if (device.empty() || device.size() >= kDeviceNameLen)
    return fail("stats segment: device name \"" + std::string(device) + "\" is empty or too long");
  pid_t pid = opts.pid ? opts.pid : getpid();
  uint64_t start = opts.start_time ? opts.start_time : process_start_time(pid);
  std::string dir = run_dir(opts.run_dir);
  std::string path = dir + "/" + segment_name(device, pid);

  size_t off = align_up(sizeof(SegmentHeader));
  size_t counters_off = off;
  off = align_up(off + sizeof(CounterBlock));
  size_t names_off = off;
  off = align_up(off + kCounterCount * kCounterNameLen);
  size_t port_off = off;
  off = align_up(off + sizeof(PortStats));
  size_t config_off = off;
  off = align_up(off + sizeof(ConfigSummary));
  size_t qps_off = off;
  size_t total = align_up(off + size_t{opts.qp_capacity} * sizeof(QpRecord));

  // A process's first segment in a run dir clears what killed processes left there.
  if (first_in(dir)) {
    if (std::string line = reap_summary(reap_stale(dir), dir); !line.empty())
      std::fprintf(stderr, "uroce: %s\n", line.c_str());
    if (!memory_backed(dir))
      std::fprintf(stderr,
                   "uroce: the run directory %s is not a tmpfs: updating the statistics there "
                   "can wait for the disk and stall the engine (use a tmpfs: UROCE_RUN_DIR, "
                   "default /dev/shm)\n",
                   dir.c_str());
  }

  // A file of this name belongs to a dead process that had our pid: replace it.
  unlink(path.c_str());
  unlink((path + ".baseline").c_str());
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(path + ": cannot create the stats segment: " + std::strerror(errno));
  auto abandon = [&](const char* what) {
    int e = errno;
    ::close(fd);
    unlink(path.c_str());
    return fail(path + ": cannot " + what + " the stats segment: " + std::strerror(e));
  };
  if (ftruncate(fd, static_cast<off_t>(total)) != 0) return abandon("size");
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return abandon("map");
  ::close(fd);

  auto seg = std::unique_ptr<StatsSegment>(new StatsSegment());
  seg->path_ = path;
  seg->base_ = base;
  seg->size_ = total;
  auto* bytes = static_cast<unsigned char*>(base);
  seg->header_ = static_cast<SegmentHeader*>(base);
  seg->counters_ = reinterpret_cast<CounterBlock*>(static_cast<void*>(bytes + counters_off));
  seg->port_ = reinterpret_cast<PortStats*>(static_cast<void*>(bytes + port_off));
  seg->qps_ = reinterpret_cast<QpRecord*>(static_cast<void*>(bytes + qps_off));
  seg->qp_capacity_ = opts.qp_capacity;

  // ftruncate zero-fills: counters, port stats and QP slots start at zero.
  SegmentHeader& h = *seg->header_;
  h.layout_version = kLayoutVersion;
  h.header_size = sizeof(SegmentHeader);
  h.total_size = total;
  h.pid = pid;
  h.start_time = start;
  set_text(h.device, device);
  h.counter_count = kCounterCount;
  h.counter_name_len = kCounterNameLen;
  h.counters_hash = counters_def_hash();
  h.num_priorities = kNumPriorities;
  h.qp_capacity = opts.qp_capacity;
  h.port_stats_size = sizeof(PortStats);
  h.qp_record_size = sizeof(QpRecord);
  h.counters_off = counters_off;
  h.names_off = names_off;
  h.port_off = port_off;
  h.config_off = config_off;
  h.qps_off = qps_off;
  for (size_t i = 0; i < kCounterCount; ++i) {
    char* dst = reinterpret_cast<char*>(bytes + names_off + i * kCounterNameLen);
    std::string_view n = kCounterNames[i];
    std::memcpy(dst, n.data(), n.size() < kCounterNameLen - 1 ? n.size() : kCounterNameLen - 1);
  }
  std::memcpy(bytes + config_off, &config, sizeof config);
  __atomic_store_n(&h.magic, kMagic, __ATOMIC_RELEASE);

  static std::once_flag once;
  std::call_once(once, [] { std::atexit(close_all_at_exit); });
  {
    std::lock_guard<std::mutex> g(live_mu());
    live().insert(seg.get());
  }
  return seg;
}

void StatsSegment::retire() {
  if (!base_ || retired_) return;
  retired_ = true;
  __atomic_fetch_or(&header_->flags, kFlagClosed, __ATOMIC_RELEASE);
  unlink(path_.c_str());
  unlink((path_ + ".baseline").c_str());
}

void StatsSegment::close() {
  if (!base_) return;
  retire();
  munmap(base_, size_);
  base_ = nullptr;
}

StatsSegment::~StatsSegment() {
  {
    std::lock_guard<std::mutex> g(live_mu());
    live().erase(this);
  }
  close();
}

QpRecord* StatsSegment::add_qp(uint32_t qpn, uint32_t type) {
  if (!base_) return nullptr;
  for (uint32_t i = 0; i < qp_capacity_; ++i) {
    uint32_t slot = (next_slot_ + i) % qp_capacity_;
    QpRecord& r = qps_[slot];
    if (__atomic_load_n(&r.in_use, __ATOMIC_RELAXED)) continue;
    r.begin_update();
    __atomic_store_n(&r.qpn, qpn, __ATOMIC_RELAXED);
    __atomic_store_n(&r.type, type, __ATOMIC_RELAXED);
    __atomic_store_n(&r.state, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&r.peer_qpn, 0u, __ATOMIC_RELAXED);
    for (auto& b : r.peer_gid) __atomic_store_n(&b, uint8_t{0}, __ATOMIC_RELAXED);
    store(r.sq_psn, 0);
    store(r.rq_psn, 0);
    r.set_rate(0, 0, 0);
    for (auto& c : r.counters) store(c, 0);
    r.end_update();
    __atomic_store_n(&r.in_use, 1u, __ATOMIC_RELEASE);
    next_slot_ = (slot + 1) % qp_capacity_;
    return &r;
  }
  return nullptr;
}

void StatsSegment::remove_qp(QpRecord* rec) {
  if (!rec || !base_) return;
  __atomic_store_n(&rec->in_use, 0u, __ATOMIC_RELEASE);
}

}  // namespace uroce::stats
