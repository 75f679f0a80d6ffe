/**
 * @file options.h
 * @brief uroce-switch's command line, parsed without DPDK (unit-tested). Sizes take K/M/G
 * suffixes of 1024 (bytes), rates K/M/G of 1000 (bit/s), durations ns/us/ms/s.
 *
 *   --port DEVARGS        a DPDK vdev per switch port, in port order (repeat, >= 2)
 *   --shape PORT=RATE     egress token bucket on port index PORT (e.g. 2=500M)
 *   --share LIST          ports (e.g. 2,3) that are one host behind one egress link: they share
 *                         its queues, shaper and received pause (an --shape on any member
 *                         shapes the link); frames still leave on their own port
 *   --burst SIZE          shaper bucket depth (default 32K)
 *   --kmin/--kmax SIZE, --pmax P, --ecn on|off, --mark enqueue|dequeue
 *   --pfc-xoff/--pfc-xon SIZE (xoff 0 = no PFC), --pfc-prios LIST (default 3)
 *   --buffer SIZE         per-egress-port buffer (default 4M); frames beyond it are dropped
 *   --link-rate RATE      port speed for pause quanta of unshaped ports and the XOFF
 *                         refresh period (half a 0xFFFF pause at it; default 100G, so a peer
 *                         that assumes any speed up to 100G stays paused)
 *   --stats-every DUR     periodic counter line (0 = only at exit)
 *   --max-time DUR        stop by itself after this long (0 = run until SIGINT/SIGTERM)
 *   --file-prefix NAME    EAL --file-prefix (default uroce-switch-<pid>)
 *   --impair SPEC         impair the RoCEv2 frames every port receives (impair.h), e.g.
 *                         drop=0.01,dup=0.001,reorder=0.01,corrupt=0.001,seed=7
 *   --trust dscp|pcp      what classifies a frame (frame_edit.h; default dscp)
 *   --mtu BYTES           largest IP packet forwarded (1280..9000, default 9000); larger ones
 *                         are dropped and counted (mtu_drops)
 *   --name NAME           the node's name in its API and the fabric (default uroce-switch)
 *   --api ADDR:PORT       serve the node API (lib/fabric/node_api.h) there: its settings
 *                         change at run time
 *   --api-token-file F    the token writes to the API need (mgmt/http_server.h); without it
 *                         the API is read-only
 *   --desired URL         zero-touch: follow the fabric's desired state there
 *                         (lib/fabric/desired.h), fetched at start and every
 *   --desired-every DUR   (default 5s)
 * Units: bytes, bit/s, ns.
 */
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "fabric/settings.h"
#include "uroce-switch/impair.h"
#include "uroce-switch/red.h"

namespace uroce::uswitch {

struct Options {
  std::vector<std::string> ports;
  std::map<uint32_t, uint64_t> shape_bps;     ///< port index -> rate
  std::vector<std::vector<uint32_t>> shared;  ///< --share groups
  uint64_t burst_bytes = 32 * 1024;
  RedParams red;
  uint64_t pfc_xoff_bytes = 400 * 1024;
  uint64_t pfc_xon_bytes = 300 * 1024;
  uint8_t pfc_prios = 1u << 3;
  uint64_t buffer_bytes = 4ull * 1024 * 1024;
  uint64_t link_bps = 100'000'000'000ull;
  Duration stats_every = Duration::seconds(1);
  Duration max_time{};
  std::string file_prefix;
  ImpairConfig impair;  ///< per ingress port; port i uses seed + i
  bool trust_pcp = false;
  uint32_t mtu = 9000;
  std::string name = "uroce-switch";
  std::string api_listen;
  std::string api_token_file;
  std::string desired;
  Duration desired_every = Duration::seconds(5);
};

bool parse_size(std::string_view s, uint64_t* out);
bool parse_rate(std::string_view s, uint64_t* out);
bool parse_duration(std::string_view s, Duration* out);

/// The node settings (lib/fabric) the options describe: PFC priorities and thresholds (none
/// with --pfc-xoff 0), ECN and its curve, trust, MTU.
fabric::Settings settings_of(const Options& o);

/// Parses argv (without argv[0]); false with *err set on a bad or missing value.
bool parse_options(const std::vector<std::string>& args, Options* o, std::string* err);

}  // namespace uroce::uswitch
