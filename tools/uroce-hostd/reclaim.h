/**
 * @file reclaim.h
 * @brief When what uroce-hostd's workers read without a lock may go: quiescent-state-based
 * reclamation (the scheme of the kernel's RCU, in user space).
 *
 * Every worker reads the steering table (QPN block -> client) without a lock and uses what it
 * read until its round ends; it holds nothing across rounds. A client that leaves is taken
 * out of the table first, then retired here with its end (unmap its region, free its block);
 * the end runs in collect() once every worker has started a round since (quiescent()): by
 * then no worker can hold it. An idle worker still starts a round every millisecond, so an
 * end waits about that long.
 *
 * Ordering: the table's stores and loads, quiescent()'s store and retire()'s loads are
 * sequentially consistent, so a worker's round that began before the retire() read the old
 * entry (it ends before that worker's next quiescent()), and one that began after it reads
 * the new one.
 * Thread-safety: every member from any thread; end_all() once the workers have stopped.
 */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

namespace uroce::hostd {

class Reclaimer {
 public:
  explicit Reclaimer(unsigned workers) : rounds_(workers) {}

  /// Worker w holds nothing it read from the table (the start of each of its rounds). Only
  /// w calls it for w.
  void quiescent(unsigned w) {
    std::atomic<uint64_t>& n = rounds_[w].n;
    n.store(n.load(std::memory_order_relaxed) + 1);
  }

  /// `end` runs once every worker has passed quiescent() after this call (the caller took
  /// what it ends out of the table before).
  void retire(std::function<void()> end) {
    Retired r{std::vector<uint64_t>(rounds_.size()), std::move(end)};
    for (size_t w = 0; w < rounds_.size(); ++w) r.seen[w] = rounds_[w].n.load();
    std::lock_guard<std::mutex> lock(mu_);
    retired_.push_back(std::move(r));
  }

  /// Runs the ends that are due (outside the lock: an end may retire more); how many ran.
  size_t collect() {
    std::vector<std::function<void()>> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < retired_.size();) {
        if (passed(retired_[i])) {
          due.push_back(std::move(retired_[i].end));
          retired_[i] = std::move(retired_.back());
          retired_.pop_back();
        } else {
          ++i;
        }
      }
    }
    for (auto& f : due) f();
    return due.size();
  }

  /// Ends not run yet.
  size_t pending() {
    std::lock_guard<std::mutex> lock(mu_);
    return retired_.size();
  }

  /// Runs every end now: the workers have stopped.
  void end_all() {
    std::vector<Retired> all;
    {
      std::lock_guard<std::mutex> lock(mu_);
      all.swap(retired_);
    }
    for (Retired& r : all) r.end();
  }

 private:
  struct alignas(64) Round {  // a cache line each: every worker stores its own per round
    std::atomic<uint64_t> n{0};
  };
  struct Retired {
    std::vector<uint64_t> seen;  ///< each worker's round count at retire()
    std::function<void()> end;
  };

  bool passed(const Retired& r) const {
    for (size_t w = 0; w < rounds_.size(); ++w)
      if (rounds_[w].n.load() == r.seen[w]) return false;
    return true;
  }

  std::vector<Round> rounds_;
  std::mutex mu_;
  std::vector<Retired> retired_;
};

}  // namespace uroce::hostd
