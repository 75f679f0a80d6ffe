/**
 * @file engine_host.h
 * @brief A simulated host running the real transport engine (uroce::transport::Engine) on one
 * port: received frames go to Engine::on_frame(), Engine::poll_transmit() writes frames
 * straight into simulator buffers through this host's TxSink, which queues them on the
 * host's egress Link (a full queue refuses begin_frame(), the engine retries when space
 * frees). PFC frames are handled by the host's port, never shown to the engine.
 *
 * The host is polled when a frame arrived, when the engine's next_deadline() is due, or
 * when wake() was called. Each poll runs poll_transmit(), then the application callback
 * (which polls CQs and posts work), then poll_transmit() again while the application posted
 * something. Units: ns.
 */
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/counters.h"
#include "common/packet_io.h"
#include "common/types.h"
#include "sim/link.h"
#include "sim/simulator.h"
#include "transport/engine.h"

namespace uroce::sim {

/// A static GID -> MAC table (the NeighborResolver of a simulated host).
class StaticNeighbors final : public NeighborResolver {
 public:
  void add(const Gid& ip, const MacAddr& mac) { table_.emplace_back(ip, mac); }
  bool resolve(const Gid& ip, MacAddr* mac) override {
    for (auto& [g, m] : table_)
      if (g == ip) {
        *mac = m;
        return true;
      }
    return false;
  }

 private:
  std::vector<std::pair<Gid, MacAddr>> table_;
};

class EngineHost final : public Node, public HostPort, public LinkObserver, public TxSink {
 public:
  /// The application step: return true when it posted work (the host polls TX again).
  using App = std::function<bool(EngineHost&, Timestamp)>;

  EngineHost(Simulator& sim, const transport::EngineConfig& cfg, std::string name = "host");
  ~EngineHost() override;

  /// The link this host transmits on (not owned); the host becomes its observer.
  void attach(Link* tx) override;
  Link* tx_link() { return tx_; }
  /// Replaces all application callbacks with `app`.
  void set_app(App app) {
    apps_.clear();
    apps_.push_back(std::move(app));
  }
  /// Adds an application callback (several streams may share a host); run in order added.
  void add_app(App app) { apps_.push_back(std::move(app)); }
  /// Called after the engine took each received frame: an observer of the host's memory (a
  /// program polling a byte sees it change between packets, never inside one).
  using FrameWatch = std::function<void(Timestamp)>;
  void set_frame_watch(FrameWatch w) { watch_ = std::move(w); }
  /// Ask for a poll at the current time (after posting from outside the app callback).
  void wake() { dirty_ = true; }
  /// Stops processing: received frames are discarded and nothing is transmitted.
  void set_frozen(bool f) { frozen_ = f; }

  transport::Engine& engine() { return *engine_; }
  CounterBlock& counters() { return counters_; }
  StaticNeighbors& neighbors() { return neigh_; }
  const std::string& name() const { return name_; }
  Simulator& sim() { return sim_; }
  uint64_t frames_received() const { return rx_frames_; }
  uint64_t frames_sent() const { return tx_frames_; }
  uint64_t pfc_received() const { return pfc_rx_; }

  // Node
  Timestamp next_wake() const override;
  void poll(Timestamp now) override;
  // FrameReceiver
  void receive(uint32_t port, Frame&& frame, Timestamp now) override;
  // LinkObserver
  void on_space(Timestamp now) override;
  // TxSink
  uint8_t* begin_frame(size_t max_len) override;
  void end_frame(size_t len, const TxMeta& meta) override;

 private:
  Simulator& sim_;
  std::string name_;
  CounterBlock counters_;
  std::unique_ptr<transport::Engine> engine_;
  StaticNeighbors neigh_;
  Link* tx_ = nullptr;
  std::vector<App> apps_;
  FrameWatch watch_;
  Frame cur_;
  bool have_cur_ = false;
  bool dirty_ = true;
  bool blocked_ = false;
  bool frozen_ = false;
  Timestamp poll_now_{0};
  uint64_t rx_frames_ = 0, tx_frames_ = 0, pfc_rx_ = 0;
};

}  // namespace uroce::sim
