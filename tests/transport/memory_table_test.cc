/**
 * @file memory_table_test.cc
 * @brief Memory region keys and the bounds/access checks (IBA Vol 1 §10.6).
 */
#include "transport/memory_table.h"

#include <gtest/gtest.h>

#include <set>

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

}  // namespace
}  // namespace uroce::transport
