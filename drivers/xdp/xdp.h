/**
 * @file xdp.h
 * @brief uroce's XDP program on a kernel netdev (host mode): where its object file is, what
 * program a netdev has, who uses it, and removing it when nobody does. No DPDK here: the
 * net_af_xdp PMD loads the program itself (devarg `xdp_prog=`); this code runs before the port
 * opens (refuse a foreign program, remove a stale one of ours) and after it closes (the PMD
 * removes the program only when its ethdev is closed, which uroce's driver never does).
 * Kernel calls through libbpf (1.1 API). README.md in this folder has the whole lifecycle.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace uroce::xdp {

/// The name of uroce's program (its SEC("xdp") function in roce_steer.bpf.c): a netdev whose
/// XDP program has this name has uroce's.
inline constexpr std::string_view kProgName = "uroce_roce";
/// Its per-CPU counter map, indices as in Counts.
inline constexpr std::string_view kCountsMap = "uroce_counts";
/// Its map of AF_XDP sockets by RX queue (the name DPDK's net_af_xdp looks for).
inline constexpr std::string_view kSocketsMap = "xsks_map";

/// The program's object file: $UROCE_XDP_PROG if set, else the first of
/// object_candidates(<the file this code runs from>) that exists, else the build tree's copy
/// when it exists (programs built elsewhere). Found so in the build tree and wherever
/// `cmake --install` or the Debian package put uroce.
std::string object_path();

/// Where the object lies relative to `module`, the library or program that links uroce_xdp:
/// <dir>/roce_steer.bpf.o (libibverbs.so.1 installed in <prefix>/lib/uroce),
/// <dir>/uroce/roce_steer.bpf.o (build/lib/libibverbs.so.1), and
/// <dir>/../lib/uroce/roce_steer.bpf.o (a program in bin/, built or installed).
std::vector<std::string> object_candidates(const std::string& module);

enum class Mode { kNone, kNative, kGeneric, kOffload, kMulti };
const char* to_string(Mode m);

/// What XDP program a netdev has.
struct Attached {
  uint32_t id = 0;   ///< program id; 0: none
  std::string name;  ///< the kernel's name of it (at most 15 characters)
  Mode mode = Mode::kNone;
  bool ours() const { return id != 0 && name == kProgName; }
};

/// The program on ifname (in this network namespace); nullopt with *err when the netdev does
/// not exist or the kernel cannot be asked (its name needs CAP_SYS_ADMIN or CAP_BPF).
std::optional<Attached> attached(std::string_view ifname, std::string* err);

/// uroce's frame counts on ifname (summed over CPUs); nullopt when uroce's program is not
/// attached or its counters cannot be read.
struct Counts {
  uint64_t redirected = 0;  ///< RoCEv2 frames handed to a socket
  uint64_t passed = 0;      ///< other frames, to the kernel
  uint64_t unbound = 0;     ///< RoCEv2 frames on a queue without a socket, to the kernel
};
std::optional<Counts> counts(std::string_view ifname, std::string* err);

/// The lock file of a netdev: netdev_run_path("netdev", ifname) + ".lock" (common/run_path.h).
std::string lock_path(std::string_view ifname);

/// A uroce process's claim on a netdev: flock(LOCK_SH) on its lock file while the port is open.
/// The kernel drops it when the process dies, however it dies, so an attached uroce program
/// with nobody holding the lock is stale.
class NetdevUse {
 public:
  static std::unique_ptr<NetdevUse> acquire(std::string_view ifname, std::string* err);
  ~NetdevUse();
  NetdevUse(const NetdevUse&) = delete;
  NetdevUse& operator=(const NetdevUse&) = delete;
  const std::string& ifname() const { return ifname_; }

 private:
  NetdevUse(std::string ifname, int fd) : ifname_(std::move(ifname)), fd_(fd) {}
  std::string ifname_;
  int fd_;
};

/// What reap_stale() and detach_if_last() did.
struct Outcome {
  enum Kind {
    kNone,     ///< no XDP program on the netdev
    kRemoved,  ///< uroce's program, nobody using it: removed
    kInUse,    ///< uroce's program, a live uroce process holds the lock: left
    kForeign,  ///< another program: left, and the netdev cannot be used in host mode
    kError,    ///< the netdev or the kernel said no; message says why
  } kind = kNone;
  std::string message;  ///< one line
  bool ok() const { return kind == kNone || kind == kRemoved || kind == kInUse; }
};

/// Before opening a port on ifname: uroce's program with no live user (left by a process that
/// was killed) is removed; a foreign program is an error (never removed).
Outcome reap_stale(std::string_view ifname);

/// After closing a port: releases `use` and removes uroce's program if no other process
/// holds the lock. A foreign program is left.
Outcome detach_if_last(std::unique_ptr<NetdevUse> use);

/// Removes uroce's program from ifname (whoever holds the lock: the caller does, and sets the
/// netdev up queue by queue). true when none is attached after; false with *err (a foreign
/// program is left).
bool detach_ours(std::string_view ifname, std::string* err);

/// Puts the AF_XDP socket xsk_fd (bound to ifname's RX queue `queue`) into the sockets map of
/// uroce's program attached to ifname, so that the queue's RoCEv2 frames go to it. false with
/// *err.
bool bind_socket(std::string_view ifname, uint32_t queue, int xsk_fd, std::string* err);

/// One line of `uroce doctor`.
struct Check {
  std::string what;
  bool ok = false;
  std::string detail;
};

/// Whether ifname can take uroce's program: exists, is up, has an address, what XDP program it
/// has, and (when it has none) whether the kernel attaches one in native mode, tried with a
/// program that passes every frame and removed at once (the kernel's reason when it refuses,
/// e.g. a veth whose peer MTU is too large).
std::vector<Check> doctor_checks(std::string_view ifname);

}  // namespace uroce::xdp
