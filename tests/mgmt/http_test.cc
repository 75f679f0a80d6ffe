/**
 * @file http_test.cc
 * @brief mgmt::Server and perform_all on loopback: reads open, writes only with the token, a
 * body over the limit refused, a slow client cut off while others are served, a handler's
 * exception answered, a dead node reported without holding up the others.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>

#include "mgmt/http_client.h"
#include "mgmt/http_server.h"

namespace uroce::mgmt {
namespace {

constexpr char kToken[] = "0123456789abcdef0123";

// One server for the suite: civetweb's mg_stop takes ~2 s (its listener polls in 2 s steps).
class HttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ServerOptions o;
    o.listen = "127.0.0.1:0";
    o.token = kToken;
    o.max_body = 1024;
    o.request_timeout_ms = 300;
    std::string err;
    server_ = Server::start(
                  o,
                  [](const Request& r) {
                    ++calls_;
                    if (r.path == "/boom") throw std::runtime_error("handler failed");
                    return Response{
                        200, "{\"method\":\"" + r.method + "\",\"path\":\"" + r.path +
                                 "\",\"bytes\":" + std::to_string(r.body.size()) +
                                 ",\"dry\":" + (query_flag(r.query, "dry_run") ? "1" : "0") + "}"};
                  },
                  &err)
                  .release();
    ASSERT_NE(server_, nullptr) << err;
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    calls_ = 0;
  }
  static std::string url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
  }

  static inline Server* server_ = nullptr;
  static inline std::atomic<int> calls_{0};
};

TEST_F(HttpTest, ReadsAreOpenWritesNeedTheToken) {
  Result r = perform({"GET", url("/v1/state"), "", ""}, 2000);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body, R"({"method":"GET","path":"/v1/state","bytes":0,"dry":0})");
  r = perform({"PATCH", url("/v1/settings"), "{}", ""}, 2000);
  EXPECT_EQ(r.status, 401);
  EXPECT_NE(r.body.find("Bearer"), std::string::npos);
  r = perform({"PATCH", url("/v1/settings"), "{}", "0123456789abcdef0124"}, 2000);
  EXPECT_EQ(r.status, 403);
  r = perform({"PATCH", url("/v1/settings"), "{}", "short"}, 2000);
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(calls_.load(), 1);  // refused writes never reach the handler
  r = perform({"PATCH", url("/v1/settings?dry_run=1"), "{\"a\":1}", kToken}, 2000);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"method":"PATCH","path":"/v1/settings","bytes":7,"dry":1})");
}

TEST_F(HttpTest, ABodyOverTheLimitIsRefused) {
  Result r = perform({"PUT", url("/v1/settings"), std::string(1025, 'x'), kToken}, 2000);
  EXPECT_EQ(r.status, 413);
  r = perform({"PUT", url("/v1/settings"), std::string(1024, 'x'), kToken}, 2000);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(calls_.load(), 1);
}

TEST_F(HttpTest, AHandlerExceptionIsA500) {
  Result r = perform({"GET", url("/boom"), "", ""}, 2000);
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("handler failed"), std::string::npos);
}

TEST_F(HttpTest, ASlowClientIsCutOffAndOthersAreServed) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(server_->port());
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const char partial[] = "GET /v1/state HTTP/1.1\r\nHost: x\r\n";  // headers never finish
  ASSERT_EQ(write(fd, partial, sizeof partial - 1), static_cast<ssize_t>(sizeof partial - 1));
  // Meanwhile another client is answered.
  EXPECT_EQ(perform({"GET", url("/v1/state"), "", ""}, 2000).status, 200);
  // The stalled connection is closed by the server (bounded wait: 10 s).
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[512];
  ssize_t n;
  std::string got;
  while ((n = read(fd, buf, sizeof buf)) > 0) got.append(buf, static_cast<size_t>(n));
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(n, 0) << "the server did not close the stalled connection";
  EXPECT_LT(waited, std::chrono::seconds(9));
  close(fd);
  EXPECT_EQ(perform({"GET", url("/v1/state"), "", ""}, 2000).status, 200);
}

TEST_F(HttpTest, ManyAtOnceAndADeadNodeDoesNotHoldUpTheOthers) {
  // A port nobody listens on: bind one, never listen.
  int dead = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(dead, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  getsockname(dead, reinterpret_cast<sockaddr*>(&a), &len);
  std::vector<Call> calls;
  for (int i = 0; i < 40; ++i) calls.push_back({"GET", url("/n/" + std::to_string(i)), "", ""});
  calls.push_back({"GET", "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/", "", ""});
  std::vector<Result> rs = perform_all(calls, 2000, 16);
  ASSERT_EQ(rs.size(), calls.size());
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(rs[i].status, 200) << rs[i].error;
    EXPECT_NE(rs[i].body.find("/n/" + std::to_string(i) + "\""), std::string::npos);
  }
  EXPECT_EQ(rs.back().status, 0);
  EXPECT_FALSE(rs.back().error.empty());
  close(dead);
}

TEST(TokenFile, OnlyAPrivateFileOfAtLeast16Characters) {
  char dir[] = "/tmp/uroce-token-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/token";
  std::ofstream(path) << "0123456789abcdef\n";
  std::string token, err;
  chmod(path.c_str(), 0644);
  EXPECT_FALSE(read_token_file(path, &token, &err));
  EXPECT_NE(err.find("0600"), std::string::npos);
  chmod(path.c_str(), 0600);
  EXPECT_TRUE(read_token_file(path, &token, &err)) << err;
  EXPECT_EQ(token, "0123456789abcdef");
  std::ofstream(path) << "short\n";
  EXPECT_FALSE(read_token_file(path, &token, &err));
  EXPECT_FALSE(read_token_file(std::string(dir) + "/none", &token, &err));
  unlink(path.c_str());
  rmdir(dir);
  EXPECT_TRUE(token_equal("abc", "abc"));
  EXPECT_FALSE(token_equal("abc", "abd"));
  EXPECT_FALSE(token_equal("abc", "abcd"));
}

}  // namespace
}  // namespace uroce::mgmt
