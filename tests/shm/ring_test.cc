// drivers/shm ring.h and region.h: layout, publish/consume, wraparound, a full ring, buffers
// coming back out of order, indices and descriptors a broken peer writes, the sleep/kick
// handshake (threads), and two processes (fork) exchanging frames through a memfd region.
#include "shm/ring.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "shm/doorbell.h"
#include "shm/region.h"

namespace uroce::shm {
namespace {

constexpr RegionParams kParams{256, 8, 1, 8};  // 256-byte slots, 8-slot rings, one RX ring

Region make_region(const RegionParams& p = kParams) {
  std::string err;
  auto r = create_region(p, &err);
  EXPECT_TRUE(r) << err;
  return std::move(*r);
}

/// Publishes one frame of len bytes, each byte `fill`; false when the ring refused it.
bool put(Producer& p, uint32_t len, uint8_t fill) {
  auto b = p.take();
  if (!b) return false;
  std::memset(p.data(*b), fill, len);
  if (p.publish(*b, len)) return true;
  p.give_back(*b);
  return false;
}

TEST(RingLayout, RejectsWhatIsNotAllowed) {
  EXPECT_FALSE(ring_layout(0, 64));
  EXPECT_FALSE(ring_layout(3, 64));  // not a power of two
  EXPECT_FALSE(ring_layout(kMaxSlots * 2, 64));
  EXPECT_FALSE(ring_layout(8, 100));  // not a multiple of a cache line
  auto l = ring_layout(8, 256);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->desc_off, 2 * kLine);
  EXPECT_EQ(l->buf_off, 3 * kLine);  // 8 descriptors fill one line
  EXPECT_EQ(l->bytes, 3 * kLine + 8 * 256);
  EXPECT_FALSE(region_layout(RegionParams{256, 8, 0, 8}));
  EXPECT_FALSE(region_layout(RegionParams{256, 8, kMaxRxRings + 1, 8}));
}

TEST(Ring, FramesArriveInOrderAcrossWraparound) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  uint8_t next = 0;
  for (int round = 0; round < 40; ++round) {  // 40 x 3 frames through an 8-slot ring
    for (int i = 0; i < 3; ++i, ++next) ASSERT_TRUE(put(p, 10u + next % 50, next));
    ASSERT_EQ(c.available(), 3u);
    for (uint32_t k = 0; k < 3; ++k) {
      auto f = c.frame(k);
      const uint8_t want = static_cast<uint8_t>(next - 3 + k);
      ASSERT_EQ(f.size(), 10u + want % 50);
      EXPECT_EQ(f[0], want);
      EXPECT_EQ(f[f.size() - 1], want);
    }
    c.release(3);
  }
  EXPECT_EQ(c.available(), 0u);
  EXPECT_EQ(p.in_flight(), 0u);
}

TEST(Ring, FullRingRefusesUntilTheConsumerReleases) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  for (int i = 0; i < 8; ++i) {
    EXPECT_TRUE(p.has_room());
    ASSERT_TRUE(put(p, 64, static_cast<uint8_t>(i)));
  }
  EXPECT_FALSE(p.has_room());
  EXPECT_FALSE(p.take());  // all 8 buffers published
  EXPECT_EQ(c.available(), 8u);
  c.release(2);
  EXPECT_TRUE(p.has_room());   // takes the released buffers back
  ASSERT_TRUE(put(p, 64, 8));  // the two released buffers come back
  ASSERT_TRUE(put(p, 64, 9));
  EXPECT_FALSE(put(p, 64, 10));
  EXPECT_EQ(c.available(), 8u);
  EXPECT_EQ(c.frame(7)[0], 9);
}

TEST(Ring, BuffersMayBePublishedInAnotherOrderThanTaken) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  const uint32_t a = *p.take(), b = *p.take();
  std::memset(p.data(a), 0xaa, 20);
  std::memset(p.data(b), 0xbb, 30);
  ASSERT_TRUE(p.publish(b, 30));  // b first (a higher priority, say)
  ASSERT_TRUE(p.publish(a, 20));
  ASSERT_EQ(c.available(), 2u);
  EXPECT_EQ(c.frame(0).size(), 30u);
  EXPECT_EQ(c.frame(0)[0], 0xbb);
  EXPECT_EQ(c.frame(1)[0], 0xaa);
  c.release(2);
  std::vector<uint32_t> back;
  while (auto x = p.take()) back.push_back(*x);
  EXPECT_EQ(back.size(), 8u);  // every buffer, a and b included, is free again
}

TEST(Ring, BadDescriptorsAreSkippedNeverFollowed) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  ASSERT_TRUE(put(p, 16, 1));
  ASSERT_TRUE(put(p, 16, 2));
  // A hostile producer rewrites the published descriptors: a buffer past the ring, a length
  // past the slot.
  r.tx().desc_buf(0).store(1000);
  r.tx().desc_len(1).store(4096);
  ASSERT_EQ(c.available(), 2u);
  EXPECT_TRUE(c.frame(0).empty());
  EXPECT_TRUE(c.frame(1).empty());
  EXPECT_EQ(c.bad(), 2u);
  c.release(2);
}

TEST(Ring, ImpossibleIndicesBreakTheRing) {
  {
    Region r = make_region();
    Consumer c(r.tx());
    r.tx().head().store(9);  // more than 8 ahead of the consumer
    EXPECT_EQ(c.available(), 0u);
    EXPECT_TRUE(c.broken());
  }
  {
    Region r = make_region();
    Producer p(r.tx());
    ASSERT_TRUE(put(p, 16, 1));
    r.tx().tail().store(5);  // released 5 of 1 published
    p.in_flight();
    EXPECT_TRUE(p.broken());
    EXPECT_FALSE(put(p, 16, 2));
    EXPECT_FALSE(p.take());
  }
}

TEST(Ring, ASleepingConsumerIsWokenAndABusyOneIsNot) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  Doorbell bell = Doorbell::create();
  ASSERT_GE(bell.fd(), 0);
  // Not asleep: no kick.
  ASSERT_TRUE(put(p, 16, 1));
  EXPECT_FALSE(p.wake_needed());
  // A frame waits: prepare_sleep says do not sleep.
  EXPECT_FALSE(c.prepare_sleep());
  c.release(c.available());
  // Asleep on an empty ring: the next batch kicks once.
  EXPECT_TRUE(c.prepare_sleep());
  ASSERT_TRUE(put(p, 16, 2));
  EXPECT_TRUE(p.wake_needed());
  EXPECT_FALSE(p.wake_needed());  // one kick per sleep
}

TEST(Ring, ConsumerThreadSleepsAndIsWoken) {
  Region r = make_region();
  Producer p(r.tx());
  Consumer c(r.tx());
  Doorbell bell = Doorbell::create();
  constexpr int kFrames = 20000;
  std::atomic<int> sleeps{0};
  std::thread consumer([&] {
    int got = 0;
    uint8_t want = 0;
    while (got < kFrames) {
      const uint32_t n = c.available();
      if (n == 0) {
        if (c.prepare_sleep()) {
          pollfd pfd{bell.fd(), POLLIN, 0};
          ::poll(&pfd, 1, 5000);
          sleeps.fetch_add(1);
        }
        c.end_sleep();
        bell.drain();
        continue;
      }
      for (uint32_t k = 0; k < n; ++k) {
        auto f = c.frame(k);
        ASSERT_EQ(f.size(), 32u);
        ASSERT_EQ(f[31], want);
        ++want;
      }
      c.release(n);
      got += static_cast<int>(n);
    }
  });
  uint8_t fill = 0;
  for (int sent = 0; sent < kFrames;) {
    if (!put(p, 32, fill)) {
      std::this_thread::yield();
      continue;
    }
    ++fill;
    ++sent;
    if (sent % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (p.wake_needed()) bell.kick();
  }
  consumer.join();              // a lost wake-up would hang here (or take 5 s per loss)
  EXPECT_GT(sleeps.load(), 0);  // the pauses put it to sleep
}

TEST(Region, TwoProcessesExchangeFrames) {
  Region r = make_region(RegionParams{4096, 64, 2, 64});
  Doorbell to_child = Doorbell::create(), to_parent = Doorbell::create();
  constexpr int kFrames = 5000;
  const int fd = dup(r.fd());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: its parent's mapping is not inherited (MADV_DONTFORK); it maps the memfd as a
    // client does, echoes every frame from the TX ring into RX ring 1, with its length + 1.
    std::string err;
    auto m = map_region(fd, r.params(), &err);
    if (!m) _exit(10);
    Consumer in(m->tx());
    Producer out(m->rx(1));
    for (int got = 0; got < kFrames;) {
      const uint32_t n = in.available();
      if (n == 0) {
        if (in.prepare_sleep()) {
          pollfd pfd{to_child.fd(), POLLIN, 0};
          if (::poll(&pfd, 1, 10000) != 1) _exit(11);
        }
        in.end_sleep();
        to_child.drain();
        continue;
      }
      for (uint32_t k = 0; k < n; ++k) {
        auto f = in.frame(k);
        std::optional<uint32_t> b;
        while (!(b = out.take())) usleep(10);
        std::memcpy(out.data(*b), f.data(), f.size());
        out.data(*b)[f.size()] = 0x5a;
        while (!out.publish(*b, static_cast<uint32_t>(f.size() + 1))) usleep(10);
      }
      in.release(n);
      got += static_cast<int>(n);
      if (out.wake_needed()) to_parent.kick();
    }
    _exit(in.bad() == 0 ? 0 : 12);
  }
  ::close(fd);
  Producer out(r.tx());
  Consumer in(r.rx(1));
  int sent = 0, got = 0;
  while (got < kFrames) {
    while (sent < kFrames) {
      auto b = out.take();
      if (!b) break;
      const uint32_t len = 60 + static_cast<uint32_t>(sent % 4000);
      std::memset(out.data(*b), sent & 0xff, len);
      if (!out.publish(*b, len)) {
        out.give_back(*b);
        break;
      }
      ++sent;
    }
    if (out.wake_needed()) to_child.kick();
    const uint32_t n = in.available();
    if (n == 0) {
      if (in.prepare_sleep()) {
        pollfd pfd{to_parent.fd(), POLLIN, 0};
        ::poll(&pfd, 1, 1);
      }
      in.end_sleep();
      to_parent.drain();
      continue;
    }
    for (uint32_t k = 0; k < n; ++k, ++got) {
      auto f = in.frame(k);
      const size_t len = 60 + static_cast<size_t>(got % 4000);
      ASSERT_EQ(f.size(), len + 1);
      ASSERT_EQ(f[0], got & 0xff);
      ASSERT_EQ(f[len - 1], got & 0xff);
      ASSERT_EQ(f[len], 0x5a);
    }
    in.release(n);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(Region, MapRefusesARegionSmallerThanItsParameters) {
  Region r = make_region();
  std::string err;
  RegionParams bigger = kParams;
  bigger.rx_slots = 64;
  EXPECT_FALSE(map_region(dup(r.fd()), bigger, &err));
  EXPECT_NE(err.find("smaller"), std::string::npos);
  EXPECT_FALSE(map_region(dup(r.fd()), RegionParams{100, 8, 1, 8}, &err));
  auto ok = map_region(dup(r.fd()), kParams, &err);
  EXPECT_TRUE(ok) << err;
  // Sealed: the client cannot shrink the file under the daemon's mapping (SIGBUS there).
  EXPECT_NE(ftruncate(r.fd(), 0), 0);
}

}  // namespace
}  // namespace uroce::shm
