/**
 * @file ports.cc
 * @brief The port factory open_port() of ports.h: "loopback" is the in-process port of
 * drivers/loopback; a device with a netdev is a client of the uroce-hostd that serves it
 * (drivers/hostd_client, no DPDK) or, with no daemon, the netdev's exclusive port (drivers/host);
 * anything else is a DPDK port (drivers/dpdk), when this build has them.
 */
#include "ports/ports.h"

#include <memory>
#include <string>

#include "hostd_client/client_port.h"
#include "loopback/loopback_port.h"
#include "shm/control.h"
#ifdef UROCE_WITH_DPDK_DRIVER
#include "dpdk/dpdk_port.h"
#endif
#ifdef UROCE_WITH_HOST_DRIVER
#include "host/host_port.h"
#endif

namespace uroce {

std::unique_ptr<Port> open_port(const config::Device& dev, std::string* err) {
  if (dev.port == "loopback") return loopback::open_loopback_port(dev, err);
  if (!dev.netdev.empty() && shm::hostd_running(dev.netdev)) {
    if (!dev.exclusive) return hostd_client::open_shared_port(dev, err);
    if (err)
      *err = dev.name + ": exclusive = true, but uroce-hostd serves " + dev.netdev +
             " (stop it first: uroce link del, or systemctl stop uroce-hostd@" + dev.netdev + ")";
    return nullptr;
  }
#ifdef UROCE_WITH_HOST_DRIVER
  if (!dev.netdev.empty()) return host::open_host_port(dev, err);
#else
  if (!dev.netdev.empty()) {
    if (err)
      *err = "netdev = \"" + dev.netdev +
             "\": no uroce-hostd serves it, and this build has no exclusive host-mode driver";
    return nullptr;
  }
#endif
#ifdef UROCE_WITH_DPDK_DRIVER
  return dpdk::open_dpdk_port(dev, err);
#else
  if (err)
    *err = "port = \"" + dev.port + "\": this build has no DPDK driver; allowed: \"loopback\"";
  return nullptr;
#endif
}

Deferral defer_port(const config::Device& dev, PortView* view, std::string* err) {
  if (dev.port == "loopback" || dev.netdev.empty()) return Deferral::kOpenNow;
  auto v = hostd_client::view_host_port(dev, err);
  if (!v) return Deferral::kRefused;
  if (!v->shared) return Deferral::kOpenNow;
  view->link = v->link;
  view->link_speed_bps = v->link_speed_bps;
  return Deferral::kDeferred;
}

}  // namespace uroce
