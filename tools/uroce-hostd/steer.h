/**
 * @file steer.h
 * @brief What uroce-hostd steers by: a RoCEv2 frame's destination QPN, the QPN block it falls
 * in, and the blocks the daemon hands to its clients (docs/host-mode.md, "QPNs").
 *
 * QPNs are 24 bits: block << bits | n. Block 0 holds QP0 and QP1 (QP1's MADs are steered by
 * cm::HostCm) and is never given; the others are given cyclically (the one after the
 * last given, skipping those in use), so a block comes back only after every other free one
 * was given: a late frame for a process that left reaches its successor only after all the
 * other blocks changed hands too. A client whose daemon restarted takes its own block back
 * (take()); the blocks the previous daemon had given are reserved for them meanwhile
 * (reserve(): give() passes them over), each for the process (pid and uid, from SO_PEERCRED)
 * that held it: no other process may take it, and no process may take a block that was not
 * reserved for it (a process does not choose its block).
 */
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "transport/wire/udp.h"

namespace uroce::hostd {

/// The destination QPN of a RoCEv2 frame (as wire::rocev2_udp_payload() recognises one, with a
/// whole BTH after the UDP header); nullopt for anything else. Reads nothing past the span.
inline std::optional<uint32_t> roce_dest_qpn(std::span<const uint8_t> f) {
  const auto bth = wire::rocev2_udp_payload(f);
  if (!bth || f.size() < *bth + 12) return std::nullopt;  // the 12-byte BTH
  return uint32_t{f[*bth + 5]} << 16 | uint32_t{f[*bth + 6]} << 8 | f[*bth + 7];
}

/// The process a QPN block is given or reserved to (pid 0: nobody).
struct BlockOwner {
  int32_t pid = 0;
  uint32_t uid = 0;
  friend bool operator==(const BlockOwner&, const BlockOwner&) = default;
};

/// The QPN blocks of one netdev: which are given, to whom, and the next to give.
class QpnBlocks {
 public:
  using Owner = BlockOwner;
  enum class Take : uint8_t {
    kOk,
    kGiven,       ///< another client holds it now
    kNotYours,    ///< reserved for another process
    kNotReserved  ///< not reserved (free, block 0 or out of range): resuming it is no resume
  };

  /// Blocks of 2^bits QPNs (bits < 24): 2^(24 - bits) of them, block 0 never given.
  explicit QpnBlocks(uint8_t bits) : bits_(bits), used_(size_t{1} << (24 - bits)) {}

  uint8_t bits() const { return bits_; }
  /// Blocks there are, block 0 included.
  uint32_t count() const { return static_cast<uint32_t>(used_.size()); }
  /// Blocks given and not freed.
  uint32_t in_use() const { return in_use_; }
  /// The block a QPN falls in (any 24-bit value names one: the caller checks it is given).
  uint32_t block_of(uint32_t qpn) const { return (qpn & 0xffffff) >> bits_; }

  /// The next free block after the last one given, to `owner`; nullopt when all are given.
  std::optional<uint32_t> give(Owner owner = {}) {
    const uint32_t n = count() - 1;  // blocks 1..count()-1
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t b = 1 + (next_ - 1 + i) % n;
      if (used_[b] || reserved_[b]) continue;
      used_[b] = true;
      owners_[b] = owner;
      ++in_use_;
      next_ = 1 + b % n;
      return b;
    }
    return std::nullopt;
  }
  void free(uint32_t b) {
    if (b < used_.size() && used_[b]) {
      used_[b] = false;
      owners_[b] = {};
      --in_use_;
    }
  }

  /// Gives block b back to `owner`, a client resuming its block after a daemon restart: only
  /// a block reserved for that very process.
  Take take(uint32_t b, Owner owner) {
    if (b == 0 || b >= used_.size()) return Take::kNotReserved;
    if (used_[b]) return Take::kGiven;
    if (!reserved_[b]) return Take::kNotReserved;
    if (!(owners_[b] == owner)) return Take::kNotYours;
    used_[b] = true;
    reserved_[b] = false;
    ++in_use_;
    return Take::kOk;
  }
  /// Sets block b aside for take() by `owner`: give() passes it over until unreserve_all().
  void reserve(uint32_t b, Owner owner) {
    if (b == 0 || b >= used_.size() || used_[b]) return;
    reserved_[b] = true;
    owners_[b] = owner;
  }
  void unreserve_all() {
    for (uint32_t b = 0; b < count(); ++b)
      if (reserved_[b]) owners_[b] = {};
    reserved_.assign(reserved_.size(), false);
  }
  /// Given or reserved: what a daemon that follows this one must set aside.
  bool held(uint32_t b) const { return b < used_.size() && (used_[b] || reserved_[b]); }
  /// Whom block b is given or reserved to ({} when neither).
  Owner owner(uint32_t b) const { return held(b) ? owners_[b] : Owner{}; }

 private:
  uint8_t bits_;
  std::vector<bool> used_;
  std::vector<bool> reserved_ = std::vector<bool>(used_.size(), false);
  std::vector<Owner> owners_ = std::vector<Owner>(used_.size());
  uint32_t next_ = 1;
  uint32_t in_use_ = 0;
};

}  // namespace uroce::hostd
