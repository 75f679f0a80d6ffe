/**
 * @file rc_stream.cc
 * @brief RcStream: posting, completion checking and byte comparison. Units: bytes, ns.
 */
#include "sim/rc_stream.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <span>

namespace uroce::sim {

using transport::Cqe;
using transport::SendWr;
using transport::Sge;
using transport::WcOpcode;
using transport::WcStatus;
using transport::WrOpcode;

namespace {

constexpr uint8_t kPoison = 0xee;
constexpr uint64_t kResultPoison = 0xdeadbeefdeadbeefull;
constexpr uint32_t kCounters = 4;

uint32_t imm_of(uint64_t i) { return static_cast<uint32_t>(i * 2654435761u) ^ 0xa5a5a5a5u; }
uint64_t add_of(uint64_t i) { return (i * 0x9e3779b97f4a7c15ull >> 40) + 1; }
uint64_t swap_of(uint64_t i) { return i * 0xbf58476d1ce4e5b9ull + 1; }

std::string at(uint64_t i) { return " (message " + std::to_string(i) + ")"; }

}  // namespace

const char* stream_op_name(StreamOp op) {
  switch (op) {
    case StreamOp::kSend: return "Send";
    case StreamOp::kSendWithImm: return "SendWithImm";
    case StreamOp::kWrite: return "Write";
    case StreamOp::kWriteWithImm: return "WriteWithImm";
    case StreamOp::kRead: return "Read";
    case StreamOp::kCmpSwap: return "CmpSwap";
    case StreamOp::kFetchAdd: return "FetchAdd";
    case StreamOp::kAtomicWrite: return "AtomicWrite";
    case StreamOp::kFlush: return "Flush";
  }
  return "?";
}

uint8_t stream_pattern(uint64_t msg, uint64_t off) {
  uint64_t x = (msg * 0x9e3779b97f4a7c15ull) ^ (off * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

RcStream::RcStream(const StreamConfig& cfg, EngineHost& a, uint32_t a_pd, uint32_t a_qpn,
                   uint32_t a_scq, EngineHost& b, uint32_t b_pd, uint32_t b_qpn, uint32_t b_rcq)
    : cfg_(cfg),
      a_(a),
      b_(b),
      a_pd_(a_pd),
      a_qpn_(a_qpn),
      a_scq_(a_scq),
      b_pd_(b_pd),
      b_qpn_(b_qpn),
      b_rcq_(b_rcq) {
  sizes_ = cfg.sizes;
  if (sizes_.empty())
    sizes_ = {65536, 1, 4096, 4097, 10000, 262144, 777, 131072, 1024, 3, 8192, 200000};
  for (auto& s : sizes_) s = std::min(std::max(s, 1u), kMaxMessage);
  size_t ring = size_t{cfg_.window} * kMaxMessage;
  a_buf_.assign(ring, 0);
  b_buf_.assign(ring, 0);
  a_atomic_res_.assign(cfg_.window, 0);
  b_counters_.assign(kCounters, 0);
  expect_counter_.assign(kCounters, 0);
  expect_result_.assign(cfg_.window, 0);
  for (uint32_t t = 0; t < kCounters; ++t) b_counters_[t] = expect_counter_[t] = 1000 * t;
  using namespace transport;
  auto reg = [&](EngineHost& h, uint32_t pd, void* p, size_t len, uint32_t acc, MrKeys* out) {
    auto r = h.engine().reg_mr(pd, reinterpret_cast<uint64_t>(p), len, acc);
    if (!r) {
      fail("reg_mr failed on " + h.name() + ": errno " + std::to_string(r.status().code()));
      return;
    }
    *out = r.value();
  };
  reg(a_, a_pd_, a_buf_.data(), a_buf_.size(), kAccessLocalWrite, &a_mr_);
  reg(b_, b_pd_, b_buf_.data(), b_buf_.size(),
      kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessFlushGlobal, &b_mr_);
  reg(a_, a_pd_, a_atomic_res_.data(), a_atomic_res_.size() * 8, kAccessLocalWrite, &a_res_mr_);
  reg(b_, b_pd_, b_counters_.data(), b_counters_.size() * 8,
      kAccessLocalWrite | kAccessRemoteAtomic | kAccessRemoteWrite, &b_cnt_mr_);
}

void RcStream::fail(const std::string& msg) {
  if (error_.empty()) error_ = msg;
}

uint32_t RcStream::size_of(uint64_t i) const {
  if (is_atomic(cfg_.op)) return 8;
  return sizes_[i % sizes_.size()];
}

bool RcStream::more_to_post() const {
  if (is_atomic(cfg_.op)) return posted_ < cfg_.atomic_ops;
  return bytes_posted_ < cfg_.total_bytes;
}

void RcStream::start() {
  a_.add_app([this](EngineHost&, Timestamp now) { return step_a(now); });
  b_.add_app([this](EngineHost&, Timestamp now) { return step_b(now); });
  bool needs_recv = cfg_.op == StreamOp::kSend || cfg_.op == StreamOp::kSendWithImm ||
                    cfg_.op == StreamOp::kWriteWithImm;
  if (needs_recv)
    for (uint32_t j = 0; j < cfg_.window; ++j) post_recv(j);
  a_.wake();
  b_.wake();
}

bool RcStream::post_recv(uint64_t j) {
  transport::RecvWr wr;
  Sge sge{};
  wr.wr_id = j;
  if (cfg_.op != StreamOp::kWriteWithImm) {
    sge.addr = reinterpret_cast<uint64_t>(b_slot(j));
    sge.length = kMaxMessage;
    sge.lkey = b_mr_.lkey;
    wr.sg = &sge;
    wr.num_sge = 1;
  }
  Status s = b_.engine().post_recv(b_qpn_, wr);
  if (!s) {
    fail("post_recv failed: errno " + std::to_string(s.code()));
    return false;
  }
  ++recv_posted_;
  return true;
}

bool RcStream::post_next(Timestamp now) {
  uint64_t i = posted_;
  uint32_t len = size_of(i);
  if (!is_atomic(cfg_.op))
    len = static_cast<uint32_t>(std::min<uint64_t>(len, cfg_.total_bytes - bytes_posted_));
  uint8_t* src = a_slot(i);
  uint8_t* dst = b_slot(i);
  SendWr wr;
  std::array<Sge, 2> sg{};
  wr.wr_id = i;
  wr.send_flags = transport::kSendSignaled;
  wr.sg = sg.data();
  switch (cfg_.op) {
    case StreamOp::kSend: wr.opcode = WrOpcode::kSend; break;
    case StreamOp::kSendWithImm: wr.opcode = WrOpcode::kSendWithImm; break;
    case StreamOp::kWrite: wr.opcode = WrOpcode::kRdmaWrite; break;
    case StreamOp::kWriteWithImm: wr.opcode = WrOpcode::kRdmaWriteWithImm; break;
    case StreamOp::kRead: wr.opcode = WrOpcode::kRdmaRead; break;
    case StreamOp::kCmpSwap: wr.opcode = WrOpcode::kAtomicCmpAndSwp; break;
    case StreamOp::kFetchAdd: wr.opcode = WrOpcode::kAtomicFetchAndAdd; break;
    case StreamOp::kAtomicWrite:
      wr.opcode = i % 3 == 2 ? WrOpcode::kAtomicFetchAndAdd : WrOpcode::kAtomicWrite;
      break;
    case StreamOp::kFlush: wr.opcode = WrOpcode::kFlush; break;
  }
  wr.imm_data = imm_of(i);
  if (is_atomic(cfg_.op)) {
    uint32_t slot = static_cast<uint32_t>(i % cfg_.window);
    uint32_t t = static_cast<uint32_t>(i % kCounters);
    a_atomic_res_[slot] = kResultPoison;
    sg[0] = Sge{reinterpret_cast<uint64_t>(&a_atomic_res_[slot]), 8, a_res_mr_.lkey};
    wr.num_sge = 1;
    wr.remote_addr = reinterpret_cast<uint64_t>(&b_counters_[t]);
    wr.rkey = b_cnt_mr_.rkey;
    expect_result_[slot] = expect_counter_[t];
    if (wr.opcode == WrOpcode::kAtomicWrite) {
      // No result: the slot stays poisoned; the counter becomes the value written.
      const uint64_t v = swap_of(i);
      std::memcpy(&wr.compare_add, &v, 8);
      wr.num_sge = 0;
      expect_result_[slot] = kResultPoison;
      expect_counter_[t] = v;
    } else if (wr.opcode == WrOpcode::kAtomicFetchAndAdd) {
      wr.compare_add = add_of(i);
      expect_counter_[t] += add_of(i);
    } else {
      bool miss = i % 7 == 3;
      wr.compare_add = expect_counter_[t] + (miss ? 1 : 0);
      wr.swap = swap_of(i);
      if (!miss) expect_counter_[t] = swap_of(i);
    }
  } else {
    if (cfg_.op == StreamOp::kRead) {
      if (cfg_.verify) {
        for (uint32_t k = 0; k < len; ++k) dst[k] = stream_pattern(i, k);
        std::memset(src, kPoison, len);
      }
    } else if (cfg_.verify) {
      for (uint32_t k = 0; k < len; ++k) src[k] = stream_pattern(i, k);
    }
    uint32_t lkey = a_mr_.lkey;
    if (len >= 2 && i % 2 == 1) {
      sg[0] = Sge{reinterpret_cast<uint64_t>(src), len / 2, lkey};
      sg[1] = Sge{reinterpret_cast<uint64_t>(src + len / 2), len - len / 2, lkey};
      wr.num_sge = 2;
    } else {
      sg[0] = Sge{reinterpret_cast<uint64_t>(src), len, lkey};
      wr.num_sge = 1;
    }
    bool can_inline = cfg_.op != StreamOp::kRead;
    if (can_inline && len <= 64 && i % 3 == 0) wr.send_flags |= transport::kSendInline;
    wr.remote_addr = reinterpret_cast<uint64_t>(dst);
    wr.rkey = b_mr_.rkey;
    if (cfg_.op == StreamOp::kFlush) {
      // The data as an unsignaled WRITE, then the FLUSH (signaled) of its range, or of the whole
      // region for odd messages.
      SendWr data = wr;
      data.wr_id = ~i;
      data.opcode = WrOpcode::kRdmaWrite;
      data.send_flags &= ~transport::kSendSignaled;
      if (Status s = a_.engine().post_send(a_qpn_, data, now); !s) {
        fail("post_send (WRITE before FLUSH) failed: errno " + std::to_string(s.code()) + at(i));
        return false;
      }
      wr.send_flags = transport::kSendSignaled;
      wr.num_sge = 0;
      wr.flush_type = transport::kFlushGlobal;
      wr.flush_level = i % 2 ? transport::kFlushMr : transport::kFlushRange;
      wr.flush_len = len;
    }
  }
  Status s = a_.engine().post_send(a_qpn_, wr, now);
  if (!s) {
    fail("post_send failed: errno " + std::to_string(s.code()) + at(i));
    return false;
  }
  if (posted_ == 0) t_first_ = now;
  lens_.push_back(len);
  posted_at_.push_back(now);
  ++posted_;
  bytes_posted_ += len;
  return true;
}

bool RcStream::step_a(Timestamp now) {
  if (!error_.empty()) return false;
  std::array<Cqe, 32> cq;
  for (;;) {
    size_t n = a_.engine().poll_cq(a_scq_, cq);
    for (size_t k = 0; k < n; ++k) {
      const Cqe& c = cq[k];
      uint64_t i = completed_;
      if (i >= posted_) {
        fail("send completion for nothing outstanding: wr_id " + std::to_string(c.wr_id));
        return false;
      }
      if (c.wr_id != i) {
        fail("send completion out of order: wr_id " + std::to_string(c.wr_id) + " status " +
             std::to_string(static_cast<int>(c.status)) + at(i));
        return false;
      }
      if (c.status != WcStatus::kSuccess) {
        fail("send completion status " + std::to_string(static_cast<int>(c.status)) + at(i));
        return false;
      }
      WcOpcode want = WcOpcode::kSend;
      switch (cfg_.op) {
        case StreamOp::kSend:
        case StreamOp::kSendWithImm: want = WcOpcode::kSend; break;
        case StreamOp::kWrite:
        case StreamOp::kWriteWithImm: want = WcOpcode::kRdmaWrite; break;
        case StreamOp::kRead: want = WcOpcode::kRdmaRead; break;
        case StreamOp::kCmpSwap: want = WcOpcode::kCompSwap; break;
        case StreamOp::kFetchAdd: want = WcOpcode::kFetchAdd; break;
        case StreamOp::kAtomicWrite:
          want = i % 3 == 2 ? WcOpcode::kFetchAdd : WcOpcode::kAtomicWrite;
          break;
        case StreamOp::kFlush: want = WcOpcode::kFlush; break;
      }
      if (c.opcode != want) {
        fail("send completion opcode " + std::to_string(static_cast<int>(c.opcode)) + at(i));
        return false;
      }
      uint32_t len = lens_[i];
      if (cfg_.verify) {
        if (cfg_.op == StreamOp::kRead) {
          if (c.byte_len != len) fail("READ byte_len " + std::to_string(c.byte_len) + at(i));
          uint8_t* p = a_slot(i);
          for (uint32_t b = 0; b < len; ++b)
            if (p[b] != stream_pattern(i, b)) {
              fail("READ data differs at byte " + std::to_string(b) + at(i));
              return false;
            }
        } else if (cfg_.op == StreamOp::kWrite || cfg_.op == StreamOp::kWriteWithImm ||
                   cfg_.op == StreamOp::kFlush) {
          uint8_t* p = b_slot(i);
          for (uint32_t b = 0; b < len; ++b)
            if (p[b] != stream_pattern(i, b)) {
              fail("WRITE data at the responder differs at byte " + std::to_string(b) + at(i));
              return false;
            }
          std::memset(p, kPoison, len);
        } else if (is_atomic(cfg_.op)) {
          uint32_t slot = static_cast<uint32_t>(i % cfg_.window);
          if (a_atomic_res_[slot] != expect_result_[slot]) {
            fail("atomic returned " + std::to_string(a_atomic_res_[slot]) + ", expected " +
                 std::to_string(expect_result_[slot]) + at(i));
            return false;
          }
        }
      }
      ++completed_;
      bytes_done_ += len;
      t_last_ = now;
      fct_.push_back(now - posted_at_[i]);
    }
    if (n < cq.size()) break;
  }
  bool posted = false;
  while (error_.empty() && posted_ - completed_ < cfg_.window && more_to_post()) {
    if (!post_next(now)) break;
    posted = true;
  }
  if (!more_to_post() && completed_ == posted_ && error_.empty() && !finished_) {
    if (is_atomic(cfg_.op) && cfg_.verify) {
      for (uint32_t t = 0; t < kCounters; ++t)
        if (b_counters_[t] != expect_counter_[t])
          fail("atomic target " + std::to_string(t) + " holds " + std::to_string(b_counters_[t]) +
               ", expected " + std::to_string(expect_counter_[t]));
    }
    bool recv_side = cfg_.op == StreamOp::kSend || cfg_.op == StreamOp::kSendWithImm ||
                     cfg_.op == StreamOp::kWriteWithImm;
    if (!recv_side || recv_done_ == posted_) finished_ = true;
  }
  return posted;
}

bool RcStream::step_b(Timestamp now) {
  if (!error_.empty()) return false;
  bool recv_side = cfg_.op == StreamOp::kSend || cfg_.op == StreamOp::kSendWithImm ||
                   cfg_.op == StreamOp::kWriteWithImm;
  if (!recv_side) {
    std::array<Cqe, 4> cq;
    if (b_.engine().poll_cq(b_rcq_, cq) > 0) fail("unexpected receive completion");
    return false;
  }
  std::array<Cqe, 32> cq;
  bool posted = false;
  for (;;) {
    size_t n = b_.engine().poll_cq(b_rcq_, cq);
    for (size_t k = 0; k < n; ++k) {
      const Cqe& c = cq[k];
      uint64_t j = recv_done_;
      if (c.wr_id != j) {
        fail("receive completion out of order: wr_id " + std::to_string(c.wr_id) + " status " +
             std::to_string(static_cast<int>(c.status)) + at(j));
        return false;
      }
      if (c.status != WcStatus::kSuccess) {
        fail("receive completion status " + std::to_string(static_cast<int>(c.status)) + at(j));
        return false;
      }
      bool imm = cfg_.op != StreamOp::kSend;
      WcOpcode want =
          cfg_.op == StreamOp::kWriteWithImm ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
      if (c.opcode != want)
        fail("receive opcode " + std::to_string(static_cast<int>(c.opcode)) + at(j));
      if (imm && (!(c.wc_flags & transport::kWcWithImm) || c.imm_data != imm_of(j)))
        fail("receive immediate missing or wrong" + at(j));
      if (!imm && (c.wc_flags & transport::kWcWithImm)) fail("unexpected immediate" + at(j));
      if (c.qp_num != b_qpn_) fail("receive qp_num " + std::to_string(c.qp_num) + at(j));
      if (j >= lens_.size()) {
        fail("receive completion for a message not posted yet" + at(j));
        return false;
      }
      uint32_t len = lens_[j];
      if (c.byte_len != len)
        fail("receive byte_len " + std::to_string(c.byte_len) + ", expected " +
             std::to_string(len) + at(j));
      if (cfg_.verify && cfg_.op != StreamOp::kWriteWithImm) {
        uint8_t* p = b_slot(j);
        for (uint32_t b = 0; b < c.byte_len && b < kMaxMessage; ++b)
          if (p[b] != stream_pattern(j, b)) {
            fail("SEND data differs at byte " + std::to_string(b) + at(j));
            return false;
          }
        std::memset(p, kPoison, std::min<uint32_t>(c.byte_len, kMaxMessage));
      }
      ++recv_done_;
      if (post_recv(recv_done_ + cfg_.window - 1)) posted = true;
    }
    if (n < cq.size()) break;
  }
  if (!more_to_post() && completed_ == posted_ && recv_done_ == posted_ && error_.empty())
    finished_ = true;
  (void)now;
  return posted;
}

bool RcStream::check_no_extra_completions() {
  std::array<Cqe, 4> cq;
  if (a_.engine().poll_cq(a_scq_, cq) > 0) {
    fail("extra send completion after the stream, wr_id " + std::to_string(cq[0].wr_id));
    return false;
  }
  if (b_.engine().poll_cq(b_rcq_, cq) > 0) {
    fail("extra receive completion after the stream, wr_id " + std::to_string(cq[0].wr_id));
    return false;
  }
  return true;
}

}  // namespace uroce::sim
