/**
 * @file baseline.cc
 * @brief Counter baselines for `uroce clear counters` (baseline.h).
 *
 * File format, one record per line:
 *   uroce-baseline 1 <pid> <start_time>
 *   c <engine counter name> <value>
 *   p <per-priority stat name> <priority> <value>
 *   s <port stat name> <value>
 *   q <qpn> <qp counter name> <value>
 */
#include "stats/baseline.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace uroce::stats {

namespace {

using Key = std::tuple<char, std::string, int64_t>;  ///< kind, name, priority or qpn

std::map<Key, uint64_t> flatten(const Snapshot& s) {
  std::map<Key, uint64_t> m;
  for (size_t i = 0; i < s.counters.size(); ++i) m[{'c', s.counter_names[i], 0}] = s.counters[i];
  for (const StatDesc& d : kPrioStats) {
    if (d.kind != Kind::kCounter) continue;
    for (int p = 0; p < kNumPriorities; ++p)
      m[{'p', std::string(d.name), p}] = prio_value(s.port, d, p);
  }
  for (const StatDesc& d : kPortStats)
    if (d.kind == Kind::kCounter) m[{'s', std::string(d.name), 0}] = prio_value(s.port, d, 0);
  for (const QpRecord& q : s.qps)
    for (size_t i = 0; i < kQpCounterCount; ++i)
      if (kQpStats[i].kind == Kind::kCounter)
        m[{'q', std::string(kQpStats[i].name), q.qpn}] = q.counters[i];
  return m;
}

void sub(uint64_t& v, const std::map<Key, uint64_t>& base, const Key& k) {
  auto it = base.find(k);
  if (it != base.end() && v >= it->second) v -= it->second;
}

}  // namespace

bool clear_counters(const Snapshot& s, std::string* err) {
  std::string path = s.path + ".baseline";
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      if (err) *err = path + ": cannot write the counter baseline: " + std::strerror(errno);
      return false;
    }
    out << "uroce-baseline 1 " << s.pid << " " << s.start_time << "\n";
    for (const auto& [k, v] : flatten(s)) {
      const auto& [kind, name, idx] = k;
      out << kind;
      if (kind == 'q') out << " " << idx;
      out << " " << name;
      if (kind == 'p') out << " " << idx;
      out << " " << v << "\n";
    }
    out.flush();
    if (!out) {
      if (err) *err = path + ": cannot write the counter baseline: " + std::strerror(errno);
      unlink(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (err) *err = path + ": cannot write the counter baseline: " + std::strerror(errno);
    unlink(tmp.c_str());
    return false;
  }
  // High-water marks restart from the current depth (best effort: needs write access).
  int fd = open(s.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    struct SegmentHeader h;
    if (pread(fd, &h, sizeof h, 0) == static_cast<ssize_t>(sizeof h) && h.magic == kMagic &&
        h.port_off + sizeof(PortStats) <= h.total_size) {
      void* base = mmap(nullptr, h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (base != MAP_FAILED) {
        auto* port = reinterpret_cast<PortStats*>(static_cast<unsigned char*>(base) + h.port_off);
        for (int p = 0; p < kNumPriorities; ++p)
          store(port->tx_prio_queue_high_water[p], load(port->tx_prio_queue_depth[p]));
        munmap(base, h.total_size);
      }
    }
    close(fd);
  }
  return true;
}

bool apply_baseline(Snapshot* s) {
  std::ifstream in(s->path + ".baseline");
  if (!in) return false;
  std::string magic;
  int version = 0;
  long pid = 0;
  uint64_t start = 0;
  if (!(in >> magic >> version >> pid >> start) || magic != "uroce-baseline" || version != 1 ||
      pid != s->pid || start != s->start_time)
    return false;
  std::map<Key, uint64_t> base;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    char kind = 0;
    std::string name;
    int64_t idx = 0;
    uint64_t v = 0;
    ls >> kind;
    if (kind == 'q') ls >> idx;
    ls >> name;
    if (kind == 'p') ls >> idx;
    if (!(ls >> v)) continue;
    base[{kind, name, idx}] = v;
  }
  for (size_t i = 0; i < s->counters.size(); ++i)
    sub(s->counters[i], base, {'c', s->counter_names[i], 0});
  for (const StatDesc& d : kPrioStats) {
    if (d.kind != Kind::kCounter) continue;
    for (int p = 0; p < kNumPriorities; ++p)
      sub(prio_ref(s->port, d, p), base, {'p', std::string(d.name), p});
  }
  for (const StatDesc& d : kPortStats)
    if (d.kind == Kind::kCounter) sub(prio_ref(s->port, d, 0), base, {'s', std::string(d.name), 0});
  for (QpRecord& q : s->qps)
    for (size_t i = 0; i < kQpCounterCount; ++i)
      if (kQpStats[i].kind == Kind::kCounter)
        sub(q.counters[i], base, {'q', std::string(kQpStats[i].name), q.qpn});
  return true;
}

}  // namespace uroce::stats
