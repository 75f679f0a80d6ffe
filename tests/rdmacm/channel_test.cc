/**
 * @file channel_test.cc
 * @brief Event channels after rdma_destroy_event_channel (lib/rdmacm/channel.cc): a thread that
 * calls rdma_get_cm_event on a channel the program has just destroyed (rping's CM thread,
 * racing main's cleanup) waits for the program's exit, as with the kernel's channel, instead of
 * failing with EBADF or reading whatever file took over the channel's descriptor number; and
 * destroyed channels do not pile up descriptors.
 */
#include <dirent.h>
#include <gtest/gtest.h>
#include <rdma/rdma_cma.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "tests/support/thread_state.h"

namespace {

using uroce::test_support::thread_state;

int open_fds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

TEST(EventChannel, AThreadComingBackToADestroyedChannelWaitsForTheProgramsExit) {
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  const int old_fd = ch->fd;
  rdma_destroy_event_channel(ch);
  // A file opened now may take the number the channel's descriptor had; make it readable.
  const int other = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
  ASSERT_GE(other, 0);

  // The thread outlives this test (it is detached below): it shares nothing on this stack.
  struct Shared {
    std::atomic<pid_t> tid{0};
    std::atomic<bool> returned{false};
  };
  auto* shared = new Shared;  // never freed: the waiting thread may use it until the exit
  std::atomic<pid_t>& tid = shared->tid;
  std::atomic<bool>& returned = shared->returned;
  std::thread cm([ch, shared] {
    shared->tid = gettid();
    rdma_cm_event* ev = nullptr;
    rdma_get_cm_event(ch, &ev);  // rping's CM thread: on return it exits the program
    shared->returned = true;
  });
  // Polling a condition with a deadline: the thread sleeps in the library, or it returned.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!returned && (tid == 0 || thread_state(tid) != 'S') &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_FALSE(returned) << "rdma_get_cm_event returned on a destroyed channel";
  EXPECT_EQ(thread_state(tid), 'S');
  uint64_t v = 0;
  EXPECT_EQ(read(other, &v, sizeof v), static_cast<ssize_t>(sizeof v))
      << "the file that took fd " << old_fd << " was read by the waiting thread";
  EXPECT_EQ(v, 1u);
  close(other);
  cm.detach();  // it waits for the process's exit, as on the kernel's channel
}

TEST(EventChannel, DestroyedChannelsHoldAtMostABoundedNumberOfDescriptors) {
  // The first destroy starts the library's CM service, which opens descriptors of its own.
  rdma_destroy_event_channel(rdma_create_event_channel());
  const int before = open_fds();
  for (int i = 0; i < 500; ++i) {
    rdma_event_channel* ch = rdma_create_event_channel();
    ASSERT_NE(ch, nullptr);
    rdma_destroy_event_channel(ch);
  }
  // Kept destroyed channels (64 at most) hold theirs; the others are closed.
  EXPECT_LE(open_fds() - before, 64);
}

}  // namespace
