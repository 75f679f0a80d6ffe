/**
 * @file fork_test.cc
 * @brief uroce has no fork support (docs/limits.md): in a process forked after its parent
 * started DPDK (by opening a DPDK device), ibv_open_device fails at once with one line naming
 * the parent and errno ENODEV instead of hanging on DPDK threads that are not there; the
 * child's exit (atexit handlers) waits for no thread of the parent and removes none of its
 * files, and the parent's device keeps working. Label dpdk (EAL with net_null; root).
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "verbs_fixture.h"

namespace uroce::verbs_test {
namespace {

std::string write_config() {
  char tmpl[] = "/tmp/uroce-verbs-fork-XXXXXX";
  std::string dir = mkdtemp(tmpl);
  std::string path = dir + "/uroce.toml";
  std::ofstream f(path);
  f << "[[device]]\nname = \"uroce_null\"\nport = \"net_null0\"\naddresses = [\"198.18.0.9/15\"]\n";
  return path;
}

ibv_context* open_first() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) return nullptr;
  ibv_context* c = n > 0 ? ibv_open_device(list[0]) : nullptr;
  const int saved = errno;
  ibv_free_device_list(list);
  errno = saved;
  return c;
}

/// The DPDK runtime folders of process pid (/var/run/dpdk/uroce-<pid>-*, dpdk/eal.cc).
int runtime_dirs_of(pid_t pid) {
  const std::string prefix = "uroce-" + std::to_string(pid) + "-";
  int n = 0;
  if (DIR* d = opendir("/var/run/dpdk")) {
    while (dirent* e = readdir(d)) n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
    closedir(d);
  }
  return n;
}

std::string read_all(int fd) {
  std::string out;
  char buf[512];
  for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(r));
  return out;
}

TEST(Fork, ChildOfAProcessThatStartedDpdkIsRefusedWithOneLine) {
  setenv("UROCE_CONFIG", write_config().c_str(), 1);
  ibv_context* ctx = open_first();  // a DPDK port: EAL starts here
  ASSERT_NE(ctx, nullptr);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  ASSERT_NE(pd, nullptr);
  ASSERT_EQ(runtime_dirs_of(getpid()), 1);

  int err_pipe[2];
  ASSERT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(err_pipe[1], STDERR_FILENO);
    ibv_context* c = open_first();
    const int e = errno;
    // exit(), not _exit(): the atexit handlers run (the progress thread and the runtime
    // folder inherited from the parent are not this process's).
    std::exit(c == nullptr && e == ENODEV ? 0 : 10 + (c != nullptr));
  }
  close(err_pipe[1]);
  const std::string err = read_all(err_pipe[0]);  // until the child exits
  close(err_pipe[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: another errno, 11: the open succeeded\n" << err;
  const std::string line = "DPDK was started by process " + std::to_string(parent) +
                           " before this process forked; uroce has no fork support: open "
                           "devices only after fork, or exec";
  EXPECT_NE(err.find(line), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line: " << err;

  // The parent's DPDK is untouched: its runtime folder is there and its device works.
  EXPECT_EQ(runtime_dirs_of(parent), 1);
  ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
  EXPECT_EQ(ibv_close_device(ctx), 0);
  unsetenv("UROCE_CONFIG");
}

}  // namespace
}  // namespace uroce::verbs_test
