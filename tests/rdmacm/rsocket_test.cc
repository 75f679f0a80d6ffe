/**
 * @file rsocket_test.cc
 * @brief uroce's rsockets (lib/rdmacm/rsocket.h) end to end inside one process: a listener
 * and a client on the built-in device (uroce0 on the in-process loopback port, 198.18.0.1),
 * connected by the RDMA CM over its own QP1, moving data as librdmacm's rsocket protocol
 * does. Covers what rstream/riostream do not: byte-exact streams across many ring halves,
 * MSG_PEEK/MSG_WAITALL, end of stream after a shutdown, non-blocking connect through rpoll,
 * riowrite into an iomapped buffer, a refused connect, and the calls that must fail; and the
 * listen file the e2e harness reads.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/sa.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/thread_state.h"

namespace {

using uroce::test_support::thread_state;

constexpr uint32_t kAddr = 0xc6120001;  // 198.18.0.1, the built-in device's address

sockaddr_in addr_of(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(kAddr);
  return a;
}

uint16_t next_port() {
  static std::atomic<uint16_t> port{static_cast<uint16_t>(20000 + getpid() % 20000)};
  return port++;
}

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 131 + (i >> 11)); }

/// A listening rsocket on 198.18.0.1:port.
int listener(uint16_t port) {
  int l = rsocket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(l, 0) << strerror(errno);
  int one = 1;
  EXPECT_EQ(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), 0);
  sockaddr_in a = addr_of(port);
  EXPECT_EQ(rbind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  EXPECT_EQ(rlisten(l, 4), 0) << strerror(errno);
  return l;
}

int connect_to(uint16_t port, int iomap = 0) {
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(s, 0);
  if (iomap) {
    EXPECT_EQ(rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &iomap, sizeof iomap), 0);
  }
  sockaddr_in a = addr_of(port);
  EXPECT_EQ(rconnect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  return s;
}

bool send_all(int s, const uint8_t* p, size_t n) {
  while (n) {
    ssize_t r = rsend(s, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

class RsocketTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The built-in device: no configuration file (docs/configuration.md).
    unsetenv("UROCE_CONFIG");
  }
};

// 4 MiB each way through 64 KiB rings (SO_RCVBUF 32 KiB): the receive ring is republished
// about 128 times, credits return all the while, messages split at every ring half; every
// byte must arrive, in order.
TEST_F(RsocketTest, StreamIsByteExactBothWays) {
  const uint16_t port = next_port();
  int l = listener(port);
  constexpr size_t kLen = 4 << 20;
  std::vector<uint8_t> data(kLen);
  for (size_t i = 0; i < kLen; ++i) data[i] = pattern(i);
  std::thread server([&] {
    int buf = 32 << 10;
    ASSERT_EQ(rsetsockopt(l, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf), 0);
    sockaddr_in peer{};
    socklen_t plen = sizeof peer;
    int s = raccept(l, reinterpret_cast<sockaddr*>(&peer), &plen);
    ASSERT_GE(s, 0) << strerror(errno);
    EXPECT_EQ(peer.sin_family, AF_INET);
    EXPECT_EQ(ntohl(peer.sin_addr.s_addr), kAddr);
    std::vector<uint8_t> got(kLen);
    ASSERT_EQ(rrecv(s, got.data(), kLen, MSG_WAITALL), static_cast<ssize_t>(kLen));
    EXPECT_EQ(got, data);
    EXPECT_TRUE(send_all(s, got.data(), kLen));
    rclose(s);
  });
  int c = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  int buf = 32 << 10;
  ASSERT_EQ(rsetsockopt(c, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf), 0);
  sockaddr_in a = addr_of(port);
  ASSERT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  sockaddr_in local{};
  socklen_t llen = sizeof local;
  ASSERT_EQ(rgetsockname(c, reinterpret_cast<sockaddr*>(&local), &llen), 0);
  EXPECT_EQ(ntohl(local.sin_addr.s_addr), kAddr);
  EXPECT_NE(local.sin_port, 0);
  ASSERT_TRUE(send_all(c, data.data(), kLen));
  std::vector<uint8_t> back(kLen);
  size_t got = 0;
  while (got < kLen) {  // odd read sizes: messages are consumed in pieces
    ssize_t r = rrecv(c, back.data() + got, std::min<size_t>(kLen - got, 7777), 0);
    ASSERT_GT(r, 0) << strerror(errno);
    got += static_cast<size_t>(r);
  }
  EXPECT_EQ(back, data);
  server.join();
  rclose(c);
  rclose(l);
}

// MSG_PEEK leaves the data; a shutdown of the sending side reads as end of stream (0) once
// the data before it is read, and rpoll says POLLIN then.
TEST_F(RsocketTest, PeekThenEndOfStream) {
  const uint16_t port = next_port();
  int l = listener(port);
  std::thread client([&] {
    int c = connect_to(port);
    const char msg[] = "hello, rsocket";
    EXPECT_EQ(rsend(c, msg, sizeof msg, 0), static_cast<ssize_t>(sizeof msg));
    EXPECT_EQ(rshutdown(c, SHUT_WR), 0);
    char none;
    EXPECT_EQ(rrecv(c, &none, 1, 0), 0);  // the server closes: end of stream here too
    rclose(c);
  });
  int s = raccept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  char peek[5] = {};
  ASSERT_EQ(rrecv(s, peek, sizeof peek, MSG_PEEK | MSG_WAITALL), 5);
  EXPECT_EQ(std::memcmp(peek, "hello", 5), 0);
  char all[64] = {};
  ASSERT_EQ(rrecv(s, all, 15, MSG_WAITALL), 15);
  EXPECT_STREQ(all, "hello, rsocket");
  pollfd p{s, POLLIN, 0};
  ASSERT_EQ(rpoll(&p, 1, 5000), 1);
  EXPECT_TRUE(p.revents & POLLIN);
  EXPECT_EQ(rrecv(s, all, sizeof all, 0), 0);
  rclose(s);
  client.join();
  rclose(l);
}

// A non-blocking connect answers EINPROGRESS; rpoll reports POLLOUT once connected and
// SO_ERROR is 0; a non-blocking read with nothing there fails with EWOULDBLOCK.
TEST_F(RsocketTest, NonBlockingConnectThroughRpoll) {
  const uint16_t port = next_port();
  int l = listener(port);
  std::thread server([&] {
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    char b[3];
    EXPECT_EQ(rrecv(s, b, 3, MSG_WAITALL), 3);
    EXPECT_EQ(rsend(s, b, 3, 0), 3);
    rclose(s);
  });
  int c = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  ASSERT_EQ(rfcntl(c, F_SETFL, O_NONBLOCK), 0);
  EXPECT_EQ(rfcntl(c, F_GETFL), O_NONBLOCK);
  sockaddr_in a = addr_of(port);
  int r = rconnect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (r != 0) {
    ASSERT_EQ(errno, EINPROGRESS);
    pollfd p{c, POLLOUT, 0};
    ASSERT_EQ(rpoll(&p, 1, 10000), 1);
    EXPECT_TRUE(p.revents & POLLOUT);
  }
  int err = -1;
  socklen_t len = sizeof err;
  ASSERT_EQ(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
  EXPECT_EQ(err, 0);
  char b[3];
  EXPECT_EQ(rrecv(c, b, 3, 0), -1);
  EXPECT_TRUE(errno == EWOULDBLOCK || errno == EAGAIN);
  EXPECT_EQ(rsend(c, "abc", 3, 0), 3);
  pollfd p{c, POLLIN, 0};
  ASSERT_EQ(rpoll(&p, 1, 10000), 1);
  EXPECT_EQ(rrecv(c, b, 3, 0), 3);
  EXPECT_EQ(std::memcmp(b, "abc", 3), 0);
  server.join();
  rclose(c);
  rclose(l);
}

// riowrite places data straight into the peer's iomapped buffer, at the offset it mapped,
// with no receive on the peer's side; a message sent after it tells the peer it is there.
TEST_F(RsocketTest, RiowriteLandsInTheMappedBuffer) {
  const uint16_t port = next_port();
  int l = listener(port);
  int one = 1;
  ASSERT_EQ(rsetsockopt(l, SOL_RDMA, RDMA_IOMAPSIZE, &one, sizeof one), 0);
  std::vector<uint8_t> target(64 << 10, 0);
  std::thread server([&] {
    int s = raccept(l, nullptr, nullptr);
    ASSERT_GE(s, 0) << strerror(errno);
    ASSERT_EQ(riomap(s, target.data(), target.size(), PROT_WRITE, 0, 4096), 4096);
    EXPECT_EQ(rsend(s, "m", 1, 0), 1);  // carries the mapping to the client first
    char done;
    EXPECT_EQ(rrecv(s, &done, 1, MSG_WAITALL), 1);
    EXPECT_EQ(riounmap(s, target.data(), target.size()), 0);
    EXPECT_EQ(riounmap(s, target.data(), target.size()), -1);  // gone already
    EXPECT_EQ(errno, EINVAL);
    rclose(s);
  });
  int c = connect_to(port, 1);
  char m;
  ASSERT_EQ(rrecv(c, &m, 1, MSG_WAITALL), 1);
  std::vector<uint8_t> src(20000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = pattern(i);
  // Offsets 4096 + 1000 .. : inside the mapping (4096 .. 4096 + 64 KiB).
  ASSERT_EQ(riowrite(c, src.data(), src.size(), 4096 + 1000, 0), src.size());
  ASSERT_EQ(riowrite(c, src.data(), 8, 100, 0), static_cast<size_t>(-1));  // unmapped offset
  EXPECT_EQ(errno, EINVAL);
  ASSERT_EQ(rsend(c, "d", 1, 0), 1);
  server.join();
  EXPECT_EQ(std::memcmp(target.data() + 1000, src.data(), src.size()), 0);
  EXPECT_EQ(target[999], 0);
  EXPECT_EQ(target[1000 + src.size()], 0);
  rclose(c);
  rclose(l);
}

// Connecting to a port nobody listens on: the CM's REJ, ECONNREFUSED.
TEST_F(RsocketTest, ConnectToNoListenerIsRefused) {
  int c = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(c, 0);
  sockaddr_in a = addr_of(next_port());
  EXPECT_EQ(rconnect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  int err = 0;
  socklen_t len = sizeof err;
  ASSERT_EQ(rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
  EXPECT_EQ(err, ECONNREFUSED);
  EXPECT_EQ(rclose(c), 0);
}

// RDMA_ROUTE (librdmacm's rsocket(7)): the path records a program sets resolve the route at
// rconnect (the primary bidirectional one: its MTU is the connection's), read back as set
// until then, and as the connection's path after; without a usable record rconnect fails.
TEST_F(RsocketTest, RdmaRouteGivesTheConnectionsPath) {
  const uint16_t port = next_port();
  int l = listener(port);
  ibv_path_data rec{};
  rec.flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | IBV_PATH_FLAG_BIDIRECTIONAL;
  rec.path.mtu = IBV_MTU_512 | 2 << 6;
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  ASSERT_EQ(rsetsockopt(s, SOL_RDMA, RDMA_ROUTE, &rec, sizeof rec), 0) << strerror(errno);
  ibv_path_data got[2] = {};
  socklen_t len = sizeof got;
  ASSERT_EQ(rgetsockopt(s, SOL_RDMA, RDMA_ROUTE, got, &len), 0);
  ASSERT_EQ(len, sizeof rec);
  EXPECT_EQ(std::memcmp(&got[0], &rec, sizeof rec), 0);
  sockaddr_in a = addr_of(port);
  std::thread acc([&] { EXPECT_GE(raccept(l, nullptr, nullptr), 0) << strerror(errno); });
  ASSERT_EQ(rconnect(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  acc.join();
  int mss = 0;
  socklen_t ml = sizeof mss;
  ASSERT_EQ(rgetsockopt(s, IPPROTO_TCP, TCP_MAXSEG, &mss, &ml), 0);
  EXPECT_EQ(mss, 512);  // the record's MTU, below the device's 1024
  len = sizeof got;
  ASSERT_EQ(rgetsockopt(s, SOL_RDMA, RDMA_ROUTE, got, &len), 0);
  ASSERT_EQ(len, sizeof(ibv_path_data));  // the route's one path
  EXPECT_EQ(got[0].path.mtu, IBV_MTU_512 | 2 << 6);
  len = sizeof got[0] - 1;
  EXPECT_EQ(rgetsockopt(s, SOL_RDMA, RDMA_ROUTE, got, &len), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rclose(s), 0);

  // A record that is not the primary bidirectional path: no route.
  rec.flags = IBV_PATH_FLAG_GMP;
  int t = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(t, 0);
  ASSERT_EQ(rsetsockopt(t, SOL_RDMA, RDMA_ROUTE, &rec, sizeof rec), 0);
  EXPECT_EQ(rconnect(t, reinterpret_cast<sockaddr*>(&a), sizeof a), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(rclose(t), 0);
  EXPECT_EQ(rclose(l), 0);
}

TEST_F(RsocketTest, WhatIsNotSupportedFailsClearly) {
  EXPECT_EQ(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
  EXPECT_EQ(errno, EOPNOTSUPP);  // datagram rsockets: another protocol
  EXPECT_EQ(rsocket(AF_UNIX, SOCK_STREAM, 0), -1);
  EXPECT_EQ(errno, ENOTSUP);
  EXPECT_EQ(rsend(12345, "x", 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(rclose(12345), -1);
  EXPECT_EQ(errno, EBADF);
  int s = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(s, 0);
  char b;
  EXPECT_EQ(rrecv(s, &b, 1, 0), -1);  // never connected
  EXPECT_EQ(errno, ENOTCONN);
  int v = 1 << 16;
  ASSERT_EQ(rsetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof v), 0);
  int got = 0;
  socklen_t len = sizeof got;
  ASSERT_EQ(rgetsockopt(s, SOL_SOCKET, SO_SNDBUF, &got, &len), 0);
  EXPECT_EQ(got, 1 << 17);  // the ring: twice the value, as Linux reports TCP's
  ASSERT_EQ(rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v), 0);
  ASSERT_EQ(rgetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &got, &len), 0);
  EXPECT_EQ(got, 1);
  EXPECT_EQ(rgetsockopt(s, SOL_SOCKET, SO_TYPE, &got, &len), -1);
  EXPECT_EQ(errno, ENOTSUP);
  EXPECT_EQ(rclose(s), 0);
}

// The test harness's view of RDMA CM listens (lib/rdmacm/id.cc): $UROCE_RDMACM_LISTEN_FILE
// notes each listen and its end, and with $UROCE_RDMACM_CONNECT_WHEN_LISTENING an rdma_connect
// to a port nobody listens on yet waits for the listen instead of being refused (perftest -R's
// second connect, racing its server's second listen).
std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ListenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("UROCE_CONFIG");  // the built-in device
    char dir[] = "/tmp/uroce-listen-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    file_ = dir_ + "/listen";
    setenv("UROCE_RDMACM_LISTEN_FILE", file_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("UROCE_RDMACM_LISTEN_FILE");
    unsetenv("UROCE_RDMACM_CONNECT_WHEN_LISTENING");
    unlink(file_.c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_, file_;
};

TEST_F(ListenFileTest, NotesEachListenAndItsEnd) {
  const uint16_t port = next_port();
  int l = listener(port);
  EXPECT_EQ(read_file(file_), "listen " + std::to_string(port) + "\n");
  EXPECT_EQ(rclose(l), 0);
  EXPECT_EQ(read_file(file_),
            "listen " + std::to_string(port) + "\nunlisten " + std::to_string(port) + "\n");
}

TEST_F(ListenFileTest, AConnectWaitsForTheListenWhenAsked) {
  const uint16_t port = next_port();
  // A listen that has ended: without the wait this connect is refused at once.
  EXPECT_EQ(rclose(listener(port)), 0);
  setenv("UROCE_RDMACM_CONNECT_WHEN_LISTENING", file_.c_str(), 1);
  std::atomic<pid_t> tid{0};
  std::atomic<int> result{1}, error{0};
  std::thread client([&] {
    tid = gettid();
    int c = rsocket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a = addr_of(port);
    result = rconnect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    error = errno;
    uint8_t byte = 0x5a;
    if (result == 0 && rsend(c, &byte, 1, 0) != 1) result = -2;
    rclose(c);
  });
  // Polling with a deadline: the client waits in rconnect (sleeping) before anyone listens.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((tid == 0 || thread_state(tid) != 'S') && result == 1 &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::yield();
  EXPECT_EQ(result, 1) << "rconnect returned before the listen: errno " << error;
  int l = listener(port);
  int s = raccept(l, nullptr, nullptr);
  ASSERT_GE(s, 0) << strerror(errno);
  uint8_t got = 0;
  EXPECT_EQ(rrecv(s, &got, 1, 0), 1);
  EXPECT_EQ(got, 0x5a);
  client.join();
  EXPECT_EQ(result, 0) << strerror(error);
  rclose(s);
  rclose(l);
}

}  // namespace
