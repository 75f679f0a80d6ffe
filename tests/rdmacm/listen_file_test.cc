/**
 * @file listen_file_test.cc
 * @brief The test harness's view of RDMA CM listens (lib/rdmacm/id.cc), in one process over
 * the built-in loopback device: $UROCE_RDMACM_LISTEN_FILE notes each listen and its end, and
 * with $UROCE_RDMACM_CONNECT_WHEN_LISTENING an rdma_connect to a port nobody listens on yet
 * waits for the listen instead of being refused (perftest -R's second connect, racing its
 * server's second listen).
 */
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <rdma/rsocket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

constexpr uint32_t kAddr = 0xc6120001;  // 198.18.0.1, the built-in device's address

sockaddr_in addr_of(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(kAddr);
  return a;
}

uint16_t next_port() {
  static std::atomic<uint16_t> port{static_cast<uint16_t>(20000 + (getpid() * 7) % 20000)};
  return port++;
}

int listener(uint16_t port) {
  int l = rsocket(AF_INET, SOCK_STREAM, 0);
  EXPECT_GE(l, 0);
  sockaddr_in a = addr_of(port);
  EXPECT_EQ(rbind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << strerror(errno);
  EXPECT_EQ(rlisten(l, 4), 0) << strerror(errno);
  return l;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// The scheduler state letter of thread tid of this process ('R', 'S', ...).
char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
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
