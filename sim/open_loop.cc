/**
 * @file open_loop.cc
 * @brief OpenLoopWrites: Poisson arrivals, posting and completion times. Units: bytes, ns.
 */
#include "sim/open_loop.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

namespace uroce::sim {

OpenLoopWrites::OpenLoopWrites(const OpenLoopConfig& cfg, EngineHost& a, int a_index, EngineHost& b,
                               int b_index, const ConnParams& conn)
    : cfg_(cfg), a_(a), gap_rng_(derive_seed(cfg.seed, 0)), size_rng_(derive_seed(cfg.seed, 1)) {
  if (cfg_.sizes.empty() || cfg_.qps == 0 || !(cfg_.load > 0) || cfg_.rate_bps == 0) {
    error_ = "open loop: sizes, qps, load and rate must be positive";
    return;
  }
  double mean_bytes = 0;
  uint32_t largest = 0;
  for (uint32_t s : cfg_.sizes) {
    mean_bytes += s;
    largest = std::max(largest, s);
  }
  mean_bytes /= static_cast<double>(cfg_.sizes.size());
  mean_gap_ = Duration::nanos(static_cast<int64_t>(
      mean_bytes * 8 * 1e9 / (cfg_.load * static_cast<double>(cfg_.rate_bps))));
  for (uint32_t q = 0; q < cfg_.qps; ++q) {
    qa_.push_back(make_endpoint(a, a_index, transport::QpType::kRc, cfg_.depth));
    qb_.push_back(make_endpoint(b, b_index, transport::QpType::kRc, cfg_.depth));
    if (!qa_.back().qpn || !qb_.back().qpn || !connect(qa_.back(), qb_.back(), conn)) {
      error_ = "open loop: QP set-up failed";
      return;
    }
    for (bool at_a : {true, false}) {
      Region r;
      r.words.assign((largest + 7) / 8, 0);
      Endpoint& e = at_a ? qa_.back() : qb_.back();
      auto k =
          e.h->engine().reg_mr(e.pd, r.addr(), r.size(),
                               at_a ? transport::kAccessLocalWrite
                                    : transport::kAccessLocalWrite | transport::kAccessRemoteWrite);
      if (!k) {
        error_ = "open loop: reg_mr failed";
        return;
      }
      r.keys = k.value();
      (at_a ? src_ : dst_).push_back(std::move(r));
    }
  }
}

void OpenLoopWrites::start() {
  if (!error_.empty()) return;
  a_.add_app([this](EngineHost&, Timestamp now) { return poll(now); });
  Simulator& sim = a_.sim();
  stop_ = sim.now() + cfg_.stop;
  const Timestamp t = sim.now() + gap();
  if (t <= stop_) sim.call_at(t, [this] { arrive(); });
}

Duration OpenLoopWrites::gap() {
  // Inverse transform of the exponential distribution; 1 - U is in (0, 1].
  const double u = gap_rng_.uniform();
  return Duration::nanos(std::max<int64_t>(
      1, static_cast<int64_t>(-std::log(1 - u) * static_cast<double>(mean_gap_.ns))));
}

void OpenLoopWrites::arrive() {
  Simulator& sim = a_.sim();
  const Timestamp now = sim.now();
  const uint64_t i = msgs_.size();
  const uint32_t len = cfg_.sizes[size_rng_.below(cfg_.sizes.size())];
  msgs_.push_back({now, len, Timestamp::never()});
  const size_t q = i % cfg_.qps;
  transport::Sge sge{src_[q].addr(), len, src_[q].keys.lkey};
  transport::SendWr wr;
  wr.wr_id = i;
  wr.opcode = transport::WrOpcode::kRdmaWrite;
  wr.send_flags = transport::kSendSignaled;
  wr.sg = &sge;
  wr.num_sge = 1;
  wr.remote_addr = dst_[q].addr();
  wr.rkey = dst_[q].keys.rkey;
  if (!a_.engine().post_send(qa_[q].qpn, wr, now)) ++refused_;
  a_.wake();
  const Timestamp next = now + gap();
  if (next <= stop_) sim.call_at(next, [this] { arrive(); });
}

bool OpenLoopWrites::poll(Timestamp now) {
  std::array<transport::Cqe, 32> cq;
  for (const Endpoint& e : qa_)
    for (;;) {
      const size_t n = a_.engine().poll_cq(e.scq, cq);
      for (size_t k = 0; k < n; ++k) {
        const transport::Cqe& c = cq[k];
        if (c.wr_id >= msgs_.size() || !msgs_[c.wr_id].done.is_never()) {
          if (error_.empty())
            error_ = "open loop: unexpected completion " + std::to_string(c.wr_id);
          continue;
        }
        if (c.status != transport::WcStatus::kSuccess) {
          if (error_.empty())
            error_ = "open loop: completion status " + std::to_string(static_cast<int>(c.status));
          continue;
        }
        msgs_[c.wr_id].done = now;
      }
      if (n < cq.size()) break;
    }
  return false;
}

std::vector<Duration> OpenLoopWrites::completion_times(Timestamp from, Timestamp to) const {
  std::vector<Duration> v;
  for (const OpenLoopMessage& m : msgs_)
    if (m.arrival >= from && m.arrival < to && !m.done.is_never()) v.push_back(m.done - m.arrival);
  return v;
}

size_t OpenLoopWrites::unfinished(Timestamp from, Timestamp to) const {
  size_t n = 0;
  for (const OpenLoopMessage& m : msgs_)
    if (m.arrival >= from && m.arrival < to && m.done.is_never()) ++n;
  return n;
}

}  // namespace uroce::sim
