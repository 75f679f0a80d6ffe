/**
 * @file sched_slice_test.cc
 * @brief request_slice() (lib/common sched_slice.h) on real threads of this process: the slice
 * the kernel reports afterwards, the clamp to its minimum, the thread's nice value kept, and a
 * thread of another policy left alone. Kernels before 6.12 keep no slice per thread: there the
 * call must say so and change nothing.
 */
#include "common/sched_slice.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

namespace uroce::device {
namespace {

/// Whether this kernel keeps a slice per SCHED_OTHER thread (EEVDF's custom slices, 6.12).
bool kernel_has_custom_slices() {
  utsname u{};
  int major = 0, minor = 0;
  if (uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 6 || (major == 6 && minor >= 12);
}

struct Result {
  Duration got{};
  std::string why;
  int nice_before = 0, nice_after = 0;
  int policy_after = -1;
};

/// Runs request_slice(slice) on a fresh thread whose nice value is `nice` and policy `policy`.
Result on_thread(Duration slice, int nice, int policy = SCHED_OTHER) {
  Result r;
  std::thread t([&] {
    sched_param p{};
    if (policy != SCHED_OTHER) {
      EXPECT_EQ(sched_setscheduler(0, policy, &p), 0);
    }
    // Raising the nice value (lower priority) needs no privilege.
    EXPECT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice), 0);
    r.nice_before = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    r.got = request_slice(slice, &r.why);
    r.nice_after = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    r.policy_after = sched_getscheduler(0);
  });
  t.join();
  return r;
}

TEST(SchedSlice, TheKernelReportsTheRequestedSliceAndTheNiceValueStays) {
  const Result r = on_thread(Duration::micros(250), 3);
  EXPECT_EQ(r.nice_before, 3);
  EXPECT_EQ(r.nice_after, 3);
  EXPECT_EQ(r.policy_after, SCHED_OTHER);
  if (kernel_has_custom_slices()) {
    EXPECT_EQ(r.got, Duration::micros(250)) << r.why;
    EXPECT_TRUE(r.why.empty());
  } else {
    EXPECT_EQ(r.got, Duration{});
    EXPECT_NE(r.why.find("6.12"), std::string::npos) << r.why;
  }
}

TEST(SchedSlice, BelowTheKernelsMinimumGetsTheMinimum) {
  const Result r = on_thread(Duration::micros(10), 0);
  if (kernel_has_custom_slices()) {
    EXPECT_EQ(r.got, Duration::micros(100)) << r.why;  // NSEC_PER_MSEC / 10
  } else {
    EXPECT_EQ(r.got, Duration{});
  }
  EXPECT_EQ(r.nice_after, 0);
}

TEST(SchedSlice, AThreadOfAnotherPolicyIsLeftAlone) {
  const Result r = on_thread(Duration::micros(100), 2, SCHED_BATCH);
  EXPECT_EQ(r.got, Duration{});
  EXPECT_NE(r.why.find("SCHED_OTHER"), std::string::npos) << r.why;
  EXPECT_EQ(r.policy_after, SCHED_BATCH);
  EXPECT_EQ(r.nice_after, 2);
}

}  // namespace
}  // namespace uroce::device
