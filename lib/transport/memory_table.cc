/**
 * @file memory_table.cc
 * @brief Memory region table: key generation and access checks (see memory_table.h).
 */
#include "transport/memory_table.h"

namespace uroce::transport {

namespace {

// lowbias32 (a well-mixing invertible 32-bit hash) and its inverse; the multipliers' inverses
// modulo 2^32 are computed at compile time by Newton iteration.
constexpr uint32_t kMul1 = 0x7feb352du;
constexpr uint32_t kMul2 = 0x846ca68bu;

constexpr uint32_t mod_inverse(uint32_t a) {
  uint32_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 5; ++i) x *= 2u - a * x;
  return x;
}
constexpr uint32_t kInv1 = mod_inverse(kMul1);
constexpr uint32_t kInv2 = mod_inverse(kMul2);
static_assert(kMul1 * kInv1 == 1u && kMul2 * kInv2 == 1u);

constexpr uint32_t mix(uint32_t x) {
  x ^= x >> 16;
  x *= kMul1;
  x ^= x >> 15;
  x *= kMul2;
  x ^= x >> 16;
  return x;
}
constexpr uint32_t unxorshift15(uint32_t x) { return x ^ (x >> 15) ^ (x >> 30); }
constexpr uint32_t unmix(uint32_t x) {
  x ^= x >> 16;
  x *= kInv2;
  x = unxorshift15(x);
  x *= kInv1;
  x ^= x >> 16;
  return x;
}
static_assert(unmix(mix(0x12345678u)) == 0x12345678u);
static_assert(unmix(mix(0xffff0001u)) == 0xffff0001u);

uint64_t splitmix64(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

constexpr uint32_t kKnownAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

}  // namespace

MemoryTable::MemoryTable(uint64_t seed) : rng_(seed) {
  uint64_t x = splitmix64(&rng_);
  lxor_ = static_cast<uint32_t>(x);
  rxor_ = static_cast<uint32_t>(x >> 32);
  if (lxor_ == rxor_) rxor_ ^= 0x5a5a5a5au;
}

uint16_t MemoryTable::next_tag() { return static_cast<uint16_t>(splitmix64(&rng_)); }

uint32_t MemoryTable::make_key(uint32_t slot, uint16_t tag, bool remote) const {
  return mix(slot | (uint32_t{tag} << 16)) ^ (remote ? rxor_ : lxor_);
}

void MemoryTable::decode(uint32_t key, bool remote, uint32_t* slot, uint16_t* tag) const {
  uint32_t x = unmix(key ^ (remote ? rxor_ : lxor_));
  *slot = x & 0xffffu;
  *tag = static_cast<uint16_t>(x >> 16);
}

Result<MemoryRegion> MemoryTable::reg(uint32_t pd, uint64_t addr, uint64_t len, uint32_t access) {
  if (len == 0 || (access & ~kKnownAccess) != 0) return Status::invalid();
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite))
    return Status::invalid();  // IBA §10.6.3.1 / ibv_reg_mr(3)
  if (addr + len < addr) return Status::invalid();
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    if (slots_.size() >= kMaxRegions) return Status::no_memory();
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  // Fresh tags; never let the keys equal 0 (some applications treat 0 as "no key").
  do {
    s.ltag = next_tag();
    s.rtag = next_tag();
  } while (make_key(slot, s.ltag, false) == 0 || make_key(slot, s.rtag, true) == 0);
  s.mr = MemoryRegion{
      addr, len, access, pd, make_key(slot, s.ltag, false), make_key(slot, s.rtag, true), true};
  return s.mr;
}

Status MemoryTable::dereg(uint32_t lkey) {
  uint32_t slot;
  uint16_t tag;
  decode(lkey, false, &slot, &tag);
  if (slot >= slots_.size() || !slots_[slot].mr.live || slots_[slot].ltag != tag)
    return Status::not_found();
  slots_[slot].mr.live = false;
  free_.push_back(slot);
  return Status::ok();
}

const MemoryRegion* MemoryTable::find_lkey(uint32_t lkey) const {
  uint32_t slot;
  uint16_t tag;
  decode(lkey, false, &slot, &tag);
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  return (s.mr.live && s.ltag == tag) ? &s.mr : nullptr;
}

const MemoryRegion* MemoryTable::find_rkey(uint32_t rkey) const {
  uint32_t slot;
  uint16_t tag;
  decode(rkey, true, &slot, &tag);
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  return (s.mr.live && s.rtag == tag) ? &s.mr : nullptr;
}

bool MemoryTable::in_bounds(const MemoryRegion& mr, uint64_t addr, uint64_t len) {
  // Overflow-safe: addr >= mr.addr and addr + len <= mr.addr + mr.len.
  if (addr < mr.addr) return false;
  uint64_t off = addr - mr.addr;
  return len <= mr.len && off <= mr.len - len;
}

AccessCheck MemoryTable::check_local(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                                     uint32_t need) const {
  const MemoryRegion* mr = find_lkey(lkey);
  if (!mr) return AccessCheck::kBadKey;
  if (mr->pd != pd) return AccessCheck::kBadPd;
  if (!in_bounds(*mr, addr, len)) return AccessCheck::kBadBounds;
  if ((mr->access & need) != need) return AccessCheck::kBadAccess;
  return AccessCheck::kOk;
}

AccessCheck MemoryTable::check_remote(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len,
                                      uint32_t need) const {
  if (len == 0) return AccessCheck::kOk;
  const MemoryRegion* mr = find_rkey(rkey);
  if (!mr) return AccessCheck::kBadKey;
  if (mr->pd != pd) return AccessCheck::kBadPd;
  if (!in_bounds(*mr, va, len)) return AccessCheck::kBadBounds;
  if ((mr->access & need) != need) return AccessCheck::kBadAccess;
  return AccessCheck::kOk;
}

uint32_t MemoryTable::count_pd(uint32_t pd) const {
  uint32_t n = 0;
  for (const Slot& s : slots_)
    if (s.mr.live && s.mr.pd == pd) ++n;
  return n;
}

}  // namespace uroce::transport
