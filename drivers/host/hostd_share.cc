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
#include <cstring>

#include "common/port.h"
#include "transport/wire/udp.h"
#include "xdp/xdp.h"

namespace uroce::host {

static_assert(kHostdSlots <= (1 << kSharedQpnTagBits));

std::string hostd_base(std::string_view ifname) { return xdp::netdev_run_path("hostd", ifname); }

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
  const auto bth = wire::rocev2_udp_payload(f);
  if (!bth || f.size() < *bth + 12) return std::nullopt;  // the 12-byte BTH
  return uint32_t{f[*bth + 5]} << 16 | uint32_t{f[*bth + 6]} << 8 | f[*bth + 7];
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
