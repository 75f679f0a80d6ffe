/**
 * @file exporter.cc
 * @brief Segment -> Prometheus metric families and the HTTP endpoint (exporter.h).
 */
#include "exporter.h"

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <signal.h>

#include <cstdio>
#include <map>
#include <memory>

#include "stats/hostd_status.h"
#include "stats/proc.h"
#include "stats/reader.h"

namespace uroce::exporter {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

/// Families by name, in first-seen order, so every series of one name shares one family.
class Families {
 public:
  void add(const std::string& name, std::string_view help, MetricType type, Labels labels,
           double value) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, out_.size()).first;
      out_.push_back(MetricFamily{name, std::string(help), type, {}});
    }
    ClientMetric m;
    m.label = std::move(labels);
    if (type == MetricType::Counter)
      m.counter.value = value;
    else
      m.gauge.value = value;
    out_[it->second].metric.push_back(std::move(m));
  }
  std::vector<MetricFamily> take() { return std::move(out_); }

 private:
  std::map<std::string, size_t> index_;
  std::vector<MetricFamily> out_;
};

Labels with(Labels base, std::string name, std::string value) {
  base.push_back({std::move(name), std::move(value)});
  return base;
}

void add_snapshot(Families& f, const stats::Snapshot& s) {
  Labels base = {{"device", s.device}, {"port", "1"}, {"pid", std::to_string(s.pid)}};
  const stats::ConfigSummary& c = s.config;
  Labels info = base;
  info.push_back({"profile", std::string(stats::get_text(c.profile))});
  info.push_back({"lossless", c.lossless ? "1" : "0"});
  info.push_back({"trust", std::string(stats::get_text(c.trust))});
  info.push_back({"dcqcn_mode", std::string(stats::get_text(c.dcqcn_mode))});
  info.push_back({"congestion_control", std::string(stats::get_text(c.congestion_control))});
  info.push_back({"loss_recovery", std::string(stats::get_text(c.loss_recovery))});
  f.add("rdma_device_info", "Effective RoCE configuration of the device (value 1)",
        MetricType::Gauge, info, 1);
  for (size_t i = 0; i < s.counters.size(); ++i) {
    std::string_view help = "uroce engine counter";
    for (size_t k = 0; k < kCounterCount; ++k)
      if (kCounterNames[k] == s.counter_names[i]) help = kCounterHelp[k];
    f.add("rdma_" + s.counter_names[i] + "_total", help, MetricType::Counter, base,
          static_cast<double>(s.counters[i]));
  }
  for (const stats::StatDesc& d : stats::kPrioStats) {
    bool counter = d.kind == stats::Kind::kCounter;
    std::string name = "rdma_" + std::string(d.name) + (counter ? "_total" : "_bytes");
    for (int p = 0; p < stats::kNumPriorities; ++p)
      f.add(name, d.help, counter ? MetricType::Counter : MetricType::Gauge,
            with(base, "priority", std::to_string(p)),
            static_cast<double>(stats::prio_value(s.port, d, p)));
  }
  for (const stats::StatDesc& d : stats::kPortStats) {
    bool counter = d.kind == stats::Kind::kCounter;
    f.add("rdma_" + std::string(d.name) + (counter ? "_total" : ""), d.help,
          counter ? MetricType::Counter : MetricType::Gauge, base,
          static_cast<double>(stats::prio_value(s.port, d, 0)));
  }
  // Names other RDMA exporters serve (docs/dcqcn-pfc.md §5.3, yuuki/rdma_exporter), so
  // their dashboards work unchanged: the optional mlx5 cc_* counters, IB port data counters
  // (in 4-byte words, as IBA PortXmitData/PortRcvData count), summed PFC pause durations.
  f.add("rdma_cc_rx_ce_pkts_total",
        "CE-marked RoCE packets received (= np_ecn_marked_roce_packets)", MetricType::Counter, base,
        static_cast<double>(s.counter("np_ecn_marked_roce_packets")));
  f.add("rdma_cc_rx_cnp_pkts_total", "CNPs received (= rp_cnp_handled + rp_cnp_ignored)",
        MetricType::Counter, base,
        static_cast<double>(s.counter("rp_cnp_handled") + s.counter("rp_cnp_ignored")));
  f.add("rdma_cc_tx_cnp_pkts_total", "CNPs sent (= np_cnp_sent)", MetricType::Counter, base,
        static_cast<double>(s.counter("np_cnp_sent")));
  f.add("rdma_port_xmit_data_total", "RoCE data sent, in 4-byte words (IBA PortXmitData)",
        MetricType::Counter, base,
        static_cast<double>(s.counter("tx_vport_rdma_unicast_bytes") / 4));
  f.add("rdma_port_rcv_data_total", "RoCE data received, in 4-byte words (IBA PortRcvData)",
        MetricType::Counter, base,
        static_cast<double>(s.counter("rx_vport_rdma_unicast_bytes") / 4));
  uint64_t rx_pause_us = 0, tx_pause_us = 0;
  for (int p = 0; p < stats::kNumPriorities; ++p) {
    rx_pause_us += s.port.rx_prio_pause_duration[p];
    tx_pause_us += s.port.tx_prio_pause_duration[p];
  }
  f.add("rdma_roce_pfc_pause_duration_total", "PFC pause time over all priorities, microseconds",
        MetricType::Counter, with(base, "direction", "rx"), static_cast<double>(rx_pause_us));
  f.add("rdma_roce_pfc_pause_duration_total", "PFC pause time over all priorities, microseconds",
        MetricType::Counter, with(base, "direction", "tx"), static_cast<double>(tx_pause_us));
  f.add("rdma_qps", "Queue pairs of the device", MetricType::Gauge, base,
        static_cast<double>(s.qps.size()));
  for (const stats::QpRecord& q : s.qps) {
    Labels ql = with(base, "qp", std::to_string(q.qpn));
    for (size_t i = 0; i < stats::kQpCounterCount; ++i)
      f.add("rdma_qp_" + std::string(stats::kQpStats[i].name) + "_total", stats::kQpStats[i].help,
            MetricType::Counter, ql, static_cast<double>(q.counters[i]));
    f.add("rdma_rp_current_rate_mbps", "DCQCN current rate Rc of the QP, Mb/s (0 = unlimited)",
          MetricType::Gauge, ql, stats::load_double(q.rate_mbps));
    f.add("rdma_rp_target_rate_mbps", "DCQCN target rate Rt of the QP, Mb/s", MetricType::Gauge, ql,
          stats::load_double(q.target_mbps));
    f.add("rdma_rp_alpha", "DCQCN alpha of the QP (0..1)", MetricType::Gauge, ql,
          stats::load_double(q.alpha));
    f.add("rdma_qp_state", "QP state (0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 SQD, 5 SQE, 6 ERR)",
          MetricType::Gauge, ql, q.state);
    f.add("rdma_qp_selective_repeat", "1 when the QP recovers loss by selective repeat",
          MetricType::Gauge, ql, (q.flags & stats::kQpFlagSelective) ? 1 : 0);
    f.add("rdma_qp_peer_timestamps", "1 when the QP's round trips come from peer timestamps",
          MetricType::Gauge, ql, (q.flags & stats::kQpFlagTimestamps) ? 1 : 0);
    f.add("rdma_qp_delay_in_force",
          "1 when the delay-based control's rate limits the QP (below DCQCN's)", MetricType::Gauge,
          ql, (q.flags & stats::kQpFlagDelayInForce) ? 1 : 0);
    f.add("rdma_qp_delay_rate_mbps",
          "The delay-based control's rate of the QP, Mb/s (0 = not limiting)", MetricType::Gauge,
          ql, stats::load_double(q.delay_mbps));
    f.add("rdma_qp_rtt_us", "Last round-trip sample of the QP, microseconds (0 = none)",
          MetricType::Gauge, ql, stats::load_double(q.rtt_us));
  }
}

class SegmentCollector : public prometheus::Collectable {
 public:
  explicit SegmentCollector(std::string dir) : dir_(std::move(dir)) {}
  std::vector<MetricFamily> Collect() const override { return collect_families(dir_); }

 private:
  std::string dir_;
};

/// A uroce-hostd's worker and clients (stats/hostd_status.h).
void add_hostd(Families& f, const stats::HostdStatus& h) {
  const Labels base = {{"netdev", h.netdev}, {"pid", std::to_string(h.pid)}};
  for (const stats::HostdWorkerStatus& w : h.workers) {
    const Labels l = with(base, "worker", std::to_string(w.id));
    f.add("rdma_hostd_worker_frames_in_total", "Frames a uroce-hostd worker took from the netdev",
          MetricType::Counter, l, static_cast<double>(w.frames_in));
    f.add("rdma_hostd_worker_frames_out_total", "Frames a uroce-hostd worker sent to the netdev",
          MetricType::Counter, l, static_cast<double>(w.frames_out));
    f.add("rdma_hostd_worker_busy_ratio",
          "Share of the last 100 ms a uroce-hostd worker spent moving frames", MetricType::Gauge, l,
          w.busy);
    f.add("rdma_hostd_worker_tx_backlog_frames", "Frames waiting in its clients' TX rings",
          MetricType::Gauge, l, static_cast<double>(w.tx_backlog));
    f.add("rdma_hostd_worker_rx_backlog_frames",
          "Frames its clients have not yet taken from their RX rings", MetricType::Gauge, l,
          static_cast<double>(w.rx_backlog));
  }
  f.add("rdma_hostd_clients", "Processes a uroce-hostd serves", MetricType::Gauge, base,
        static_cast<double>(h.clients.size()));
  for (const stats::HostdClientStatus& c : h.clients) {
    const Labels l = {{"netdev", h.netdev},
                      {"client_pid", std::to_string(c.pid)},
                      {"command", c.command},
                      {"device", c.device},
                      {"slot", std::to_string(c.slot)},
                      {"worker", std::to_string(c.worker)}};
    const std::pair<const char*, uint64_t> counters[] = {{"to_client", c.to_client},
                                                         {"from_client", c.from_client},
                                                         {"to_wire", c.to_wire},
                                                         {"switched", c.switched},
                                                         {"dropped", c.dropped}};
    for (const auto& [name, v] : counters)
      f.add(std::string("rdma_hostd_client_") + name + "_frames_total",
            "Frames of one uroce-hostd client (to_client: delivered to it; from_client: it "
            "sent; to_wire, switched: where those went; dropped: for it, its RX ring full)",
            MetricType::Counter, l, static_cast<double>(v));
    f.add("rdma_hostd_client_refused_frames_total",
          "Frames of one uroce-hostd client refused (dropped), by reason", MetricType::Counter,
          with(l, "reason", "cm"), static_cast<double>(c.cm_refused));
    for (const auto& [why, n] : c.refused)
      f.add("rdma_hostd_client_refused_frames_total",
            "Frames of one uroce-hostd client refused (dropped), by reason", MetricType::Counter,
            with(l, "reason", why), static_cast<double>(n));
  }
}

}  // namespace

std::vector<MetricFamily> collect_families(const std::string& run_dir) {
  Families f;
  std::map<std::string, int> states = {{"live", 0}, {"stale", 0}, {"unreadable", 0}};
  for (const stats::SegmentInfo& info : stats::list_segments(stats::run_dir(run_dir))) {
    if (info.state == stats::SegmentState::kStale) {
      states["stale"]++;
      continue;
    }
    if (info.state == stats::SegmentState::kUnreadable) {
      states["unreadable"]++;
      continue;
    }
    stats::Snapshot s;
    std::string err;
    stats::ReadStatus st = stats::read_segment(info.path, &s, &err);
    if (st != stats::ReadStatus::kOk) {
      states[st == stats::ReadStatus::kError ? "unreadable" : "stale"]++;
      continue;
    }
    states["live"]++;
    add_snapshot(f, s);
  }
  std::vector<std::string> errors;
  for (const stats::HostdStatus& h : stats::read_hostd_statuses(stats::run_dir(run_dir), &errors))
    add_hostd(f, h);
  states["unreadable"] += static_cast<int>(errors.size());
  for (const auto& [state, n] : states)
    f.add("rdma_exporter_segments", "Statistics segments found at the last scrape, by state",
          MetricType::Gauge, {{"state", state}}, n);
  return f.take();
}

int run(const std::string& listen, const std::string& run_dir) {
  // Block the stop signals before the server threads start, so only sigwait sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    exposer = std::make_unique<prometheus::Exposer>(listen, 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "uroce: exporter: cannot listen on %s: %s\n", listen.c_str(), e.what());
    return 1;
  }
  auto collector = std::make_shared<SegmentCollector>(run_dir);
  exposer->RegisterCollectable(collector);
  std::vector<int> ports = exposer->GetListeningPorts();
  std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("listening on %s:%d\n", host.c_str(), ports.empty() ? 0 : ports.front());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  // Stop the server (joins its worker threads) before `collector`, which a scrape in flight
  // may still be using, is destroyed (TSan found that race at exit).
  exposer.reset();
  return 0;
}

}  // namespace uroce::exporter
