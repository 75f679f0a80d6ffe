/**
 * @file ring.cc
 * @brief Producer and Consumer of a shared-memory frame ring (ring.h).
 */
#include "shm/ring.h"

namespace uroce::shm {

void ring_init(const RingView& r) {
  r.head().store(0, std::memory_order_relaxed);
  r.tail().store(0, std::memory_order_relaxed);
  r.sleeping().store(0, std::memory_order_relaxed);
  for (uint32_t i = 0; i < r.layout().slots; ++i) {
    r.desc_buf(i).store(0, std::memory_order_relaxed);
    r.desc_len(i).store(0, std::memory_order_relaxed);
  }
}

Producer::Producer(const RingView& r) : r_(r), shadow_(r.layout().slots) {
  const uint32_t n = r.layout().slots;
  free_.reserve(n);
  for (uint32_t b = n; b-- > 0;) free_.push_back(b);  // taken from the back: 0 first
}

void Producer::reclaim() {
  const uint32_t tail = r_.tail().load(std::memory_order_acquire);
  const uint32_t done = tail - seen_tail_;
  if (done == 0) return;
  if (done > head_ - seen_tail_) {  // released more than was published: a broken consumer
    broken_ = true;
    return;
  }
  for (; seen_tail_ != tail; ++seen_tail_) free_.push_back(shadow_[seen_tail_ & r_.mask()]);
}

std::optional<uint32_t> Producer::take() {
  if (broken_) return std::nullopt;
  if (free_.empty()) reclaim();
  if (free_.empty() || broken_) return std::nullopt;
  const uint32_t b = free_.back();
  free_.pop_back();
  return b;
}

bool Producer::publish(uint32_t b, uint32_t len) {
  if (broken_) return false;
  if (head_ - seen_tail_ >= r_.layout().slots) {
    reclaim();
    if (broken_ || head_ - seen_tail_ >= r_.layout().slots) return false;
  }
  r_.desc_buf(head_).store(b, std::memory_order_relaxed);
  r_.desc_len(head_).store(len, std::memory_order_relaxed);
  shadow_[head_ & r_.mask()] = b;
  ++head_;
  r_.head().store(head_, std::memory_order_release);
  return true;
}

bool Producer::wake_needed() {
  // seq_cst store then seq_cst load: pairs with prepare_sleep()'s (ring.h, "Sleep").
  r_.head().store(head_, std::memory_order_seq_cst);
  auto s = r_.sleeping();
  return s.load(std::memory_order_seq_cst) != 0 && s.exchange(0, std::memory_order_seq_cst) != 0;
}

uint32_t Consumer::available() {
  if (broken_) return 0;
  const uint32_t n = r_.head().load(std::memory_order_acquire) - tail_;
  if (n > r_.layout().slots) {  // further ahead than the ring holds: a broken producer
    broken_ = true;
    return 0;
  }
  return n;
}

std::span<uint8_t> Consumer::frame(uint32_t k) {
  // Each field read once, then checked: the producer may rewrite them at any time.
  const uint32_t b = r_.desc_buf(tail_ + k).load(std::memory_order_relaxed);
  const uint32_t len = r_.desc_len(tail_ + k).load(std::memory_order_relaxed);
  if (b >= r_.layout().slots || len > r_.layout().slot_bytes) {
    ++bad_;
    return {};
  }
  return {r_.buf(b), len};
}

void Consumer::release(uint32_t n) {
  tail_ += n;
  r_.tail().store(tail_, std::memory_order_release);
}

bool Consumer::prepare_sleep() {
  auto s = r_.sleeping();
  s.store(1, std::memory_order_seq_cst);
  if (broken_ || r_.head().load(std::memory_order_seq_cst) == tail_) return true;
  s.store(0, std::memory_order_relaxed);
  return false;
}

}  // namespace uroce::shm
