/**
 * @file status.h
 * @brief Control-path error codes. Values are POSIX errno numbers so the verbs layer can hand
 * them to applications unchanged (ibv_* functions return or set errno).
 */
#pragma once

#include <cerrno>
#include <optional>
#include <utility>

namespace uroce {

/// An error code; Status::ok() is success. The number is the errno an application sees.
class Status {
 public:
  constexpr Status() = default;
  constexpr explicit Status(int err) : err_(err) {}
  static constexpr Status ok() { return Status(); }
  static constexpr Status invalid() { return Status(EINVAL); }    ///< bad argument / mask
  static constexpr Status no_memory() { return Status(ENOMEM); }  ///< a queue or table is full
  static constexpr Status busy() { return Status(EBUSY); }        ///< resources still attached
  static constexpr Status not_found() { return Status(ENOENT); }  ///< no such object
  static constexpr Status unsupported() { return Status(EOPNOTSUPP); }
  static constexpr Status again() { return Status(EAGAIN); }   ///< transiently unavailable
  static constexpr Status access() { return Status(EACCES); }  ///< rights do not allow it

  constexpr bool is_ok() const { return err_ == 0; }
  constexpr explicit operator bool() const { return is_ok(); }
  constexpr int code() const { return err_; }
  friend constexpr bool operator==(Status, Status) = default;

 private:
  int err_ = 0;
};

/// A value or a Status error.
template <typename T>
class Result {
 public:
  Result(T v) : v_(std::move(v)) {}  // NOLINT: implicit on purpose
  Result(Status s) : s_(s) {}        // NOLINT: implicit on purpose
  bool is_ok() const { return v_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  Status status() const { return s_; }
  T& value() { return *v_; }
  const T& value() const { return *v_; }
  T* operator->() { return &*v_; }
  T& operator*() { return *v_; }

 private:
  std::optional<T> v_;
  Status s_ = Status(EINVAL);
};

}  // namespace uroce
