/**
 * @file reclaim_test.cc
 * @brief uroce-hostd's Reclaimer (tools/uroce-hostd/reclaim.h): an end runs only after every
 * worker started a round since its retire(), and readers on threads of their own never see a
 * retired object ended while they use it (run under ASan and TSan too).
 */
#include "uroce-hostd/reclaim.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace uroce::hostd {
namespace {

TEST(Reclaimer, EndWaitsForEveryWorkersNextRound) {
  Reclaimer r(2);
  int ended = 0;
  r.quiescent(0);  // rounds before the retire do not count
  r.retire([&] { ++ended; });
  EXPECT_EQ(r.collect(), 0u);
  r.quiescent(0);
  EXPECT_EQ(r.collect(), 0u);  // worker 1 may still hold it
  EXPECT_EQ(ended, 0);
  r.quiescent(1);
  EXPECT_EQ(r.collect(), 1u);
  EXPECT_EQ(ended, 1);
  EXPECT_EQ(r.pending(), 0u);
}

TEST(Reclaimer, EndAllRunsWhatIsLeft) {
  Reclaimer r(3);
  int ended = 0;
  r.retire([&] { ++ended; });
  r.retire([&] { ++ended; });
  EXPECT_EQ(r.pending(), 2u);
  r.end_all();
  EXPECT_EQ(ended, 2);
  EXPECT_EQ(r.pending(), 0u);
}

TEST(Reclaimer, AnEndMayRetireMore) {
  Reclaimer r(1);
  int ended = 0;
  r.retire([&] {
    ++ended;
    r.retire([&] { ++ended; });
  });
  r.quiescent(0);
  EXPECT_EQ(r.collect(), 1u);
  EXPECT_EQ(r.pending(), 1u);  // retired after the round: waits for the next
  r.quiescent(0);
  EXPECT_EQ(r.collect(), 1u);
  EXPECT_EQ(ended, 2);
}

/// What a table entry points to; `alive` is cleared by its end, just before it is freed.
struct Object {
  std::atomic<uint32_t> alive{0xa11e};
  uint64_t value = 0;
};

TEST(Reclaimer, ReadersNeverSeeAnEndedObject) {
  constexpr unsigned kReaders = 3;
  constexpr size_t kSlots = 4;
  constexpr int kReplacements = 20000;
  Reclaimer r(kReaders);
  std::array<std::atomic<Object*>, kSlots> table{};
  for (auto& e : table) e.store(new Object);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> bad{0}, reads{0};
  std::vector<std::thread> readers;
  for (unsigned w = 0; w < kReaders; ++w) {
    readers.emplace_back([&, w] {
      uint64_t n = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        r.quiescent(w);
        // A round: the entries read now are used until the next quiescent().
        for (auto& e : table) {
          Object* o = e.load();
          if (!o) continue;
          if (o->alive.load(std::memory_order_relaxed) != 0xa11e) bad.fetch_add(1);
          n += o->value;
          ++n;
        }
      }
      reads.fetch_add(n);
    });
  }
  size_t ended = 0;
  for (int i = 0; i < kReplacements; ++i) {
    auto* fresh = new Object;
    fresh->value = static_cast<uint64_t>(i);
    Object* old = table[static_cast<size_t>(i) % kSlots].exchange(fresh);
    r.retire([old] {
      old->alive.store(0, std::memory_order_relaxed);
      delete old;
    });
    ended += r.collect();
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  r.end_all();
  for (auto& e : table) delete e.load();
  EXPECT_EQ(bad.load(), 0u);
  EXPECT_GT(reads.load(), 0u);
  EXPECT_GT(ended, 0u);  // ends ran while the readers read
}

}  // namespace
}  // namespace uroce::hostd
