/**
 * @file two_engines.h
 * @brief Test harness: two Engines joined by an in-memory link with a fake clock and seeded
 * impairments (loss, reordering, duplication, corruption). Frames are real bytes: each one is
 * built by the sender's wire builder and parsed by the receiver's gate.
 *
 * The loop: every engine's poll_transmit() drains into the link; frames due at `now` are
 * delivered; when nothing is due, the clock jumps to the earliest of the engines'
 * next_deadline() and the next arrival. Units: ns (fake time), bytes.
 */
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <random>
#include <vector>

#include "common/counters.h"
#include "common/packet_io.h"
#include "transport/engine.h"

namespace uroce::transport::testing {

/// Impairments of one direction of the link.
struct LinkOptions {
  double loss = 0;       ///< drop probability per frame
  double duplicate = 0;  ///< probability a frame is delivered twice
  double reorder = 0;    ///< probability a frame gets an extra random delay
  double corrupt = 0;    ///< probability one byte is flipped (ICRC then drops it)
  Duration latency = Duration::micros(1);
  Duration reorder_delay = Duration::micros(4);  ///< maximum extra delay of a reordered frame
  bool blackhole = false;  ///< drop everything (a peer that stopped answering)
};

/// Records async events and CQ notifications.
class RecordingObserver final : public EngineObserver {
 public:
  void on_cq_event(uint32_t cq_id) override { cq_events.push_back(cq_id); }
  void on_async_event(const AsyncEvent& ev) override { events.push_back(ev); }
  int on_qp_connect(uint32_t qpn, const Gid& dgid, uint32_t dqpn, uint16_t sport) override {
    paths.push_back({qpn, dgid, dqpn, sport});
    return refuse_connect;
  }
  void on_qp_disconnect(uint32_t qpn) override { left.push_back(qpn); }
  bool saw(AsyncEventType t, uint32_t id) const {
    for (const auto& e : events)
      if (e.type == t && e.id == id) return true;
    return false;
  }
  std::vector<uint32_t> cq_events;
  std::vector<AsyncEvent> events;
  /// Connected QPs' paths as told (on_qp_connect), and QPs that left their connection.
  struct Path {
    uint32_t qpn = 0;
    Gid dgid;
    uint32_t dqpn = 0;
    uint16_t sport = 0;
  };
  std::vector<Path> paths;
  std::vector<uint32_t> left;
  int refuse_connect = 0;  ///< on_qp_connect's answer
};

/// One side: an engine with one PD, one CQ per direction, a registered buffer.
struct Side {
  RecordingObserver observer;
  CounterBlock counters;
  std::unique_ptr<Engine> engine;
  Gid gid;
  MacAddr mac;
  uint32_t pd = 0;
  uint32_t scq = 0, rcq = 0;
};

/// Frames delivered, dropped, per direction (A->B = 0, B->A = 1).
struct LinkStats {
  uint64_t sent[2] = {}, dropped[2] = {}, duplicated[2] = {}, corrupted[2] = {};
};

class TwoEngines {
 public:
  /// ipv6: use IPv6 GIDs (fd00::1 / fd00::2, in 198.18.0.0/15 spirit: never leaves memory).
  explicit TwoEngines(uint64_t seed = 1, bool ipv6 = false, uint32_t max_mtu = 4096,
                      uint32_t cq_depth = 1 << 16);
  ~TwoEngines();

  Side& a() { return side_[0]; }
  Side& b() { return side_[1]; }
  Side& side(int i) { return side_[i]; }
  LinkOptions& link(int dir) { return link_[dir]; }  ///< 0: A->B, 1: B->A
  const LinkStats& stats() const { return stats_; }
  Timestamp now() const { return now_; }
  void advance(Duration d) { now_ = now_ + d; }

  /// Creates an RC/UC/UD QP on each side (same caps) and, for RC/UC, connects them to each
  /// other through INIT/RTR/RTS. attr supplies path_mtu, timeout, retry counts, PSNs etc.
  /// Returns {qpn on A, qpn on B}.
  std::pair<uint32_t, uint32_t> connect(QpType type, const QpAttr& attr, uint32_t max_wr = 1024,
                                        uint32_t max_sge = 4, uint32_t max_inline = 256,
                                        uint32_t access = 0xf);
  /// Creates one QP on side s in RTS (UD) or RESET (RC/UC) and returns its QPN.
  uint32_t create_qp(int s, QpType type, uint32_t max_wr, uint32_t max_sge, uint32_t max_inline);
  /// Brings a UD QP to RTS with qkey.
  void ud_to_rts(int s, uint32_t qpn, uint32_t qkey, uint32_t sq_psn = 0);

  /// Runs until pred() is true or the engines are idle or max fake time passed. Returns
  /// pred()'s final value.
  bool run_until(const std::function<bool()>& pred, Duration max = Duration::seconds(600));
  /// Runs one step (poll both, deliver due frames, or jump the clock). False when idle.
  bool step();

  /// An address vector from side s to the other side.
  AddressVector av_to_peer(int s) const;

 private:
  struct Frame {
    Timestamp at;
    uint64_t seq;
    int dst;
    std::vector<uint8_t> bytes;
    bool operator>(const Frame& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  class Sink;
  class Neighbors;
  void send(int src, std::vector<uint8_t> bytes);

  Side side_[2];
  LinkOptions link_[2];
  LinkStats stats_;
  Timestamp now_{1'000'000};
  std::mt19937_64 rng_;
  uint64_t seq_ = 0;
  int stall_ = 0;
  std::priority_queue<Frame, std::vector<Frame>, std::greater<>> inflight_;
  std::unique_ptr<Sink> sink_[2];
  std::unique_ptr<Neighbors> neigh_;
};

/// A buffer with a fill pattern that depends on a seed and the offset.
void fill_pattern(uint8_t* p, size_t n, uint64_t seed);

}  // namespace uroce::transport::testing
