/**
 * @file link.cc
 * @brief Link queues, transmitter and impairments. Units: ns (events), ps (wire clock).
 */
#include "sim/link.h"

#include <algorithm>
#include <utility>

#include "sim/frame_bytes.h"

namespace uroce::sim {

namespace {
constexpr int64_t ceil_ns(int64_t ps) { return (ps + 999) / 1000; }
}  // namespace

Link::Link(Simulator& sim, const LinkParams& p, FrameReceiver* rx, uint32_t rx_port,
           LinkObserver* observer)
    : sim_(sim), p_(p), rx_(rx), rx_port_(rx_port), observer_(observer) {
  set_impairments(Impairments{});
}

void Link::set_impairments(const Impairments& imp) {
  imp_ = imp;
  loss_rng_.reseed(derive_seed(imp.seed, 0));
  reorder_rng_.reseed(derive_seed(imp.seed, 1));
  dup_rng_.reseed(derive_seed(imp.seed, 2));
  corrupt_rng_.reseed(derive_seed(imp.seed, 3));
}

bool Link::can_accept(size_t len) const {
  if (p_.max_frames && queued_frames_ + 1 > p_.max_frames) return false;
  if (p_.max_bytes && queued_bytes_ + len > p_.max_bytes) return false;
  return true;
}

bool Link::enqueue(Frame&& frame, Timestamp now) {
  if (!frame.is_control && !can_accept(frame.size())) {
    ++stats_.tail_drops;
    want_space_ = true;
    sim_.pool().put(std::move(frame));
    return false;
  }
  if (frame.id == 0) frame.id = sim_.next_frame_id();
  frame.enqueued_ns = now.ns;
  ++stats_.enqueued;
  ++queued_frames_;
  queued_bytes_ += frame.size();
  stats_.max_queue_bytes = std::max(stats_.max_queue_bytes, queued_bytes_);
  if (frame.is_control) {
    control_.push_back(std::move(frame));
  } else {
    int pr = frame.priority & 7;
    prio_bytes_[pr] += frame.size();
    queues_[pr].push_back(std::move(frame));
  }
  if (p_.max_frames && queued_frames_ >= p_.max_frames) want_space_ = true;
  kick(now);
  return true;
}

void Link::pause(int priority, Duration d, Timestamp now) {
  paused_until_[priority & 7] = now + d;
  if (d.ns <= 0) {
    kick(now);
  } else {
    sim_.schedule(now + d, this, kKick, Frame{});
  }
}

void Link::kick(Timestamp now, bool from_finish) {
  if (busy_) return;
  std::deque<Frame>* q = nullptr;
  int pr = -1;
  if (!control_.empty()) {
    q = &control_;
  } else {
    for (int i = kPriorities - 1; i >= 0; --i) {
      if (!queues_[i].empty() && paused_until_[i] <= now) {
        q = &queues_[i];
        pr = i;
        break;
      }
    }
  }
  if (!q) return;
  Frame f = std::move(q->front());
  q->pop_front();
  if (pr >= 0) prio_bytes_[pr] -= f.size();
  if (observer_) observer_->on_dequeue(f, now);
  int64_t ready_ps = (from_finish ? f.enqueued_ns : now.ns) * 1000;
  int64_t start = std::max(ready_ps, wire_free_ps_);
  finish_ps_ = start + serialization_ps(f.size(), p_.rate_bps);
  wire_free_ps_ = finish_ps_;
  wire_len_ = f.size();
  busy_ = true;
  sim_.schedule(Timestamp{ceil_ns(finish_ps_)}, this, kTxDone, std::move(f));
}

void Link::on_event(uint32_t tag, Frame&& frame, Timestamp now) {
  switch (tag) {
    case kTxDone: finish(std::move(frame), now); return;
    case kArrive:
      ++stats_.delivered;
      if (tap_) tap_(frame, now);
      rx_->receive(rx_port_, std::move(frame), now);
      return;
    case kKick: kick(now); return;
    default: return;
  }
}

void Link::finish(Frame&& f, Timestamp now) {
  busy_ = false;
  --queued_frames_;
  queued_bytes_ -= wire_len_;
  ++stats_.sent;
  stats_.sent_bytes += f.size();
  if (!f.is_control) ++stats_.sent_by_priority[f.priority & 7];
  stats_.max_frame_bytes = std::max<uint64_t>(stats_.max_frame_bytes, f.size());
  int64_t arrive_ps = finish_ps_ + p_.propagation.ns * 1000;

  // Every impairment draws once per frame, whatever happens to the frame.
  bool lose = loss_rng_.bernoulli(imp_.loss);
  bool hold = reorder_rng_.bernoulli(imp_.reorder);
  bool dup = dup_rng_.bernoulli(imp_.duplicate);
  bool flip = corrupt_rng_.bernoulli(imp_.corrupt);

  if (down_) {
    ++stats_.dropped_down;
    sim_.pool().put(std::move(f));
  } else if (imp_.drop_if && imp_.drop_if(f)) {
    ++stats_.dropped_filter;
    sim_.pool().put(std::move(f));
  } else if (lose) {
    ++stats_.lost;
    sim_.pool().put(std::move(f));
  } else {
    if (flip) corrupt(f);
    Timestamp at{ceil_ns(arrive_ps)};
    if (dup) {
      ++stats_.duplicated;
      Frame copy = sim_.pool().get(f.size());
      copy.bytes = f.bytes;
      copy.priority = f.priority;
      copy.is_cnp = f.is_cnp;
      copy.is_control = f.is_control;
      copy.id = f.id;
      sim_.schedule(at, this, kArrive, std::move(copy));
    }
    if (hold) {
      ++stats_.reordered;
      at = at + imp_.reorder_delay;
    }
    sim_.schedule(at, this, kArrive, std::move(f));
  }

  if (want_space_) {
    want_space_ = false;
    if (observer_) observer_->on_space(now);
  }
  kick(now, true);
}

void Link::corrupt(Frame& f) {
  size_t start = roce_payload_offset(f.bytes);
  uint64_t r = corrupt_rng_.next();
  if (start == 0 || start >= f.size()) {
    // Not RoCE: flip any byte after the Ethernet header.
    start = std::min<size_t>(14, f.size() ? f.size() - 1 : 0);
  }
  if (f.size() == 0) return;
  size_t off = start + static_cast<size_t>(r % (f.size() - start));
  uint8_t x = static_cast<uint8_t>((r >> 32) % 255 + 1);  // never 0: always changes the byte
  f.bytes[off] ^= x;
  ++stats_.corrupted;
}

}  // namespace uroce::sim
