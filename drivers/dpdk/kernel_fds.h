/**
 * @file kernel_fds.h
 * @brief The AF_XDP sockets and BPF objects (programs, maps, BTF, links) a process has open,
 * by file descriptor, and closing those that a PMD left open. DPDK 22.11's net_af_xdp leaves
 * some open when its ethdev is closed (ethdev_io.cc says which and why): the ethdev's owner
 * records what appeared while it set the ethdev up and closes what is still there once it has
 * closed the ethdev.
 *
 * An fd is recorded with what it refers to ("socket:[<inode>]" for a socket; the kernel's id
 * of a BPF object, from /proc/self/fdinfo) and closed only while it still refers to that, so
 * a number the PMD did close, reused meanwhile for something else, is left alone. No DPDK here.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace uroce::dpdk {

/// An open fd and what it refers to.
struct KernelFd {
  int fd = -1;
  std::string identity;  ///< e.g. "socket:[4711]", "anon_inode:bpf-prog prog_id:162"
  bool operator==(const KernelFd&) const = default;
};

/// The AF_XDP sockets and BPF objects open in this process now, by increasing fd; empty when
/// /proc/self/fd cannot be read.
std::vector<KernelFd> xdp_fds();

/// The entries of `after` that are not in `before`: opened in between.
std::vector<KernelFd> opened_between(const std::vector<KernelFd>& before,
                                     const std::vector<KernelFd>& after);

/// Closes each of fds that still refers to what it did when recorded; returns how many it
/// closed.
size_t close_unchanged(const std::vector<KernelFd>& fds);

}  // namespace uroce::dpdk
