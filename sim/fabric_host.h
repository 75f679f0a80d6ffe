/**
 * @file fabric_host.h
 * @brief One host of a multi-host fabric scenario (incast.h, ring.h): its own congestion
 * control built from the scenario's algorithm and parameters, and an engine at the scenario's
 * link rate that knows every host's address (testbed.h's host_mac / host_gid).
 * Units: bit/s.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cc/factory.h"
#include "sim/engine_host.h"
#include "sim/testbed.h"
#include "transport/engine.h"

namespace uroce::sim {

/// Host i of n, named name_prefix + i, its key seed key_base + i; its cc::Factory goes to *cc.
/// S is the scenario's settings: algorithm, params (DCQCN), delay, rate_bps,
/// max_unacked_psns, recovery, peer_timestamps.
template <class S>
std::unique_ptr<EngineHost> make_fabric_host(Simulator& sim, const S& s, int i, int n,
                                             uint64_t key_base, const char* name_prefix,
                                             std::vector<std::unique_ptr<cc::Factory>>* cc) {
  cc::Settings cs;
  cs.algorithm = s.algorithm;
  cs.dcqcn = s.params;
  cs.delay = s.delay;
  cc->push_back(std::make_unique<cc::Factory>(cs));
  transport::EngineConfig cfg;
  cfg.mac = host_mac(i);
  cfg.gids = {host_gid(i)};
  cfg.link_speed_bps = s.rate_bps;
  cfg.key_seed = key_base + static_cast<uint64_t>(i);
  cfg.cc = s.algorithm != CcAlgorithm::kOff ? cc->back().get() : nullptr;
  cfg.max_unacked_psns = s.max_unacked_psns;
  cfg.loss_recovery = s.recovery;
  cfg.peer_timestamps = s.peer_timestamps;
  std::string name = name_prefix;
  name += std::to_string(i);  // not prefix + ...: GCC 12's -Wrestrict false positive
  auto h = std::make_unique<EngineHost>(sim, cfg, name);
  for (int j = 0; j < n; ++j)
    if (j != i) h->neighbors().add(host_gid(j), host_mac(j));
  return h;
}

}  // namespace uroce::sim
