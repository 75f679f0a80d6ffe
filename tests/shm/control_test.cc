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
#include <vector>

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

std::optional<Request> parse(const Request& r, size_t len = sizeof(Request)) {
  return parse_request(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&r), len));
}

TEST(ControlRequest, EachOpWithItsFieldsParses) {
  Request l;
  l.op = Op::kListen;
  l.seq = 7;
  l.ps = 0x0106;
  l.port = 18515;
  l.gid[15] = 1;
  auto p = parse(l);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->seq, 7u);
  EXPECT_EQ(p->port, 18515);
  l.op = Op::kRelease;
  EXPECT_TRUE(parse(l));
  l.op = Op::kBind;
  EXPECT_TRUE(parse(l));
  Request c;
  c.op = Op::kConnect;
  c.qpn = 0x2001;
  c.dqpn = 0xffffff;
  c.sport = 0xc123;
  c.gid[0] = 0xfe;
  EXPECT_TRUE(parse(c));
  Request d;
  d.op = Op::kDisconnect;
  d.qpn = 0x2001;
  EXPECT_TRUE(parse(d));
}

TEST(ControlRequest, NonsenseIsRefused) {
  Request r;
  r.op = Op::kListen;
  r.ps = 0x0106;
  EXPECT_FALSE(parse(r, sizeof r - 1)) << "short";
  std::vector<uint8_t> longer(sizeof r + 1);
  std::memcpy(longer.data(), &r, sizeof r);
  EXPECT_FALSE(parse_request(longer)) << "long";
  auto with = [&](auto&& change) {
    Request x = r;
    change(x);
    return parse(x);
  };
  EXPECT_FALSE(with([](Request& x) { x.h.magic ^= 1; }));
  EXPECT_FALSE(with([](Request& x) { x.h.type = MsgType::kHello; }));
  EXPECT_FALSE(with([](Request& x) { x.h.version = kProtocolVersion + 1; }));
  EXPECT_FALSE(with([](Request& x) { x.h.reserved = 1; }));
  EXPECT_FALSE(with([](Request& x) { x.reserved = 1; }));
  EXPECT_FALSE(with([](Request& x) { x.op = static_cast<Op>(0); }));
  EXPECT_FALSE(with([](Request& x) { x.op = static_cast<Op>(kOpLast + 1); }));
  // A field the op does not use is zero.
  EXPECT_FALSE(with([](Request& x) { x.qpn = 1; }));
  EXPECT_FALSE(with([](Request& x) { x.sport = 1; }));
  EXPECT_FALSE(with([](Request& x) {
    x.op = Op::kConnect;
    x.ps = 0;
    x.port = 1;
  }));
  EXPECT_FALSE(with([](Request& x) {
    x.op = Op::kConnect;
    x.ps = 0;
    x.qpn = 0x1000000;  // past 24 bits
  }));
  EXPECT_FALSE(with([](Request& x) {
    x.op = Op::kDisconnect;
    x.ps = 0;
    x.gid[3] = 1;
  }));
}

std::optional<Hello> parse(const Hello& h, size_t len = sizeof(Hello)) {
  return parse_hello(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&h), len));
}

TEST(ControlHello, AHelloAndAResumeParse) {
  Hello h;
  std::strcpy(h.device, "uroce0");
  auto p = parse(h);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resume_block, 0u);
  EXPECT_STREQ(p->device, "uroce0");
  h.resume_block = 2047;
  p = parse(h);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->resume_block, 2047u);
  EXPECT_EQ(hello_version(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&h), sizeof h)),
            kProtocolVersion);
}

TEST(ControlHello, NonsenseIsRefused) {
  Hello h;
  EXPECT_FALSE(parse(h, sizeof h - 1)) << "short";
  std::vector<uint8_t> longer(sizeof h + 1);
  std::memcpy(longer.data(), &h, sizeof h);
  EXPECT_FALSE(parse_hello(longer)) << "long";
  auto with = [&](auto&& change) {
    Hello x = h;
    change(x);
    return parse(x);
  };
  EXPECT_FALSE(with([](Hello& x) { x.h.magic ^= 1; }));
  EXPECT_FALSE(with([](Hello& x) { x.h.type = MsgType::kRequest; }));
  EXPECT_FALSE(with([](Hello& x) { x.h.version = kProtocolVersion - 1; }));
  EXPECT_FALSE(with([](Hello& x) { x.h.reserved = 1; }));
  EXPECT_FALSE(with([](Hello& x) { x.reserved = 1; }));
  EXPECT_FALSE(with([](Hello& x) { x.resume_block = 0x1000000; })) << "past a 24-bit QPN";
  EXPECT_FALSE(with([](Hello& x) { std::memset(x.device, 'a', sizeof x.device); }))
      << "a name without its NUL";
}

TEST(ControlHello, AHelloOfAnotherVersionNamesItsVersion) {
  // A version 2 Hello (no resume_block: 8 bytes shorter) is told it speaks another version.
  Hello h;
  h.h.version = 2;
  const std::span<const uint8_t> v2(reinterpret_cast<const uint8_t*>(&h), sizeof h - 8);
  EXPECT_EQ(hello_version(v2), 2u);
  EXPECT_FALSE(parse_hello(v2));
  EXPECT_FALSE(hello_version(v2.first(sizeof(MsgHeader) - 1))) << "no whole header";
  Request r;
  EXPECT_FALSE(
      hello_version(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&r), sizeof r)))
      << "not a Hello";
}

TEST_F(ControlTest, AResumingHelloNamesItsBlockAndARefusalIsToldApart) {
  daemon([](int c) {
    uint8_t b[sizeof(Hello) + 8];
    size_t n = 0;
    const long got = recv_msg(c, b, sizeof b, {}, &n);
    auto h = parse_hello(std::span<const uint8_t>(b, got > 0 ? static_cast<size_t>(got) : 0));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->resume_block, 42u);
    Refused r;
    std::strcpy(r.reason, "QPN block 42 is held by another process (pid 1)");
    EXPECT_EQ(send_msg(c, &r, sizeof r), 0);
  });
  std::string err;
  bool refused = false;
  EXPECT_FALSE(connect_daemon("lo", "uroce0", &err, 42, &refused));
  join();
  EXPECT_TRUE(refused);
  EXPECT_EQ(err, "refused: QPN block 42 is held by another process (pid 1)");
}

TEST_F(ControlTest, ARequestGetsTheReplyOfItsSeq) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  std::thread peer([&] {
    uint8_t b[sizeof(Request) + 8];
    size_t n = 0;
    const long got = recv_msg(sv[1], b, sizeof b, {}, &n);
    auto r = parse_request(std::span<const uint8_t>(b, static_cast<size_t>(got)));
    ASSERT_TRUE(r);
    Reply rep;
    rep.seq = r->seq;
    rep.error = EADDRINUSE;
    EXPECT_EQ(send_msg(sv[1], &rep, sizeof rep), 0);
    // The second gets a reply of another seq: a protocol error at the client.
    ASSERT_GT(recv_msg(sv[1], b, sizeof b, {}, &n), 0);
    rep.seq = 999;
    EXPECT_EQ(send_msg(sv[1], &rep, sizeof rep), 0);
    // The third: the daemon ends the session.
    ASSERT_GT(recv_msg(sv[1], b, sizeof b, {}, &n), 0);
    ::close(sv[1]);
  });
  Request r;
  r.op = Op::kListen;
  r.ps = 0x0106;
  r.seq = 1;
  EXPECT_EQ(request(sv[0], r), EADDRINUSE);
  r.seq = 2;
  EXPECT_EQ(request(sv[0], r), EPROTO);
  r.seq = 3;
  EXPECT_EQ(request(sv[0], r), ECONNRESET);
  peer.join();
  ::close(sv[0]);
}

TEST_F(ControlTest, ARemovalDuringASessionIsRefusedWithItsReason) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  Refused gone;
  std::snprintf(gone.reason, sizeof gone.reason, "the device on eth0 was removed");
  std::thread peer([&] {
    uint8_t b[sizeof(Request) + 8];
    size_t n = 0;
    ASSERT_GT(recv_msg(sv[1], b, sizeof b, {}, &n), 0);
    EXPECT_EQ(send_msg(sv[1], &gone, sizeof gone), 0);  // instead of the Reply
    ::close(sv[1]);
  });
  Request r;
  r.op = Op::kConnect;
  r.seq = 1;
  std::string why;
  EXPECT_EQ(request(sv[0], r, &why), ESHUTDOWN);
  EXPECT_EQ(why, "the device on eth0 was removed");
  peer.join();
  ::close(sv[0]);
  // The message alone, as a client reads it from its socket unasked.
  const auto bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&gone), sizeof gone);
  EXPECT_EQ(parse_refused(bytes), std::optional<std::string>("the device on eth0 was removed"));
  EXPECT_FALSE(parse_refused(bytes.first(sizeof gone - 1)));
  Refused unterminated = gone;
  std::memset(unterminated.reason, 'x', sizeof unterminated.reason);
  EXPECT_FALSE(parse_refused(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&unterminated), sizeof gone)));
  Reply rep;
  EXPECT_FALSE(
      parse_refused(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&rep), sizeof rep)));
}

}  // namespace
}  // namespace uroce::shm
