/**
 * @file hostd_share.cc
 * @brief Paths, slot claims and the QPN parse shared by uroce-hostd and its clients
 * (hostd_share.h).
 */
#include "host/hostd_share.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/port.h"

namespace uroce::host {

static_assert(kHostdSlots <= (1 << kSharedQpnTagBits));

std::string run_dir() {
  const char* dir = std::getenv("UROCE_RUN_DIR");
  return dir && *dir ? dir : "/run/uroce";
}

std::string hostd_base(std::string_view ifname) {
  struct stat st {};
  ::stat("/proc/self/ns/net", &st);
  return run_dir() + "/hostd-" + std::string(ifname) + "." + std::to_string(st.st_ino);
}

bool hostd_running(std::string_view ifname) {
  const std::string base = hostd_base(ifname);
  // The daemon's lock: a socket left by a killed daemon does not count. No probe connection:
  // DPDK 22.11's memif server panics in EAL's interrupt thread on a peer that leaves at once.
  int lock = ::open((base + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (lock < 0) return false;
  const bool held = ::flock(lock, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(lock);
  struct stat st {};
  return held && ::stat((base + ".sock").c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

std::optional<SlotClaim> claim_slot(std::string_view ifname, std::string* err) {
  const std::string base = hostd_base(ifname);
  for (int k = 0; k < kHostdSlots; ++k) {
    const std::string path = base + ".slot-" + std::to_string(k);
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
      *err = "cannot open " + path + ": " + std::strerror(errno);
      return std::nullopt;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return SlotClaim{k, fd};
    ::close(fd);
  }
  *err = "all " + std::to_string(kHostdSlots) + " client slots of uroce-hostd are taken";
  return std::nullopt;
}

std::optional<uint32_t> roce_dest_qpn(std::span<const uint8_t> f) {
  size_t off = 12;
  if (f.size() < 14) return std::nullopt;
  uint16_t type = static_cast<uint16_t>(f[12] << 8 | f[13]);
  if (type == 0x8100 || type == 0x88a8) {
    if (f.size() < 18) return std::nullopt;
    type = static_cast<uint16_t>(f[16] << 8 | f[17]);
    off = 16;
  }
  off += 2;  // the IP header
  size_t udp = 0;
  if (type == 0x0800) {
    if (f.size() < off + 20 || f[off + 9] != 17) return std::nullopt;
    udp = off + size_t{f[off] & 0x0fu} * 4;
  } else if (type == 0x86dd) {
    if (f.size() < off + 40 || f[off + 6] != 17) return std::nullopt;
    udp = off + 40;
  } else {
    return std::nullopt;
  }
  const size_t bth = udp + 8;
  if (f.size() < bth + 12 || (f[udp + 2] << 8 | f[udp + 3]) != 4791) return std::nullopt;
  return uint32_t{f[bth + 5]} << 16 | uint32_t{f[bth + 6]} << 8 | f[bth + 7];
}

int slot_of_qpn(uint32_t qpn) {
  return static_cast<int>((qpn >> (24 - kSharedQpnTagBits)) & ((1u << kSharedQpnTagBits) - 1));
}

std::optional<int> client_of_qpn(uint32_t qpn) {
  const int slot = slot_of_qpn(qpn);
  if (slot >= kHostdSlots) return std::nullopt;
  return slot;
}

}  // namespace uroce::host
