/**
 * @file settings.h
 * @brief The RoCE settings a fabric keeps consistent on every node (docs/fabric.md): the DSCP
 * of RoCE data and CNPs, what classifies a frame (DSCP or PCP) and the maps to priorities, the
 * priorities PFC protects and its thresholds, ECN, the MTU and (hosts) DCQCN. One struct for
 * both roles; a field only one role has is refused for the other in a change document.
 *
 * The JSON form (GET /v1/settings, PATCH /v1/settings):
 *
 *   {"profile": "lossless", "roce_dscp": 26, "cnp_dscp": 48, "trust": "dscp",
 *    "dscp_to_prio": [64 priorities], "pcp_to_prio": [8 priorities],
 *    "pfc": {"priorities": [3], "xoff_bytes": 65536, "xon_bytes": 32768},
 *    "ecn": {"enabled": true, "kmin_bytes": 20480, "kmax_bytes": 204800, "pmax": 0.2},
 *    "mtu": 1024, "dcqcn": true}
 *
 * ecn.kmin_bytes/kmax_bytes/pmax are a switch's marking curve; dcqcn is a host's. mtu is a
 * host's RoCE path MTU (256..4096, a power of two) and a switch's IP MTU (the largest IP packet
 * it forwards, 1280..9000). A change document carries any subset; "profile" is applied first
 * (as config::apply_profile does for a host's file), then the other keys, and the result is
 * checked as a whole. Units: bytes.
 */
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uroce::fabric {

enum class Role : uint8_t { kHost, kSwitch };
std::string_view to_string(Role r);
std::optional<Role> parse_role(std::string_view s);

enum class Trust : uint8_t { kDscp, kPcp };

inline constexpr uint32_t kMaxBodyBytes = 64 * 1024;  ///< largest change document accepted

struct Settings {
  std::string profile;  ///< "", "lossless", "lossy", "hpc", "storage"
  uint8_t roce_dscp = 26;
  uint8_t cnp_dscp = 48;
  Trust trust = Trust::kDscp;
  std::array<uint8_t, 64> dscp_to_prio{};  ///< filled by defaults()
  std::array<uint8_t, 8> pcp_to_prio{};
  uint8_t pfc_priorities = 0;  ///< bit p: PFC on priority p
  uint32_t pfc_xoff_bytes = 0;
  uint32_t pfc_xon_bytes = 0;
  bool ecn = true;  ///< host: sends ECT(0); switch: marks CE on its queues
  uint64_t ecn_kmin_bytes = 20 * 1024;
  uint64_t ecn_kmax_bytes = 200 * 1024;
  double ecn_pmax = 0.2;
  uint32_t mtu = 1024;
  bool dcqcn = true;

  bool operator==(const Settings&) const = default;
  /// The priority RoCE data travels on: dscp_to_prio[roce_dscp].
  uint8_t roce_prio() const { return dscp_to_prio[roce_dscp & 63]; }
};

/// The priorities a mask's bits name, ascending (pfc_priorities -> {3, 4}).
std::vector<int> priorities(uint8_t mask);

/// A role's settings with no profile: the class-selector DSCP map (DSCP >> 3), identity PCP
/// map, no PFC, ECN on; a host's MTU 1024, a switch's 9000.
Settings defaults(Role r);

/// The profile names (as lib/config's), "" excluded.
const std::vector<std::string_view>& profile_names();

/// Applies profile `name` to *s for role r. lossless/hpc/storage: PFC on the RoCE priority
/// (xoff/xon 64/32 KiB; storage 256/128 KiB), ECN and DCQCN on; lossy: no PFC, ECN and DCQCN
/// on; a switch's hpc marks earlier (kmin 10 KiB). False (s unchanged) for an unknown name.
bool apply_profile(std::string_view name, Role r, Settings* s);

/// The JSON text of s for role r (role-only fields of the other role left out).
std::string to_json(const Settings& s, Role r);

/// Applies the change document `body` to *s: false with *err = "<key>: <problem>" (s
/// unchanged) for malformed JSON, an unknown key, a key of the other role, a wrong type, a value
/// out of range, or a result that is inconsistent (xon > xoff, PFC on with xoff 0, kmin >
/// kmax).
bool apply_json(std::string_view body, Role r, Settings* s, std::string* err);

/// Checks the whole of s for role r; false with *err = one line.
bool validate(const Settings& s, Role r, std::string* err);

/// What differs, one line per field: "pfc.priorities: [] -> [3]".
std::vector<std::string> diff(const Settings& before, const Settings& after, Role r);

}  // namespace uroce::fabric
