/**
 * @file memory_table.cc
 * @brief Memory region table: key generation and access checks (see memory_table.h).
 */
#include "transport/memory_table.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 (uapi/asm-generic/mman-common.h)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

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

// No persistence rights (kAccessFlushPersistent): uroce has no persistent memory domain.
constexpr uint32_t kKnownAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                                  kAccessRemoteAtomic | kAccessMwBind | kAccessOnDemand |
                                  kAccessFlushGlobal;
constexpr uint32_t kRemoteAccess = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

constexpr uint32_t kNoSlot = ~0u;

/// A free slot of v (the last freed first), or a new one below max; kNoSlot when full.
template <typename S>
uint32_t take_slot(std::vector<S>& v, std::vector<uint32_t>& free, uint32_t max) {
  if (!free.empty()) {
    const uint32_t slot = free.back();
    free.pop_back();
    return slot;
  }
  if (v.size() >= max) return kNoSlot;
  v.emplace_back();
  return static_cast<uint32_t>(v.size() - 1);
}

/// Copies len bytes between this process's buffer `local` and its address `host` through the
/// kernel (process_vm_readv/writev on the own pid): an unmapped or (write) read-only page
/// there ends the copy with EFAULT instead of a signal. False when not every byte moved.
bool kernel_copy(void* local, uint64_t host, uint64_t len, bool to_host) {
  const pid_t self = getpid();
  while (len > 0) {
    iovec l{local, len};
    iovec r{reinterpret_cast<void*>(host), len};
    const ssize_t n = to_host ? process_vm_writev(self, &l, 1, &r, 1, 0)
                              : process_vm_readv(self, &l, 1, &r, 1, 0);
    if (n <= 0) return false;
    local = static_cast<uint8_t*>(local) + n;
    host += static_cast<uint64_t>(n);
    len -= static_cast<uint64_t>(n);
  }
  return true;
}

/// Faults [host, host+len) in (readable, or writable when write) with MADV_POPULATE_READ/WRITE
/// without touching a byte; false when a page there is not mapped so (ENOMEM, EFAULT, EINVAL).
bool populate_pages(uint64_t host, uint64_t len, bool write) {
  if (len == 0) return true;
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t first = host & ~(page - 1);
  const uint64_t end = host + len;  // no wrap: callers pass ranges inside a region
  int r;
  do {
    r = madvise(reinterpret_cast<void*>(first), end - first,
                write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
  } while (r != 0 && errno == EINTR);
  return r == 0;
}

}  // namespace

bool MemoryTable::on_demand_available() {
  static const bool ok = [] {
    uint64_t from = 0x0123456789abcdefull, to = 0;
    alignas(4096) static uint8_t page[4096];
    return kernel_copy(&to, reinterpret_cast<uintptr_t>(&from), sizeof to, false) && to == from &&
           kernel_copy(&from, reinterpret_cast<uintptr_t>(&to), sizeof to, true) &&
           populate_pages(reinterpret_cast<uintptr_t>(page), sizeof page, true);
  }();
  return ok;
}

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

Result<MemoryRegion> MemoryTable::validate(uint64_t addr, uint64_t len, uint64_t iova,
                                           uint32_t access) {
  if (len == 0 || (access & ~kKnownAccess) != 0) return Status::invalid();
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(access & kAccessLocalWrite))
    return Status::invalid();  // IBA §10.6.3.1 / ibv_reg_mr(3)
  if (addr + len < addr || iova + len < iova) return Status::invalid();
  // The implicit form (addr 0, the whole address space) is on-demand only: without the kernel
  // copies an access to unmapped memory would fault the process (the kernel refuses it too).
  if (addr == 0 && len == ~0ull && !(access & kAccessOnDemand)) return Status::invalid();
  if ((access & kAccessOnDemand) && !on_demand_available()) return Status::unsupported();
  MemoryRegion mr;
  mr.addr = addr;
  mr.len = len;
  mr.iova = iova;
  mr.access = access;
  return mr;
}

Result<MemoryRegion> MemoryTable::reg(uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                                      uint32_t access) {
  auto v = validate(addr, len, iova, access);
  if (!v) return v.status();
  const uint32_t slot = take_slot(slots_, free_, kMaxRegions);
  if (slot == kNoSlot) return Status::no_memory();
  Slot& s = slots_[slot];
  // Fresh tags; never let the keys equal 0 (some applications treat 0 as "no key"), and keep
  // kMwKeyBit of the R_Key clear (windows' R_Keys have it).
  do {
    s.ltag = next_tag();
    s.rtag = next_tag();
  } while (make_key(slot, s.ltag, false) == 0 || make_key(slot, s.rtag, true) == 0 ||
           (make_key(slot, s.rtag, true) & kMwKeyBit));
  s.mr = *v;
  s.mr.pd = pd;
  s.mr.lkey = make_key(slot, s.ltag, false);
  s.mr.rkey = make_key(slot, s.rtag, true);
  s.mr.live = true;
  return s.mr;
}

Status MemoryTable::rereg(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                          uint32_t access) {
  if (!find_lkey(lkey)) return Status::not_found();
  auto v = validate(addr, len, iova, access);
  if (!v) return v.status();
  for (const MwSlot& w : mws_)
    if (w.mw.live && w.mw.state == MemoryWindow::State::kValid && w.mw.mr_lkey == lkey)
      return Status::busy();
  uint32_t slot;
  uint16_t tag;
  decode(lkey, false, &slot, &tag);
  MemoryRegion& mr = slots_[slot].mr;
  mr.addr = v->addr;
  mr.len = v->len;
  mr.iova = v->iova;
  mr.access = v->access;
  mr.pd = pd;
  return Status::ok();
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
  if (rkey & kMwKeyBit) return nullptr;
  uint32_t slot;
  uint16_t tag;
  decode(rkey, true, &slot, &tag);
  if (slot >= slots_.size()) return nullptr;
  const Slot& s = slots_[slot];
  return (s.mr.live && s.rtag == tag) ? &s.mr : nullptr;
}

bool MemoryTable::in_bounds(const MemoryRegion& mr, uint64_t addr, uint64_t len) {
  // Overflow-safe, in iova space: addr >= mr.iova and addr + len <= mr.iova + mr.len.
  if (addr < mr.iova) return false;
  uint64_t off = addr - mr.iova;
  return len <= mr.len && off <= mr.len - len;
}

MemoryTable::Target MemoryTable::target_of(const MemoryRegion& mr, uint64_t addr) {
  return Target{mr.addr + (addr - mr.iova), (mr.access & kAccessOnDemand) != 0};
}

AccessCheck MemoryTable::resolve_local(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                                       uint32_t need, Target* t) const {
  const MemoryRegion* mr = find_lkey(lkey);
  if (!mr) return AccessCheck::kBadKey;
  if (mr->pd != pd) return AccessCheck::kBadPd;
  if (!in_bounds(*mr, addr, len)) return AccessCheck::kBadBounds;
  if ((mr->access & need) != need) return AccessCheck::kBadAccess;
  if (t) *t = target_of(*mr, addr);
  return AccessCheck::kOk;
}

AccessCheck MemoryTable::resolve_remote(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len,
                                        uint32_t need, uint32_t qpn, Target* t) const {
  if (len == 0) return AccessCheck::kOk;
  if (rkey & kMwKeyBit) return check_mw(rkey, pd, va, len, need, qpn, t);
  const MemoryRegion* mr = find_rkey(rkey);
  if (!mr) return AccessCheck::kBadKey;
  if (mr->pd != pd) return AccessCheck::kBadPd;
  if (!in_bounds(*mr, va, len)) return AccessCheck::kBadBounds;
  if ((mr->access & need) != need) return AccessCheck::kBadAccess;
  if (t) *t = target_of(*mr, va);
  return AccessCheck::kOk;
}

AccessCheck MemoryTable::check_local(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                                     uint32_t need) const {
  return resolve_local(lkey, pd, addr, len, need, nullptr);
}

AccessCheck MemoryTable::check_remote(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len,
                                      uint32_t need, uint32_t qpn) const {
  return resolve_remote(rkey, pd, va, len, need, qpn, nullptr);
}

namespace {

/// Copies len bytes from the caller's address host (an on-demand region's through the kernel).
AccessCheck copy_out(uint64_t host, bool on_demand, void* dst, uint64_t len) {
  if (len == 0) return AccessCheck::kOk;
  if (!on_demand) {
    std::memcpy(dst, reinterpret_cast<const void*>(host), len);
    return AccessCheck::kOk;
  }
  return kernel_copy(dst, host, len, false) ? AccessCheck::kOk : AccessCheck::kFault;
}

/// Copies len bytes to the caller's address host, as copy_out, with the last byte written
/// last and once: every byte before it is in place when it appears, and none of the copy's
/// bytes is written after it. A program that polls the last byte of a WRITE (riostream,
/// ib_write_lat) and then writes into the same buffer relies on that, as a NIC's placement
/// gives it; memcpy does not: glibc's writes some sizes twice (AVX-512: two 64-byte stores of
/// the same bytes for a 64-byte copy, two 8-byte stores for an 8-byte one) and stores the tail
/// of others before their head. A placing thread preempted between two such stores let the
/// program see the byte, write its own value there, and then lose it to the second store
/// (issue 31: riostream's 64-byte latency test hung, each side waiting for the other's
/// marker).
AccessCheck copy_in(uint64_t host, bool on_demand, const void* src, uint64_t len) {
  if (len == 0) return AccessCheck::kOk;
  const auto* from = static_cast<const uint8_t*>(src);
  if (!on_demand) {
    auto* to = reinterpret_cast<uint8_t*>(host);
    std::memcpy(to, from, len - 1);
    std::atomic_ref<uint8_t>(to[len - 1]).store(from[len - 1], std::memory_order_release);
    return AccessCheck::kOk;
  }
  if (len > 1 && !kernel_copy(const_cast<uint8_t*>(from), host, len - 1, true))
    return AccessCheck::kFault;
  return kernel_copy(const_cast<uint8_t*>(from + len - 1), host + len - 1, 1, true)
             ? AccessCheck::kOk
             : AccessCheck::kFault;
}

}  // namespace

AccessCheck MemoryTable::read_local(uint32_t lkey, uint32_t pd, uint64_t addr, void* dst,
                                    uint64_t len) const {
  Target t;
  AccessCheck c = resolve_local(lkey, pd, addr, len, 0, &t);
  return c == AccessCheck::kOk ? copy_out(t.host, t.on_demand, dst, len) : c;
}

AccessCheck MemoryTable::write_local(uint32_t lkey, uint32_t pd, uint64_t addr, const void* src,
                                     uint64_t len) const {
  Target t;
  AccessCheck c = resolve_local(lkey, pd, addr, len, kAccessLocalWrite, &t);
  return c == AccessCheck::kOk ? copy_in(t.host, t.on_demand, src, len) : c;
}

AccessCheck MemoryTable::read_remote(uint32_t rkey, uint32_t pd, uint64_t va, void* dst,
                                     uint64_t len, uint32_t qpn) const {
  if (len == 0) return AccessCheck::kOk;
  Target t;
  AccessCheck c = resolve_remote(rkey, pd, va, len, kAccessRemoteRead, qpn, &t);
  return c == AccessCheck::kOk ? copy_out(t.host, t.on_demand, dst, len) : c;
}

AccessCheck MemoryTable::write_remote(uint32_t rkey, uint32_t pd, uint64_t va, const void* src,
                                      uint64_t len, uint32_t qpn) const {
  if (len == 0) return AccessCheck::kOk;
  Target t;
  AccessCheck c = resolve_remote(rkey, pd, va, len, kAccessRemoteWrite, qpn, &t);
  return c == AccessCheck::kOk ? copy_in(t.host, t.on_demand, src, len) : c;
}

AccessCheck MemoryTable::atomic_remote(uint32_t rkey, uint32_t pd, uint64_t va, bool cas,
                                       uint64_t compare, uint64_t swap_add, uint64_t* orig,
                                       uint32_t qpn) const {
  Target t;
  AccessCheck c = resolve_remote(rkey, pd, va, 8, kAccessRemoteAtomic, qpn, &t);
  if (c != AccessCheck::kOk) return c;
  if (t.host % 8 != 0) return AccessCheck::kBadBounds;  // an iova offset can misalign it
  // An on-demand word is made present and writable first; unmapping it concurrently from
  // another thread is the application's race, as with any registered memory.
  if (t.on_demand && !populate_pages(t.host, 8, true)) return AccessCheck::kFault;
  std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t*>(t.host));
  if (cas) {
    uint64_t expected = compare;
    target.compare_exchange_strong(expected, swap_add);
    *orig = expected;
  } else {
    *orig = target.fetch_add(swap_add);
  }
  return AccessCheck::kOk;
}

Result<uint64_t> MemoryTable::prefetch(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len,
                                       bool write) const {
  const MemoryRegion* mr = find_lkey(lkey);
  if (!mr || mr->pd != pd) return Status::not_found();
  if (!in_bounds(*mr, addr, len)) return Status(EFAULT);
  if (write && !(mr->access & kAccessLocalWrite)) return Status(EPERM);
  return target_of(*mr, addr).host;
}

bool MemoryTable::populate(uint64_t host, uint64_t len, bool write) {
  return populate_pages(host, len, write);
}

uint32_t MemoryTable::count_pd(uint32_t pd) const {
  uint32_t n = 0;
  for (const Slot& s : slots_)
    if (s.mr.live && s.mr.pd == pd) ++n;
  for (const MwSlot& s : mws_)
    if (s.mw.live && s.mw.pd == pd) ++n;
  return n;
}

// ---- Memory windows -------------------------------------------------------------------------
// R_Key layout: kMwKeyBit | gen (7 bits) << 24 | slot (16 bits) << 8 | key (8 bits).

Result<MemoryWindow> MemoryTable::alloc_mw(uint32_t pd, MwType type) {
  const uint32_t slot = take_slot(mws_, mw_free_, kMaxMws);
  if (slot == kNoSlot) return Status::no_memory();
  MwSlot& s = mws_[slot];
  s.gen = static_cast<uint8_t>((s.gen + 1) & 0x7f);
  const uint32_t key = static_cast<uint8_t>(next_tag());
  s.mw = MemoryWindow{};
  s.mw.type = type;
  s.mw.pd = pd;
  s.mw.rkey = kMwKeyBit | uint32_t{s.gen} << 24 | slot << 8 | key;
  s.mw.live = true;
  return s.mw;
}

MemoryWindow* MemoryTable::mw_at(uint32_t rkey) {
  if (!(rkey & kMwKeyBit)) return nullptr;
  const uint32_t slot = (rkey >> 8) & 0xffffu;
  if (slot >= mws_.size()) return nullptr;
  MwSlot& s = mws_[slot];
  if (!s.mw.live || (s.mw.rkey >> 8) != (rkey >> 8)) return nullptr;
  return &s.mw;
}

const MemoryWindow* MemoryTable::find_mw(uint32_t rkey) const {
  return const_cast<MemoryTable*>(this)->mw_at(rkey);
}

Status MemoryTable::dealloc_mw(uint32_t rkey) {
  MemoryWindow* mw = mw_at(rkey);
  if (!mw) return Status::not_found();
  mw->live = false;
  mw_free_.push_back((rkey >> 8) & 0xffffu);
  return Status::ok();
}

MwResult MemoryTable::bind_mw(uint32_t mw_rkey, uint32_t new_rkey, uint32_t qpn, uint32_t pd,
                              uint32_t mr_lkey, uint64_t addr, uint64_t len, uint32_t access) {
  MemoryWindow* mw = mw_at(mw_rkey);
  if (!mw || mw->pd != pd) return MwResult::kBadMw;
  if ((new_rkey >> 8) != (mw_rkey >> 8)) return MwResult::kBadMw;
  if ((access & ~(kRemoteAccess | kAccessZeroBased)) != 0) return MwResult::kBadAccess;
  if (mw->type == MwType::kType2) {
    // IBA §10.6.7.2.2: a type 2 window is bound only while free (after an invalidation).
    if (mw->state != MemoryWindow::State::kFree || len == 0) return MwResult::kBadMw;
  }
  if (len != 0) {
    const MemoryRegion* mr = find_lkey(mr_lkey);
    if (!mr || mr->pd != pd) return MwResult::kBadMr;
    if (!(mr->access & kAccessMwBind)) return MwResult::kNoMwBind;
    if (!in_bounds(*mr, addr, len)) return MwResult::kBadBounds;
    // ibv_bind_mw(3): remote write and remote atomic require the region's local write.
    if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) && !(mr->access & kAccessLocalWrite))
      return MwResult::kBadAccess;
  }
  mw->rkey = new_rkey;
  if (len == 0) {  // type 1 unbind: the window stays allocated, reaching nothing
    mw->state = MemoryWindow::State::kFree;
    mw->mr_lkey = 0;
    mw->addr = mw->len = 0;
    mw->access = 0;
    return MwResult::kOk;
  }
  mw->state = MemoryWindow::State::kValid;
  mw->mr_lkey = mr_lkey;
  mw->addr = addr;
  mw->len = len;
  mw->access = access;
  mw->qpn = mw->type == MwType::kType2 ? qpn : 0;
  return MwResult::kOk;
}

MwResult MemoryTable::invalidate_mw(uint32_t rkey, uint32_t qpn) {
  MemoryWindow* mw = mw_at(rkey);
  // Only type 2 windows are invalidated (a type 1 window by a bind only), with the exact
  // current rkey, through the QP they are bound through (IBA §10.6.7.2.4).
  if (!mw || mw->rkey != rkey || mw->type != MwType::kType2 ||
      mw->state != MemoryWindow::State::kValid || mw->qpn != qpn)
    return MwResult::kBadMw;
  mw->state = MemoryWindow::State::kFree;
  mw->mr_lkey = 0;
  mw->addr = mw->len = 0;
  mw->access = 0;
  return MwResult::kOk;
}

AccessCheck MemoryTable::check_mw(uint32_t rkey, uint32_t pd, uint64_t va, uint64_t len,
                                  uint32_t need, uint32_t qpn, Target* t) const {
  const MemoryWindow* mw = find_mw(rkey);
  if (!mw || mw->rkey != rkey || mw->state != MemoryWindow::State::kValid)
    return AccessCheck::kBadKey;
  if (mw->pd != pd) return AccessCheck::kBadPd;
  if (mw->type == MwType::kType2 && mw->qpn != qpn) return AccessCheck::kBadKey;  // type 2B
  // A zero-based window's va is an offset from its start (ibv_bind_mw(3)).
  const uint64_t start = (mw->access & kAccessZeroBased) ? 0 : mw->addr;
  if (va < start || len > mw->len || va - start > mw->len - len) return AccessCheck::kBadBounds;
  if ((mw->access & need) != need) return AccessCheck::kBadAccess;
  const uint64_t mr_va = mw->addr + (va - start);  // in the region's iova space
  // The region behind the window must still be registered.
  const MemoryRegion* mr = find_lkey(mw->mr_lkey);
  if (!mr || mr->pd != pd || !in_bounds(*mr, mr_va, len)) return AccessCheck::kBadKey;
  if (t) *t = target_of(*mr, mr_va);
  return AccessCheck::kOk;
}

}  // namespace uroce::transport
