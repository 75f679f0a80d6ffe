/**
 * @file kernel_fds.cc
 * @brief xdp_fds(), opened_between(), close_unchanged() (kernel_fds.h), from /proc/self/fd
 * and /proc/self/fdinfo.
 */
#include "dpdk/kernel_fds.h"

#include <dirent.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string_view>

namespace uroce::dpdk {

namespace {

/// What fd refers to when it is an AF_XDP socket or a BPF object with an id, else "".
std::string identity(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  char buf[128];
  const ssize_t n = readlink(link.c_str(), buf, sizeof buf);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) return "";
  const std::string target(buf, static_cast<size_t>(n));
  if (target.rfind("socket:", 0) == 0) {
    int domain = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_XDP) return "";
    return target;  // the socket's inode: unique while it exists
  }
  // BPF objects share one anonymous inode; the kernel's id tells them apart.
  std::string_view key;
  if (target == "anon_inode:bpf-prog") key = "prog_id:";
  if (target == "anon_inode:bpf-map") key = "map_id:";
  if (target == "anon_inode:btf") key = "btf_id:";
  if (target == "anon_inode:bpf_link") key = "link_id:";
  if (key.empty()) return "";
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(fd));
  for (std::string line; std::getline(info, line);)
    if (line.rfind(key, 0) == 0)
      return target + " " + std::string(key) +
             std::to_string(std::strtoul(line.c_str() + key.size(), nullptr, 10));
  return "";
}

}  // namespace

std::vector<KernelFd> xdp_fds() {
  std::vector<int> fds;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return {};
  const int own = dirfd(dir);
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd != own) fds.push_back(fd);
  }
  closedir(dir);
  std::sort(fds.begin(), fds.end());
  std::vector<KernelFd> out;
  for (int fd : fds)
    if (std::string id = identity(fd); !id.empty()) out.push_back({fd, std::move(id)});
  return out;
}

std::vector<KernelFd> opened_between(const std::vector<KernelFd>& before,
                                     const std::vector<KernelFd>& after) {
  std::vector<KernelFd> out;
  for (const KernelFd& k : after)
    if (std::find(before.begin(), before.end(), k) == before.end()) out.push_back(k);
  return out;
}

size_t close_unchanged(const std::vector<KernelFd>& fds) {
  size_t closed = 0;
  for (const KernelFd& k : fds)
    if (identity(k.fd) == k.identity && close(k.fd) == 0) ++closed;
  return closed;
}

}  // namespace uroce::dpdk
