/**
 * @file ethdev_io.h
 * @brief One opened DPDK ethdev, for any driver that runs a port on one: open/configure/start
 * (or reuse of a parked port), RX bursts, the pipeline::FrameIo over its mbuf pool, start
 * retries and link watching, counters. No rte_*.h needed by its users.
 *
 * EthdevIo::open() starts EAL at the first call (eal.h), creates the device named by the
 * device's `port` string (e.g. "net_memif0,role=client,socket=/run/x.sock" or
 * "net_af_xdp0,iface=veth0,queue_count=2,xdp_prog=/path/x.o"), a mempool sized for
 * mtu + kRoceOverhead, `queues` RX/TX queue pairs (RSS over the RX queues where the NIC has
 * it), the device's MAC if it sets one, and starts it. What each PMD allows here is in
 * drivers/dpdk/PMDS.md.
 *
 * Links that come and go: a memif client opened before its server starts is started later
 * (ensure_started(), retried every 100 ms), and one whose server died is restarted after
 * 300 ms of link down once its control connection is closed (check_link(); never under a
 * handshake still on its way); set_on_up()'s callback runs whenever the port starts or
 * its link comes up (a driver announces its addresses then). On net_memif every burst runs
 * fenced (memif_burst.h).
 *
 * Destroying an EthdevIo parks the ethdev (still started); the next open() of the same port
 * string, MTU and queue count reuses it as it is (DPDK 22.11's memif cannot re-create a server
 * in one process). With Close::kOnDestroy it closes and removes the ethdev instead, and then
 * closes what net_af_xdp leaves open (its UMEM socket and BPF object, PMDS.md; kernel_fds.h),
 * so the netdev's queues are free again. Thread-safety: open() and destruction are serialised
 * process-wide; the rest one thread at a time per EthdevIo (threads may each use an EthdevIo of
 * their own at once). Units: bytes, Mb/s as reported, bit/s where named.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/port.h"
#include "common/time.h"
#include "common/types.h"
#include "config/config.h"
#include "pipeline/frame_io.h"

struct rte_mempool;

namespace uroce::dpdk {

/// Bytes a RoCEv2 frame may add to its payload: Ethernet 14 + 802.1Q 4 + IPv6 40 + UDP 8 +
/// BTH 12 + XRCETH 4 + AtomicETH 28 (the longest extended headers) + ICRC 4 + pad 3, rounded
/// up to 128.
inline constexpr size_t kRoceOverhead = 128;

/// Frames per RX/TX burst.
inline constexpr size_t kBurst = 32;

/// RX/TX queue pairs at most (config `queues`).
inline constexpr uint16_t kMaxEthQueues = 16;

/// The link as the PMD reports it.
struct LinkStatus {
  bool up = false;
  uint32_t speed_mbps = 0;  ///< 0: none, UINT32_MAX: unknown
};

/// The ethdev's counters (rte_eth_stats).
struct EthStats {
  uint64_t rx_frames = 0;
  uint64_t tx_frames = 0;
  uint64_t rx_missed = 0;  ///< dropped by the PMD for lack of RX buffers or ring room
  uint64_t tx_errors = 0;
  uint16_t queues = 0;  ///< valid entries below
  std::array<uint64_t, kMaxEthQueues> rx_queue_frames{};
  std::array<uint64_t, kMaxEthQueues> tx_queue_frames{};
};

class EthdevIo final : public pipeline::FrameIo {
 public:
  /// Called with each received frame; the bytes are valid only during the call.
  using RxFn = void (*)(void* ctx, std::span<const uint8_t> frame);

  /// Opens the ethdev of dev (port, mtu, queues, mac, eal). On failure returns nullptr and
  /// sets *err to one line naming the device, the port and the problem (and, for a too-large
  /// mtu or too many queues, what the PMD allows).
  /// What the destructor does: park the ethdev for a later open (memif needs it, see the file
  /// comment), or close and remove it (net_af_xdp: closing detaches the XDP program; a memif
  /// client is closed once its handshake is over, at most 1 s after).
  enum class Close { kPark, kOnDestroy };
  static std::unique_ptr<EthdevIo> open(const config::Device& dev, std::string* err,
                                        Close close = Close::kPark);
  /// Parks the ethdev (see the file comment). Every frame alloc() handed out must be back.
  ~EthdevIo() override;

  /// After open() of `port` failed, which leaves its ethdev parked, set up in part: the ids of
  /// the BPF programs its PMD loaded for it (net_af_xdp's xdp_prog=; none for other PMDs).
  static std::vector<uint32_t> parked_programs(const std::string& port);
  /// Removes the parked ethdev of `port` with what its PMD left open, so that the next open()
  /// creates it anew. Its PMD closes it: net_af_xdp then detaches the netdev's XDP program,
  /// whichever it is.
  static void discard(const std::string& port);
  EthdevIo(const EthdevIo&) = delete;
  EthdevIo& operator=(const EthdevIo&) = delete;

  uint16_t port_id() const { return port_id_; }
  MacAddr mac() const { return mac_; }
  /// Largest frame (without FCS): mtu + kRoceOverhead.
  size_t max_frame() const { return max_frame_; }
  uint16_t queues() const { return nq_; }
  /// The AF_XDP sockets net_af_xdp opened for this ethdev (one per queue), by increasing fd;
  /// none for other PMDs.
  std::vector<int> xsk_fds() const;
  /// The PMD is net_memif (link watched on every poll, bursts fenced).
  bool memif() const { return memif_; }
  /// open() reused a parked ethdev as it was (its multicast list included).
  bool reused() const { return reused_; }

  /// What to do when the port starts or its link comes up.
  void set_on_up(std::function<void()> f) { on_up_ = std::move(f); }
  /// Lets these multicast groups in (ND's groups); all multicast where the PMD has no list.
  void set_multicast(std::span<const MacAddr> macs);

  /// Receives up to min(max, kBurst) frames from RX queue `queue` and calls fn on each
  /// (multi-segment frames copied into one buffer, frames under 14 bytes skipped); returns
  /// how many the PMD delivered.
  size_t rx_burst(uint16_t queue, size_t max, RxFn fn, void* ctx);
  template <class F>
  size_t rx_burst(uint16_t queue, size_t max, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    return rx_burst(
        queue, max, [](void* c, std::span<const uint8_t> f) { (*static_cast<Fn*>(c))(f); },
        static_cast<void*>(&fn));
  }
  /// Receives up to max frames from the RX queues in turn (a NIC's RSS spreads flows over
  /// them), each poll starting at the queue after the last one polled, until every queue came
  /// back short; returns how many the PMD delivered.
  size_t rx_all(size_t max, RxFn fn, void* ctx);
  template <class F>
  size_t rx_all(size_t max, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    return rx_all(
        max, [](void* c, std::span<const uint8_t> f) { (*static_cast<Fn*>(c))(f); },
        static_cast<void*>(&fn));
  }
  /// Drops every frame waiting in the RX queues.
  void drain();

  // pipeline::FrameIo over the mbuf pool; frames go out through the fenced TX burst.
  bool alloc(pipeline::Frame* f) override;
  void free(const pipeline::Frame* frames, size_t n) override;
  size_t tx_burst(uint16_t queue, pipeline::Frame* frames, size_t n) override;
  /// Started, or started now (retried at most every 100 ms).
  bool tx_ready() override;

  /// Starts the port if it is not started yet, at most every 100 ms; true when started.
  bool ensure_started(Timestamp now);
  /// At most every 100 ms: notices the link coming up (on_up), and for a memif client,
  /// restarts a port whose link has been down for 300 ms and whose control connection to the
  /// server is closed (reconnects to a new server).
  void check_link(Timestamp now);
  LinkStatus link() const;
  /// The link speed in bit/s, 10 Gb/s when the PMD reports none.
  uint64_t link_speed_bps() const;
  /// The ethdev's counters; false when the PMD gives none.
  bool stats(EthStats* out) const;
  /// The PMD's fields of a port's counters (the *_phy frames, the link speed).
  void fill_counters(PortCounters* out) const;

 private:
  EthdevIo(uint16_t port_id, rte_mempool* pool, MacAddr mac, size_t max_frame,
           const config::Device& dev);
  void set_memif();

  uint16_t port_id_;
  rte_mempool* pool_;
  std::string devargs_;
  MacAddr mac_;
  size_t max_frame_;
  uint16_t nq_;
  bool reused_ = false;
  uint16_t rxq_next_ = 0;  ///< RX queue rx_all() polls first
  Close close_ = Close::kPark;
  bool started_ = true;          ///< rte_eth_dev_start succeeded
  bool reconnect_ = false;       ///< restart when the link stays down (memif client)
  bool memif_ = false;           ///< net_memif (memif_guard.h)
  bool link_up_ = true;          ///< as of the last check_link() (true: announced at open)
  Timestamp next_link_check_{};  ///< when check_link() looks next
  Timestamp link_down_since_ = Timestamp::never();
  Timestamp next_start_{};        ///< when ensure_started() may try again
  std::vector<uint8_t> scratch_;  ///< linear copy of a multi-segment frame
  std::function<void()> on_up_;
};

}  // namespace uroce::dpdk
