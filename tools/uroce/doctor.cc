/**
 * @file doctor.cc
 * @brief The environment checks of `uroce doctor` (doctor.h). Units: bytes (memory).
 */
#include "doctor.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <vector>

#include "config/config.h"
#ifdef UROCE_HAVE_XDP
#include "xdp/xdp.h"
#endif
#include "rdma_ns.h"
#include "stats/proc.h"
#include "stats/reader.h"

namespace uroce::tool {

namespace {

class Report {
 public:
  void ok(const std::string& what) { std::printf("ok    %s\n", what.c_str()); }
  void warn(const std::string& what, const std::string& fix = {}) {
    std::printf("warn  %s\n", what.c_str());
    if (!fix.empty()) std::printf("      fix: %s\n", fix.c_str());
  }
  void fail(const std::string& what, const std::string& fix) {
    ++failures_;
    std::printf("FAIL  %s\n", what.c_str());
    if (!fix.empty()) std::printf("      fix: %s\n", fix.c_str());
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

uint64_t meminfo_kb(const std::string& text, std::string_view key) {
  size_t at = text.find(std::string(key) + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + key.size() + 1, nullptr, 10);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

/// "net_af_packet0,iface=veth0" -> pmd "af_packet", args {iface: veth0}.
struct PortSpec {
  std::string pmd;
  std::map<std::string, std::string> args;
  bool pci = false;
};
PortSpec parse_port(const std::string& port) {
  PortSpec s;
  std::string name = port.substr(0, port.find(','));
  if (name.rfind("net_", 0) == 0) {
    std::string p = name.substr(4);
    while (!p.empty() && std::isdigit(static_cast<unsigned char>(p.back()))) p.pop_back();
    s.pmd = p;
  } else if (name != "loopback") {
    s.pci = true;
  }
  size_t pos = port.find(',');
  while (pos != std::string::npos) {
    size_t next = port.find(',', pos + 1);
    std::string kv =
        port.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) s.args[kv.substr(0, eq)] = kv.substr(eq + 1);
    pos = next;
  }
  return s;
}

/// Effective capability bit `bit` of this process (CapEff in /proc/self/status).
bool has_cap(int bit) {
  std::string st = read_text("/proc/self/status");
  size_t at = st.find("CapEff:");
  if (at == std::string::npos) return false;
  uint64_t caps = std::strtoull(st.c_str() + at + 7, nullptr, 16);
  return (caps >> bit) & 1;
}
constexpr int kCapNetAdmin = 12, kCapNetRaw = 13, kCapSysAdmin = 21;

std::vector<std::string> pmd_dirs(const std::string& lib) {
  std::vector<std::string> out;
  if (DIR* d = opendir(lib.c_str())) {
    while (dirent* e = readdir(d))
      if (std::string_view(e->d_name).rfind("pmds-", 0) == 0) out.push_back(lib + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

/// Host mode: the netdev exists, is up, has an address, and takes uroce's XDP program (or has
/// it, in use or stale); a foreign program makes the device unusable.
void check_netdev(Report& r, const config::Device& d, const std::string& source) {
  const std::string who = d.name + " (netdev " + d.netdev + ")";
#ifdef UROCE_HAVE_XDP
  for (const xdp::Check& c : xdp::doctor_checks(d.netdev)) {
    const std::string line = who + ": " + c.what + (c.detail.empty() ? "" : ": " + c.detail);
    if (c.ok) {
      r.ok(line);
      continue;
    }
    std::string fix;
    if (c.what == "netdev")
      fix = "ip link show lists the netdevs; fix netdev = in " + source + " (or uroce link del " +
            d.name + " && uroce link add " + d.name + " netdev IF)";
    else if (c.what == "link")
      fix = "ip link set " + d.netdev + " up, and check its cable or peer (carrier)";
    else if (c.what == "address")
      fix = "ip addr add ADDRESS/PREFIX dev " + d.netdev + " (the GIDs are its addresses)";
    else if (c.what == "xdp program")
      fix = "another XDP program owns " + d.netdev + ": find its user (ip -d link show " +
            d.netdev + "); uroce removes only its own";
    else
      fix = "see drivers/xdp/README.md (limits of XDP on this netdev)";
    r.fail(line, fix);
  }
#else
  (void)source;
  r.fail(who + ": this uroce was built without host mode (drivers/xdp)",
         "rebuild with libbpf-dev and clang installed");
#endif
}

}  // namespace

int doctor(const DoctorOptions& o) {
  Report r;

  // 1. The configuration file.
  std::string err;
  std::optional<config::Config> cfg = config::load(&err);
  if (!cfg) {
    std::string file = err.substr(0, err.find(':'));
    r.fail("config: " + err, "edit " + file + " (uroce profile apply lossless --config " + file +
                                 " writes a known-good PFC/ECN/DCQCN set)");
    cfg = config::builtin();
  } else if (cfg->source == "built-in") {
    r.ok(
        "config: no file ($UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml); built-in loopback "
        "device uroce0");
  } else {
    r.ok(fmt::format("config: {} parses ({} device{})", cfg->source, cfg->devices.size(),
                     cfg->devices.size() == 1 ? "" : "s"));
  }

  // 2. DPDK PMDs.
  bool any_dpdk = false;
  for (const auto& d : cfg->devices) any_dpdk |= d.port != "loopback";
  std::vector<std::string> dirs = pmd_dirs(o.dpdk_lib_dir);
  if (dirs.empty()) {
    if (any_dpdk)
      r.fail("dpdk: no PMD folder " + o.dpdk_lib_dir + "/pmds-*",
             "sudo apt-get install dpdk librte-net23");
    else
      r.warn("dpdk: no PMD folder " + o.dpdk_lib_dir + "/pmds-* (only the loopback device works)",
             "sudo apt-get install dpdk");
  } else {
    r.ok("dpdk: PMDs in " + dirs.front());
  }
  for (const auto& d : cfg->devices) {
    PortSpec p = parse_port(d.port);
    std::string who = d.name + " (" + d.port + ")";
    if (d.port == "loopback") {
      r.ok(who + ": in-process loopback port, nothing to check");
      continue;
    }
    if (!d.netdev.empty()) {
      check_netdev(r, d, cfg->source);
      continue;
    }
    if (p.pci) {
      if (!exists("/sys/bus/pci/devices/" + d.port))
        r.fail(who + ": no PCI device " + d.port,
               "lspci -D to list PCI addresses, then fix port = in " + cfg->source);
      else if (!exists("/dev/vfio"))
        r.fail(who + ": /dev/vfio missing: the NIC is not bound to vfio-pci",
               "sudo modprobe vfio-pci && sudo dpdk-devbind.py --bind=vfio-pci " + d.port);
      else
        r.ok(who + ": PCI device present");
      continue;
    }
    bool found = false;
    for (const std::string& dir : dirs) found |= exists(dir + "/librte_net_" + p.pmd + ".so");
    if (!dirs.empty()) {
      if (found)
        r.ok(who + ": PMD librte_net_" + p.pmd + ".so present");
      else
        r.fail(who + ": no PMD librte_net_" + p.pmd + ".so in " + dirs.front(),
               "sudo apt-get install librte-net23 (or fix the port name in " + cfg->source + ")");
    }
    if (auto it = p.args.find("iface"); it != p.args.end()) {
      std::string ifdir = o.sys_class_net + "/" + it->second;
      if (!exists(ifdir)) {
        r.fail(who + ": interface " + it->second + " does not exist",
               "sudo ip link add " + it->second + " type veth peer name " + it->second +
                   "p && sudo ip link set " + it->second + " up (or fix iface= in " + cfg->source +
                   ")");
      } else {
        std::string state = read_text(ifdir + "/operstate");
        while (!state.empty() && (state.back() == '\n' || state.back() == ' ')) state.pop_back();
        if (state == "down")
          r.warn(who + ": interface " + it->second + " is down",
                 "sudo ip link set " + it->second + " up");
        else
          r.ok(who + ": interface " + it->second + " exists (" + (state.empty() ? "?" : state) +
               ")");
      }
      int cap = p.pmd == "af_xdp" ? kCapNetAdmin : kCapNetRaw;
      if (!has_cap(cap) && !has_cap(kCapSysAdmin))
        r.warn(who + ": this user lacks " +
                   (cap == kCapNetAdmin ? "CAP_NET_ADMIN" : "CAP_NET_RAW") + " which " + p.pmd +
                   " needs",
               "run as root or: sudo setcap cap_net_raw,cap_net_admin+ep <program>");
    }
    if (p.pmd == "memif") {
      std::string sock = p.args.count("socket") ? p.args["socket"] : "/run/memif.sock";
      bool abstract = !(p.args.count("socket-abstract") && p.args["socket-abstract"] == "no");
      if (abstract) {
        r.ok(who + ": memif socket " + sock + " is abstract (no folder needed)");
      } else {
        std::string dir = sock.substr(0, sock.rfind('/'));
        if (dir.empty()) dir = "/";
        if (!is_dir(dir))
          r.fail(who + ": memif socket folder " + dir + " does not exist", "mkdir -p " + dir);
        else if (access(dir.c_str(), W_OK) != 0)
          r.fail(who + ": memif socket folder " + dir + " is not writable",
                 "sudo chown $(id -u) " + dir);
        else
          r.ok(who + ": memif socket folder " + dir + " is writable");
      }
    }
  }

  // 3. Hugepages.
  std::string mi = read_text(o.meminfo);
  uint64_t free_kb = meminfo_kb(mi, "HugePages_Free") * meminfo_kb(mi, "Hugepagesize");
  if (!any_dpdk) {
    r.ok("hugepages: not needed (no DPDK port configured)");
  } else if (free_kb >= 128 * 1024) {
    r.ok(fmt::format("hugepages: {} MB free", free_kb / 1024));
  } else {
    r.warn(fmt::format("hugepages: {} MB free (< 128 MB): the driver runs DPDK with --no-huge "
                       "(fine for memif/af_packet/af_xdp; slower mbuf memory)",
                       free_kb / 1024),
           "echo 256 | sudo tee /proc/sys/vm/nr_hugepages");
  }
  if (any_dpdk) {
    std::string parent = o.dpdk_run_dir.substr(0, o.dpdk_run_dir.rfind('/'));
    const std::string& probe = is_dir(o.dpdk_run_dir) ? o.dpdk_run_dir : parent;
    if (access(probe.c_str(), W_OK) != 0)
      r.fail("dpdk: " + probe + " is not writable (EAL keeps its runtime folder there)",
             "sudo mkdir -p " + o.dpdk_run_dir + " && sudo chown $(id -u) " + o.dpdk_run_dir);
    else
      r.ok("dpdk: runtime folder " + o.dpdk_run_dir + " writable");
  }

  // 4. Statistics segments.
  std::string sdir = stats::run_dir(o.run_dir);
  if (!is_dir(sdir))
    r.fail("stats: run folder " + sdir + " does not exist", "mkdir -p " + sdir);
  else if (access(sdir.c_str(), W_OK) != 0)
    r.fail("stats: run folder " + sdir + " is not writable: programs cannot publish counters",
           "export UROCE_RUN_DIR=<a writable folder>");
  else
    r.ok("stats: run folder " + sdir + " writable");
  int live = 0;
  for (const stats::SegmentInfo& s : stats::list_segments(sdir)) {
    if (s.state == stats::SegmentState::kLive)
      ++live;
    else if (s.state == stats::SegmentState::kStale)
      r.warn(fmt::format("stats: {} is left over from process {} that is gone", s.path, s.pid),
             "rm " + s.path);
    else
      r.fail("stats: " + s.problem, "rm " + s.path);
  }
  r.ok(fmt::format("stats: {} running device{}", live, live == 1 ? "" : "s"));

  // 5. UCX: it lists an ibv device only when /dev/infiniband/<dev_name> is a character device.
  if (exists(o.ucx_ib_module)) {
    std::vector<std::string> missing;
    for (const std::string& p : devnode_paths(static_cast<int>(cfg->devices.size()))) {
      struct stat st;
      if (stat(p.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) missing.push_back(p);
    }
    if (missing.empty())
      r.ok("ucx: /dev/infiniband/uverbs* present for every device");
    else
      r.warn("ucx: " + missing.front() + (missing.size() > 1 ? " (and more)" : "") +
                 " missing: UCX (ucx_info -d, ucx_perftest, Open MPI's pml ucx) will not list the "
                 "uroce devices",
             "run the program as `uroce rdma-ns -- PROGRAM ARGS`, or see `uroce rdma-ns`");
  }

  if (r.failures()) std::printf("%d problem%s found\n", r.failures(), r.failures() == 1 ? "" : "s");
  return r.failures() ? 1 : 0;
}

}  // namespace uroce::tool
