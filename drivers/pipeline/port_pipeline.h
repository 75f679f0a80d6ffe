/**
 * @file port_pipeline.h
 * @brief What a Port does between the engine and the driver's queues, without the driver:
 * per-priority TX queues and their scheduler, PFC as sender and receiver, per-priority
 * counters, and the self-loopback. Drivers (drivers/dpdk) feed it and implement FrameIo
 * (frame_io.h) for it; see drivers/pipeline/README.md.
 *
 * TX: begin_frame() hands out the data area of a fresh buffer; end_frame() appends it to its
 * priority's software queue (or, when no frame waits and no priority is paused, straight to
 * the burst of its TX queue); the scheduler moves frames into the pending burst of the TX
 * queue that carries the priority (priority % queues, as a NIC maps traffic classes to
 * queues): the CNP class (priority of cnp_dscp) strict, deficit round robin for the others
 * (lib/dcqcn TxScheduler), a priority paused by a received PFC frame starts no frame until the
 * pause ends (lib/dcqcn PfcRx). flush() offers each burst to FrameIo::tx_burst and keeps what
 * it did not take for the next flush (no frame is leaked, nothing blocks). A full software
 * queue or no free buffer makes begin_frame() return nullptr after one flush attempt.
 * RX: the driver passes every frame to the PFC group to on_control_frame(), and every frame it
 * hands to the engine to on_rx_frame() (priority and ECN by rx_class.h, counters, PFC
 * backlog); after the poll, after_poll() lets lib/dcqcn PfcTx send XOFF/XON ahead of the queues.
 * Loopback: a RoCEv2 frame sent to the port's own MAC never goes to the driver: end_frame()
 * keeps it and loop_back() (the next poll) hands it to the FrameHandler, as a RoCE NIC loops
 * such traffic back internally (rxe: rxe_loopback()). It counts as received on its priority.
 * Time: the clock is the driver's, passed in as `now` or read through the Clock given at
 * construction, which is called only while a received pause is in force.
 * Thread-safety: one thread at a time. Units: bytes.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "common/port.h"
#include "common/time.h"
#include "common/types.h"
#include "config/config.h"
#include "dcqcn/pfc_counters.h"
#include "dcqcn/pfc_rx.h"
#include "dcqcn/pfc_tx.h"
#include "dcqcn/tx_scheduler.h"
#include "pipeline/frame_io.h"
#include "pipeline/rx_class.h"
#include "transport/wire/pfc.h"

namespace uroce::pipeline {

/// Frames per TX burst (the size of each TX queue's pending array).
inline constexpr size_t kBurst = 32;
/// TX queues at most.
inline constexpr uint16_t kMaxQueues = 16;
/// Frames in the priority queues (and, apart, in the loopback) before begin_frame() refuses.
inline constexpr size_t kMaxQueued = 512;

/// The port's facts the pipeline needs beyond the device's configuration.
struct PipelineParams {
  MacAddr mac;            ///< the port's MAC (loopback, PFC source address)
  size_t max_frame = 0;   ///< largest frame begin_frame() accepts
  uint16_t queues = 1;    ///< TX queues, 1..kMaxQueues
  uint64_t link_bps = 0;  ///< for pause quanta
  /// RoCE frames to our own MAC come back through loop_back(); off when the MAC is shared
  /// with other processes (uroce-hostd switches those frames by destination QPN).
  bool self_loopback = true;
};

class PortPipeline {
 public:
  /// The driver's CLOCK_MONOTONIC.
  using Clock = std::function<Timestamp()>;

  /// dev supplies [device.pfc], trust, dscp_to_prio/pcp_to_prio and cnp_dscp.
  PortPipeline(FrameIo& io, const config::Device& dev, const PipelineParams& params, Clock clock);
  /// Frees every frame it still holds through the FrameIo.
  ~PortPipeline();
  PortPipeline(const PortPipeline&) = delete;
  PortPipeline& operator=(const PortPipeline&) = delete;

  // TX, as TxSink.
  uint8_t* begin_frame(size_t max_len);
  void end_frame(size_t len, const TxMeta& meta);
  /// Schedules and offers the TX bursts, up to four rounds while the driver takes all.
  void flush();
  /// Frames waiting in the priority queues.
  size_t queued() const { return queued_; }
  /// Whether a TX queue's burst holds frames the driver has not taken yet.
  bool tx_pending() const;

  // RX.
  /// For a frame whose destination is the PFC group (01:80:c2:00:00:01): honours it if it is
  /// a PFC/PAUSE frame. Returns false (frame untouched) for any other destination; true when
  /// the frame is consumed, never to be passed on.
  bool on_control_frame(std::span<const uint8_t> frame, Timestamp now);
  /// Accounts a received frame the driver hands to the engine: its priority's counters and,
  /// when PFC TX is on, the poll's backlog.
  void on_rx_frame(std::span<const uint8_t> frame);
  /// Whether loopback frames wait for loop_back().
  bool has_loopback() const { return !self_.empty(); }
  /// Hands the RoCE frames sent to our own MAC to h (counted as received); returns how many.
  /// Frames h makes the engine send to itself wait for the next call.
  size_t loop_back(FrameHandler& h);
  /// After a poll: feeds the poll's backlog to PfcTx and sends the XOFF/XON it asks for
  /// (TX queue 0, ahead of every software queue: MAC control is not subject to pause).
  /// `drained`: the poll read everything there was, so a PFC frame read later arrived after
  /// `now` (PfcRx judges a pause's continuity by that, not by when polls happen).
  void after_poll(Timestamp now, bool drained = true);

  // Counters.
  /// Fills the per-priority and PFC fields of *out (the rest is the driver's).
  void fill_counters(PortCounters* out);
  /// PFC counters, pause durations brought up to date.
  const dcqcn::PfcCounters& pfc_counters();

 private:
  /// Frames scheduled for one TX queue, not yet taken by the driver.
  struct TxQueue {
    Frame pending[kBurst] = {};
    size_t n = 0;
  };

  void schedule();
  void send_pause(const wire::PauseFrame& f);

  FrameIo& io_;
  Clock clock_;
  MacAddr mac_;
  size_t max_frame_;
  uint16_t nq_;
  Frame cur_{};  ///< the frame being built (handle null: none)
  std::array<TxQueue, kMaxQueues> txq_{};
  std::array<std::deque<Frame>, 8> q_;         ///< per-priority software TX queues
  bool self_loopback_ = true;                  ///< PipelineParams::self_loopback
  std::vector<Frame> self_;                    ///< RoCE frames to our own MAC, for loop_back()
  size_t queued_ = 0;                          ///< frames in q_
  std::array<uint64_t, 8> queued_bytes_{};     ///< bytes in each q_
  std::array<uint64_t, 8> tx_prio_packets_{};  ///< frames scheduled per priority
  std::array<uint64_t, 8> tx_prio_bytes_{};
  std::array<uint64_t, 8> rx_prio_packets_{};  ///< frames handed to the engine per priority
  std::array<uint64_t, 8> rx_prio_bytes_{};
  std::array<uint64_t, 8> rx_prio_marked_{};  ///< of those, CE-marked
  std::array<uint64_t, 8> rx_backlog_{};      ///< bytes per priority received since after_poll()
  dcqcn::PfcCounters pfc_counters_;
  dcqcn::PfcRx pfc_rx_;       ///< received PFC/PAUSE state per priority
  dcqcn::PfcTx pfc_tx_;       ///< XOFF/XON we send as a receiver
  bool pfc_tx_on_;            ///< [device.pfc] xoff_bytes set on an enabled priority
  RxClassifier rx_class_;     ///< received frame -> priority and ECN (trust dscp or pcp)
  dcqcn::TxScheduler sched_;  ///< CNP class strict, DRR for the rest, skips paused
  bool pause_seen_ = false;   ///< a pause frame arrived once (then TX consults pfc_rx_)
  Timestamp rx_seen_{};       ///< the last poll that drained RX (after_poll)
};

}  // namespace uroce::pipeline
