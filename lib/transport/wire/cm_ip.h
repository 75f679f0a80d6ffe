/**
 * @file cm_ip.h
 * @brief The IP addressing that RDMA CM adds to IBA's CM (IBTA Annex A11, "RDMA IP CM
 * Service"): the service ID of an IP port space and port, and the 36-byte header at the
 * start of a REQ's private data that carries the connection's IP addresses and source port.
 * A peer running librdmacm (kernel rxe, a RoCE NIC) reads and writes exactly these.
 *
 * Service ID: 0x00000000_01_PP_pppp: port space PP (TCP 0x06, UDP 0x11, IB 0x3F) and the
 * destination port pppp. Header: version 0, IP version in the upper 4 bits of byte 1, the
 * source port, then the source and destination addresses, each 16 bytes (IPv4 in the last 4,
 * the first 12 zero).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "common/types.h"

namespace uroce::wire::cm {

/// RDMA CM port spaces (librdmacm's enum rdma_port_space).
inline constexpr uint16_t kPsIpoib = 0x0002;
inline constexpr uint16_t kPsTcp = 0x0106;
inline constexpr uint16_t kPsUdp = 0x0111;
inline constexpr uint16_t kPsIb = 0x013f;

inline constexpr size_t kIpCmHeaderLen = 36;

constexpr uint64_t ip_service_id(uint16_t port_space, uint16_t port) {
  return (uint64_t{port_space} << 16) | port;
}
/// The port space of an RDMA IP CM service ID, or nullopt when it is not one.
constexpr std::optional<uint16_t> ip_port_space(uint64_t service_id) {
  if ((service_id >> 24) != 0x01) return std::nullopt;
  return static_cast<uint16_t>(service_id >> 16);
}
constexpr uint16_t ip_port(uint64_t service_id) { return static_cast<uint16_t>(service_id); }

/// The REQ private data header of RDMA IP CM.
struct IpCmHeader {
  uint8_t ip_version = 4;  ///< 4 or 6
  uint16_t src_port = 0;
  Gid src{};  ///< IPv4 as ::ffff:a.b.c.d (uroce's GID form); on the wire the last 4 bytes
  Gid dst{};
  friend bool operator==(const IpCmHeader&, const IpCmHeader&) = default;
};

/// Reads the header at the start of `private_data`; nullopt when too short, of another
/// version, or of an IP version other than 4 and 6.
std::optional<IpCmHeader> parse_ip_cm_header(std::span<const uint8_t> private_data);

/// Writes the header into the first kIpCmHeaderLen bytes of `private_data` (false: too short).
bool build_ip_cm_header(const IpCmHeader& h, std::span<uint8_t> private_data);

}  // namespace uroce::wire::cm
