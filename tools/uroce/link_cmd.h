/**
 * @file link_cmd.h
 * @brief `uroce link add NAME netdev IF | del NAME | show [NAME]`: devices bound to kernel
 * netdevs, as rdma-core's `rdma link` manages rxe devices. add/del edit the configuration file
 * (atomically, with FILE.bak); show reads the file and the netdevs' state from sysfs.
 */
#pragma once

#include <string>

namespace uroce::tool {

struct LinkOptions {
  std::string name;             ///< device name
  std::string netdev;           ///< add: the kernel interface
  std::string config;           ///< --config FILE; else $UROCE_CONFIG or /etc/uroce/uroce.toml
  std::string sysfs_net;        ///< where netdevs are listed (tests); default /sys/class/net
  bool exclusive = false;       ///< add: one process opens the netdev itself, no uroce-hostd
  std::string daemon = "auto";  ///< add/del: how uroce-hostd is started (hostd_ctl.h)
};

int link_add(const LinkOptions& o);
int link_del(const LinkOptions& o);
int link_show(const LinkOptions& o);

}  // namespace uroce::tool
