/**
 * @file simulator.cc
 * @brief Event heap and the step loop of the simulator. Units: ns.
 */
#include "sim/simulator.h"

#include <utility>

namespace uroce::sim {

uint32_t Simulator::alloc_slot() {
  if (!free_slots_.empty()) {
    uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  bodies_.emplace_back();
  return static_cast<uint32_t>(bodies_.size() - 1);
}

void Simulator::schedule(Timestamp t, EventHandler* handler, uint32_t tag, Frame&& frame) {
  uint32_t s = alloc_slot();
  Body& b = bodies_[s];
  b.handler = handler;
  b.tag = tag;
  b.frame = std::move(frame);
  heap_.push(Key{t < now_ ? now_.ns : t.ns, ++seq_, s});
}

void Simulator::call_at(Timestamp t, std::function<void()> fn) {
  uint32_t s = alloc_slot();
  Body& b = bodies_[s];
  b.handler = nullptr;
  b.fn = std::move(fn);
  heap_.push(Key{t < now_ ? now_.ns : t.ns, ++seq_, s});
}

Timestamp Simulator::earliest_wake() const {
  Timestamp w = Timestamp::never();
  for (const Node* n : nodes_) w = earliest(w, n->next_wake());
  return w;
}

bool Simulator::step() {
  Timestamp te = heap_.empty() ? Timestamp::never() : Timestamp{heap_.top().t};
  Timestamp tn = earliest_wake();
  Timestamp t = earliest(te, tn);
  if (t.is_never()) return false;
  if (t > now_) {
    now_ = t;
    same_time_steps_ = 0;
  } else if (++same_time_steps_ > kStallSteps) {
    stalled_ = true;
    return false;
  }
  if (te <= tn) {
    Key k = heap_.top();
    heap_.pop();
    Body& b = bodies_[k.slot];
    ++events_run_;
    if (b.handler) {
      EventHandler* h = b.handler;
      uint32_t tag = b.tag;
      Frame f = std::move(b.frame);
      b.handler = nullptr;
      free_slots_.push_back(k.slot);
      h->on_event(tag, std::move(f), now_);
    } else {
      std::function<void()> fn = std::move(b.fn);
      b.fn = nullptr;
      free_slots_.push_back(k.slot);
      fn();
    }
    return true;
  }
  // Index loop: a poll may add nodes.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i]->next_wake() <= now_) {
      ++polls_run_;
      nodes_[i]->poll(now_);
    }
  }
  return true;
}

bool Simulator::run_until(Timestamp end) {
  for (;;) {
    Timestamp te = heap_.empty() ? Timestamp::never() : Timestamp{heap_.top().t};
    Timestamp t = earliest(te, earliest_wake());
    if (t > end) break;
    if (!step()) {
      if (stalled_) return false;
      break;
    }
  }
  if (end > now_ && !end.is_never()) now_ = end;
  return !stalled_;
}

bool Simulator::run_while(const std::function<bool()>& busy, Timestamp limit) {
  while (busy()) {
    Timestamp te = heap_.empty() ? Timestamp::never() : Timestamp{heap_.top().t};
    Timestamp t = earliest(te, earliest_wake());
    if (t > limit) return false;
    if (!step()) return false;
  }
  return true;
}

}  // namespace uroce::sim
