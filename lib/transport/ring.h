/**
 * @file ring.h
 * @brief Fixed-capacity FIFO ring used for send/receive/shared-receive queues and CQs.
 *
 * Storage is allocated once, by the constructor or reset() on the control path; push/pop never
 * allocate. Capacity is rounded up to a power of two so positions wrap with a mask; indices
 * are free-running 32-bit counters (size = tail - head, correct across wrap). Units: entries.
 *
 * Thread-safety: none (the engine lock serialises every access).
 */
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace uroce::transport {

template <typename T>
class Ring {
 public:
  Ring() = default;
  explicit Ring(uint32_t min_capacity) { reset(min_capacity); }

  /// (Re)allocates storage for at least min_capacity entries and empties the ring.
  /// Control path only.
  void reset(uint32_t min_capacity) {
    uint32_t cap = std::bit_ceil(min_capacity < 1 ? 1u : min_capacity);
    slots_ = std::make_unique<T[]>(cap);
    mask_ = cap - 1;
    head_ = tail_ = 0;
  }
  /// Empties the ring without touching the storage.
  void clear() { head_ = tail_ = 0; }

  uint32_t capacity() const { return slots_ ? mask_ + 1 : 0; }
  uint32_t size() const { return tail_ - head_; }
  bool empty() const { return head_ == tail_; }
  bool full() const { return size() == capacity(); }

  /// Appends a slot and returns it for filling; nullptr when full.
  T* push() {
    if (full()) return nullptr;
    return &slots_[tail_++ & mask_];
  }
  /// Removes the oldest entry. Precondition: !empty().
  void pop() {
    assert(!empty());
    ++head_;
  }
  /// Removes the newest entry. Precondition: !empty().
  void pop_back() {
    assert(!empty());
    --tail_;
  }
  T& front() { return slots_[head_ & mask_]; }
  const T& front() const { return slots_[head_ & mask_]; }
  T& back() { return slots_[(tail_ - 1) & mask_]; }
  /// The i-th entry from the head (0 = front). Precondition: i < size().
  T& at(uint32_t i) { return slots_[(head_ + i) & mask_]; }
  const T& at(uint32_t i) const { return slots_[(head_ + i) & mask_]; }

  /// Free-running positions: entry at absolute position p lives in slot p & mask.
  uint32_t head_pos() const { return head_; }
  uint32_t tail_pos() const { return tail_; }
  T& at_pos(uint32_t p) { return slots_[p & mask_]; }
  const T& at_pos(uint32_t p) const { return slots_[p & mask_]; }
  /// Slot index (0..capacity-1) of absolute position p; lets side arrays parallel the ring.
  uint32_t slot_of(uint32_t p) const { return p & mask_; }

 private:
  std::unique_ptr<T[]> slots_;
  uint32_t mask_ = 0;
  uint32_t head_ = 0;
  uint32_t tail_ = 0;
};

}  // namespace uroce::transport
