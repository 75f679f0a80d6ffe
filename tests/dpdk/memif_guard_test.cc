/**
 * @file memif_guard_test.cc
 * @brief drivers/dpdk/memif_guard: a fault inside a known memif region is absorbed (zero pages),
 * a fault elsewhere inside a fenced call ends only that call, and the process keeps both
 * abilities afterwards (SIGSEGV is not left blocked). No DPDK: the regions are memfds named
 * as net_memif names its own ("memif_region_N").
 */
#include "dpdk/memif_guard.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace uroce::dpdk {
namespace {

/// A page with no access rights: any touch faults, outside every memif region.
class NoAccessPage {
 public:
  NoAccessPage()
      : p_(static_cast<uint8_t*>(
            mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))) {}
  ~NoAccessPage() { munmap(p_, 4096); }
  volatile uint8_t* get() const { return p_; }

 private:
  uint8_t* p_;
};

TEST(MemifGuard, AFenceEndsACallThatFaultsOutsideEveryRegion) {
  memif_guard_refresh();  // installs the handler
  NoAccessPage page;
  const uint64_t before = memif_guard_fenced();
  int reached = 0;
  bool finished = memif_fenced([&] {
    reached = 1;
    page.get()[8] = 1;  // faults
    reached = 2;
  });
  EXPECT_FALSE(finished);
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(memif_guard_fenced(), before + 1);
  // Again: the handler is still installed and SIGSEGV not blocked after the jump.
  finished = memif_fenced([&] { (void)page.get()[0]; });
  EXPECT_FALSE(finished);
  EXPECT_EQ(memif_guard_fenced(), before + 2);
}

TEST(MemifGuard, AFencedCallWithoutAFaultRunsToItsEnd) {
  memif_guard_refresh();
  const uint64_t before = memif_guard_fenced();
  int value = 0;
  EXPECT_TRUE(memif_fenced([&] { value = 42; }));
  EXPECT_EQ(value, 42);
  EXPECT_EQ(memif_guard_fenced(), before);
}

TEST(MemifGuard, AFaultInAVanishedRegionReadsZerosInsteadOfEndingTheCall) {
  const int fd = memfd_create("memif_region_7", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  auto* r = static_cast<uint8_t*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(r, MAP_FAILED);
  close(fd);
  std::memset(r, 0xab, 8192);
  memif_guard_refresh();          // learns the region from /proc/self/maps
  ASSERT_EQ(munmap(r, 8192), 0);  // what memif_disconnect() does under a running burst
  const uint64_t faults = memif_guard_faults();
  const uint64_t fenced = memif_guard_fenced();
  uint8_t seen = 0xff;
  EXPECT_TRUE(memif_fenced([&] { seen = *static_cast<volatile uint8_t*>(r + 4100); }));
  EXPECT_EQ(seen, 0);
  EXPECT_EQ(memif_guard_faults(), faults + 1);
  EXPECT_EQ(memif_guard_fenced(), fenced);
}

}  // namespace
}  // namespace uroce::dpdk
