/**
 * @file region.h
 * @brief A uroce-hostd client's shared-memory region: one TX ring (client -> daemon) and one RX
 * ring per daemon worker (worker -> client), each a ring.h ring, back to back in one memfd.
 *
 * The daemon creates it (create_region(): memfd, size sealed so that the client cannot shrink
 * it under the daemon's mappings, rings initialised) and passes the descriptor over the control
 * socket (control.h); the client maps it (map_region(): the size checked against the layout
 * both compute from the same RegionParams). Both mappings are MADV_DONTFORK: a forked child
 * has no access to its parent's rings (docs/host-mode.md, "fork").
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "shm/ring.h"

namespace uroce::shm {

/// RX rings per region, at most (one per daemon worker).
inline constexpr uint32_t kMaxRxRings = 16;

/// What the daemon chose for a client's region (sent in the Welcome message).
struct RegionParams {
  uint32_t slot_bytes = 0;  ///< bytes per frame buffer (the largest frame)
  uint32_t tx_slots = 0;    ///< TX ring size
  uint32_t rx_rings = 0;    ///< RX rings (daemon workers), 1..kMaxRxRings
  uint32_t rx_slots = 0;    ///< each RX ring's size
};

/// The rings' offsets in the region and its size.
struct RegionLayout {
  RingLayout tx;
  RingLayout rx;
  size_t tx_off = 0;
  size_t rx_off[kMaxRxRings] = {};
  size_t bytes = 0;
};

/// The layout of p; nullopt when a ring's size is not allowed (ring_layout()) or rx_rings is
/// outside 1..kMaxRxRings.
std::optional<RegionLayout> region_layout(const RegionParams& p);

/// One mapped region. Unmaps (and closes its descriptor) when destroyed.
class Region {
 public:
  Region() = default;
  ~Region();
  Region(Region&& o) noexcept;
  Region& operator=(Region&& o) noexcept;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  bool mapped() const { return base_ != nullptr; }
  const RegionParams& params() const { return params_; }
  const RegionLayout& layout() const { return layout_; }
  /// The memfd (the daemon passes it on); -1 after release_fd().
  int fd() const { return fd_; }
  /// Closes the descriptor, keeping the mapping.
  void release_fd();
  /// In a forked child, where the mapping does not exist (MADV_DONTFORK): closes the inherited
  /// descriptor and forgets the mapping without unmapping (the range may hold the child's own).
  void forget();
  RingView tx() const { return {base_ + layout_.tx_off, layout_.tx}; }
  RingView rx(uint32_t k) const { return {base_ + layout_.rx_off[k], layout_.rx}; }
  size_t bytes() const { return layout_.bytes; }

 private:
  friend std::optional<Region> create_region(const RegionParams&, std::string*);
  friend std::optional<Region> map_region(int, const RegionParams&, std::string*);

  int fd_ = -1;
  uint8_t* base_ = nullptr;
  RegionParams params_{};
  RegionLayout layout_{};
};

/// A new region for p (the daemon's side): a sealed memfd, mapped and initialised; nullopt
/// with one line in *err on failure.
std::optional<Region> create_region(const RegionParams& p, std::string* err);

/// Maps the region in fd (the client's side; takes the descriptor), after checking that its
/// size holds p's layout; nullopt with one line in *err (fd closed) otherwise.
std::optional<Region> map_region(int fd, const RegionParams& p, std::string* err);

}  // namespace uroce::shm
