/**
 * @file rc_stream.h
 * @brief A self-checking traffic generator for one connected QP pair on two EngineHosts:
 * a stream of work requests of one opcode (SEND, SEND_WITH_IMM, RDMA WRITE,
 * WRITE_WITH_IMM, RDMA READ, CMP_SWAP, FETCH_ADD, ATOMIC_WRITE, FLUSH) from requester A to
 * responder B, with a
 * bounded window of outstanding WRs, every byte compared and every completion checked to be
 * present exactly once, in order, with the right status, opcode, length and immediate.
 *
 * Message sizes follow a fixed cycle (1 B to 256 KiB) so every segmentation case (only, first/
 * middle/last, one byte, MTU multiples and off-by-one) occurs; payload byte k of message i is
 * pattern(i, k). Buffers are rings of `window` slots of kMaxMessage bytes; a slot is reused
 * only after its WR completed, and the target slot is poisoned after checking so a stale or
 * re-executed duplicate shows up. Atomics use four 8-byte counters at B; FETCH_ADD checks each
 * returned value against the running sum, CMP_SWAP chains compare values (every 7th compare is
 * made to fail on purpose); an ATOMIC_WRITE stream sets a counter and every third operation
 * adds to it with FETCH_ADD, which must return what the last ATOMIC_WRITE wrote (a duplicate
 * written again after it would show). A FLUSH stream checks the WRITE before each FLUSH is in
 * place when the FLUSH completes. Used by tests/sim and bench/sim. Units: bytes, ns.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/engine_host.h"
#include "transport/engine.h"
#include "transport/verbs_types.h"

namespace uroce::sim {

enum class StreamOp : uint8_t {
  kSend,
  kSendWithImm,
  kWrite,
  kWriteWithImm,
  kRead,
  kCmpSwap,
  kFetchAdd,
  kAtomicWrite,  ///< ATOMIC_WRITEs, every third operation a FETCH_ADD that reads the target back
  kFlush,        ///< unsignaled WRITEs, each followed by a signaled FLUSH of its range or region
};

const char* stream_op_name(StreamOp op);
inline bool is_atomic(StreamOp op) {
  return op == StreamOp::kCmpSwap || op == StreamOp::kFetchAdd || op == StreamOp::kAtomicWrite;
}

/// Deterministic payload byte `off` of message `msg`.
uint8_t stream_pattern(uint64_t msg, uint64_t off);

struct StreamConfig {
  StreamOp op = StreamOp::kWrite;
  uint64_t total_bytes = 32ull << 20;  ///< for non-atomics: stop after this many payload bytes
  uint64_t atomic_ops = 8192;          ///< for atomics: number of operations
  uint32_t window = 16;                ///< outstanding WRs at most
  /// Message size cycle; empty: the default cycle. Each entry <= kMaxMessage.
  std::vector<uint32_t> sizes;
  bool verify = true;  ///< compare bytes (benchmarks may turn it off)
};

class RcStream {
 public:
  static constexpr uint32_t kMaxMessage = 256 * 1024;

  /// a_qpn on host a, b_qpn on host b must be connected RC QPs in RTS; a_pd/b_pd their PDs;
  /// a_scq A's send CQ, b_rcq B's receive CQ. Registers the buffers.
  RcStream(const StreamConfig& cfg, EngineHost& a, uint32_t a_pd, uint32_t a_qpn, uint32_t a_scq,
           EngineHost& b, uint32_t b_pd, uint32_t b_qpn, uint32_t b_rcq);

  /// Adds its app callbacks to both hosts and posts the first window.
  void start();
  /// All WRs completed (or an error stopped the stream).
  bool done() const { return finished_ || !error_.empty(); }
  /// After done(): no completion beyond the expected ones arrived (call after running on).
  bool check_no_extra_completions();

  const std::string& error() const { return error_; }  ///< empty when all checks passed
  uint64_t posted() const { return posted_; }
  uint64_t completed() const { return completed_; }
  uint64_t bytes_completed() const { return bytes_done_; }
  Timestamp first_post_time() const { return t_first_; }
  Timestamp last_completion_time() const { return t_last_; }
  /// Per completed message: its completion time minus its post time (message completion time).
  const std::vector<Duration>& completion_times() const { return fct_; }

 private:
  bool step_a(Timestamp now);
  bool step_b(Timestamp now);
  bool post_next(Timestamp now);
  bool post_recv(uint64_t j);
  uint32_t size_of(uint64_t i) const;
  bool more_to_post() const;
  void fail(const std::string& msg);
  uint8_t* a_slot(uint64_t i) { return a_buf_.data() + (i % cfg_.window) * kMaxMessage; }
  uint8_t* b_slot(uint64_t i) { return b_buf_.data() + (i % cfg_.window) * kMaxMessage; }

  StreamConfig cfg_;
  EngineHost& a_;
  EngineHost& b_;
  uint32_t a_pd_, a_qpn_, a_scq_, b_pd_, b_qpn_, b_rcq_;
  std::vector<uint8_t> a_buf_, b_buf_;
  std::vector<uint64_t> a_atomic_res_;  ///< 8-byte result slots
  std::vector<uint64_t> b_counters_;    ///< 4 atomic targets
  transport::MrKeys a_mr_, b_mr_, a_res_mr_, b_cnt_mr_;
  std::vector<uint64_t> expect_counter_;
  std::vector<uint64_t> expect_result_;  ///< per window slot: the value the atomic returns
  std::vector<uint32_t> sizes_;
  std::vector<uint32_t> lens_;        ///< length of every posted message (the last is truncated)
  std::vector<Timestamp> posted_at_;  ///< when every message was posted
  std::vector<Duration> fct_;         ///< completion - post of every completed message

  uint64_t posted_ = 0, completed_ = 0, bytes_posted_ = 0, bytes_done_ = 0;
  uint64_t recv_posted_ = 0, recv_done_ = 0;
  bool finished_ = false;
  std::string error_;
  Timestamp t_first_{0}, t_last_{0};
};

}  // namespace uroce::sim
