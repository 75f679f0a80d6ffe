/**
 * @file doorbell.h
 * @brief The eventfd a ring's consumer blocks on while it sleeps (ring.h, "Sleep"): the
 * producer kicks it, the consumer drains it after waking. Non-blocking, close-on-exec.
 */
#pragma once

#include <cstdint>
#include <utility>

namespace uroce::shm {

class Doorbell {
 public:
  Doorbell() = default;
  /// Takes an eventfd (one received from the other process, say); -1: none.
  explicit Doorbell(int fd) : fd_(fd) {}
  ~Doorbell();
  Doorbell(Doorbell&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Doorbell& operator=(Doorbell&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  /// A new eventfd (EFD_NONBLOCK | EFD_CLOEXEC); fd() is -1 when the kernel refused.
  static Doorbell create();

  int fd() const { return fd_; }
  /// Wakes whoever blocks on fd() (a counter that would overflow is left as it is: it is
  /// readable anyway).
  void kick() const;
  /// Reads the counter back to zero; true when it was kicked.
  bool drain() const;
  /// Closes the descriptor (a forked child's copy); kick() and drain() then do nothing.
  void close();

 private:
  int fd_ = -1;
};

}  // namespace uroce::shm
