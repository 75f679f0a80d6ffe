/**
 * @file ring.h
 * @brief A single-producer/single-consumer ring of frame buffers in memory that two processes
 * map (a uroce-hostd client's region, region.h), and the sleep/kick handshake of its consumer.
 *
 * Layout of one ring (ring_layout()): a control block of three cache lines (the producer's
 * index `head`; the consumer's index `tail` and its `sleeping` flag), `slots` descriptors
 * {buffer, length}, then `slots` buffers of `slot_bytes`. Indices run free (uint32, wrapping);
 * a descriptor or buffer is reached through index & (slots - 1) or a checked buffer number, so
 * no value the other process writes can address memory outside the ring.
 *
 * The producer owns the buffers it has not published: it takes one (take()), fills it and
 * publishes it with its length; it may publish buffers in another order than it took them
 * (the TX pipeline reorders by priority). A buffer comes back to the producer when the
 * consumer moves `tail` past its descriptor: the producer knows which one from its own copy of
 * what it published, never from the shared descriptors. The consumer reads frames where they
 * lie and releases them in order.
 *
 * Trust: each side keeps its own index privately and only stores it; what it reads from the
 * other side is checked: a `head` more than `slots` ahead of the consumer, a `tail` outside
 * what was published, a descriptor naming no buffer or a length past the slot make the ring
 * broken() (the producer stops publishing; the consumer skips bad descriptors and reports
 * nothing more). Frame bytes can still change under the reader; uroce-hostd copies them before
 * it looks at them.
 *
 * Ordering: descriptors and frame bytes are written before a release store of `head` and
 * read after an acquire load of it; buffers come back by an acquire load of `tail` that the
 * consumer stored with release after it was done with them. Sleep: the consumer stores
 * sleeping = 1, then reads `head` again (both seq_cst) and blocks on its doorbell (an eventfd,
 * doorbell.h) only if it is still empty; the producer, after a batch, stores `head` and reads
 * `sleeping` (seq_cst), and kicks the doorbell only when it finds the flag set, clearing it.
 * One of the two always sees the other's store, so a frame never waits for a sleeper that
 * nobody wakes, and busy traffic makes no system call.
 *
 * Thread-safety: one producer thread and one consumer thread (in either process).
 */
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uroce::shm {

/// Largest ring the layout allows (slots, a power of two).
inline constexpr uint32_t kMaxSlots = 4096;
/// Cache line: the control block's fields and the buffers are aligned to it.
inline constexpr size_t kLine = 64;

/// One published frame: its buffer number and length in bytes.
struct Desc {
  uint32_t buf;
  uint32_t len;
};
static_assert(sizeof(Desc) == 8);

/// Byte offsets of one ring's parts from its start, and its size.
struct RingLayout {
  uint32_t slots = 0;       ///< descriptors and buffers, a power of two
  uint32_t slot_bytes = 0;  ///< bytes per buffer, a multiple of kLine
  size_t head_off = 0;      ///< uint32 producer index (own line)
  size_t tail_off = 0;      ///< uint32 consumer index (own line, with `sleeping`)
  size_t sleeping_off = 0;  ///< uint32 consumer sleep flag
  size_t desc_off = 0;      ///< Desc[slots]
  size_t buf_off = 0;       ///< slots * slot_bytes
  size_t bytes = 0;         ///< total, a multiple of kLine
};

/// The layout of a ring of `slots` buffers of `slot_bytes`; nullopt unless slots is a power of
/// two in 2..kMaxSlots and slot_bytes a non-zero multiple of kLine up to 64 KiB.
constexpr std::optional<RingLayout> ring_layout(uint32_t slots, uint32_t slot_bytes) {
  if (slots < 2 || slots > kMaxSlots || !std::has_single_bit(slots)) return std::nullopt;
  if (slot_bytes == 0 || slot_bytes % kLine != 0 || slot_bytes > 65536) return std::nullopt;
  RingLayout l;
  l.slots = slots;
  l.slot_bytes = slot_bytes;
  l.head_off = 0;
  l.tail_off = kLine;
  l.sleeping_off = kLine + sizeof(uint32_t);
  l.desc_off = 2 * kLine;
  const size_t desc_bytes = (size_t{slots} * sizeof(Desc) + kLine - 1) / kLine * kLine;
  l.buf_off = l.desc_off + desc_bytes;
  l.bytes = l.buf_off + size_t{slots} * slot_bytes;
  return l;
}

/// One ring in mapped memory: its base (kLine-aligned) and layout. Copyable; owns nothing.
class RingView {
 public:
  RingView() = default;
  RingView(uint8_t* base, const RingLayout& l) : base_(base), l_(l) {}

  const RingLayout& layout() const { return l_; }
  uint32_t mask() const { return l_.slots - 1; }
  std::atomic_ref<uint32_t> head() const { return ref(l_.head_off); }
  std::atomic_ref<uint32_t> tail() const { return ref(l_.tail_off); }
  std::atomic_ref<uint32_t> sleeping() const { return ref(l_.sleeping_off); }
  /// Descriptor i & mask(): its fields are read and written as relaxed atomics (the other
  /// process may write them at any time).
  std::atomic_ref<uint32_t> desc_buf(uint32_t i) const {
    return ref(l_.desc_off + size_t{i & mask()} * sizeof(Desc));
  }
  std::atomic_ref<uint32_t> desc_len(uint32_t i) const {
    return ref(l_.desc_off + size_t{i & mask()} * sizeof(Desc) + sizeof(uint32_t));
  }
  /// Buffer b (b < slots: the caller checks).
  uint8_t* buf(uint32_t b) const { return base_ + l_.buf_off + size_t{b} * l_.slot_bytes; }

 private:
  std::atomic_ref<uint32_t> ref(size_t off) const {
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(base_ + off));
  }

  uint8_t* base_ = nullptr;
  RingLayout l_{};
};

/// Resets a ring's control block (the process that creates the region, before it is shared).
void ring_init(const RingView& r);

/// The producer side. Every buffer starts free.
class Producer {
 public:
  Producer() = default;
  explicit Producer(const RingView& r);

  /// A free buffer's number (buffers the consumer released are taken back first); nullopt
  /// when all are published or held, or the ring is broken.
  std::optional<uint32_t> take();
  /// Buffer b's bytes (b from take()): slot_bytes() of them.
  uint8_t* data(uint32_t b) const { return r_.buf(b); }
  uint32_t slot_bytes() const { return r_.layout().slot_bytes; }
  /// True when take() would give a buffer.
  bool has_room() {
    if (free_.empty() && !broken_) reclaim();
    return !broken_ && !free_.empty();
  }
  /// Returns a taken buffer unpublished.
  void give_back(uint32_t b) { free_.push_back(b); }
  /// Publishes taken buffer b holding a frame of len bytes (<= slot_bytes()). False when the
  /// ring is full or broken: b stays the caller's.
  bool publish(uint32_t b, uint32_t len);
  /// After a batch of publish(): true when the consumer is asleep and needs a kick (its flag
  /// is cleared here, so one kick per sleep).
  bool wake_needed();
  /// Frames published and not yet released by the consumer (reads its index).
  uint32_t in_flight() {
    reclaim();
    return head_ - seen_tail_;
  }
  /// The consumer stored an impossible index; nothing more is published.
  bool broken() const { return broken_; }

 private:
  /// Takes back the buffers of descriptors the consumer released.
  void reclaim();

  RingView r_;
  uint32_t head_ = 0;
  uint32_t seen_tail_ = 0;
  std::vector<uint32_t> shadow_;  ///< buffer of each descriptor published (index & mask)
  std::vector<uint32_t> free_;
  bool broken_ = false;
};

/// The consumer side.
class Consumer {
 public:
  Consumer() = default;
  explicit Consumer(const RingView& r) : r_(r) {}

  /// Frames published and not yet released (0 when the ring is broken).
  uint32_t available();
  /// The k-th available frame (k < available()), or an empty span for a descriptor that names
  /// no buffer or a length past the slot (the producer's fault: skip it, release it with the
  /// others). The bytes stay valid until released.
  std::span<uint8_t> frame(uint32_t k);
  /// Hands the n oldest frames back to the producer.
  void release(uint32_t n);
  /// Before blocking on the doorbell: sets the sleeping flag and returns true when the ring
  /// is still empty; false (flag cleared) when a frame arrived meanwhile.
  bool prepare_sleep();
  /// After waking (or instead of blocking): clears the flag.
  void end_sleep() { r_.sleeping().store(0, std::memory_order_relaxed); }
  /// Descriptors skipped as bad, so far.
  uint64_t bad() const { return bad_; }
  /// The producer stored an impossible index.
  bool broken() const { return broken_; }

 private:
  RingView r_;
  uint32_t tail_ = 0;
  uint64_t bad_ = 0;
  bool broken_ = false;
};

}  // namespace uroce::shm
