/**
 * @file netns.h
 * @brief Test harness: every test runs in a network namespace of its own, with a veth pair
 * whose far end lives in a second namespace held by a child process. Nothing touches the
 * host's interfaces; both namespaces vanish with the processes, also when a test fails.
 *
 * Topology after make_veth(): here "va" (02:00:00:00:00:01), peer "vb" (02:00:00:00:00:02),
 * both up, IPv6 DAD off, no automatic link-local (addrgenmode none: the tests add their own).
 * Addresses are only from 198.18.0.0/15, 2001:2::/48 and fe80::/10. Needs root
 * (CAP_SYS_ADMIN, CAP_NET_ADMIN); skipped otherwise. Waits are poll()s on a Monitor's fd with
 * deadlines of seconds, never sleeps.
 */
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "netlink/monitor.h"
#include "netlink/netdev.h"

namespace uroce::netlink::test {

inline constexpr auto kWait = std::chrono::seconds(20);  ///< generous: 2 loaded CPUs

inline Gid gid(const char* text) {
  Gid g;
  EXPECT_TRUE(Gid::parse(text, &g)) << text;
  return g;
}

/// Writes a sysctl of the calling thread's network namespace (/proc/sys/net is per netns).
inline bool write_sysctl(const char* path, const char* value) {
  const int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, value, strlen(value)) == static_cast<ssize_t>(strlen(value));
  close(fd);
  return ok;
}

/// Runs a shell command; its output, and false when it failed.
inline bool run(const std::string& cmd, std::string* out = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return false;
  std::string text;
  char buf[512];
  while (size_t n = fread(buf, 1, sizeof(buf), p)) text.append(buf, n);
  const int status = pclose(p);
  if (out) *out = text;
  if (status != 0) ADD_FAILURE() << "command failed: " << cmd << "\n" << text;
  return status == 0;
}

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root for network namespaces";
    // A fresh namespace for this test (the process's thread moves; the previous one, if any,
    // goes away with its last reference).
    ASSERT_EQ(unshare(CLONE_NEWNET), 0) << strerror(errno);
    disable_dad();
    ASSERT_TRUE(run("ip link set lo up"));
    start_peer();
  }

  void TearDown() override {
    if (peer_ > 0) {
      kill(peer_, SIGKILL);
      waitpid(peer_, nullptr, 0);
    }
  }

  static void disable_dad() {
    write_sysctl("/proc/sys/net/ipv6/conf/all/accept_dad", "0");
    write_sysctl("/proc/sys/net/ipv6/conf/default/accept_dad", "0");
  }

  /// A child process sitting in a namespace of its own, dying with us (PR_SET_PDEATHSIG).
  void start_peer() {
    int ready[2];
    ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
    peer_ = fork();
    ASSERT_GE(peer_, 0);
    if (peer_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (unshare(CLONE_NEWNET) != 0) _exit(1);
      disable_dad();
      const char ok = 1;
      if (write(ready[1], &ok, 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(ready[1]);
    char ok = 0;
    ASSERT_EQ(read(ready[0], &ok, 1), 1) << "peer namespace did not start";
    close(ready[0]);
  }

  /// `cmd` (an `ip ...` command) run inside the peer namespace.
  bool peer(const std::string& cmd) {
    return run("nsenter -t " + std::to_string(peer_) + " -n " + cmd);
  }

  /// va here, vb in the peer namespace, both up; returns once va is up (carrier seen).
  void make_veth() {
    ASSERT_TRUE(
        run("ip link add va address 02:00:00:00:00:01 type veth peer name vb "
            "address 02:00:00:00:00:02 netns " +
            std::to_string(peer_)));
    ASSERT_TRUE(run("ip link set va addrgenmode none"));
    ASSERT_TRUE(peer("ip link set vb addrgenmode none"));
    std::string err;
    auto st = query("va", &err);
    ASSERT_TRUE(st) << err;
    Monitor mon(st->ifindex);
    ASSERT_TRUE(mon.ok()) << mon.error();
    ASSERT_TRUE(run("ip link set va up"));
    ASSERT_TRUE(peer("ip link set vb up"));
    st = query("va", &err);
    ASSERT_TRUE(st) << err;
    ASSERT_TRUE(wait_for(mon, &*st, [](const NetdevState& s) { return s.up; }))
        << "va never came up";
    ifindex_ = st->ifindex;
  }

  /// Waits on the Monitor's fd until `done(*state)` holds after a poll(); false on timeout.
  static bool wait_for(Monitor& mon, NetdevState* state,
                       const std::function<bool(const NetdevState&)>& done,
                       std::chrono::milliseconds timeout = kWait) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    mon.poll(state);
    while (!done(*state)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd pfd{mon.fd(), POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(left.count()));
      mon.poll(state);
    }
    return true;
  }

  pid_t peer_ = -1;
  int ifindex_ = 0;  ///< va's, after make_veth()
};

}  // namespace uroce::netlink::test
