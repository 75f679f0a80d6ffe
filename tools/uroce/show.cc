/**
 * @file show.cc
 * @brief The `show` and `clear` commands (show.h). Units as in lib/stats/layout.h: bytes,
 * frames, µs for pause durations, Mb/s for rates.
 */
#include "show.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "stats/baseline.h"
#include "stats/hostd_status.h"
#include "stats/proc.h"
#include "stats/reader.h"
#include "stats/summary.h"

namespace uroce::tool {

namespace {

using stats::Snapshot;
/// Insertion-ordered: keys come out in the order written.
using Json = nlohmann::ordered_json;

/// Compact JSON text; bytes that are not UTF-8 become U+FFFD instead of failing.
std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

/// What the reader found: readable snapshots, stale segments, and one line per failure.
struct Found {
  std::vector<Snapshot> snaps;
  std::string reaped;               ///< the summary of the stale segments removed, or empty
  std::vector<std::string> stale;   ///< one line each: stale but not removable, or died just now
  std::vector<std::string> errors;  ///< one line each
  std::string dir;
  std::vector<stats::HostdStatus> hostd;  ///< the uroce-hostd daemons serving there
};

Found collect(const ShowOptions& o) {
  Found f;
  f.dir = stats::run_dir(o.run_dir);
  f.reaped = stats::reap_summary(stats::reap_stale(f.dir), f.dir);
  for (const stats::SegmentInfo& info : stats::list_segments(f.dir)) {
    if (!o.device.empty() && info.device != o.device) continue;
    if (o.pid && info.pid != o.pid) continue;
    if (info.state == stats::SegmentState::kUnreadable) {
      f.errors.push_back(info.problem);
      continue;
    }
    if (info.state == stats::SegmentState::kStale) {
      f.stale.push_back(info.problem);
      continue;
    }
    Snapshot s;
    std::string err;
    switch (stats::read_segment(info.path, &s, &err)) {
      case stats::ReadStatus::kOk:
        if (!o.raw) stats::apply_baseline(&s);
        f.snaps.push_back(std::move(s));
        break;
      case stats::ReadStatus::kStale: f.stale.push_back(err); break;
      case stats::ReadStatus::kOwnerExited:
      case stats::ReadStatus::kError: f.errors.push_back(err); break;
    }
  }
  for (stats::HostdStatus& h : stats::read_hostd_statuses(f.dir, &f.errors)) {
    const bool mine = o.device.empty() || o.device == "hostd-" + h.netdev ||
                      std::any_of(h.clients.begin(), h.clients.end(),
                                  [&](const auto& c) { return c.device == o.device; });
    if (mine) f.hostd.push_back(std::move(h));
  }
  return f;
}

/// A daemon's workers and clients (stats/hostd_status.h), after the devices' tables.
void hostd_table(std::string& out, const stats::HostdStatus& h) {
  out +=
      fmt::format("uroce-hostd on {} (pid {}): {} client(s)\n", h.netdev, h.pid, h.clients.size());
  for (const stats::HostdWorkerStatus& w : h.workers)
    out += fmt::format(
        "  worker {}: frames in {} out {}, busy {:.1f} %, frames waiting in TX rings {}, in RX "
        "rings {}\n",
        w.id, w.frames_in, w.frames_out, w.busy * 100, w.tx_backlog, w.rx_backlog);
  if (h.clients.empty()) return;
  out +=
      fmt::format("  {:>5} {:>6} {:>8} {:>6} {:<15} {:<12} {:>10} {:>10} {:>10} {:>9} {:>8} {}\n",
                  "slot", "worker", "pid", "uid", "command", "device", "to client", "from it",
                  "to wire", "switched", "dropped", "refused");
  for (const stats::HostdClientStatus& c : h.clients) {
    std::string refused;
    for (const auto& [why, n] : c.refused)
      refused += fmt::format("{}{}={}", refused.empty() ? "" : ",", why, n);
    if (c.cm_refused) refused += fmt::format("{}cm={}", refused.empty() ? "" : ",", c.cm_refused);
    out +=
        fmt::format("  {:>5} {:>6} {:>8} {:>6} {:<15} {:<12} {:>10} {:>10} {:>10} {:>9} {:>8} {}\n",
                    c.slot, c.worker, c.pid, c.uid, c.command, c.device, c.to_client, c.from_client,
                    c.to_wire, c.switched, c.dropped, refused.empty() ? "-" : refused);
  }
}

/// Prints the reap summary, stale notes and errors; returns the exit status.
int finish(const Found& f) {
  if (!f.reaped.empty()) std::fprintf(stderr, "uroce: %s\n", f.reaped.c_str());
  for (const std::string& s : f.stale) std::fprintf(stderr, "uroce: %s\n", s.c_str());
  for (const std::string& e : f.errors) std::fprintf(stderr, "uroce: %s\n", e.c_str());
  return f.errors.empty() ? 0 : 1;
}

/// "0-7", "3,26", "-" for the DSCPs (or PCPs) that map to priority p.
std::string values_for(const uint8_t* map, int n, int p) {
  std::string out;
  for (int v = 0; v < n;) {
    if (map[v] != p) {
      ++v;
      continue;
    }
    int end = v;
    while (end + 1 < n && map[end + 1] == p) ++end;
    if (!out.empty()) out += ',';
    out += end > v ? fmt::format("{}-{}", v, end) : std::to_string(v);
    v = end + 1;
  }
  return out.empty() ? "-" : out;
}

std::vector<int> list_for(const uint8_t* map, int n, int p) {
  std::vector<int> out;
  for (int v = 0; v < n; ++v)
    if (map[v] == p) out.push_back(v);
  return out;
}

constexpr std::string_view kCongestion[] = {"np_ecn_marked_roce_packets", "np_cnp_sent",
                                            "rp_cnp_handled", "rp_cnp_ignored"};
constexpr std::string_view kReliability[] = {
    "roce_adp_retrans",         "local_ack_timeout_err",
    "packet_seq_err",           "implied_nak_seq_err",
    "rnr_nak_retry_err",        "out_of_sequence",
    "duplicate_request",        "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded", "out_of_buffer",
    "rx_icrc_encapsulated"};

bool bit(uint8_t mask, int p) { return (mask >> p) & 1; }

/// A configured device with no program running: its effective config and zero counters.
Snapshot from_config(const config::Device& dev, const std::string& source) {
  Snapshot s;
  s.device = dev.name;
  s.config = stats::summarize(dev, source);
  s.counter_names.assign(kCounterNames.begin(), kCounterNames.end());
  s.counters.assign(kCounterCount, 0);
  return s;
}

/// How many of the device's QPs recover by selective repeat, how many carry peer timestamps,
/// and how many the delay-based control limits now.
struct QpSummary {
  uint64_t selective = 0;
  uint64_t timestamps = 0;
  uint64_t delay_limited = 0;
};
QpSummary summarize_qps(const Snapshot& s) {
  QpSummary q;
  for (const stats::QpRecord& r : s.qps) {
    if (r.flags & stats::kQpFlagSelective) ++q.selective;
    if (r.flags & stats::kQpFlagTimestamps) ++q.timestamps;
    if (r.flags & stats::kQpFlagDelayInForce) ++q.delay_limited;
  }
  return q;
}

Json roce_json(const Snapshot& s, bool running) {
  const stats::ConfigSummary& c = s.config;
  Json j;
  j["device"] = s.device;
  j["state"] = running ? "running" : "configured";
  j["pid"] = static_cast<int64_t>(s.pid);
  j["port"] = stats::get_text(c.port);
  j["config"] = stats::get_text(c.source);
  j["mtu"] = c.mtu;
  j["profile"] = stats::get_text(c.profile);
  j["lossless"] = c.lossless != 0;
  j["trust"] = stats::get_text(c.trust);
  if (c.vlan >= 0) j["vlan"] = int64_t{c.vlan};  // absent: untagged frames
  j["roce_dscp"] = int{c.roce_dscp};
  j["roce_priority"] = int{c.dscp_to_prio[c.roce_dscp & 63]};
  j["cnp_dscp"] = int{c.cnp_dscp};
  j["cnp_priority"] = int{c.dscp_to_prio[c.cnp_dscp & 63]};
  j["ecn"] = c.ecn != 0;
  Json& pfc = j["pfc"];
  pfc["xoff_bytes"] = c.pfc_xoff_bytes;
  pfc["xon_bytes"] = c.pfc_xon_bytes;
  pfc["watchdog_detect_ms"] = c.pfc_watchdog_detect_ms;
  pfc["watchdog_restore_ms"] = c.pfc_watchdog_restore_ms;
  pfc["rx_global_pause"] = s.port.rx_global_pause;
  pfc["tx_pause_storm_warning_events"] = s.port.tx_pause_storm_warning_events;
  pfc["tx_pause_storm_error_events"] = s.port.tx_pause_storm_error_events;
  Json& prios = j["priorities"] = Json::array();
  for (int p = 0; p < stats::kNumPriorities; ++p) {
    Json e;
    e["priority"] = p;
    e["dscp"] = list_for(c.dscp_to_prio, 64, p);
    e["pcp"] = list_for(c.pcp_to_prio, 8, p);
    e["tx_queue"] = int{c.prio_to_txq[p]};
    e["pfc"] = bit(c.pfc_enabled_mask, p);
    e["ecn"] = bit(c.ecn_enabled_mask, p);
    for (const stats::StatDesc& d : stats::kPrioStats) e[d.name] = stats::prio_value(s.port, d, p);
    prios.push_back(std::move(e));
  }
  Json& dcqcn = j["dcqcn"];
  dcqcn["mode"] = stats::get_text(c.dcqcn_mode);
  dcqcn["enabled"] = c.dcqcn_enabled != 0;
  Json& params = dcqcn["params"] = Json::object();
  for (uint32_t i = 0; i < c.dcqcn_param_count && i < stats::kMaxDcqcnParams; ++i)
    params[stats::get_text(c.dcqcn_params[i].name)] = c.dcqcn_params[i].value;
  Json& control = j["congestion_control"];
  control["algorithm"] = stats::get_text(c.congestion_control);
  Json& delay = control["delay"];
  delay["target_queue_us"] = c.delay.target_queue_us;
  delay["base_rtt_us"] = c.delay.base_rtt_us;
  delay["ai_mbps"] = c.delay.ai_mbps;
  delay["beta"] = c.delay.beta;
  delay["max_mdf"] = c.delay.max_mdf;
  delay["min_rate_mbps"] = c.delay.min_rate_mbps;
  const QpSummary qs = summarize_qps(s);
  control["qps_delay_limited"] = qs.delay_limited;
  j["loss_recovery"] = stats::get_text(c.loss_recovery);
  j["qps_selective_repeat"] = qs.selective;
  j["qps_peer_timestamps"] = qs.timestamps;
  Json& congestion = j["congestion"];
  for (std::string_view n : kCongestion) congestion[n] = s.counter(n);
  Json& reliability = j["reliability"];
  for (std::string_view n : kReliability) reliability[n] = s.counter(n);
  j["qps"] = static_cast<uint64_t>(s.qps.size());
  return j;
}

void roce_table(std::string& out, const Snapshot& s, bool running) {
  const stats::ConfigSummary& c = s.config;
  std::string profile(stats::get_text(c.profile));
  out += fmt::format("{}  {}  port {}  mtu {}  config {}\n", s.device,
                     running ? fmt::format("pid {}", s.pid) : std::string("(not running)"),
                     stats::get_text(c.port), c.mtu, stats::get_text(c.source));
  out += fmt::format(
      "  profile {}  lossless {}  trust {}  ECN {}  DCQCN {}  RoCE dscp {} -> prio {}  CNP dscp {} "
      "-> prio {}\n",
      profile.empty() ? "(none)" : profile, c.lossless ? "on" : "off", stats::get_text(c.trust),
      c.ecn ? "on" : "off", stats::get_text(c.dcqcn_mode), c.roce_dscp,
      c.dscp_to_prio[c.roce_dscp & 63], c.cnp_dscp, c.dscp_to_prio[c.cnp_dscp & 63]);
  if (c.vlan >= 0)
    out += fmt::format("  802.1Q tag on every frame: vid {}, pcp = priority\n", c.vlan);
  out += fmt::format("  PFC xoff {} B  xon {} B  watchdog {} ms / {} ms  storms warn {} err {}\n",
                     c.pfc_xoff_bytes, c.pfc_xon_bytes, c.pfc_watchdog_detect_ms,
                     c.pfc_watchdog_restore_ms, s.port.tx_pause_storm_warning_events,
                     s.port.tx_pause_storm_error_events);
  out += fmt::format(
      "  {:>4} {:<11} {:>3} {:>3} {:>3} {:>3} {:>9} {:>9} {:>8} {:>10} {:>8} {:>10} {:>9} {:>12} "
      "{:>12}\n",
      "prio", "dscp", "pcp", "txq", "pfc", "ecn", "queue B", "hwm B", "rx pause", "rx pause us",
      "tx pause", "tx pause us", "ce marked", "rx bytes", "tx bytes");
  for (int p = 0; p < stats::kNumPriorities; ++p) {
    const stats::PortStats& ps = s.port;
    out += fmt::format(
        "  {:>4} {:<11} {:>3} {:>3} {:>3} {:>3} {:>9} {:>9} {:>8} {:>10} {:>8} {:>10} {:>9} {:>12} "
        "{:>12}\n",
        p, values_for(c.dscp_to_prio, 64, p), values_for(c.pcp_to_prio, 8, p), c.prio_to_txq[p],
        bit(c.pfc_enabled_mask, p) ? "on" : "-", bit(c.ecn_enabled_mask, p) ? "on" : "-",
        ps.tx_prio_queue_depth[p], ps.tx_prio_queue_high_water[p], ps.rx_prio_pause[p],
        ps.rx_prio_pause_duration[p], ps.tx_prio_pause[p], ps.tx_prio_pause_duration[p],
        ps.rx_prio_marked[p], ps.rx_prio_bytes[p], ps.tx_prio_bytes[p]);
  }
  const QpSummary qs = summarize_qps(s);
  out += fmt::format(
      "  congestion control {}  loss recovery {}  QPs: selective repeat {}, peer timestamps {}, "
      "delay-limited {}\n",
      stats::get_text(c.congestion_control), stats::get_text(c.loss_recovery), qs.selective,
      qs.timestamps, qs.delay_limited);
  const std::string_view algo = stats::get_text(c.congestion_control);
  if (algo == "delay" || algo == "dcqcn+delay")
    out += fmt::format(
        "  delay: target queue {:g} us  base rtt {}  ai {}  beta {:g}  max_mdf {:g}  min rate {}\n",
        c.delay.target_queue_us,
        c.delay.base_rtt_us > 0 ? fmt::format("{:g} us", c.delay.base_rtt_us) : "learnt",
        c.delay.ai_mbps > 0 ? fmt::format("{:g} Mb/s", c.delay.ai_mbps) : "line/200", c.delay.beta,
        c.delay.max_mdf,
        c.delay.min_rate_mbps > 0 ? fmt::format("{:g} Mb/s", c.delay.min_rate_mbps) : "line/1000");
  out += fmt::format("  congestion: ECN marked {}  CNP sent {}  CNP handled {}  CNP ignored {}\n",
                     s.counter("np_ecn_marked_roce_packets"), s.counter("np_cnp_sent"),
                     s.counter("rp_cnp_handled"), s.counter("rp_cnp_ignored"));
  out += fmt::format(
      "  reliability: retransmits {}  ACK timeouts {}  NAK seq {}  RNR NAK {}  out of sequence {}  "
      "duplicates {}  retries exceeded {}/{} (transport/RNR)\n",
      s.counter("roce_adp_retrans"), s.counter("local_ack_timeout_err"),
      s.counter("packet_seq_err"), s.counter("rnr_nak_retry_err"), s.counter("out_of_sequence"),
      s.counter("duplicate_request"), s.counter("req_transport_retries_exceeded"),
      s.counter("req_rnr_retries_exceeded"));
  // DCQCN parameters, wrapped to about 100 columns.
  std::string params = fmt::format("  dcqcn {}:", stats::get_text(c.dcqcn_mode));
  size_t line_start = 0;
  for (uint32_t i = 0; i < c.dcqcn_param_count && i < stats::kMaxDcqcnParams; ++i) {
    std::string item =
        fmt::format(" {}={:g}", stats::get_text(c.dcqcn_params[i].name), c.dcqcn_params[i].value);
    if (params.size() - line_start + item.size() > 100) {
      params += "\n         ";
      line_start = params.size() - 9;
    }
    params += item;
  }
  out += params + "\n";
  if (running) {
    int by_state[7] = {};
    for (const auto& q : s.qps) by_state[q.state < 7 ? q.state : 6]++;
    std::string states;
    for (int i = 0; i < 7; ++i)
      if (by_state[i]) states += fmt::format(" {} {}", stats::kQpStateNames[i], by_state[i]);
    out += fmt::format("  qps: {}{}\n", s.qps.size(), states);
  }
}

/// Runs fn once, or every interval until interrupted when watching.
template <typename Fn>
int repeat(const ShowOptions& o, Fn fn) {
  if (!o.watch) return fn();
  for (;;) {
    std::fputs("\033[H\033[2J", stdout);  // home + clear screen
    fn();
    std::fflush(stdout);
    sleep(static_cast<unsigned>(o.interval_s > 0 ? o.interval_s : 1));
  }
}

/// `show roce --json`'s document: running devices, then configured ones that do not run.
Json roce_document(const Found& f, const std::vector<Snapshot>& configured) {
  Json j;
  Json& devices = j["devices"] = Json::array();
  for (const Snapshot& s : f.snaps) devices.push_back(roce_json(s, true));
  for (const Snapshot& s : configured) devices.push_back(roce_json(s, false));
  Json& hostd = j["hostd"] = Json::array();
  for (const stats::HostdStatus& h : f.hostd) hostd.push_back(Json::parse(stats::to_json(h)));
  j["stale"] = f.stale;
  j["errors"] = f.errors;
  return j;
}

}  // namespace

std::string roce_state_json(const ShowOptions& o) { return dump(roce_document(collect(o), {})); }

int show_roce(const ShowOptions& o) {
  return repeat(o, [&] {
    Found f = collect(o);
    std::vector<Snapshot> configured;
    if (f.snaps.empty() && f.errors.empty()) {
      // Nobody runs: show what the configuration would give.
      std::string err;
      std::optional<config::Config> cfg = config::load(&err);
      if (!cfg) {
        std::fprintf(stderr, "uroce: %s\n", err.c_str());
        return 1;
      }
      for (const config::Device& d : cfg->devices)
        if (o.device.empty() || d.name == o.device)
          configured.push_back(from_config(d, cfg->source));
      if (configured.empty() && !o.device.empty()) {
        std::fprintf(stderr, "uroce: device %s: not running and not in %s\n", o.device.c_str(),
                     cfg->source.c_str());
        return 1;
      }
    }
    if (o.json) {
      std::printf("%s\n", dump(roce_document(f, configured)).c_str());
    } else {
      std::string out;
      for (const Snapshot& s : f.snaps) roce_table(out, s, true);
      for (const Snapshot& s : configured) roce_table(out, s, false);
      for (const stats::HostdStatus& h : f.hostd) hostd_table(out, h);
      std::fputs(out.c_str(), stdout);
    }
    return finish(f);
  });
}

int show_counters(const ShowOptions& o) {
  return repeat(o, [&] {
    Found f = collect(o);
    Json j;
    Json& devices = j["devices"] = Json::array();
    std::string out;
    bool qp_found = false;
    for (const Snapshot& s : f.snaps) {
      Json dev;
      dev["device"] = s.device;
      dev["pid"] = static_cast<int64_t>(s.pid);
      out += fmt::format("{} pid {}\n", s.device, s.pid);
      if (o.qp >= 0) {
        for (const stats::QpRecord& q : s.qps) {
          if (q.qpn != static_cast<uint64_t>(o.qp)) continue;
          qp_found = true;
          dev["qp"] = q.qpn;
          Json& counters = dev["counters"] = Json::object();
          out += fmt::format("  qp {:#x}\n", q.qpn);
          for (size_t i = 0; i < stats::kQpCounterCount; ++i) {
            counters[stats::kQpStats[i].name] = q.counters[i];
            out += fmt::format("  {:<40} {}\n", stats::kQpStats[i].name, q.counters[i]);
          }
        }
      } else {
        Json& counters = dev["counters"] = Json::object();
        for (size_t i = 0; i < s.counters.size(); ++i) {
          counters[s.counter_names[i]] = s.counters[i];
          out += fmt::format("  {:<40} {}\n", s.counter_names[i], s.counters[i]);
        }
        for (const stats::StatDesc& d : stats::kPrioStats)
          for (int p = 0; p < stats::kNumPriorities; ++p) {
            uint64_t v = stats::prio_value(s.port, d, p);
            std::string name = stats::prio_stat_name(d.name, p);
            counters[name] = v;
            if (v || o.all) out += fmt::format("  {:<40} {}\n", name, v);
          }
        for (const stats::StatDesc& d : stats::kPortStats) {
          uint64_t v = stats::prio_value(s.port, d, 0);
          counters[d.name] = v;
          out += fmt::format("  {:<40} {}\n", d.name, v);
        }
      }
      devices.push_back(std::move(dev));
    }
    std::fputs(o.json ? (dump(j) + "\n").c_str() : out.c_str(), stdout);
    int rc = finish(f);
    if (o.qp >= 0 && !qp_found) {
      std::fprintf(stderr, "uroce: no QP %lld in any running program%s\n",
                   static_cast<long long>(o.qp),
                   o.device.empty() ? "" : (" on device " + o.device).c_str());
      return 1;
    }
    return rc;
  });
}

int show_qp(const ShowOptions& o) {
  return repeat(o, [&] {
    Found f = collect(o);
    std::string out = fmt::format(
        "{:<10} {:>7} {:>8} {:<4} {:<5} {:<24} {:>8} {:>8} {:>8} {:>10} {:>10} {:>6} {:>8} {:<4} "
        "{:<12} {:>8}\n",
        "device", "pid", "qpn", "type", "state", "peer gid", "peer qp", "sq psn", "rq psn",
        "rate Mb/s", "target", "alpha", "retrans", "rec", "cc", "rtt us");
    Json j;
    Json& qps = j["qps"] = Json::array();
    for (const Snapshot& s : f.snaps)
      for (const stats::QpRecord& q : s.qps) {
        Gid g;
        std::copy(std::begin(q.peer_gid), std::end(q.peer_gid), g.raw.begin());
        std::string gid = g.is_zero() ? "-" : g.to_string();
        std::string_view type =
            q.type < std::size(stats::kQpTypeNames) ? stats::kQpTypeNames[q.type] : "?";
        std::string_view state = q.state < 7 ? stats::kQpStateNames[q.state] : "?";
        double rate = stats::load_double(q.rate_mbps), target = stats::load_double(q.target_mbps),
               alpha = stats::load_double(q.alpha);
        uint64_t retrans = q.counters[static_cast<size_t>(stats::QpCounter::retransmits)];
        const bool selective = q.flags & stats::kQpFlagSelective;
        std::string cc(to_string(static_cast<CcAlgorithm>(q.cc)));
        if (q.flags & stats::kQpFlagDelayInForce) cc += "*";  // the delay rate limits it
        const double rtt = stats::load_double(q.rtt_us);
        out += fmt::format(
            "{:<10} {:>7} {:>#8x} {:<4} {:<5} {:<24} {:>#8x} {:>8} {:>8} {:>10.1f} {:>10.1f} "
            "{:>6.3f} {:>8} {:<4} {:<12} {:>8.1f}\n",
            s.device, s.pid, q.qpn, type, state, gid, q.peer_qpn, q.sq_psn, q.rq_psn, rate, target,
            alpha, retrans, selective ? "sr" : "gbn", cc, rtt);
        Json e;
        e["device"] = s.device;
        e["pid"] = static_cast<int64_t>(s.pid);
        e["qpn"] = q.qpn;
        e["type"] = type;
        e["state"] = state;
        e["peer_gid"] = gid;
        e["peer_qpn"] = q.peer_qpn;
        e["sq_psn"] = q.sq_psn;
        e["rq_psn"] = q.rq_psn;
        e["rate_mbps"] = rate;
        e["target_mbps"] = target;
        e["alpha"] = alpha;
        e["loss_recovery"] = selective ? "selective" : "go-back-n";
        e["congestion_control"] = to_string(static_cast<CcAlgorithm>(q.cc));
        e["delay_in_force"] = (q.flags & stats::kQpFlagDelayInForce) != 0;
        e["peer_timestamps"] = (q.flags & stats::kQpFlagTimestamps) != 0;
        e["delay_rate_mbps"] = stats::load_double(q.delay_mbps);
        e["rtt_us"] = rtt;
        e["target_delay_us"] = stats::load_double(q.target_us);
        Json& counters = e["counters"] = Json::object();
        for (size_t i = 0; i < stats::kQpCounterCount; ++i)
          counters[stats::kQpStats[i].name] = q.counters[i];
        qps.push_back(std::move(e));
      }
    std::fputs(o.json ? (dump(j) + "\n").c_str() : out.c_str(), stdout);
    return finish(f);
  });
}

int clear_counters(const ShowOptions& o) {
  ShowOptions raw = o;
  raw.raw = true;  // the baseline is the raw value
  Found f = collect(raw);
  for (const Snapshot& s : f.snaps) {
    std::string err;
    if (!stats::clear_counters(s, &err)) {
      f.errors.push_back(err);
      continue;
    }
    std::printf("cleared %s (pid %d)\n", s.device.c_str(), static_cast<int>(s.pid));
  }
  if (f.snaps.empty() && f.errors.empty())
    std::printf("no running uroce device%s in %s\n",
                o.device.empty() ? "" : (" " + o.device).c_str(), f.dir.c_str());
  return finish(f);
}

}  // namespace uroce::tool
