/**
 * @file kernel_fds_test.cc
 * @brief drivers/dpdk/kernel_fds: the AF_XDP sockets and BPF objects opened between two
 * snapshots are found, and closed only while their fd still refers to the same object (a
 * number reused for another socket or map is left alone). No DPDK; needs root (AF_XDP sockets
 * and BPF maps), skipped without.
 */
#include "dpdk/kernel_fds.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace uroce::dpdk {
namespace {

int xdp_socket() { return socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0); }

int bpf_array_map() {
  bpf_attr a;
  std::memset(&a, 0, sizeof a);
  a.map_type = BPF_MAP_TYPE_ARRAY;
  a.key_size = 4;
  a.value_size = 8;
  a.max_entries = 1;
  return static_cast<int>(syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a));
}

bool is_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

bool has_fd(const std::vector<KernelFd>& fds, int fd) {
  return std::any_of(fds.begin(), fds.end(), [&](const KernelFd& k) { return k.fd == fd; });
}

class KernelFdsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int s = xdp_socket();
    int m = bpf_array_map();
    if (s < 0 || m < 0) GTEST_SKIP() << "needs AF_XDP sockets and BPF maps (root)";
    close(s);
    close(m);
  }
};

// Expect: what opened between two snapshots, AF_XDP sockets and BPF objects only.
TEST_F(KernelFdsTest, FindsWhatOpenedBetweenSnapshots) {
  const int old_sock = xdp_socket();
  const std::vector<KernelFd> before = xdp_fds();
  EXPECT_TRUE(has_fd(before, old_sock));
  const int sock = xdp_socket();
  const int map = bpf_array_map();
  const int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const std::vector<KernelFd> opened = opened_between(before, xdp_fds());
  ASSERT_EQ(opened.size(), 2u);
  EXPECT_EQ(opened[0].fd, std::min(sock, map));
  EXPECT_EQ(opened[1].fd, std::max(sock, map));
  for (const KernelFd& k : opened) {
    const char* want = k.fd == sock ? "socket:[" : "anon_inode:bpf-map map_id:";
    EXPECT_EQ(k.identity.rfind(want, 0), 0u) << k.identity;
  }
  // Expect: both closed, nothing else.
  EXPECT_EQ(close_unchanged(opened), 2u);
  EXPECT_FALSE(is_open(sock));
  EXPECT_FALSE(is_open(map));
  EXPECT_TRUE(is_open(old_sock));
  EXPECT_TRUE(is_open(udp));
  close(old_sock);
  close(udp);
}

// Expect: an fd closed since and reused for another socket or map is not closed.
TEST_F(KernelFdsTest, LeavesAReusedNumberAlone) {
  const std::vector<KernelFd> before = xdp_fds();
  const int sock = xdp_socket();
  const int map = bpf_array_map();
  const std::vector<KernelFd> opened = opened_between(before, xdp_fds());
  ASSERT_EQ(opened.size(), 2u);
  close(sock);
  close(map);
  // The lowest free numbers again: the same two, other objects.
  const int sock2 = xdp_socket();
  const int map2 = bpf_array_map();
  ASSERT_TRUE((sock2 == sock && map2 == map) || (sock2 == map && map2 == sock));
  EXPECT_EQ(close_unchanged(opened), 0u);
  EXPECT_TRUE(is_open(sock2));
  EXPECT_TRUE(is_open(map2));
  close(sock2);
  close(map2);
}

}  // namespace
}  // namespace uroce::dpdk
