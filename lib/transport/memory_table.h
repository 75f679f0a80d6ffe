/**
 * @file memory_table.h
 * @brief Registered memory regions as the engine sees them: keys, address range, access rights
 * and the checks every local and remote access passes before a byte moves (IBA Vol 1 §10.6,
 * C10-?? "memory protection"; the R_Key/L_Key checks of §9.7.4.1.5 and §10.6.3).
 *
 * Keys: a key is an invertible 32-bit mix of (slot | tag << 16), XORed with a seed-derived
 * constant (different for L_Key and R_Key), so keys look random yet decode to their table slot
 * in O(1) with no hashing. The 16-bit tag is drawn from a seeded generator per registration; a
 * deregistered slot's keys stop matching at once, and a re-used slot gets a new tag. A
 * re-registration (rereg) keeps the keys.
 *
 * Addresses: a region maps the I/O virtual addresses [iova, iova+len), which SGEs and remote
 * addresses name (ibv_reg_mr(3): "addr + (iova - hca_va)"), to the caller's memory
 * [addr, addr+len); iova == addr unless registered with ibv_reg_mr_iova(3) or ZERO_BASED. Every
 * check is made in iova space before the offset is applied, so no access reaches a byte outside
 * [addr, addr+len). The copy functions (read_local, write_remote, ...) check and move bytes in
 * one call; an on-demand (kAccessOnDemand) region's bytes move with process_vm_readv(2) /
 * process_vm_writev(2) on the own process, which fail with EFAULT on an unmapped page instead of
 * a SIGSEGV (kFault), and its atomics first fault the word in writable with
 * madvise(MADV_POPULATE_WRITE).
 * Units: bytes.
 *
 * Thread-safety: none (engine lock).
 */
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "transport/verbs_types.h"

namespace uroce::transport {

/// One registered region.
struct MemoryRegion {
  uint64_t addr = 0;    ///< first byte (caller's virtual address)
  uint64_t len = 0;     ///< bytes
  uint32_t access = 0;  ///< Access bits (kAccessOnDemand included)
  uint32_t pd = 0;      ///< owning protection domain
  uint32_t lkey = 0;
  uint32_t rkey = 0;
  bool live = false;  ///< registered (keys valid)
  uint64_t iova = 0;  ///< the address SGEs and remote accesses use for addr
};

/// A memory window (IBA Vol 1 §10.6.7): a remote-access view of part of a region, reached by
/// its own R_Key. Its rkey keeps the upper 24 bits for life; a bind sets the low 8 bits (the
/// key the consumer chose, ibv_inc_rkey(3)).
struct MemoryWindow {
  enum class State : uint8_t {
    kFree,   ///< type 2: allocated or invalidated, not bound; type 1: allocated, not bound
    kValid,  ///< bound: [addr, addr+len) of the region with lkey mr_lkey (its iova space)
  };
  MwType type = MwType::kType1;
  State state = State::kFree;
  uint32_t pd = 0;
  uint32_t rkey = 0;
  uint32_t mr_lkey = 0;  ///< the bound region (checked live at every access)
  uint64_t addr = 0;
  uint64_t len = 0;
  uint32_t access = 0;  ///< remote access bits granted, and kAccessZeroBased (va = offset)
  uint32_t qpn = 0;     ///< type 2: the QP it is bound through (type 2B: only it may use it)
  bool live = false;
};

/// Why a bind or an invalidation failed (the WR completes with an error status).
enum class MwResult : uint8_t {
  kOk,
  kBadMw,      ///< unknown window, stale rkey, wrong PD or QP, wrong state or type
  kBadMr,      ///< no live region with that lkey, or of another PD
  kNoMwBind,   ///< the region lacks IBV_ACCESS_MW_BIND
  kBadBounds,  ///< the window does not fit in the region
  kBadAccess,  ///< rights the region cannot grant (remote write/atomic need its local write)
};

/// Result of an access check.
enum class AccessCheck : uint8_t {
  kOk,
  kBadKey,     ///< no region has this key (or it was deregistered)
  kBadPd,      ///< the region belongs to another PD
  kBadBounds,  ///< [addr, addr+len) is not inside the region
  kBadAccess,  ///< the region's access flags do not allow the operation
  kFault,      ///< on-demand region: the memory there is not mapped (or not writable)
};

class MemoryTable {
 public:
  /// Largest number of live regions (slots are 16 bits of the key).
  static constexpr uint32_t kMaxRegions = 1u << 16;  ///< ibv_device_attr.max_mr

  explicit MemoryTable(uint64_t seed);

  /// Registers a region mapping [iova, iova+len) to the caller's [addr, addr+len).
  /// EINVAL: zero length, REMOTE_WRITE/REMOTE_ATOMIC without LOCAL_WRITE, unknown access bits
  /// (kAccessZeroBased is a window's; kAccessFlushPersistent: no persistent memory domain), either
  /// range wrapping, the implicit form (addr 0, length 2^64-1) without kAccessOnDemand; EOPNOTSUPP:
  /// kAccessOnDemand where on_demand_available() is false; ENOMEM: table full.
  Result<MemoryRegion> reg(uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                           uint32_t access);
  /// reg() with iova == addr.
  Result<MemoryRegion> reg(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access) {
    return reg(pd, addr, len, addr, access);
  }
  /// Re-registers the region lkey names with a whole new description (ibv_rereg_mr(3)); its
  /// keys stay. Validated like reg(); on any error nothing changes. ENOENT: unknown key;
  /// EBUSY: a memory window is bound to it (its bounds and rights were granted against the old
  /// description).
  Status rereg(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
               uint32_t access);
  /// Deregisters by L_Key; both keys stop working at once. ENOENT: unknown key.
  Status dereg(uint32_t lkey);

  /// The live region with this key, or nullptr.
  const MemoryRegion* find_lkey(uint32_t lkey) const;
  const MemoryRegion* find_rkey(uint32_t rkey) const;

  /// Checks a local access [addr, addr+len) (iova space) through lkey for a QP of PD pd. need:
  /// Access bits (kAccessLocalWrite when the engine writes into it; 0 for reads). A zero-length
  /// access still needs a valid key.
  AccessCheck check_local(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                          uint32_t need) const;
  /// Checks a remote access [va, va+len) through rkey; need is kAccessRemoteWrite, Read or
  /// Atomic. A zero-length access is always allowed (IBA §9.4.4: no R_Key check for it).
  /// A window's rkey (kMwKeyBit) is checked against the window (bound, its range and rights,
  /// type 2 used through its own QP qpn) and the region behind it must still be live.
  AccessCheck check_remote(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len, uint32_t need,
                           uint32_t qpn) const;

  /// check_local() then the copy out of / into the region. kFault (on-demand regions): the
  /// copy stopped at an unmapped page; bytes before it may have moved.
  AccessCheck read_local(uint32_t lkey, uint32_t pd, uint64_t addr, void* dst, uint64_t len) const;
  AccessCheck write_local(uint32_t lkey, uint32_t pd, uint64_t addr, const void* src,
                          uint64_t len) const;
  /// check_remote() (kAccessRemoteRead / kAccessRemoteWrite) then the copy, as read_local.
  AccessCheck read_remote(uint32_t rkey, uint32_t pd, uint64_t va, void* dst, uint64_t len,
                          uint32_t qpn) const;
  AccessCheck write_remote(uint32_t rkey, uint32_t pd, uint64_t va, const void* src, uint64_t len,
                           uint32_t qpn) const;
  /// check_remote(kAccessRemoteAtomic) of the 8-byte word at va (8-aligned), then CMP_AND_SWP
  /// (cas) or FETCH_AND_ADD on it; *orig is the value before. kFault: an on-demand region's
  /// word is not mapped writable.
  AccessCheck atomic_remote(uint32_t rkey, uint32_t pd, uint64_t va, bool cas, uint64_t compare,
                            uint64_t swap_add, uint64_t* orig, uint32_t qpn) const;

  /// The checks of an ibv_advise_mr(3) prefetch of [addr, addr+len) through lkey for PD pd
  /// (write: PREFETCH_WRITE); the caller's address of addr. ENOENT: unknown key or another
  /// PD's; EFAULT: not inside the region; EPERM: write on a region without local write.
  Result<uint64_t> prefetch(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                            bool write) const;
  /// Faults the pages of [host, host+len) in, readable or writable, touching no byte
  /// (MADV_POPULATE_READ/WRITE). False: a page there is not mapped so.
  static bool populate(uint64_t host, uint64_t len, bool write);

  /// Whether on-demand regions can be served: the process may use process_vm_readv(2) /
  /// process_vm_writev(2) on itself (a seccomp filter may forbid them) and the kernel knows
  /// MADV_POPULATE_WRITE (Linux 5.14). Probed once.
  static bool on_demand_available();

  /// Number of live regions and windows of pd (for dealloc_pd's EBUSY).
  uint32_t count_pd(uint32_t pd) const;

  // ---- Memory windows (IBA Vol 1 §10.6.7; ibv_alloc_mw(3), ibv_bind_mw(3)) -----------------
  // A window's R_Key has kMwKeyBit set; a region's never has, so one R_Key space serves both.
  static constexpr uint32_t kMwKeyBit = 1u << 31;

  /// Allocates an unbound window. ENOMEM: kMaxMws live windows.
  Result<MemoryWindow> alloc_mw(uint32_t pd, MwType type);
  /// Frees the window this rkey names (find_mw). ENOENT: unknown.
  Status dealloc_mw(uint32_t rkey);
  /// The live window this rkey names (upper 24 bits; the low 8 may differ), or nullptr.
  const MemoryWindow* find_mw(uint32_t rkey) const;
  /// Binds the window named by mw_rkey (find_mw) through QP qpn of PD pd to
  /// [addr, addr+len) of region mr_lkey (its iova space) with access bits (remote rights, and
  /// kAccessZeroBased: remote addresses are offsets from addr), its rkey's low 8 bits becoming
  /// new_rkey's. Type 1 (ibv_bind_mw): len 0 unbinds. Type 2 (IBV_WR_BIND_MW): the window must
  /// be free (invalidated), and new_rkey must keep its upper 24 bits.
  MwResult bind_mw(uint32_t mw_rkey, uint32_t new_rkey, uint32_t qpn, uint32_t pd, uint32_t mr_lkey,
                   uint64_t addr, uint64_t len, uint32_t access);
  /// Invalidates the type 2 window with exactly this rkey bound through QP qpn (LOCAL_INV, or
  /// a SEND_WITH_INV arriving on qpn).
  MwResult invalidate_mw(uint32_t rkey, uint32_t qpn);

 private:
  struct Slot {
    MemoryRegion mr;
    uint16_t ltag = 0, rtag = 0;
  };
  /// Where a checked access lands: the caller's address, and whether it must be reached by
  /// kernel copies (on-demand region).
  struct Target {
    uint64_t host = 0;
    bool on_demand = false;
  };
  static bool in_bounds(const MemoryRegion& mr, uint64_t addr, uint64_t len);
  static Target target_of(const MemoryRegion& mr, uint64_t addr);
  AccessCheck resolve_local(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint32_t need,
                            Target* t) const;
  AccessCheck resolve_remote(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len, uint32_t need,
                             uint32_t qpn, Target* t) const;
  static Result<MemoryRegion> validate(uint64_t addr, uint64_t len, uint64_t iova, uint32_t access);
  uint32_t make_key(uint32_t slot, uint16_t tag, bool remote) const;
  /// Slot and tag a key decodes to.
  void decode(uint32_t key, bool remote, uint32_t* slot, uint16_t* tag) const;
  uint16_t next_tag();

  struct MwSlot {
    MemoryWindow mw;
    uint8_t gen = 0;  ///< 7 bits in the rkey: a re-used slot's old rkeys stop matching
  };
  AccessCheck check_mw(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len, uint32_t need,
                       uint32_t qpn, Target* t) const;
  MemoryWindow* mw_at(uint32_t rkey);

  std::vector<Slot> slots_;
  std::vector<MwSlot> mws_;
  std::vector<uint32_t> mw_free_;
  std::vector<uint32_t> free_;  ///< free slot indices (LIFO)
  uint64_t rng_;
  uint32_t lxor_, rxor_;
};

}  // namespace uroce::transport
