/**
 * @file strings.cc
 * @brief String and rate helpers: ibv_wc_status_str(3), ibv_node_type_str(3),
 * ibv_port_state_str(3), ibv_event_type_str(3), ibv_rate_to_mult(3), ibv_rate_to_mbps(3).
 * Texts and tables as rdma-core prints them (programs' output stays the same). Units: rates in
 * multiples of 2.5 Gb/s (mult) or Mb/s (mbps).
 */
#include <array>

#include "verbs/objects.h"
#include "verbs/symver.h"

namespace {

constexpr std::array<const char*, 24> kWcStatus = {"success",
                                                   "local length error",
                                                   "local QP operation error",
                                                   "local EE context operation error",
                                                   "local protection error",
                                                   "Work Request Flushed Error",
                                                   "memory management operation error",
                                                   "bad response error",
                                                   "local access error",
                                                   "remote invalid request error",
                                                   "remote access error",
                                                   "remote operation error",
                                                   "transport retry counter exceeded",
                                                   "RNR retry counter exceeded",
                                                   "local RDD violation error",
                                                   "remote invalid RD request",
                                                   "aborted error",
                                                   "invalid EE context number",
                                                   "invalid EE context state",
                                                   "fatal error",
                                                   "response timeout error",
                                                   "general error",
                                                   "TM error",
                                                   "TM rendezvous error"};

constexpr std::array<const char*, 20> kEventType = {"CQ error",
                                                    "local work queue catastrophic error",
                                                    "invalid request local work queue error",
                                                    "local access violation work queue error",
                                                    "communication established",
                                                    "send queue drained",
                                                    "path migrated",
                                                    "path migration request error",
                                                    "local catastrophic error",
                                                    "port active",
                                                    "port error",
                                                    "LID change",
                                                    "P_Key change",
                                                    "SM change",
                                                    "SRQ catastrophic error",
                                                    "SRQ limit reached",
                                                    "last WQE reached",
                                                    "client reregistration",
                                                    "GID table change",
                                                    "WQ fatal"};

struct Rate {
  ibv_rate rate;
  int mult;  ///< multiple of 2.5 Gb/s, -1 when not a multiple
  int mbps;
};
constexpr Rate kRates[] = {{IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
                           {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
                           {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
                           {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
                           {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, -1, 14062},
                           {IBV_RATE_56_GBPS, -1, 56250},    {IBV_RATE_112_GBPS, -1, 112500},
                           {IBV_RATE_168_GBPS, -1, 168750},  {IBV_RATE_25_GBPS, -1, 25781},
                           {IBV_RATE_100_GBPS, -1, 103125},  {IBV_RATE_200_GBPS, -1, 206250},
                           {IBV_RATE_300_GBPS, -1, 309375},  {IBV_RATE_28_GBPS, -1, 28125},
                           {IBV_RATE_50_GBPS, -1, 53125},    {IBV_RATE_400_GBPS, -1, 425000},
                           {IBV_RATE_600_GBPS, -1, 637500},  {IBV_RATE_800_GBPS, -1, 850000},
                           {IBV_RATE_1200_GBPS, -1, 1275000}};

}  // namespace

UROCE_EXPORT const char* ibv_wc_status_str(ibv_wc_status s) {
  auto i = static_cast<size_t>(s);
  return i < kWcStatus.size() ? kWcStatus[i] : "unknown";
}

UROCE_EXPORT const char* ibv_node_type_str(ibv_node_type t) {
  switch (t) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    case IBV_NODE_USNIC: return "usNIC";
    case IBV_NODE_USNIC_UDP: return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED: return "unspecified";
    default: return "unknown";
  }
}

UROCE_EXPORT const char* ibv_port_state_str(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_NOP: return "no state change (NOP)";
    case IBV_PORT_DOWN: return "down";
    case IBV_PORT_INIT: return "init";
    case IBV_PORT_ARMED: return "armed";
    case IBV_PORT_ACTIVE: return "active";
    case IBV_PORT_ACTIVE_DEFER: return "active defer";
    default: return "unknown";
  }
}

UROCE_EXPORT const char* ibv_event_type_str(ibv_event_type e) {
  auto i = static_cast<size_t>(e);
  return i < kEventType.size() ? kEventType[i] : "unknown";
}

UROCE_EXPORT int ibv_rate_to_mult(ibv_rate rate) {
  for (const auto& r : kRates)
    if (r.rate == rate) return r.mult;
  return -1;
}

UROCE_EXPORT ibv_rate mult_to_ibv_rate(int mult) {
  for (const auto& r : kRates)
    if (r.mult == mult) return r.rate;
  return IBV_RATE_MAX;
}

UROCE_EXPORT int ibv_rate_to_mbps(ibv_rate rate) {
  for (const auto& r : kRates)
    if (r.rate == rate) return r.mbps;
  return -1;
}

UROCE_EXPORT ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const auto& r : kRates)
    if (r.mbps == mbps) return r.rate;
  return IBV_RATE_MAX;
}
