/**
 * @file config.h
 * @brief uroce's configuration: the TOML file of docs/configuration.md as values.
 *
 * Lookup order: $UROCE_CONFIG, ./uroce.toml, /etc/uroce/uroce.toml; with no file, one built-in
 * device "uroce0" on an in-process loopback port. Every bad value is refused with one line
 * naming the file, the key and what is allowed.
 */
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cc_algorithm.h"
#include "common/types.h"

namespace uroce::config {

/// An IP address with its prefix length, as written in `addresses`.
struct Address {
  Gid gid;             ///< the address as a GID (IPv4-mapped for IPv4)
  uint8_t prefix = 0;  ///< prefix length in bits (0..32 for IPv4, 0..128 for IPv6)
  bool is_ipv4() const { return gid.is_ipv4_mapped(); }
};

/// DCQCN reaction/notification point knobs (NVIDIA names; lib/dcqcn documents each).
struct Dcqcn {
  bool enabled = true;
  std::string mode = "nvidia";           ///< "nvidia" or "paper"
  std::map<std::string, double> params;  ///< overrides by NVIDIA parameter name
  /// Rate limiter bucket depth: bytes a QP may send back to back at its DCQCN rate (as
  /// ibv_qp_rate_limit_attr.max_burst_sz). 0 spaces every frame; the default lets one 64 KiB
  /// message leave in one burst, so one progress call sends it whole.
  uint32_t max_burst_bytes = 65536;
};

/// The delay-based congestion control's knobs ([device.delay]; lib/cc/delay.h documents each).
struct Delay {
  /// Queueing delay allowed above the base round trip: above the round-trip jitter of two
  /// software endpoints (docs/configuration.md has the measurement), where lib/cc's default
  /// (10 µs) assumes hardware-precise samples, as the simulator gives.
  double target_queue_us = 100;
  double base_rtt_us = 0;    ///< the path's base round trip; 0: the smallest sample seen
  double ai_mbps = 0;        ///< additive increase per round trip; 0: line rate / 200
  double beta = 0.5;         ///< decrease gain
  double max_mdf = 0.5;      ///< largest cut of one decision
  double min_rate_mbps = 0;  ///< lowest rate; 0: line rate / 1000
};

/// PFC settings of a device.
struct Pfc {
  std::array<bool, 8> enabled{};        ///< priorities with PFC on
  uint32_t xoff_bytes = 0;              ///< RX backlog that sends XOFF (0 = never)
  uint32_t xon_bytes = 0;               ///< RX backlog that sends XON
  uint32_t watchdog_detect_ms = 200;    ///< pause-storm detection time
  uint32_t watchdog_restore_ms = 2000;  ///< time without pause before honouring again
  bool watchdog_ignore_pause = false;   ///< stop honouring pause on a storming priority
};

/// The default DSCP -> priority map: the class selector, DSCP >> 3.
constexpr std::array<uint8_t, 64> default_dscp_to_prio() {
  std::array<uint8_t, 64> m{};
  for (int d = 0; d < 64; ++d) m[d] = static_cast<uint8_t>(d >> 3);
  return m;
}

/// One [[device]] table.
struct Device {
  std::string name = "uroce0";    ///< ibv device name
  std::string port = "loopback";  ///< DPDK vdev string, PCI address, or "loopback"
  /// Kernel network interface the device is bound to (host mode); empty otherwise. When set,
  /// port is "netdev:<name>" and the GIDs, MAC, neighbours and routes are the kernel's.
  std::string netdev;
  /// With netdev: this process opens the netdev itself (AF_XDP, its XDP program) even where a
  /// uroce-hostd could serve it; one process per netdev (docs/host-mode.md). Otherwise the
  /// device goes through the netdev's uroce-hostd when one runs.
  bool exclusive = false;
  std::vector<std::string> eal;    ///< extra EAL arguments
  std::vector<Address> addresses;  ///< GID index i is the RoCEv2 GID of address i (no netdev)
  uint32_t mtu = 1024;             ///< RoCE path MTU: 256, 512, 1024, 2048, 4096
  uint16_t queues = 1;             ///< RX/TX queue pairs on a DPDK port (1..16)
  std::optional<MacAddr> mac;      ///< otherwise the port's
  std::map<std::string, MacAddr> neighbors;  ///< static neighbours, address text -> MAC
  std::string profile;                       ///< "", "lossless", "lossy", "hpc", "storage"
  uint8_t roce_dscp = 26;                    ///< DSCP of RoCE data packets
  uint8_t cnp_dscp = 48;                     ///< DSCP of CNPs
  std::array<uint8_t, 64> dscp_to_prio = default_dscp_to_prio();  ///< DSCP -> priority
  /// Which field classifies received frames (priority of the PFC backlog, rx_prio counters):
  /// kDscp the IP DSCP through dscp_to_prio; kPcp the 802.1Q PCP through pcp_to_prio, with
  /// untagged frames on priority 0 (mlx5's `--trust pcp`; docs/dcqcn-pfc.md §3.4).
  enum class Trust : uint8_t { kDscp, kPcp } trust = Trust::kDscp;
  std::array<uint8_t, 8> pcp_to_prio = {0, 1, 2, 3, 4, 5, 6, 7};  ///< PCP -> priority
  /// 802.1Q VLAN id of every frame sent (0 = priority-tagged); the tag's PCP is the frame's
  /// priority (dscp_to_prio of its DSCP). Unset: untagged frames.
  std::optional<uint16_t> vlan;
  bool ecn = true;  ///< send data as ECT(0)
  /// RC FLUSH frames with Linux rxe's ICRC, not IBA's (docs/limits.md "RDMA ATOMIC WRITE and
  /// FLUSH"); a received FLUSH is taken with either.
  bool rxe_flush_icrc = false;
  /// A RoCE v1 GID (IBA Annex A16: Ethernet + GRH, EtherType 0x8915) for every RoCEv2 one,
  /// after them in the GID table (gid_table()): RoCEv2 indices do not change.
  bool roce_v1 = false;
  /// RC loss recovery of QPs whose peer did not negotiate it through ECE: IBA go-back-N, or
  /// uroce's selective repeat (docs/loss-recovery.md), which every peer must then speak: set it
  /// on both ends. ECE (ibv_set_ece, rdma_set_local_ece) agrees on selective repeat per QP
  /// whatever this says.
  enum class LossRecovery : uint8_t { kGoBackN, kSelective } loss_recovery = LossRecovery::kGoBackN;
  /// Peer timestamps on RC QPs whose peer did not negotiate them through ECE (uroce's
  /// extension, docs/loss-recovery.md): round trips for the delay-based control without the
  /// responder's hold time. Every peer must then speak it: set it on both ends.
  bool peer_timestamps = false;
  /// Selective repeat places each packet as it arrives, ahead of a gap too, on every RC QP of
  /// the device (each can also opt in alone: uroce_qp_set_ooo_placement). Off (the default),
  /// packets are placed in PSN order: a program polling a message's last byte finds every
  /// earlier byte in place, and a resent earlier WRITE never lands over a later one.
  bool ooo_placement = false;
  /// How RC/UC senders react to congestion: DCQCN from CNPs (switches mark ECN), the
  /// delay-based control from measured round trips (switches mark nothing), both (each QP sends
  /// at the lower rate), or none. dcqcn.enabled = false takes DCQCN out of either choice.
  CcAlgorithm congestion_control = CcAlgorithm::kDcqcn;
  Pfc pfc;
  Dcqcn dcqcn;
  Delay delay;
  /// [device.progress]: the progress thread's tunable values that differ from their measured
  /// defaults (lib/device/progress_policy.h), by name; for measuring them (bench/progress).
  std::map<std::string, double> progress;
};

/// "go-back-n", "selective".
std::string_view to_string(Device::LossRecovery r);
/// The reaction the device's QPs run: congestion_control less DCQCN when dcqcn.enabled is
/// false ("dcqcn" becomes "off", "dcqcn+delay" becomes "delay").
CcAlgorithm cc_in_force(const Device& dev);

/// The whole file.
struct Config {
  std::string source;  ///< path it was read from, or "built-in"
  std::vector<Device> devices;
};

/// Finds and reads the configuration (see @file). On error returns std::nullopt and sets *err
/// to one line: "<file>: <key>: <problem>; allowed: <values>".
std::optional<Config> load(std::string* err);

/// Parses TOML text; `source` names it in error messages.
std::optional<Config> parse(const std::string& text, const std::string& source, std::string* err);

/// The configuration used when there is no file: one loopback device uroce0 with 198.18.0.1/15.
Config builtin();

}  // namespace uroce::config
