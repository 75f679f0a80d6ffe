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
#include "link_edit.h"
#include "profile_cmd.h"

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

}  // namespace

int link_add(const LinkOptions& o) {
  const std::string path = link_config_path(o);
  std::string before, after, err;
  const bool exists = read_text(path, &before);
  if (!exists && errno != ENOENT) {
    std::fprintf(stderr, "uroce: %s: cannot read: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  if (!link_add_text(before, path, o.name, o.netdev, &after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
  const std::string sys = (o.sysfs_net.empty() ? "/sys/class/net" : o.sysfs_net) + "/" + o.netdev;
  if (access(sys.c_str(), F_OK) != 0)
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
  if (!link_del_text(before, path, o.name, &after, &err)) {
    std::fprintf(stderr, "uroce: %s\n", err.c_str());
    return 1;
  }
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
  return 0;
}

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
  }
  if (!o.name.empty() && shown == 0) {
    std::fprintf(stderr, "uroce: %s: no device named %s\n", cfg->source.c_str(), o.name.c_str());
    return 1;
  }
  return 0;
}

}  // namespace uroce::tool
