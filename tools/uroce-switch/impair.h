/**
 * @file impair.h
 * @brief The switch's link impairment stage (issue #8): seeded random drop, duplication,
 * corruption, delay and reordering of the RoCEv2 frames (UDP destination port 4791) a port
 * receives, before they are forwarded. ARP/ND, PFC and other frames pass untouched, so that
 * the impairment hits the transport and not neighbour discovery.
 *
 * Per frame, independently: dropped with probability `drop`; else corrupted with `corrupt`
 * (one byte after the BTH flipped: payload or ICRC, so the receiver's ICRC check must catch it,
 * `rx_icrc_encapsulated`); duplicated with `dup` (a second copy right behind it); reordered
 * with `reorder` (held back by a uniform extra delay in (0, reorder_window], so frames behind
 * it overtake it); and every frame waits `delay` first. Decisions come from one xorshift64*
 * stream seeded by `seed`: the same seed and frame sequence give the same decisions.
 *
 * A link cut: cut-at=T,cut-for=D drops every RoCEv2 frame from T after the first one the
 * stage saw until T + D (a cable pulled and plugged back; D longer or shorter than a
 * requester's timeout x retries).
 *
 * Spec syntax (--impair): comma-separated key=value, e.g.
 *   drop=0.01,dup=0.001,reorder=0.01,reorder-window=200us,corrupt=0.001,delay=20us,seed=7
 *   cut-at=1s,cut-for=200ms
 * Units: probabilities in [0, 1], durations with ns/us/ms/s.
 */
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "common/time.h"
#include "uroce-switch/red.h"

namespace uroce::uswitch {

struct ImpairConfig {
  double drop = 0;
  double dup = 0;
  double corrupt = 0;
  double reorder = 0;
  Duration reorder_window = Duration::micros(200);
  Duration delay{};
  uint64_t seed = 1;
  Duration cut_at{};   ///< the cut starts this long after the first RoCEv2 frame
  Duration cut_for{};  ///< and lasts this long (0: no cut)
  bool any() const {
    return drop > 0 || dup > 0 || corrupt > 0 || reorder > 0 || delay.ns > 0 || cut_for.ns > 0;
  }
};

/// Parses an --impair spec (see @file); false with *err naming the bad key or value.
bool parse_impair(std::string_view spec, ImpairConfig* out, std::string* err);

/// What happens to one frame.
struct ImpairVerdict {
  bool drop = false;
  bool duplicate = false;
  int corrupt_at = -1;  ///< byte offset to flip (XOR 0xff), -1 = none
  Duration hold{};      ///< delay before it is forwarded (delay + reorder extra)
  bool reordered = false;
};

struct ImpairCounters {
  uint64_t seen = 0;  ///< RoCEv2 frames the stage looked at
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t reordered = 0;
  uint64_t cut = 0;  ///< dropped by the link cut (also counted in dropped)
};

/// True for an IPv4/IPv6 UDP frame to port 4791 (optionally 802.1Q-tagged); *bth_end is the
/// offset just past its BTH.
bool is_rocev2(std::span<const uint8_t> frame, size_t* bth_end);

class Impairment {
 public:
  explicit Impairment(const ImpairConfig& c) : c_(c), rng_(c.seed) {}

  /// The verdict for `frame` arriving at `now`; counts it. Frames that are not RoCEv2 always
  /// pass unheld.
  ImpairVerdict decide(std::span<const uint8_t> frame, Timestamp now);

  const ImpairConfig& config() const { return c_; }
  const ImpairCounters& counters() const { return n_; }

 private:
  ImpairConfig c_;
  MarkRng rng_;
  ImpairCounters n_;
  Timestamp first_ = Timestamp::never();  ///< the first RoCEv2 frame (the cut's origin)
};

}  // namespace uroce::uswitch
