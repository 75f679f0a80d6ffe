/**
 * @file memory_table_test.cc
 * @brief Memory region keys and the bounds/access checks (IBA Vol 1 §10.6); regions at an
 * iova of their own (ibv_reg_mr_iova(3)), re-registration (ibv_rereg_mr(3)), on-demand regions
 * whose copies fail on memory that is not there, prefetch checks (ibv_advise_mr(3)).
 */
#include "transport/memory_table.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <vector>

namespace uroce::transport {
namespace {

constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

TEST(MemoryTableTest, RegistrationRules) {
  MemoryTable t(1);
  EXPECT_EQ(t.reg(1, 0x1000, 0, kAll).status(), Status::invalid());  // zero length
  EXPECT_EQ(t.reg(1, 0x1000, 64, kAccessRemoteWrite).status(), Status::invalid());
  EXPECT_EQ(t.reg(1, 0x1000, 64, kAccessRemoteAtomic).status(), Status::invalid());
  EXPECT_EQ(t.reg(1, ~0ull - 10, 64, 0).status(), Status::invalid());  // wraps
  EXPECT_TRUE(t.reg(1, 0x1000, 64, kAccessRemoteRead));                // read needs no LW
}

TEST(MemoryTableTest, KeysAreDistinctAndDecode) {
  MemoryTable t(42);
  std::set<uint32_t> keys;
  for (int i = 0; i < 1000; ++i) {
    auto r = t.reg(1, 0x1000 + i, 64, kAll);
    ASSERT_TRUE(r);
    EXPECT_NE(r->lkey, r->rkey);
    EXPECT_TRUE(keys.insert(r->lkey).second);
    EXPECT_TRUE(keys.insert(r->rkey).second);
    ASSERT_NE(t.find_lkey(r->lkey), nullptr);
    EXPECT_EQ(t.find_lkey(r->lkey)->addr, 0x1000u + i);
    ASSERT_NE(t.find_rkey(r->rkey), nullptr);
    // An lkey is not an rkey.
    EXPECT_EQ(t.find_rkey(r->lkey), nullptr);
  }
  // Not sequential: consecutive registrations differ in many bits.
  auto a = t.reg(1, 0, 8, 0), b = t.reg(1, 0, 8, 0);
  EXPECT_GT(__builtin_popcount(a->rkey ^ b->rkey), 4);
}

TEST(MemoryTableTest, DeregKillsKeysAtOnceAndSlotReuseGetsNewKeys) {
  MemoryTable t(7);
  auto r = t.reg(1, 0x1000, 64, kAll);
  ASSERT_TRUE(r);
  EXPECT_TRUE(t.dereg(r->lkey));
  EXPECT_EQ(t.find_lkey(r->lkey), nullptr);
  EXPECT_EQ(t.find_rkey(r->rkey), nullptr);
  EXPECT_EQ(t.check_remote(r->rkey, 1, 0x1000, 8, kAccessRemoteWrite, 0), AccessCheck::kBadKey);
  EXPECT_EQ(t.dereg(r->lkey), Status::not_found());
  auto r2 = t.reg(1, 0x1000, 64, kAll);
  ASSERT_TRUE(r2);
  EXPECT_NE(r2->rkey, r->rkey);
  EXPECT_EQ(t.find_rkey(r->rkey), nullptr);  // the old key stays dead on the reused slot
}

TEST(MemoryTableTest, BoundsAndAccess) {
  MemoryTable t(3);
  auto r = t.reg(5, 1000, 100, kAccessLocalWrite | kAccessRemoteRead);
  ASSERT_TRUE(r);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 1000, 100, kAccessRemoteRead, 0), AccessCheck::kOk);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 1099, 1, kAccessRemoteRead, 0), AccessCheck::kOk);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 1099, 2, kAccessRemoteRead, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 999, 1, kAccessRemoteRead, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 1000, ~0ull, kAccessRemoteRead, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.check_remote(r->rkey, 5, ~0ull, 2, kAccessRemoteRead, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.check_remote(r->rkey, 5, 1000, 8, kAccessRemoteWrite, 0), AccessCheck::kBadAccess);
  EXPECT_EQ(t.check_remote(r->rkey, 6, 1000, 8, kAccessRemoteRead, 0), AccessCheck::kBadPd);
  EXPECT_EQ(t.check_remote(r->rkey ^ 1, 5, 1000, 8, kAccessRemoteRead, 0), AccessCheck::kBadKey);
  // Zero-length remote access needs no valid key (IBA §9.4.4).
  EXPECT_EQ(t.check_remote(0xdeadbeef, 5, 0, 0, kAccessRemoteWrite, 0), AccessCheck::kOk);
  EXPECT_EQ(t.check_local(r->lkey, 5, 1000, 100, kAccessLocalWrite), AccessCheck::kOk);
  EXPECT_EQ(t.check_local(r->lkey, 5, 1000, 101, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.count_pd(5), 1u);
  EXPECT_EQ(t.count_pd(6), 0u);
}

uint64_t addr_of(const void* p) { return reinterpret_cast<uintptr_t>(p); }

TEST(MemoryTableTest, IovaRegionIsCheckedInIovaSpaceAndCopiesAtTheBuffer) {
  MemoryTable t(9);
  std::vector<uint8_t> buf(64, 0);
  const uint64_t iova = 0x10000;
  auto r = t.reg(1, addr_of(buf.data()), 64, iova, kAll);
  ASSERT_TRUE(r);
  EXPECT_EQ(t.check_remote(r->rkey, 1, iova, 64, kAccessRemoteWrite, 0), AccessCheck::kOk);
  EXPECT_EQ(t.check_remote(r->rkey, 1, addr_of(buf.data()), 8, kAccessRemoteWrite, 0),
            AccessCheck::kBadBounds);
  const uint8_t src[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(t.write_remote(r->rkey, 1, iova + 8, src, 8, 0), AccessCheck::kOk);
  EXPECT_EQ(0, std::memcmp(buf.data() + 8, src, 8));
  // Crossing the end: refused before a byte moves.
  std::vector<uint8_t> before = buf;
  EXPECT_EQ(t.write_remote(r->rkey, 1, iova + 60, src, 8, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(before, buf);
  uint8_t out[8] = {};
  EXPECT_EQ(t.read_local(r->lkey, 1, iova + 8, out, 8), AccessCheck::kOk);
  EXPECT_EQ(0, std::memcmp(out, src, 8));
  EXPECT_EQ(t.write_local(r->lkey, 1, iova + 57, src, 8), AccessCheck::kBadBounds);
  uint64_t orig = 0;
  std::memset(buf.data() + 16, 0, 8);
  EXPECT_EQ(t.atomic_remote(r->rkey, 1, iova + 16, false, 0, 5, &orig, 0), AccessCheck::kOk);
  EXPECT_EQ(buf[16], 5);
  // An iova whose range would wrap is refused.
  EXPECT_EQ(t.reg(1, addr_of(buf.data()), 64, ~0ull - 10, kAll).status(), Status::invalid());
}

TEST(MemoryTableTest, ReregChangesEverythingButTheKeys) {
  MemoryTable t(10);
  std::vector<uint8_t> a(64, 0), b(128, 0);
  auto r = t.reg(1, addr_of(a.data()), 64, kAccessLocalWrite);
  ASSERT_TRUE(r);
  ASSERT_TRUE(t.rereg(r->lkey, 2, addr_of(b.data()), 128, 0, kAll));
  const MemoryRegion* m = t.find_rkey(r->rkey);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->lkey, r->lkey);
  EXPECT_EQ(m->addr, addr_of(b.data()));
  EXPECT_EQ(m->iova, 0u);
  EXPECT_EQ(m->pd, 2u);
  const uint8_t x = 0x7e;
  EXPECT_EQ(t.write_remote(r->rkey, 1, 100, &x, 1, 0), AccessCheck::kBadPd);
  EXPECT_EQ(t.write_remote(r->rkey, 2, 100, &x, 1, 0), AccessCheck::kOk);
  EXPECT_EQ(b[100], 0x7e);
  // Invalid descriptions change nothing.
  EXPECT_EQ(t.rereg(r->lkey, 2, addr_of(a.data()), 64, 0, kAccessRemoteWrite), Status::invalid());
  EXPECT_EQ(t.rereg(r->lkey, 2, addr_of(a.data()), 0, 0, kAll), Status::invalid());
  EXPECT_EQ(t.rereg(r->lkey ^ 1, 2, addr_of(a.data()), 64, 0, kAll), Status::not_found());
  EXPECT_EQ(m->addr, addr_of(b.data()));
  EXPECT_EQ(m->access, kAll);
}

TEST(MemoryTableTest, ReregWithABoundWindowIsBusy) {
  MemoryTable t(11);
  auto r = t.reg(1, 0x1000, 4096, kAll | kAccessMwBind);
  ASSERT_TRUE(r);
  auto w = t.alloc_mw(1, MwType::kType1);
  ASSERT_TRUE(w);
  const uint32_t key = (w->rkey & ~0xffu) | ((w->rkey + 1) & 0xffu);
  ASSERT_EQ(t.bind_mw(w->rkey, key, 0, 1, r->lkey, 0x1000, 64, kAccessRemoteWrite), MwResult::kOk);
  EXPECT_EQ(t.rereg(r->lkey, 1, 0x1000, 4096, 0x1000, kAccessLocalWrite), Status::busy());
  EXPECT_EQ(t.check_remote(key, 1, 0x1000, 64, kAccessRemoteWrite, 0), AccessCheck::kOk);
}

TEST(MemoryTableTest, ZeroBasedWindowTakesOffsetsIntoItself) {
  MemoryTable t(12);
  std::vector<uint8_t> buf(4096, 0);
  auto r = t.reg(1, addr_of(buf.data()), 4096, 0x50000, kAll | kAccessMwBind);
  ASSERT_TRUE(r);
  auto w = t.alloc_mw(1, MwType::kType1);
  ASSERT_TRUE(w);
  const uint32_t key = (w->rkey & ~0xffu) | ((w->rkey + 1) & 0xffu);
  ASSERT_EQ(t.bind_mw(w->rkey, key, 0, 1, r->lkey, 0x50000 + 1024, 256,
                      kAccessRemoteWrite | kAccessZeroBased),
            MwResult::kOk);
  const uint8_t x = 9;
  EXPECT_EQ(t.write_remote(key, 1, 10, &x, 1, 0), AccessCheck::kOk);
  EXPECT_EQ(buf[1024 + 10], 9);
  EXPECT_EQ(t.write_remote(key, 1, 256, &x, 1, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.write_remote(key, 1, 0x50000 + 1024, &x, 1, 0), AccessCheck::kBadBounds);
  // A window without ZERO_BASED takes the region's iovas.
  auto w2 = t.alloc_mw(1, MwType::kType1);
  ASSERT_TRUE(w2);
  const uint32_t key2 = (w2->rkey & ~0xffu) | ((w2->rkey + 1) & 0xffu);
  ASSERT_EQ(t.bind_mw(w2->rkey, key2, 0, 1, r->lkey, 0x50000 + 2048, 256, kAccessRemoteWrite),
            MwResult::kOk);
  EXPECT_EQ(t.write_remote(key2, 1, 0x50000 + 2048 + 5, &x, 1, 0), AccessCheck::kOk);
  EXPECT_EQ(buf[2048 + 5], 9);
  EXPECT_EQ(t.write_remote(key2, 1, 5, &x, 1, 0), AccessCheck::kBadBounds);
  EXPECT_EQ(t.write_remote(key2, 1, addr_of(buf.data()) + 2048, &x, 1, 0), AccessCheck::kBadBounds);
}

TEST(MemoryTableTest, OnDemandCopiesFailOnUnmappedMemoryWithoutASignal) {
  ASSERT_TRUE(MemoryTable::on_demand_available());
  MemoryTable t(13);
  // Implicit: the whole address space; on demand only.
  EXPECT_EQ(t.reg(1, 0, ~0ull, kAll).status(), Status::invalid());
  auto r = t.reg(1, 0, ~0ull, kAll | kAccessOnDemand);
  ASSERT_TRUE(r);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* p = static_cast<uint8_t*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(munmap(p + page, page), 0);  // the second page is gone
  const uint64_t a = addr_of(p);
  const std::vector<uint8_t> src(64, 0x44);
  EXPECT_EQ(t.write_remote(r->rkey, 1, a + 8, src.data(), 64, 0), AccessCheck::kOk);
  EXPECT_EQ(p[8], 0x44);
  EXPECT_EQ(t.write_remote(r->rkey, 1, a + page, src.data(), 8, 0), AccessCheck::kFault);
  EXPECT_EQ(t.write_remote(r->rkey, 1, a + page - 4, src.data(), 8, 0), AccessCheck::kFault);
  std::vector<uint8_t> out(8);
  EXPECT_EQ(t.read_remote(r->rkey, 1, a + page, out.data(), 8, 0), AccessCheck::kFault);
  EXPECT_EQ(t.read_local(r->lkey, 1, a + page, out.data(), 8), AccessCheck::kFault);
  EXPECT_EQ(t.write_local(r->lkey, 1, a + page, src.data(), 8), AccessCheck::kFault);
  uint64_t orig = 0;
  EXPECT_EQ(t.atomic_remote(r->rkey, 1, a + page, false, 0, 1, &orig, 0), AccessCheck::kFault);
  // Read-only memory: reads work, writes and atomics fault.
  ASSERT_EQ(mprotect(p, page, PROT_READ), 0);
  EXPECT_EQ(t.read_remote(r->rkey, 1, a + 8, out.data(), 8, 0), AccessCheck::kOk);
  EXPECT_EQ(out[0], 0x44);
  EXPECT_EQ(t.write_remote(r->rkey, 1, a, src.data(), 8, 0), AccessCheck::kFault);
  EXPECT_EQ(t.atomic_remote(r->rkey, 1, a + 16, true, 0, 1, &orig, 0), AccessCheck::kFault);
  EXPECT_EQ(p[16], 0x44);
  ASSERT_EQ(munmap(p, page), 0);
}

TEST(MemoryTableTest, PrefetchChecks) {
  MemoryTable t(14);
  std::vector<uint8_t> buf(4096, 0);
  auto rw = t.reg(1, addr_of(buf.data()), 4096, 0x9000, kAccessLocalWrite);
  auto ro = t.reg(1, addr_of(buf.data()), 4096, 0);
  ASSERT_TRUE(rw);
  ASSERT_TRUE(ro);
  auto h = t.prefetch(rw->lkey, 1, 0x9000 + 100, 100, true);
  ASSERT_TRUE(h);
  EXPECT_EQ(h.value(), addr_of(buf.data()) + 100);
  EXPECT_TRUE(MemoryTable::populate(h.value(), 100, true));
  EXPECT_EQ(t.prefetch(rw->lkey, 2, 0x9000, 8, false).status(), Status::not_found());
  EXPECT_EQ(t.prefetch(rw->lkey ^ 1, 1, 0x9000, 8, false).status(), Status::not_found());
  EXPECT_EQ(t.prefetch(rw->lkey, 1, 0x9000 + 4090, 8, false).status(), Status(EFAULT));
  EXPECT_EQ(t.prefetch(ro->lkey, 1, addr_of(buf.data()), 8, true).status(), Status(EPERM));
  EXPECT_TRUE(t.prefetch(ro->lkey, 1, addr_of(buf.data()), 8, false));
}

}  // namespace
}  // namespace uroce::transport
