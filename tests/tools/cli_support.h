/**
 * @file cli_support.h
 * @brief Helpers for tests that run the `uroce` program: a temporary folder, running a
 * command with its output captured, and a synthetic statistics segment with known values.
 */
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "stats/segment.h"

namespace uroce::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/uroce-tools-test.XXXXXX";
    path = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

struct RunResult {
  int status = -1;  ///< exit status, or -1 when it did not exit normally
  std::string out, err;
};

/// Runs `env_prefix UROCE_BIN args` through the shell; stdout and stderr are captured.
inline RunResult run_uroce(const std::string& dir, const std::string& args,
                           const std::string& env_prefix = "") {
  std::string out = dir + "/.out", err = dir + "/.err";
  std::string cmd = "cd " + dir + " && " + env_prefix + " timeout 20 " UROCE_BIN " " + args + " >" +
                    out + " 2>" + err;
  int st = std::system(cmd.c_str());
  RunResult r;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

/// The effective config of a lossless device: PFC + ECN on priority 3, DCQCN nvidia.
inline stats::ConfigSummary lossless_summary() {
  stats::ConfigSummary c{};
  stats::set_text(c.profile, "lossless");
  stats::set_text(c.trust, "dscp");
  stats::set_text(c.dcqcn_mode, "nvidia");
  stats::set_text(c.port, "net_memif0,role=server");
  stats::set_text(c.source, "test.toml");
  c.mtu = 4096;
  c.num_tx_queues = 8;
  c.pfc_xoff_bytes = 65536;
  c.pfc_xon_bytes = 32768;
  c.lossless = 1;
  c.ecn = 1;
  c.dcqcn_enabled = 1;
  c.roce_dscp = 26;
  c.cnp_dscp = 48;
  c.pfc_enabled_mask = 1u << 3;
  c.ecn_enabled_mask = 1u << 3;
  for (int d = 0; d < 64; ++d) c.dscp_to_prio[d] = static_cast<uint8_t>(d >> 3);
  for (int p = 0; p < 8; ++p) c.pcp_to_prio[p] = c.prio_to_txq[p] = static_cast<uint8_t>(p);
  c.dcqcn_param_count = 2;
  stats::set_text(c.dcqcn_params[0].name, "rpg_time_reset");
  c.dcqcn_params[0].value = 300;
  stats::set_text(c.dcqcn_params[1].name, "rpg_ai_rate");
  c.dcqcn_params[1].value = 5;
  return c;
}

/// A segment of this process with known values:
///   np_cnp_sent 7, rp_cnp_handled 5, np_ecn_marked_roce_packets 11, roce_adp_retrans 3,
///   local_ack_timeout_err 1; rx_prio3_pause 4, rx_prio3_pause_duration 250, tx_prio3_pause 2;
///   TX queue 3 depth 1500 B, high water 9000 B; QP 0x12 RC RTS peer 198.18.0.2 qp 0x34,
///   sq_psn 100, rq_psn 200, rate 2500 / 10000 Mb/s, α 0.25, 4 retransmits.
inline std::unique_ptr<stats::StatsSegment> make_segment(const std::string& dir,
                                                         const std::string& device = "uroce0",
                                                         stats::QpRecord** qp_out = nullptr) {
  stats::CreateOptions o;
  o.run_dir = dir;
  std::string err;
  auto seg = stats::StatsSegment::create(device, lossless_summary(), &err, o);
  if (!seg) return seg;
  CounterBlock* c = seg->counters();
  c->inc(Counter::np_cnp_sent, 7);
  c->inc(Counter::rp_cnp_handled, 5);
  c->inc(Counter::np_ecn_marked_roce_packets, 11);
  c->inc(Counter::roce_adp_retrans, 3);
  c->inc(Counter::local_ack_timeout_err, 1);
  stats::PortStats* p = seg->port();
  stats::add(p->rx_prio_pause[3], 4);
  stats::add(p->rx_prio_pause_duration[3], 250);
  stats::add(p->tx_prio_pause[3], 2);
  stats::set_with_high_water(p->tx_prio_queue_depth[3], p->tx_prio_queue_high_water[3], 9000);
  stats::store(p->tx_prio_queue_depth[3], 1500);
  stats::QpRecord* q = seg->add_qp(0x12, 0);
  uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
  q->set_state(3);
  q->set_peer(0x34, gid);
  q->set_psns(100, 200);
  q->set_rate(2500, 10000, 0.25);
  q->set_cc(3, stats::kQpFlagDelayInForce | stats::kQpFlagSelective | stats::kQpFlagTimestamps,
            2500, 17.5, 15);
  q->inc(stats::QpCounter::retransmits, 4);
  if (qp_out) *qp_out = q;
  return seg;
}

/// A pid no process has: a child that exited and was reaped.
inline pid_t dead_pid() {
  pid_t c = fork();
  if (c == 0) _exit(0);
  int st;
  waitpid(c, &st, 0);
  return c;
}

}  // namespace uroce::test
