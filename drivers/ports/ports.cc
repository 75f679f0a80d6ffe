/**
 * @file ports.cc
 * @brief The port factory open_port() of common/port.h: "loopback" is the in-process port of
 * drivers/loopback; anything else is a DPDK port (drivers/dpdk), when this build has it.
 */
#include <memory>
#include <string>

#include "common/port.h"
#include "config/config.h"
#include "loopback/loopback_port.h"
#ifdef UROCE_WITH_DPDK_DRIVER
#include "dpdk/dpdk_port.h"
#endif
#ifdef UROCE_WITH_HOST_DRIVER
#include "host/host_port.h"
#endif

namespace uroce {

std::unique_ptr<Port> open_port(const config::Device& dev, std::string* err) {
  if (dev.port == "loopback") return loopback::open_loopback_port(dev, err);
#ifdef UROCE_WITH_HOST_DRIVER
  if (!dev.netdev.empty()) return host::open_host_port(dev, err);
#else
  if (!dev.netdev.empty()) {
    if (err) *err = "netdev = \"" + dev.netdev + "\": this build has no host-mode driver";
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

}  // namespace uroce
