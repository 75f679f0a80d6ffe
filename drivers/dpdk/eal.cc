/**
 * @file eal.cc
 * @brief EAL start (once, under a mutex) and device probing; see eal.h.
 *
 * The files EAL creates in its runtime folder /var/run/dpdk/<file-prefix> are removed right
 * after start: the prefix is unique to this process and no secondary process ever attaches.
 * The (then empty) folder must stay while EAL runs, because hotplug (rte_dev_probe) lists it
 * to find secondaries; it is removed at exit (a killed process leaves only an empty folder).
 *
 * Fork: EAL does not survive fork(). The child has none of its threads (interrupt thread,
 * service cores) and inherits g_started, so DPDK calls in it would hang or misbehave, and EAL
 * cannot be started a second time in it (rte_eal_init runs once per address space). So the
 * process that started EAL is recorded, ensure_eal() in any other process fails with one line,
 * and only that process removes the runtime folder at exit.
 */
#include "dpdk/eal.h"

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "dpdk/eal_args.h"

namespace uroce::dpdk {

namespace {

std::mutex g_mu;
bool g_started = false;
pid_t g_pid = 0;                  ///< the process that started (or failed to start) EAL
std::string g_error;              ///< set when the one EAL start failed
std::vector<std::string> g_args;  ///< argv of the start (kept alive: EAL may keep pointers)
std::vector<char*> g_argv;
std::string g_runtime_dir;  ///< /var/run/dpdk/<file-prefix>, removed at exit

std::string read_text(const char* path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::string process_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpu_list(cpus);
}

EalPlan make_plan(const config::Device& dev) {
  EalPlan plan;
  auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
  char prefix[64];
  std::snprintf(prefix, sizeof prefix, "uroce-%d-%llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(ns) & 0xffffffull);
  plan.file_prefix = prefix;
  std::vector<config::Device> devices;
  std::string ignored;
  if (auto cfg = config::load(&ignored))
    for (auto& d : cfg->devices)
      if (d.port != "loopback" && d.port != dev.port) devices.push_back(d);
  devices.insert(devices.begin(), dev);
  std::vector<std::vector<std::string>> seen_extra;
  for (const config::Device& d : devices) {
    if (is_pci_port(d.port)) plan.pci.push_back(d.port);
    if (is_memif_zero_copy(d.port)) plan.memif_zero_copy = true;
    if (!d.eal.empty() &&
        std::find(seen_extra.begin(), seen_extra.end(), d.eal) == seen_extra.end()) {
      seen_extra.push_back(d.eal);
      plan.extra.insert(plan.extra.end(), d.eal.begin(), d.eal.end());
    }
  }
  // 128 MB of free hugepages at least, or the pools may not fit: else run without them.
  plan.hugepages = free_hugepage_bytes(read_text("/proc/meminfo")) >= (128ull << 20) &&
                   hugetlbfs_mounted(read_text("/proc/mounts"));
  plan.cpus = process_cpus();
  if (const char* lvl = std::getenv("UROCE_DPDK_LOG"); lvl && *lvl) plan.log_level = lvl;
  return plan;
}

/// Removes /var/run/dpdk/uroce-<pid>-* folders of processes that no longer exist (a killed
/// program cannot remove its own at exit).
void remove_stale_runtime_dirs() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/var/run/dpdk", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("uroce-", 0) != 0) continue;
    int pid = std::atoi(name.c_str() + 6);
    if (pid <= 0 || pid == getpid()) continue;
    if (std::filesystem::exists("/proc/" + std::to_string(pid), ec)) continue;
    std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace

bool ensure_eal(const config::Device& dev, std::string* err) {
  std::lock_guard<std::mutex> lock(g_mu);
  if ((g_started || !g_error.empty()) && getpid() != g_pid) {
    *err = "DPDK was started by process " + std::to_string(g_pid) +
           " before this process forked; uroce has no fork support: open devices only after "
           "fork, or exec";
    return false;
  }
  if (g_started) return true;
  if (!g_error.empty()) {
    *err = g_error;
    return false;
  }
  remove_stale_runtime_dirs();
  EalPlan plan = make_plan(dev);
  g_args = build_eal_args(plan);
  g_argv.clear();
  for (std::string& s : g_args) g_argv.push_back(s.data());
  g_argv.push_back(nullptr);
  g_pid = getpid();
  int rc = rte_eal_init(static_cast<int>(g_args.size()), g_argv.data());
  if (rc < 0) {
    std::string cmd;
    for (const std::string& s : g_args) cmd += " " + s;
    g_error = "DPDK EAL failed to start: " + std::string(rte_strerror(rte_errno)) +
              " (EAL args:" + cmd + "; set UROCE_DPDK_LOG=debug for details)";
    *err = g_error;
    return false;
  }
  g_started = true;
  g_runtime_dir = rte_eal_get_runtime_dir();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(g_runtime_dir, ec))
    std::filesystem::remove_all(entry.path(), ec);
  std::atexit([] {
    if (getpid() != g_pid) return;  // a forked child's exit: the folder is its parent's
    std::error_code e;
    std::filesystem::remove_all(g_runtime_dir, e);
  });
  return true;
}

std::vector<std::string> eal_args_used() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_started ? g_args : std::vector<std::string>{};
}

bool probe_port(const std::string& port, uint16_t* port_id, std::string* err) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string name = port.substr(0, port.find(','));
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) == 0) return true;
  int rc = rte_dev_probe(port.c_str());
  if (rc < 0) {
    *err = "DPDK cannot create port \"" + port + "\": " + std::string(rte_strerror(-rc)) +
           " (set UROCE_DPDK_LOG=debug for the PMD's reason)";
    return false;
  }
  if (rte_eth_dev_get_port_by_name(name.c_str(), port_id) != 0) {
    *err = "DPDK created \"" + port + "\" but it has no ethdev port named \"" + name + "\"";
    return false;
  }
  return true;
}

}  // namespace uroce::dpdk
