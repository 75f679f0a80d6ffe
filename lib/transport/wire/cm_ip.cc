/**
 * @file cm_ip.cc
 * @brief RDMA IP CM private data header (see cm_ip.h).
 */
#include "transport/wire/cm_ip.h"

#include <cstring>

#include "common/byteorder.h"

namespace uroce::wire::cm {

namespace {

constexpr size_t kSrcAddr = 4, kDstAddr = 20, kAddrLen = 16, kV4Offset = 12;

/// A 16-byte CM address field -> uroce's GID form (IPv4 becomes ::ffff:a.b.c.d).
Gid read_addr(const uint8_t* p, uint8_t ip_version) {
  Gid g{};
  if (ip_version == 6) {
    std::memcpy(g.raw.data(), p, kAddrLen);
  } else {
    g.raw[10] = g.raw[11] = 0xff;
    std::memcpy(g.raw.data() + kV4Offset, p + kV4Offset, 4);
  }
  return g;
}

void write_addr(uint8_t* p, const Gid& g, uint8_t ip_version) {
  std::memset(p, 0, kAddrLen);
  if (ip_version == 6)
    std::memcpy(p, g.raw.data(), kAddrLen);
  else
    std::memcpy(p + kV4Offset, g.raw.data() + kV4Offset, 4);
}

}  // namespace

std::optional<IpCmHeader> parse_ip_cm_header(std::span<const uint8_t> pd) {
  if (pd.size() < kIpCmHeaderLen || pd[0] != 0) return std::nullopt;
  IpCmHeader h;
  h.ip_version = static_cast<uint8_t>(pd[1] >> 4);
  if (h.ip_version != 4 && h.ip_version != 6) return std::nullopt;
  h.src_port = load_be16(pd.data() + 2);
  h.src = read_addr(pd.data() + kSrcAddr, h.ip_version);
  h.dst = read_addr(pd.data() + kDstAddr, h.ip_version);
  return h;
}

bool build_ip_cm_header(const IpCmHeader& h, std::span<uint8_t> pd) {
  if (pd.size() < kIpCmHeaderLen) return false;
  pd[0] = 0;
  pd[1] = static_cast<uint8_t>(h.ip_version << 4);
  store_be16(pd.data() + 2, h.src_port);
  write_addr(pd.data() + kSrcAddr, h.src, h.ip_version);
  write_addr(pd.data() + kDstAddr, h.dst, h.ip_version);
  return true;
}

}  // namespace uroce::wire::cm
