/**
 * @file incast.h
 * @brief N:1 incast scenario runner (the DCQCN tests, bench/tradeoff): N sender hosts and one
 * receiver on one switch (RED/ECN, optional PFC), one RC WRITE stream per sender (64 KiB
 * messages, 16 outstanding), lib/dcqcn on every host, sampled every `sample` into a time
 * series (optionally a CSV for bench/plot). Optionally a closed-loop short flow, open-loop
 * short messages (sim/open_loop.h) and a victim flow beside them. Units: bytes, bit/s, ns; series
 * in Gb/s and bytes.
 */
#pragma once

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cc/factory.h"
#include "dcqcn/params.h"
#include "sim/fabric.h"
#include "sim/fabric_host.h"
#include "sim/open_loop.h"
#include "sim/rc_stream.h"
#include "sim/sampler.h"
#include "sim/testbed.h"
#include "transport/engine.h"

namespace uroce::sim {

struct IncastSpec {
  int senders = 2;
  uint64_t rate_bps = 40'000'000'000ull;
  Duration propagation = Duration::nanos(1000);
  /// CP as the reference model (docs/dcqcn-pfc.md §2.3): Kmin 5 KB, Kmax 200 KB, Pmax 1 %, dequeue.
  EcnConfig ecn{.enabled = true,
                .kmin_bytes = 5 * 1024,
                .kmax_bytes = 200 * 1024,
                .pmax = 0.01,
                .at_dequeue = true};
  /// PFC on priority 3 with XOFF above Kmax.
  PfcConfig pfc{.enabled = true,
                .lossless_mask = 1u << 3,
                .xoff_bytes = 400 * 1024,
                .xon_bytes = 300 * 1024,
                .headroom_bytes = 256 * 1024};
  /// Congestion control on every host (kOff: none).
  CcAlgorithm algorithm = CcAlgorithm::kDcqcn;
  dcqcn::DcqcnParams params = dcqcn::paper_preset();
  cc::DelayParams delay;  ///< kDelay, kDcqcnDelay
  transport::LossRecovery recovery = transport::LossRecovery::kGoBackN;
  bool peer_timestamps = false;         ///< uroce's timestamp extension on every RC QP
  uint64_t buffer_bytes = 12ull << 20;  ///< the switch's shared buffer
  /// Short flows beside the long ones: one more sender posting `short_bytes` WRITEs one at a
  /// time (each posted when the last completed); 0: none. completion_times() measures them.
  uint32_t short_bytes = 0;
  /// Open-loop short messages into the same receiver from one more sender (after the short
  /// flow's): Poisson arrivals at open_loop->load of rate_bps (IncastRun sets rate_bps).
  /// open_loop() measures them.
  std::optional<OpenLoopConfig> open_loop;
  /// A victim flow: sender 0 also streams to one more receiver, whose port is not congested
  /// (PFC's head-of-line blocking pauses it all the same). victim_flow() measures it.
  bool victim = false;
  double loss = 0;       ///< random loss on every link (both directions), 0..1
  uint8_t path_mtu = 3;  ///< 1 KB packets, as the reference model
  /// Engine go-back-N window: large, so that senders are rate-limited by DCQCN (or the
  /// link) and not window-limited as the engine's default of 128 PSNs would make them.
  uint32_t max_unacked_psns = 4096;
  Duration run = Duration::millis(120);
  Duration sample = Duration::micros(100);
  std::vector<Duration> start;  ///< per-sender start time (default: all at 0)
  std::string csv_name;         ///< written under UROCE_SIM_CSV_DIR when set
};

/// Column indices of IncastRun::rows(): t_us, util (bottleneck wire utilisation 0..1),
/// queue_bytes, cnps, xoff, then one Gb/s column per flow.
enum IncastCol : size_t { kT = 0, kUtil = 1, kQueue = 2, kCnps = 3, kXoff = 4, kFlow0 = 5 };

class IncastRun {
 public:
  explicit IncastRun(const IncastSpec& s) : spec_(s), fab_(sim_) {
    SwitchConfig sc;
    sc.ecn = s.ecn;
    sc.pfc = s.pfc;
    sc.buffer_bytes = s.buffer_bytes;
    sw_ = fab_.add_switch(sc);
    LinkParams lp{.rate_bps = s.rate_bps, .propagation = s.propagation, .max_frames = 64};
    const int streams = s.senders + (s.short_bytes ? 1 : 0);  // hosts with an RcStream
    const int senders = streams + (s.open_loop ? 1 : 0);
    rx_ = senders;  // the receiver, then the victim's receiver
    const int n = senders + 1 + (s.victim ? 1 : 0);
    for (int i = 0; i < n; ++i) {
      hosts_.push_back(make_fabric_host(sim_, s, i, n, 500, "h", &cc_));
      fab_.add_host(hosts_.back().get(), host_mac(i), sw_, lp);
    }
    fab_.build_routes();
    if (s.loss > 0)
      for (int i = 0; i < n; ++i) {
        const uint64_t seed = 77 + 2 * static_cast<uint64_t>(i);
        fab_.uplink(static_cast<uint32_t>(i)).set_impairments({.seed = seed, .loss = s.loss});
        fab_.downlink(static_cast<uint32_t>(i)).set_impairments({.seed = seed + 1, .loss = s.loss});
      }
    EngineHost& rx = *hosts_[static_cast<size_t>(senders)];
    for (int k = 0; k < streams; ++k) {
      Endpoint a = make_endpoint(*hosts_[static_cast<size_t>(k)], k, transport::QpType::kRc);
      Endpoint b = make_endpoint(rx, senders, transport::QpType::kRc);
      ConnParams c;
      c.path_mtu = s.path_mtu;
      if (!connect(a, b, c)) error_ = "connect failed";
      const bool short_flow = k == s.senders;
      StreamConfig st;
      st.op = StreamOp::kWrite;
      st.total_bytes = 1ull << 40;
      st.sizes = {short_flow ? s.short_bytes : 65536u};
      st.window = short_flow ? 1 : 16;
      st.verify = false;
      flows_.push_back(std::make_unique<RcStream>(st, *hosts_[static_cast<size_t>(k)], a.pd, a.qpn,
                                                  a.scq, rx, b.pd, b.qpn, b.rcq));
    }
    if (s.open_loop) {
      OpenLoopConfig oc = *s.open_loop;
      oc.rate_bps = s.rate_bps;
      ConnParams c;
      c.path_mtu = s.path_mtu;
      open_ = std::make_unique<OpenLoopWrites>(oc, *hosts_[static_cast<size_t>(streams)], streams,
                                               rx, senders, c);
      if (!open_->error().empty()) error_ = open_->error();
    }
    if (s.victim) {
      EngineHost& vrx = *hosts_.back();
      Endpoint a = make_endpoint(*hosts_[0], 0, transport::QpType::kRc);
      Endpoint b = make_endpoint(vrx, n - 1, transport::QpType::kRc);
      ConnParams c;
      c.path_mtu = s.path_mtu;
      if (!connect(a, b, c)) error_ = "connect failed";
      StreamConfig st;
      st.op = StreamOp::kWrite;
      st.total_bytes = 1ull << 40;
      st.sizes = {65536u};
      st.window = 16;
      st.verify = false;
      flows_.push_back(
          std::make_unique<RcStream>(st, *hosts_[0], a.pd, a.qpn, a.scq, vrx, b.pd, b.qpn, b.rcq));
    }
  }

  /// Runs the scenario; false on a stream error or stall (see error()).
  bool run() {
    const char* dir = std::getenv("UROCE_SIM_CSV_DIR");
    std::string path =
        dir && !spec_.csv_name.empty() ? std::string(dir) + "/" + spec_.csv_name : std::string();
    smp_ = std::make_unique<Sampler>(sim_, spec_.sample, Timestamp{} + spec_.run, path);
    Link& bn = fab_.downlink(static_cast<uint32_t>(rx_));
    const double cap_bits = static_cast<double>(spec_.rate_bps) * spec_.sample.secs();
    smp_->add("util", [this, &bn, cap_bits] {
      uint64_t wire = bn.stats().sent_bytes + bn.stats().sent * (kFcsBytes + kPreambleIfgBytes);
      double u = static_cast<double>(wire - last_wire_) * 8 / cap_bits;
      last_wire_ = wire;
      return u;
    });
    smp_->add("queue_bytes", [&bn] { return static_cast<double>(bn.queued_bytes()); });
    smp_->add("cnps_sent", [this] {
      return static_cast<double>(receiver().counters().get(Counter::np_cnp_sent));
    });
    smp_->add("xoff_sent", [this] { return static_cast<double>(fab_.sw(sw_).stats().xoff_sent); });
    last_bytes_.assign(flows_.size(), 0);
    for (size_t k = 0; k < flows_.size(); ++k)
      smp_->add("flow" + std::to_string(k) + "_gbps", [this, k] {
        uint64_t b = flows_[k]->bytes_completed();
        double g = static_cast<double>(b - last_bytes_[k]) * 8 / spec_.sample.secs() / 1e9;
        last_bytes_[k] = b;
        return g;
      });
    smp_->start();
    for (size_t k = 0; k < flows_.size(); ++k) {
      Duration at = k < spec_.start.size() ? spec_.start[k] : Duration{};
      if (at.ns == 0) {
        flows_[k]->start();
      } else {
        RcStream* f = flows_[k].get();
        sim_.call_at(Timestamp{} + at, [f] { f->start(); });
      }
    }
    if (open_) open_->start();
    if (!sim_.run_until(Timestamp{} + spec_.run)) error_ = "simulator stalled";
    for (auto& f : flows_)
      if (!f->error().empty() && error_.empty()) error_ = f->error();
    if (open_ && !open_->error().empty() && error_.empty()) error_ = open_->error();
    return error_.empty();
  }

  /// Mean of column `col` over samples with from_us <= t < to_us.
  double mean(size_t col, double from_us, double to_us = 1e18) const {
    double s = 0;
    size_t n = 0;
    for (const auto& r : smp_->rows())
      if (r[kT] >= from_us && r[kT] < to_us) {
        s += r[col];
        ++n;
      }
    return n ? s / static_cast<double>(n) : 0;
  }
  /// The q-quantile (0..1) of column `col` over samples with t >= from_us.
  double quantile(size_t col, double q, double from_us) const {
    std::vector<double> v;
    for (const auto& r : smp_->rows())
      if (r[kT] >= from_us) v.push_back(r[col]);
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  }
  /// Jain's fairness index of the flows' mean rates over t >= from_us.
  double jain(double from_us) const {
    double s = 0, s2 = 0;
    const size_t n = static_cast<size_t>(spec_.senders);  // the long flows
    for (size_t k = 0; k < n; ++k) {
      double x = mean(kFlow0 + k, from_us);
      s += x;
      s2 += x * x;
    }
    return s2 > 0 ? s * s / (static_cast<double>(n) * s2) : 0;
  }

  const std::vector<std::vector<double>>& rows() const { return smp_->rows(); }
  EngineHost& receiver() { return *hosts_[static_cast<size_t>(rx_)]; }
  /// Flow k: the long flows 0..senders-1, then the short flow (IncastSpec::short_bytes), then
  /// the victim flow (IncastSpec::victim).
  const RcStream& flow(size_t k) const { return *flows_[k]; }
  size_t flow_count() const { return flows_.size(); }
  /// The open-loop messages (IncastSpec::open_loop), or nullptr.
  const OpenLoopWrites* open_loop() const { return open_.get(); }
  /// A counter summed over every host (senders and receiver).
  uint64_t total(Counter c) const {
    uint64_t n = 0;
    for (const auto& h : hosts_) n += h->counters().get(c);
    return n;
  }
  EngineHost& sender(int k) { return *hosts_[static_cast<size_t>(k)]; }
  Switch& sw() { return fab_.sw(sw_); }
  const std::string& error() const { return error_; }

 private:
  IncastSpec spec_;
  Simulator sim_;
  Fabric fab_;
  uint32_t sw_ = 0;
  int rx_ = 0;  ///< the incast receiver's host index
  std::vector<std::unique_ptr<cc::Factory>> cc_;
  std::vector<std::unique_ptr<EngineHost>> hosts_;
  std::vector<std::unique_ptr<RcStream>> flows_;
  std::unique_ptr<OpenLoopWrites> open_;
  std::unique_ptr<Sampler> smp_;
  uint64_t last_wire_ = 0;
  std::vector<uint64_t> last_bytes_;
  std::string error_;
};

}  // namespace uroce::sim
