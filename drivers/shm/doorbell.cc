/**
 * @file doorbell.cc
 * @brief Doorbell (doorbell.h) on an eventfd.
 */
#include "shm/doorbell.h"

#include <sys/eventfd.h>
#include <unistd.h>

namespace uroce::shm {

Doorbell::~Doorbell() { close(); }

Doorbell Doorbell::create() { return Doorbell(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)); }

void Doorbell::kick() const {
  if (fd_ < 0) return;
  const uint64_t one = 1;
  const ssize_t r = ::write(fd_, &one, sizeof one);
  (void)r;  // EAGAIN: the counter is at its maximum, the reader wakes all the same
}

bool Doorbell::drain() const {
  if (fd_ < 0) return false;
  uint64_t v = 0;
  return ::read(fd_, &v, sizeof v) == sizeof v && v != 0;
}

void Doorbell::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace uroce::shm
