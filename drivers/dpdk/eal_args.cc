/**
 * @file eal_args.cc
 * @brief EAL argument construction and the host probes it uses (see eal_args.h).
 */
#include "dpdk/eal_args.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace uroce::dpdk {

namespace {

bool has_any(const std::vector<std::string>& args, std::initializer_list<std::string_view> opts) {
  for (const std::string& a : args)
    for (std::string_view o : opts)
      if (a == o || (o.size() > 2 && a.rfind(std::string(o) + "=", 0) == 0)) return true;
  return false;
}

/// The number after `key:` on its line of /proc/meminfo, or 0.
uint64_t meminfo_value(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string_view::npos) {
    if ((pos == 0 || text[pos - 1] == '\n') && pos + key.size() < text.size() &&
        text[pos + key.size()] == ':')
      return std::strtoull(std::string(text.substr(pos + key.size() + 1, 32)).c_str(), nullptr, 10);
    pos += key.size();
  }
  return 0;
}

}  // namespace

std::vector<std::string> build_eal_args(const EalPlan& plan) {
  std::vector<std::string> a = {"uroce", "--file-prefix=" + plan.file_prefix};
  if (plan.pci.empty()) {
    a.push_back("--no-pci");
  } else {
    for (const std::string& p : plan.pci) {
      a.push_back("-a");
      a.push_back(p);
    }
  }
  for (const std::string& v : plan.vdevs) a.push_back("--vdev=" + v);
  const auto& x = plan.extra;
  bool user_mem = has_any(x, {"-m", "--socket-mem", "--no-huge", "--in-memory"});
  if (!user_mem) {
    if (plan.hugepages) {
      a.push_back("--in-memory");
    } else {
      a.push_back("--no-huge");
      a.push_back("-m");
      a.push_back(std::to_string(plan.memory_mb));
    }
  }
  const bool memif_zc =
      plan.memif_zero_copy || std::any_of(plan.vdevs.begin(), plan.vdevs.end(), is_memif_zero_copy);
  if (memif_zc && !has_any(x, {"--single-file-segments"})) a.push_back("--single-file-segments");
  if (!plan.cpus.empty() && !has_any(x, {"-l", "-c", "--lcores"}))
    a.push_back("--lcores=0@(" + plan.cpus + ")");
  if (!has_any(x, {"--no-telemetry", "--telemetry"})) a.push_back("--no-telemetry");
  if (!has_any(x, {"--log-level"})) a.push_back("--log-level=" + plan.log_level);
  a.insert(a.end(), x.begin(), x.end());
  return a;
}

bool is_memif_port(std::string_view port) { return port.rfind("net_memif", 0) == 0; }

bool is_memif_zero_copy(std::string_view port) {
  return is_memif_port(port) && port.find(",zero-copy=yes") != std::string_view::npos;
}

bool is_pci_port(std::string_view s) {
  auto hex = [](std::string_view t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), [](char c) {
      return std::isxdigit(static_cast<unsigned char>(c)) != 0;
    });
  };
  // [dddd:]bb:dd.f
  size_t dot = s.rfind('.');
  if (dot == std::string_view::npos || dot + 2 != s.size() || !hex(s.substr(dot + 1))) return false;
  std::string_view head = s.substr(0, dot);
  size_t c2 = head.rfind(':');
  if (c2 == std::string_view::npos || head.size() - c2 != 3 || !hex(head.substr(c2 + 1)))
    return false;
  std::string_view front = head.substr(0, c2);
  size_t c1 = front.rfind(':');
  if (c1 == std::string_view::npos) return front.size() == 2 && hex(front);
  return c1 == 4 && front.size() == 7 && hex(front.substr(0, 4)) && hex(front.substr(5));
}

uint64_t free_hugepage_bytes(std::string_view meminfo) {
  return meminfo_value(meminfo, "HugePages_Free") * meminfo_value(meminfo, "Hugepagesize") * 1024;
}

bool hugetlbfs_mounted(std::string_view mounts) {
  std::istringstream in{std::string(mounts)};
  std::string dev, dir, type;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    if (l >> dev >> dir >> type && type == "hugetlbfs") return true;
  }
  return false;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace uroce::dpdk
