/**
 * @file ring.h
 * @brief Ring scenario runner (tests/sim deadlock_test, bench/tradeoff): `switches` switches
 * joined in a ring, one host on each, host k streaming RC WRITEs (64 KiB messages, 16
 * outstanding) to the host `hops` switches further clockwise, lib/cc on every host, sampled
 * every `sample`.
 *
 * Routes: with `long_way`, every switch on a flow's path forwards it clockwise (explicit next
 * hops, Fabric::set_next_hop), even where the other way round is shorter; with 3 switches and 2
 * hops each ring link then carries one flow entering the ring and one passing through, and the
 * clockwise links form a cycle of buffer dependencies: each switch's queue towards the next
 * waits on that switch's ingress, which waits on its own queue towards the next. With PFC and
 * enough load that cycle can pause itself for good (Hu et al., HotNets 2016). Without
 * `long_way` the routes are the BFS shortest paths (one hop each for 3 switches and 2 hops),
 * which have no cycle. A PauseCycleWatch checks the clockwise queues every `watch_period`.
 *
 * In a deadlock the hosts' uplinks stay full and paused, and a simulated host is not polled
 * until its uplink has room (EngineHost), so its QPs' ACK timers do not run and no stream fails:
 * the senders just stop (a NIC would end them in retry-exceeded, here after 8 x 1 ms). Stream
 * errors are the flows' own (failed_flows()); run() fails only on a set-up failure or a stall.
 * Units: bytes, bit/s, ns; series in Gb/s.
 */
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cc/factory.h"
#include "dcqcn/params.h"
#include "sim/fabric.h"
#include "sim/fabric_host.h"
#include "sim/pause_watch.h"
#include "sim/rc_stream.h"
#include "sim/sampler.h"
#include "sim/testbed.h"
#include "transport/engine.h"

namespace uroce::sim {

struct RingSpec {
  int switches = 3;  ///< at least 3
  int hops = 2;      ///< each flow's ring links, 1..switches-1
  bool long_way = true;
  uint64_t rate_bps = 40'000'000'000ull;
  Duration propagation = Duration::nanos(1000);
  EcnConfig ecn{.enabled = true,
                .kmin_bytes = 5 * 1024,
                .kmax_bytes = 200 * 1024,
                .pmax = 0.01,
                .at_dequeue = true};
  PfcConfig pfc{.enabled = true,
                .lossless_mask = 1u << 3,
                .xoff_bytes = 64 * 1024,
                .xon_bytes = 48 * 1024,
                .headroom_bytes = 32 * 1024};
  CcAlgorithm algorithm = CcAlgorithm::kDcqcn;
  dcqcn::DcqcnParams params = dcqcn::paper_preset();
  /// The base round trip of the long way round: 4 links out, 3 back (the ACKs' shortest way),
  /// 1 KB frames stored and forwarded at 40 Gb/s: about 8 us.
  cc::DelayParams delay{.base_rtt = Duration::micros(8)};
  transport::LossRecovery recovery = transport::LossRecovery::kGoBackN;
  bool peer_timestamps = false;     ///< uroce's timestamp extension on every RC QP
  uint64_t buffer_bytes = 1 << 20;  ///< each switch's shared buffer
  uint8_t path_mtu = 3;             ///< 1 KB packets
  uint32_t max_unacked_psns = 4096;
  Duration run = Duration::millis(20);
  Duration sample = Duration::micros(100);
  Duration watch_period = Duration::micros(10);
};

/// Column indices of RingRun::rows(): t_us, xoff (XOFF frames sent by all switches), xon, then
/// one Gb/s column per flow.
enum RingCol : size_t { kRingT = 0, kRingXoff = 1, kRingXon = 2, kRingFlow0 = 3 };

class RingRun {
 public:
  /// The RoCE priority (DSCP 26 >> 3), the one PFC protects.
  static constexpr int kRocePriority = 3;

  explicit RingRun(const RingSpec& s) : spec_(s), fab_(sim_) {
    const int n = s.switches;
    if (n < 3 || s.hops < 1 || s.hops >= n) {
      error_ = "a ring needs at least 3 switches and 1..switches-1 hops";
      return;
    }
    SwitchConfig sc;
    sc.ecn = s.ecn;
    sc.pfc = s.pfc;
    sc.buffer_bytes = s.buffer_bytes;
    for (int i = 0; i < n; ++i) fab_.add_switch(sc);
    LinkParams lp{.rate_bps = s.rate_bps, .propagation = s.propagation, .max_frames = 64};
    for (int i = 0; i < n; ++i)
      fab_.connect_switches(static_cast<uint32_t>(i), static_cast<uint32_t>((i + 1) % n), lp);
    for (int i = 0; i < n; ++i) {
      hosts_.push_back(make_fabric_host(sim_, s, i, n, 700, "r", &cc_));
      fab_.add_host(hosts_.back().get(), host_mac(i), static_cast<uint32_t>(i), lp);
    }
    fab_.build_routes();
    for (int k = 0; k < n; ++k) {
      const int dst = (k + s.hops) % n;
      if (s.long_way)
        for (int h = 0; h < s.hops; ++h) {
          const int at = (k + h) % n;
          if (!fab_.set_next_hop(static_cast<uint32_t>(at), static_cast<uint32_t>(dst),
                                 static_cast<uint32_t>((at + 1) % n)))
            error_ = "route failed";
        }
      Endpoint a = make_endpoint(*hosts_[static_cast<size_t>(k)], k, transport::QpType::kRc);
      Endpoint b = make_endpoint(*hosts_[static_cast<size_t>(dst)], dst, transport::QpType::kRc);
      ConnParams c;
      c.path_mtu = s.path_mtu;
      if (!connect(a, b, c)) error_ = "connect failed";
      StreamConfig st;
      st.op = StreamOp::kWrite;
      st.total_bytes = 1ull << 40;
      st.sizes = {65536u};
      st.window = 16;
      st.verify = false;
      flows_.push_back(std::make_unique<RcStream>(st, *hosts_[static_cast<size_t>(k)], a.pd, a.qpn,
                                                  a.scq, *hosts_[static_cast<size_t>(dst)], b.pd,
                                                  b.qpn, b.rcq));
    }
    std::vector<Link*> cycle;
    for (int i = 0; i < n; ++i)
      cycle.push_back(&fab_.link(static_cast<uint32_t>(i), static_cast<uint32_t>((i + 1) % n)));
    watch_ = std::make_unique<PauseCycleWatch>(sim_, std::move(cycle), kRocePriority,
                                               s.watch_period, Timestamp{} + s.run);
  }

  /// Runs the scenario; false on a set-up failure or a stall (see error()). Stream errors are
  /// the flows' own (failed_flows()).
  bool run() {
    if (!error_.empty()) return false;
    smp_ = std::make_unique<Sampler>(sim_, spec_.sample, Timestamp{} + spec_.run);
    smp_->add("xoff_sent", [this] { return static_cast<double>(sum(&SwitchStats::xoff_sent)); });
    smp_->add("xon_sent", [this] { return static_cast<double>(sum(&SwitchStats::xon_sent)); });
    last_bytes_.assign(flows_.size(), 0);
    for (size_t k = 0; k < flows_.size(); ++k)
      smp_->add("flow" + std::to_string(k) + "_gbps", [this, k] {
        uint64_t b = flows_[k]->bytes_completed();
        double g = static_cast<double>(b - last_bytes_[k]) * 8 / spec_.sample.secs() / 1e9;
        last_bytes_[k] = b;
        return g;
      });
    smp_->start();
    watch_->start();
    for (auto& f : flows_) f->start();
    if (!sim_.run_until(Timestamp{} + spec_.run)) error_ = "simulator stalled";
    return error_.empty();
  }

  /// Mean Gb/s of all flows together over samples with from_us <= t < to_us.
  double goodput_gbps(double from_us, double to_us = 1e18) const {
    double s = 0;
    size_t n = 0;
    for (const auto& r : smp_->rows())
      if (r[kRingT] >= from_us && r[kRingT] < to_us) {
        for (size_t k = kRingFlow0; k < r.size(); ++k) s += r[k];
        ++n;
      }
    return n ? s / static_cast<double>(n) : 0;
  }
  /// Mean Gb/s of flow k over samples with t >= from_us.
  double mean_gbps(size_t k, double from_us) const {
    double s = 0;
    size_t n = 0;
    for (const auto& r : smp_->rows())
      if (r[kRingT] >= from_us) {
        s += r[kRingFlow0 + k];
        ++n;
      }
    return n ? s / static_cast<double>(n) : 0;
  }
  const std::vector<std::vector<double>>& rows() const { return smp_->rows(); }
  const RcStream& flow(size_t k) const { return *flows_[k]; }
  size_t flow_count() const { return flows_.size(); }
  /// Flows that ended in an error.
  size_t failed_flows() const {
    size_t n = 0;
    for (const auto& f : flows_) n += f->error().empty() ? 0 : 1;
    return n;
  }
  const PauseCycleWatch& watch() const { return *watch_; }
  Switch& sw(int i) { return fab_.sw(static_cast<uint32_t>(i)); }
  /// The clockwise link from switch i to the next.
  Link& ring_link(int i) {
    return fab_.link(static_cast<uint32_t>(i), static_cast<uint32_t>((i + 1) % spec_.switches));
  }
  /// A switch statistic summed over the ring, e.g. sum(&SwitchStats::xoff_sent).
  uint64_t sum(uint64_t SwitchStats::*field) {
    uint64_t n = 0;
    for (int i = 0; i < spec_.switches; ++i) n += sw(i).stats().*field;
    return n;
  }
  uint64_t drops() { return sum(&SwitchStats::buffer_drops) + sum(&SwitchStats::headroom_drops); }
  /// A counter summed over every host.
  uint64_t total(Counter c) const {
    uint64_t n = 0;
    for (const auto& h : hosts_) n += h->counters().get(c);
    return n;
  }
  const std::string& error() const { return error_; }

 private:
  RingSpec spec_;
  Simulator sim_;
  Fabric fab_;
  std::vector<std::unique_ptr<cc::Factory>> cc_;
  std::vector<std::unique_ptr<EngineHost>> hosts_;
  std::vector<std::unique_ptr<RcStream>> flows_;
  std::unique_ptr<PauseCycleWatch> watch_;
  std::unique_ptr<Sampler> smp_;
  std::vector<uint64_t> last_bytes_;
  std::string error_;
};

}  // namespace uroce::sim
