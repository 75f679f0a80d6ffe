/**
 * @file region.cc
 * @brief A client's region: layout, creation (memfd), mapping (region.h).
 */
#include "shm/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace uroce::shm {

namespace {

std::string errno_line(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

/// Maps fd's first `bytes`, shared, not inherited by a forked child.
uint8_t* map_shared(int fd, size_t bytes, std::string* err) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *err = errno_line("mmap");
    return nullptr;
  }
  if (::madvise(p, bytes, MADV_DONTFORK) != 0) {
    *err = errno_line("madvise(MADV_DONTFORK)");
    ::munmap(p, bytes);
    return nullptr;
  }
  return static_cast<uint8_t*>(p);
}

}  // namespace

std::optional<RegionLayout> region_layout(const RegionParams& p) {
  if (p.rx_rings < 1 || p.rx_rings > kMaxRxRings) return std::nullopt;
  auto tx = ring_layout(p.tx_slots, p.slot_bytes);
  auto rx = ring_layout(p.rx_slots, p.slot_bytes);
  if (!tx || !rx) return std::nullopt;
  RegionLayout l;
  l.tx = *tx;
  l.rx = *rx;
  l.tx_off = 0;
  size_t off = tx->bytes;
  for (uint32_t k = 0; k < p.rx_rings; ++k) {
    l.rx_off[k] = off;
    off += rx->bytes;
  }
  l.bytes = off;
  return l;
}

Region::~Region() {
  if (base_) ::munmap(base_, layout_.bytes);
  if (fd_ >= 0) ::close(fd_);
}

Region::Region(Region&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      base_(std::exchange(o.base_, nullptr)),
      params_(o.params_),
      layout_(o.layout_) {}

Region& Region::operator=(Region&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(base_, o.base_);
  std::swap(params_, o.params_);
  std::swap(layout_, o.layout_);
  return *this;
}

void Region::release_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Region::forget() {
  release_fd();
  base_ = nullptr;
}

std::optional<Region> create_region(const RegionParams& p, std::string* err) {
  auto l = region_layout(p);
  if (!l) {
    *err = "bad region parameters";
    return std::nullopt;
  }
  Region r;
  r.params_ = p;
  r.layout_ = *l;
  r.fd_ = ::memfd_create("uroce-hostd-client", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (r.fd_ < 0) {
    *err = errno_line("memfd_create");
    return std::nullopt;
  }
  if (::ftruncate(r.fd_, static_cast<off_t>(l->bytes)) != 0) {
    *err = errno_line("ftruncate");
    return std::nullopt;
  }
  // The client could otherwise shrink the file and make the daemon's accesses fault (SIGBUS).
  if (::fcntl(r.fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    *err = errno_line("fcntl(F_ADD_SEALS)");
    return std::nullopt;
  }
  r.base_ = map_shared(r.fd_, l->bytes, err);
  if (!r.base_) return std::nullopt;
  ring_init(r.tx());
  for (uint32_t k = 0; k < p.rx_rings; ++k) ring_init(r.rx(k));
  return r;
}

std::optional<Region> map_region(int fd, const RegionParams& p, std::string* err) {
  Region r;
  r.fd_ = fd;
  auto l = region_layout(p);
  if (!l) {
    *err = "the daemon sent region parameters this process does not accept";
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < l->bytes) {
    *err = "the daemon's region is smaller than its parameters say";
    return std::nullopt;
  }
  r.params_ = p;
  r.layout_ = *l;
  r.base_ = map_shared(fd, l->bytes, err);
  if (!r.base_) return std::nullopt;
  return r;
}

}  // namespace uroce::shm
