/**
 * @file dpdk_port.cc
 * @brief DpdkPort: uroce::Port on an ethdev (see dpdk_port.h): EthdevIo (ethdev_io.h) for the
 * device, PortPipeline (drivers/pipeline) for priority queues, PFC, counters and the
 * self-loopback, Neighbors for ARP/ND.
 *
 * RX: up to kBurst frames from each RX queue in turn (a NIC's RSS spreads flows over them);
 * PFC/PAUSE frames go to the pipeline; the destination MAC is filtered in software (our
 * unicast, broadcast, our ND multicast groups); ARP and ND go to Neighbors; the rest is counted
 * by the pipeline and handed to the FrameHandler. Loopback frames are handed over first.
 * Units: bytes; link speed in bit/s (DPDK reports Mb/s).
 */
#include "dpdk/dpdk_port.h"

#include <rte_ethdev.h>

#include <algorithm>
#include <memory>
#include <span>
#include <utility>

#include "dpdk/clock.h"
#include "dpdk/ethdev_io.h"
#include "dpdk/neighbors.h"
#include "pipeline/port_pipeline.h"

namespace uroce::dpdk {

namespace {

static_assert(kMaxEthQueues <= pipeline::kMaxQueues);

class DpdkPort final : public Port {
 public:
  DpdkPort(std::unique_ptr<EthdevIo> io, const config::Device& dev)
      : io_(std::move(io)),
        neighbors_(io_->mac(), dev.addresses, dev.neighbors, dev.vlan),
        pipeline_(*io_, dev,
                  pipeline::PipelineParams{io_->mac(), io_->max_frame(), io_->queues(),
                                           io_->link_speed_bps()},
                  monotonic_now) {
    io_->set_on_up([this] { neighbors_.announce(*this); });
  }

  EthdevIo& io() { return *io_; }
  const EthdevIo& io() const { return *io_; }
  Neighbors& neighbors() { return neighbors_; }

  // TxSink
  uint8_t* begin_frame(size_t max_len) override { return pipeline_.begin_frame(max_len); }

  void end_frame(size_t len, const TxMeta& meta) override {
    ++ended_;
    pipeline_.end_frame(len, meta);
  }

  // Port
  void flush() override { pipeline_.flush(); }

  using Port::rx_burst;
  size_t rx_burst(FrameHandler& h, size_t max, Timestamp now) override {
    if (now.ns == 0) now = monotonic_now();
    size_t total = pipeline_.has_loopback() ? pipeline_.loop_back(h) : 0;
    if (!io_->ensure_started(now)) return total;
    bool replied = false;
    auto on_frame = [&](std::span<const uint8_t> frame) {
      if (pipeline_.on_control_frame(frame, now)) return;  // PFC/PAUSE: never passed on
      if (!neighbors_.accepts_dst(frame.data())) return;
      uint64_t before = ended_;
      if (neighbors_.on_frame(frame, now, *this)) {
        replied |= ended_ != before;
        return;
      }
      pipeline_.on_rx_frame(frame);
      h.on_frame(frame, RxMeta{});
    };
    const size_t room = max - total;
    const size_t got = io_->rx_all(room, on_frame);
    total += got;
    if (total == 0 && !io_->memif()) io_->check_link(now);
    pipeline_.after_poll(now, got < room);
    // memif: look at the link on every poll (at most every 100 ms), busy or not, so the
    // guard knows the regions of a new connection before traffic flows on it.
    if (io_->memif()) io_->check_link(now);
    // Frames the port queued itself (ARP/ND replies, announcements) go out without waiting
    // for the engine's next flush().
    if (replied || pipeline_.queued() || pipeline_.tx_pending()) flush();
    return total;
  }

  MacAddr mac() const override { return io_->mac(); }
  size_t max_frame_len() const override { return io_->max_frame(); }
  uint64_t link_speed_bps() const override { return io_->link_speed_bps(); }

  bool resolve(const Gid& ip, MacAddr* mac) override {
    if (neighbors_.lookup(ip, mac)) return true;  // the per-packet path: no clock read
    uint64_t before = ended_;
    bool ok = neighbors_.resolve(ip, mac, monotonic_now(), *this);
    if (ended_ != before) flush();
    return ok;
  }

  bool read_counters(PortCounters* out) override {
    io_->fill_counters(out);
    pipeline_.fill_counters(out);
    return true;
  }

  const dcqcn::PfcCounters& pfc_counters() { return pipeline_.pfc_counters(); }

 private:
  std::unique_ptr<EthdevIo> io_;  // first: the pipeline returns its frames to it
  Neighbors neighbors_;
  pipeline::PortPipeline pipeline_;
  uint64_t ended_ = 0;  ///< end_frame() calls (to see whether a call sent)
};

}  // namespace

bool port_info(const Port& p, PortInfo* out) {
  const auto* dp = dynamic_cast<const DpdkPort*>(&p);
  if (!dp) return false;
  uint16_t id = dp->io().port_id();
  rte_eth_dev_info info{};
  if (rte_eth_dev_info_get(id, &info) != 0) return false;
  out->driver = info.driver_name ? info.driver_name : "";
  out->max_rx_pktlen = info.max_rx_pktlen;
  out->min_mtu = info.min_mtu;
  out->max_mtu = info.max_mtu;
  out->max_rx_queues = info.max_rx_queues;
  out->max_tx_queues = info.max_tx_queues;
  const LinkStatus link = dp->io().link();
  out->link_speed_mbps = link.speed_mbps;
  out->link_up = link.up;
  uint16_t mtu = 0;
  if (rte_eth_dev_get_mtu(id, &mtu) == 0) out->configured_mtu = mtu;
  PortCounters c;
  const_cast<DpdkPort*>(dp)->read_counters(&c);
  out->tx_frames = c.tx_packets_phy;
  out->rx_frames = c.rx_packets_phy;
  out->rx_missed = c.rx_discards_phy;
  out->tx_errors = c.tx_errors_phy;
  EthStats st;
  if (dp->io().stats(&st)) {
    out->rx_queue_frames.assign(st.rx_queue_frames.begin(), st.rx_queue_frames.begin() + st.queues);
    out->tx_queue_frames.assign(st.tx_queue_frames.begin(), st.tx_queue_frames.begin() + st.queues);
  }
  out->pfc = const_cast<DpdkPort*>(dp)->pfc_counters();
  return true;
}

std::unique_ptr<Port> open_dpdk_port(const config::Device& dev, std::string* err) {
  std::unique_ptr<EthdevIo> io = EthdevIo::open(dev, err);
  if (!io) return nullptr;
  const bool reused = io->reused();
  auto port = std::make_unique<DpdkPort>(std::move(io), dev);
  // ND needs the all-nodes and solicited-node groups; vdevs without a filter ignore this.
  if (!reused) port->io().set_multicast(port->neighbors().multicast_macs());
  port->neighbors().announce(*port);
  port->flush();
  return port;
}

}  // namespace uroce::dpdk
