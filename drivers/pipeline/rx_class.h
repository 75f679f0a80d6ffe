/**
 * @file rx_class.h
 * @brief A received frame's priority and ECN field, as the port's PFC backlog and its
 * rx_prio{p}_* counters see them: by the IP DSCP through dscp_to_prio (trust dscp, the default),
 * or by the 802.1Q PCP through pcp_to_prio (trust pcp; untagged frames are priority 0, as mlx5
 * with `mlnx_qos --trust pcp`). A RoCE v1 frame's GRH TClass counts as the IP traffic class
 * (IBA Annex A16); other non-IP frames are priority 0 with ECN 0 either way.
 * Also is_roce(): whether a frame is RoCEv2 (UDP to port 4791, IBA Annex 17 §A17.2) or RoCE v1
 * (EtherType 0x8915), which the port loops back when it is addressed to the port's own MAC
 * (port_pipeline.h).
 * References: docs/dcqcn-pfc.md §3.4, IEEE 802.1Q §6.9.3 (PCP), RFC 3168 §5 (ECN field).
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/byteorder.h"
#include "config/config.h"
#include "transport/wire/eth.h"
#include "transport/wire/udp.h"

namespace uroce::pipeline {

struct RxClass {
  uint8_t prio = 0;  ///< 0..7
  uint8_t ecn = 0;   ///< the IP header's ECN bits, 0..3 (3 = CE)
};

/// How a port classifies received frames (from config::Device).
struct RxClassifier {
  config::Device::Trust trust = config::Device::Trust::kDscp;
  std::array<uint8_t, 64> dscp_to_prio{};
  std::array<uint8_t, 8> pcp_to_prio{};

  static RxClassifier of(const config::Device& dev) {
    return {dev.trust, dev.dscp_to_prio, dev.pcp_to_prio};
  }

  RxClass operator()(std::span<const uint8_t> f) const {
    if (f.size() < 14) return {};
    size_t l3 = 14;
    uint16_t type = load_be16(f.data() + 12);
    int pcp = -1;
    if (type == wire::kEtherTypeVlan && f.size() >= 18) {
      pcp = f[14] >> 5;
      type = load_be16(f.data() + 16);
      l3 = 18;
    }
    uint8_t tc = 0;  // DSCP << 2 | ECN
    bool ip = false;
    if (f.size() >= l3 + 2 && type == wire::kEtherTypeIpv4) {
      tc = f[l3 + 1];
      ip = true;
    } else if (f.size() >= l3 + 2 &&
               (type == wire::kEtherTypeIpv6 || type == wire::kEtherTypeRoce)) {
      tc = static_cast<uint8_t>((f[l3] & 0x0F) << 4 | f[l3 + 1] >> 4);
      ip = true;
    }
    const uint8_t ecn = static_cast<uint8_t>(tc & 3);
    if (trust == config::Device::Trust::kPcp)
      return {static_cast<uint8_t>(pcp < 0 ? 0 : pcp_to_prio[static_cast<size_t>(pcp)] & 7), ecn};
    if (!ip) return {};
    return {static_cast<uint8_t>(dscp_to_prio[tc >> 2] & 7), ecn};
  }
};

/// True for an Ethernet frame (802.1Q-tagged or not) carrying IPv4 or IPv6 with a UDP header
/// whose destination port is 4791 (RoCEv2). Reads nothing past the frame's end.
inline bool is_rocev2(std::span<const uint8_t> f) {
  return uroce::wire::rocev2_udp_payload(f).has_value();
}

/// is_rocev2(), or an Ethernet frame (802.1Q-tagged or not) of EtherType 0x8915 (RoCE v1).
/// Reads nothing past the frame's end.
inline bool is_roce(std::span<const uint8_t> f) {
  if (f.size() < 14) return false;
  uint16_t type = load_be16(f.data() + 12);
  if (type == wire::kEtherTypeVlan) {
    if (f.size() < 18) return false;
    type = load_be16(f.data() + 16);
  }
  return type == wire::kEtherTypeRoce || is_rocev2(f);
}

}  // namespace uroce::pipeline
