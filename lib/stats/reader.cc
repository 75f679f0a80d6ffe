/**
 * @file reader.cc
 * @brief Listing and copying statistics segments (reader.h).
 */
#include "stats/reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "stats/proc.h"

namespace uroce::stats {

namespace {

constexpr int kSeqlockTries = 20000;  ///< copies of one QP record before giving up on it
constexpr int kSpinTries = 64;        ///< then yield before every try, so that a writer
                                      ///< preempted inside an update gets to finish it
/// QpRecord bytes guarded by its seqlock: seq .. peer_gid.
constexpr size_t kIdentityBytes = offsetof(QpRecord, sq_psn);
static_assert(kIdentityBytes % 4 == 0);

/// Copies n bytes word by word with relaxed atomic loads (the writer stores the same way).
void copy_words(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint32_t*>(dst);
  const auto* s = static_cast<const uint32_t*>(src);
  for (size_t i = 0; i < n / 4; ++i) d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/// A read-only mapping of a whole file, unmapped on scope exit.
struct Mapping {
  void* base = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (base != MAP_FAILED) munmap(base, size);
  }
};

/// Maps `path` and validates the header. Returns false with *err set.
bool map_segment(const std::string& path, Mapping* m, SegmentHeader* h, std::string* err) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = path + ": cannot open the stats segment: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < sizeof(SegmentHeader)) {
    close(fd);
    *err = path + ": not a uroce stats segment (too small)";
    return false;
  }
  m->size = static_cast<size_t>(st.st_size);
  m->base = mmap(nullptr, m->size, PROT_READ, MAP_SHARED, fd, 0);
  int e = errno;
  close(fd);
  if (m->base == MAP_FAILED) {
    *err = path + ": cannot map the stats segment: " + std::strerror(e);
    return false;
  }
  const auto* src = static_cast<const SegmentHeader*>(m->base);
  if (__atomic_load_n(&src->magic, __ATOMIC_ACQUIRE) != kMagic) {
    *err = path + ": not a uroce stats segment (bad magic)";
    return false;
  }
  copy_words(h, src, sizeof *h);
  if (h->layout_version != kLayoutVersion) {
    *err = path + ": stats layout version " + std::to_string(h->layout_version) +
           " (this uroce reads version " + std::to_string(kLayoutVersion) + ")";
    return false;
  }
  auto fits = [&](uint64_t off, uint64_t len) { return off % 8 == 0 && off + len <= m->size; };
  if (h->header_size != sizeof(SegmentHeader) || h->total_size > m->size ||
      h->port_stats_size != sizeof(PortStats) || h->qp_record_size != sizeof(QpRecord) ||
      h->num_priorities != kNumPriorities || h->counter_name_len == 0 || h->counter_count > 4096 ||
      !fits(h->counters_off, 8ull * h->counter_count) ||
      !fits(h->names_off, uint64_t{h->counter_count} * h->counter_name_len) ||
      !fits(h->port_off, sizeof(PortStats)) || !fits(h->config_off, sizeof(ConfigSummary)) ||
      !fits(h->qps_off, uint64_t{h->qp_capacity} * sizeof(QpRecord))) {
    *err = path + ": corrupt stats segment (header sizes or offsets out of range)";
    return false;
  }
  return true;
}

}  // namespace

uint64_t Snapshot::counter(std::string_view name) const {
  for (size_t i = 0; i < counter_names.size(); ++i)
    if (counter_names[i] == name) return counters[i];
  return 0;
}

std::string prio_stat_name(std::string_view name, int prio) {
  std::string s(name);
  size_t at = s.find("prio");
  if (at != std::string::npos) s.insert(at + 4, std::to_string(prio));
  return s;
}

std::vector<SegmentInfo> list_segments(const std::string& dir) {
  std::vector<SegmentInfo> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    SegmentInfo info;
    if (!parse_segment_name(e->d_name, &info.device, &info.pid)) continue;
    info.path = dir + "/" + e->d_name;
    Mapping m;
    SegmentHeader h;
    if (!map_segment(info.path, &m, &h, &info.problem)) {
      info.state = SegmentState::kUnreadable;
    } else if (!process_alive(h.pid, h.start_time) ||
               (__atomic_load_n(&static_cast<const SegmentHeader*>(m.base)->flags,
                                __ATOMIC_ACQUIRE) &
                kFlagClosed)) {
      info.state = SegmentState::kStale;
      info.problem = info.path + ": stale: process " + std::to_string(h.pid) +
                     " is gone; remove it with: rm " + info.path;
    } else {
      info.state = SegmentState::kLive;
    }
    out.push_back(std::move(info));
  }
  closedir(d);
  std::sort(out.begin(), out.end(), [](const SegmentInfo& a, const SegmentInfo& b) {
    return a.device != b.device ? a.device < b.device : a.pid < b.pid;
  });
  return out;
}

int reap_stale(const std::string& dir) {
  int removed = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  while (dirent* e = readdir(d)) {
    std::string device;
    pid_t pid = 0;
    if (!parse_segment_name(e->d_name, &device, &pid)) continue;
    const std::string path = dir + "/" + e->d_name;
    struct stat checked;
    if (lstat(path.c_str(), &checked) != 0 || !S_ISREG(checked.st_mode)) continue;
    Mapping m;
    SegmentHeader h;
    std::string ignored;
    // Only a valid header names an owner; anything else is left for the reader to report.
    if (!map_segment(path, &m, &h, &ignored)) continue;
    if (process_alive(h.pid, h.start_time)) continue;
    // A new owner with the same pid may have replaced the file meanwhile (create() replaces a
    // leftover of its own name): remove only the file that was checked.
    struct stat now;
    if (lstat(path.c_str(), &now) != 0 || now.st_dev != checked.st_dev ||
        now.st_ino != checked.st_ino || unlink(path.c_str()) != 0)
      continue;
    unlink((path + ".baseline").c_str());
    ++removed;
  }
  closedir(d);
  return removed;
}

std::string reap_summary(int removed, const std::string& dir) {
  if (removed == 0) return {};
  return "removed " + std::to_string(removed) + " stale segment" + (removed == 1 ? "" : "s") +
         " in " + dir + " (their processes are gone)";
}

ReadStatus read_segment(const std::string& path, Snapshot* out, std::string* err,
                        const ReadHooks* hooks) {
  std::string local_err;
  if (!err) err = &local_err;
  Mapping m;
  SegmentHeader h;
  if (!map_segment(path, &m, &h, err)) return ReadStatus::kError;
  const auto* bytes = static_cast<const unsigned char*>(m.base);
  const auto* live_hdr = static_cast<const SegmentHeader*>(m.base);
  auto closed = [&] { return __atomic_load_n(&live_hdr->flags, __ATOMIC_ACQUIRE) & kFlagClosed; };
  bool alive_before = process_alive(h.pid, h.start_time) && !closed();

  Snapshot s;
  s.path = path;
  s.device = std::string(get_text(h.device));
  s.pid = h.pid;
  s.start_time = h.start_time;
  s.heartbeat = h.heartbeat;
  s.counter_names.resize(h.counter_count);
  s.counters.resize(h.counter_count);
  for (uint32_t i = 0; i < h.counter_count; ++i) {
    const char* n =
        reinterpret_cast<const char*>(bytes + h.names_off + size_t{i} * h.counter_name_len);
    s.counter_names[i] = std::string(n, strnlen(n, h.counter_name_len));
    s.counters[i] = load(*reinterpret_cast<const uint64_t*>(
        static_cast<const void*>(bytes + h.counters_off + 8ull * i)));
  }
  copy_words(&s.port, bytes + h.port_off, sizeof(PortStats));
  std::memcpy(&s.config, bytes + h.config_off, sizeof(ConfigSummary));
  s.config.profile[sizeof s.config.profile - 1] = 0;
  const auto* qps = reinterpret_cast<const QpRecord*>(static_cast<const void*>(bytes + h.qps_off));
  for (uint32_t i = 0; i < h.qp_capacity; ++i) {
    const QpRecord& src = qps[i];
    if (!__atomic_load_n(&src.in_use, __ATOMIC_ACQUIRE)) continue;
    for (int t = 0; t < kSeqlockTries; ++t) {
      if (t >= kSpinTries) sched_yield();
      uint32_t s1 = __atomic_load_n(&src.seq, __ATOMIC_ACQUIRE);
      if (s1 & 1) continue;
      // Only the identity fields need the seqlock; PSNs, rates and counters are single
      // relaxed words, copied after it (a short critical copy rarely collides).
      QpRecord r;
      copy_words(&r, &src, kIdentityBytes);
      std::atomic_thread_fence(std::memory_order_acquire);
      if (__atomic_load_n(&src.seq, __ATOMIC_RELAXED) != s1) continue;
      copy_words(reinterpret_cast<unsigned char*>(&r) + kIdentityBytes,
                 reinterpret_cast<const unsigned char*>(&src) + kIdentityBytes,
                 sizeof r - kIdentityBytes);
      if (!__atomic_load_n(&src.in_use, __ATOMIC_ACQUIRE)) break;  // freed meanwhile
      s.qps.push_back(r);
      break;
    }
  }
  std::sort(s.qps.begin(), s.qps.end(),
            [](const QpRecord& a, const QpRecord& b) { return a.qpn < b.qpn; });

  if (hooks && hooks->after_copy) hooks->after_copy();
  bool alive_after = process_alive(h.pid, h.start_time) && !closed();
  s.stale = !alive_after;
  *out = std::move(s);
  if (alive_before && !alive_after) {
    *err = path + ": process " + std::to_string(h.pid) + " (" + out->device +
           ") exited while its counters were being read";
    return ReadStatus::kOwnerExited;
  }
  if (!alive_after) {
    *err =
        path + ": stale: process " + std::to_string(h.pid) + " is gone; remove it with: rm " + path;
    return ReadStatus::kStale;
  }
  return ReadStatus::kOk;
}

}  // namespace uroce::stats
