/**
 * @file addr.h
 * @brief Address resolution of uroce's librdmacm (rdma_resolve_addr(3), rdma_bind_addr(3)):
 * sockaddr <-> GID, and which configured address of which device serves a destination.
 * Pure: the configured addresses (lib/config, `addresses` of each [[device]]) come in as a
 * list; nothing here opens a device.
 *
 * A destination is served by the address whose prefix covers it (the longest prefix wins, as
 * an IP routing table), of the same IP version; a destination that is one of our own
 * addresses is served by that address. With a source address given (bound or passed), only
 * that address may serve. uroce knows no gateways: a destination no prefix covers is
 * unreachable (ENETUNREACH).
 * GID form: IPv4 a.b.c.d is ::ffff:a.b.c.d, the IPv4-mapped RoCEv2 GID (IBA Annex A17).
 */
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "common/types.h"

namespace uroce::rdmacm {

/// One configured address: device index (config order), its GID index and prefix length.
struct LocalAddr {
  int device = 0;
  int gid_index = 0;
  Gid gid;
  uint8_t prefix = 0;
};

/// The GID of an AF_INET/AF_INET6 sockaddr (nullopt for other families).
std::optional<Gid> gid_of(const sockaddr* sa);
/// The port of an AF_INET/AF_INET6 sockaddr, host order (0 for other families).
uint16_t port_of(const sockaddr* sa);
/// Writes gid + port as AF_INET (IPv4-mapped GID) or AF_INET6 into *out.
void to_sockaddr(const Gid& gid, uint16_t port, sockaddr_storage* out);
/// sizeof the sockaddr of its family (0 for other families).
socklen_t sockaddr_len(const sockaddr* sa);
/// True for 0.0.0.0 and ::.
bool is_any(const Gid& g);
/// 127.0.0.0/8 (IPv4-mapped) or ::1: the kernel's RDMA CM takes these as wildcards
/// (cma.c cma_any_addr): a bind to one binds no device, a resolve to one reaches the first
/// device's own address (cma_resolve_loopback).
bool is_loopback(const Gid& g);
/// True when the first `prefix` bits of a and b agree and both are the same IP version.
bool covers(const Gid& net, uint8_t prefix, const Gid& dst);

/// The address of `addrs` that serves dst: src (when not any) must be one of them; else the
/// longest prefix covering dst, or dst itself when it is ours. nullopt: none.
std::optional<LocalAddr> route(const std::vector<LocalAddr>& addrs, const std::optional<Gid>& src,
                               const Gid& dst);
/// The configured address equal to g, if any.
std::optional<LocalAddr> find_local(const std::vector<LocalAddr>& addrs, const Gid& g);

}  // namespace uroce::rdmacm
