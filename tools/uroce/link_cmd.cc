/**
 * @file link_cmd.cc
 * @brief `uroce link` (link_cmd.h).
 */
#include "link_cmd.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "config/config.h"
#include "hostd_ctl.h"
#include "link_edit.h"
#include "profile_cmd.h"
#include "stats/proc.h"
#include "stats/reader.h"

namespace uroce::tool {

namespace {

/// The file `uroce link` edits: --config, $UROCE_CONFIG, ./uroce.toml if it exists, else
/// /etc/uroce/uroce.toml (created by add).
std::string link_config_path(const LinkOptions& o) {
  if (!o.config.empty()) return o.config;
  if (const char* env = std::getenv("UROCE_CONFIG"); env && *env) return env;
  if (access("./uroce.toml", F_OK) == 0) return "./uroce.toml";
  return "/etc/uroce/uroce.toml";
}

std::string sysfs_read(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

/// --daemon as a HostdManager; false (with one line) for anything else.
bool manager_of(const LinkOptions& o, HostdManager* m) {
  if (parse_hostd_manager(o.daemon, m)) return true;
  std::fprintf(stderr, "uroce: --daemon %s: one of auto, systemd, direct, none\n",
               o.daemon.c_str());
  return false;
}

}  // namespace

int link_add(const LinkOptions& o) {
  const std::string path = link_config_path(o);
  std::string before, after, err;
  const bool exists = read_text(path, &before);
  if (!exists && errno != ENOENT) {
    std::fprintf(stderr, "uroce: %s: cannot read: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  HostdManager manager;
  if (!manager_of(o, &manager)) return 2;
  if (!link_add_text(before, path, o.name, o.netdev, o.exclusive, &after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  const std::string sys = (o.sysfs_net.empty() ? "/sys/class/net" : o.sysfs_net) + "/" + o.netdev;
  const bool present = access(sys.c_str(), F_OK) == 0;
  if (!present)
    std::fprintf(stderr,
                 "uroce: warning: netdev %s does not exist now; %s opens it when a program "
                 "starts\n",
                 o.netdev.c_str(), o.name.c_str());
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  const bool ok = exists ? write_atomically_with_backup(path, before, after, &err)
                         : write_atomically(path, after, 0644, &err);
  if (!ok) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: netdev %s added to %s\n", o.name.c_str(), o.netdev.c_str(), path.c_str());
  // Every process of the host uses the device through the netdev's uroce-hostd, as every
  // process uses an rxe device once `rdma link add` has run (docs/host-mode.md, "Bring-up").
  if (o.exclusive) {
    std::printf("%s: exclusive: one process at a time opens %s itself\n", o.name.c_str(),
                o.netdev.c_str());
    return 0;
  }
  if (!present && resolve(manager) == HostdManager::kDirect) {
    std::fprintf(stderr,
                 "uroce: no uroce-hostd started: %s is missing (run uroce link add "
                 "again once it exists)\n",
                 o.netdev.c_str());
    return 0;
  }
  std::string how;
  if (!hostd_start(o.netdev, manager, &how, &err)) {
    std::fprintf(stderr, "uroce: %s; %s stays in %s, and processes open %s one at a time\n",
                 err.c_str(), o.name.c_str(), path.c_str(), o.netdev.c_str());
    return 1;
  }
  std::printf("%s: %s\n", o.name.c_str(), how.c_str());
  return 0;
}

int link_del(const LinkOptions& o) {
  const std::string path = link_config_path(o);
  std::string before, after, err;
  if (!read_text(path, &before)) {
    std::fprintf(stderr, "uroce: %s: no configuration file, so no device %s\n", path.c_str(),
                 o.name.c_str());
    return 1;
  }
  HostdManager manager;
  if (!manager_of(o, &manager)) return 2;
  if (!link_del_text(before, path, o.name, &after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  std::string netdev;  // the device's netdev, whose daemon goes with it
  if (auto cfg = config::parse(before, path, &err))
    for (const config::Device& d : cfg->devices)
      if (d.name == o.name) netdev = d.netdev;
  if (after.empty()) {
    // The last device: the file goes (a file without devices does not parse); FILE.bak stays.
    std::error_code ec;
    std::filesystem::rename(path, path + ".bak", ec);
    if (ec) {
      std::fprintf(stderr, "uroce: %s: cannot remove: %s\n", path.c_str(), ec.message().c_str());
      return 1;
    }
  } else if (!write_atomically_with_backup(path, before, after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: removed from %s\n", o.name.c_str(), path.c_str());
  if (netdev.empty()) return 0;
  std::string how;
  if (!hostd_stop(netdev, manager, &how, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  if (!how.empty()) std::printf("%s: %s\n", o.name.c_str(), how.c_str());
  return 0;
}

namespace {

/// Under a device's link line: the netdev's uroce-hostd and the processes using the device
/// (from their statistics segments: pid, command, QPs, RoCE bytes each way, frames dropped).
void show_users(const config::Device& d) {
  const pid_t daemon = hostd_pid(d.netdev);
  if (d.exclusive)
    std::printf("    exclusive: one process opens %s itself\n", d.netdev.c_str());
  else if (daemon)
    std::printf("    uroce-hostd pid %d serves %s\n", static_cast<int>(daemon), d.netdev.c_str());
  else
    std::printf("    no uroce-hostd: one process at a time opens %s itself\n", d.netdev.c_str());
  const std::string dir = stats::run_dir("");
  for (const stats::SegmentInfo& info : stats::list_segments(dir)) {
    if (info.device != d.name || info.state != stats::SegmentState::kLive) continue;
    stats::Snapshot s;
    std::string err;
    if (stats::read_segment(info.path, &s, &err) != stats::ReadStatus::kOk) continue;
    std::string comm = sysfs_read("/proc/" + std::to_string(s.pid) + "/comm");
    std::printf("    client pid %d comm %s qps %zu tx_bytes %lu rx_bytes %lu drops %lu\n",
                static_cast<int>(s.pid), comm.empty() ? "?" : comm.c_str(), s.qps.size(),
                static_cast<unsigned long>(s.counter("tx_vport_rdma_unicast_bytes")),
                static_cast<unsigned long>(s.counter("rx_vport_rdma_unicast_bytes")),
                static_cast<unsigned long>(s.port.rx_discards_phy));
  }
}

}  // namespace

int link_show(const LinkOptions& o) {
  std::string err;
  std::optional<config::Config> cfg;
  if (!o.config.empty()) {
    std::string text;
    if (!read_text(o.config, &text)) {
      std::fprintf(stderr, "uroce: %s: cannot read\n", o.config.c_str());
      return 1;
    }
    cfg = config::parse(text, o.config, &err);
  } else {
    cfg = config::load(&err);
  }
  if (!cfg) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  std::string sysfs = o.sysfs_net.empty() ? "/sys/class/net" : o.sysfs_net;
  if (const char* env = std::getenv("UROCE_SYSFS_NET"); env && *env && o.sysfs_net.empty())
    sysfs = env;  // tests: a fake /sys/class/net
  int shown = 0;
  for (const config::Device& d : cfg->devices) {
    if (!o.name.empty() && d.name != o.name) continue;
    ++shown;
    if (d.netdev.empty()) {
      std::printf("link %s/1 port %s (not a netdev)\n", d.name.c_str(), d.port.c_str());
      continue;
    }
    const std::string dir = sysfs + "/" + d.netdev;
    if (access(dir.c_str(), F_OK) != 0) {
      std::printf("link %s/1 state DOWN physical_state DISABLED netdev %s (missing)\n",
                  d.name.c_str(), d.netdev.c_str());
      continue;
    }
    const std::string oper = sysfs_read(dir + "/operstate");
    const bool up = oper == "up" || oper == "unknown";
    std::printf("link %s/1 state %s physical_state %s netdev %s mtu %s\n", d.name.c_str(),
                up ? "ACTIVE" : "DOWN", up ? "LINK_UP" : "DISABLED", d.netdev.c_str(),
                sysfs_read(dir + "/mtu").c_str());
    show_users(d);
  }
  if (!o.name.empty() && shown == 0) {
    std::fprintf(stderr, "uroce: %s: no device named %s\n", cfg->source.c_str(), o.name.c_str());
    return 1;
  }
  return 0;
}

}  // namespace uroce::tool
