// drivers/shm control.h: the client's handshake against a stand-in daemon on a socket in a
// temporary run folder: Welcome with three descriptors, Refused with its reason, a daemon of
// another protocol version, no daemon at all.
#include "shm/control.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "shm/doorbell.h"

namespace uroce::shm {
namespace {

class ControlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/shm_control_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    setenv("UROCE_RUN_DIR", dir_.c_str(), 1);
    base_ = hostd_base("lo");
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    unsetenv("UROCE_RUN_DIR");
  }

  /// A one-connection daemon: listens, holds the lock, runs `serve` on the accepted socket.
  void daemon(std::function<void(int)> serve) {
    lock_ = ::open((base_ + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_EQ(::flock(lock_, LOCK_EX | LOCK_NB), 0);
    listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strcpy(sa.sun_path, (base_ + ".sock").c_str());
    ASSERT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    ASSERT_EQ(::listen(listen_, 4), 0);
    thread_ = std::thread([this, serve] {
      int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      serve(c);
      ::close(c);
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
    ::close(listen_);
    ::close(lock_);
  }

  std::string dir_, base_;
  int lock_ = -1, listen_ = -1;
  std::thread thread_;
};

TEST_F(ControlTest, NoDaemon) {
  EXPECT_FALSE(hostd_running("lo"));
  std::string err;
  EXPECT_FALSE(connect_daemon("lo", "uroce0", &err));
  EXPECT_NE(err.find("cannot connect"), std::string::npos) << err;
}

TEST_F(ControlTest, WelcomeCarriesTheRegionAndTheDoorbells) {
  daemon([](int c) {
    Hello h;
    int fds[1];
    size_t n = 0;
    ASSERT_EQ(recv_msg(c, &h, sizeof h, fds, &n), static_cast<long>(sizeof h));
    EXPECT_EQ(h.h.type, MsgType::kHello);
    EXPECT_STREQ(h.device, "uroce0");
    ucred cred{};
    socklen_t len = sizeof cred;
    ASSERT_EQ(getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
    EXPECT_EQ(cred.pid, getpid());  // the client is this process
    Welcome w;
    w.client = 7;
    w.qpn_block = 7;
    w.qpn_block_bits = 13;
    w.max_frame = 256;
    w.region = RegionParams{256, 8, 1, 8};
    std::string err;
    auto r = create_region(w.region, &err);
    ASSERT_TRUE(r) << err;
    Doorbell a = Doorbell::create(), b = Doorbell::create();
    const int out[] = {r->fd(), a.fd(), b.fd()};
    EXPECT_EQ(send_msg(c, &w, sizeof w, out), 0);
  });
  EXPECT_TRUE(hostd_running("lo"));
  std::string err;
  auto s = connect_daemon("lo", "uroce0", &err);
  join();
  ASSERT_TRUE(s) << err;
  EXPECT_EQ(s->welcome.qpn_block, 7u);
  EXPECT_EQ(s->welcome.qpn_block_bits, 13u);
  auto m = map_region(s->region_fd, s->welcome.region, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_GE(s->client_bell, 0);
  EXPECT_GE(s->daemon_bell, 0);
  EXPECT_EQ(fcntl(s->client_bell, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  ::close(s->client_bell);
  ::close(s->daemon_bell);
  ::close(s->sock);
}

TEST_F(ControlTest, RefusedSaysWhy) {
  daemon([](int c) {
    Hello h;
    size_t n = 0;
    ASSERT_GT(recv_msg(c, &h, sizeof h, {}, &n), 0);
    Refused r;
    std::strcpy(r.reason, "all 2 client slots are taken");
    EXPECT_EQ(send_msg(c, &r, sizeof r), 0);
  });
  std::string err;
  EXPECT_FALSE(connect_daemon("lo", "uroce0", &err));
  join();
  EXPECT_EQ(err, "refused: all 2 client slots are taken");
}

TEST_F(ControlTest, AnotherProtocolVersionIsRefusedByTheClient) {
  daemon([](int c) {
    Hello h;
    size_t n = 0;
    ASSERT_GT(recv_msg(c, &h, sizeof h, {}, &n), 0);
    Welcome w;
    w.h.version = kProtocolVersion + 1;
    EXPECT_EQ(send_msg(c, &w, sizeof w), 0);
  });
  std::string err;
  EXPECT_FALSE(connect_daemon("lo", "uroce0", &err));
  join();
  EXPECT_NE(err.find("another protocol"), std::string::npos) << err;
}

}  // namespace
}  // namespace uroce::shm
