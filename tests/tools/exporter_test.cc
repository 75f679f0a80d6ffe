/**
 * @file exporter_test.cc
 * @brief `uroce exporter` against synthetic segments: started on 127.0.0.1 with a free port,
 * scraped twice with curl; values are the raw cumulative ones and grow after the test bumps
 * them; the text parses as Prometheus exposition format; stale segments are skipped. And the
 * Grafana dashboard (tools/grafana/uroce.json) is valid JSON whose metric names are all served.
 */
#include "exporter.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <regex>
#include <set>

#include "cli_support.h"
#include "mini_json.h"

namespace uroce::test {
namespace {

/// A running `uroce exporter`, stopped with SIGTERM on destruction.
class ExporterProcess {
 public:
  explicit ExporterProcess(const std::string& run_dir) {
    int fds[2];
    if (pipe(fds) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      close(fds[1]);
      execl("/usr/bin/timeout", "timeout", "60", UROCE_BIN, "exporter", "--listen", "127.0.0.1:0",
            "--run-dir", run_dir.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    FILE* f = fdopen(fds[0], "r");
    char line[256] = {};
    // The exporter prints this line once it accepts connections: no sleeping needed.
    if (f && std::fgets(line, sizeof line, f)) {
      std::cmatch m;
      if (std::regex_search(line, m, std::regex(R"(listening on 127\.0\.0\.1:(\d+))")))
        port_ = std::stoi(m[1].str());
    }
    if (f) std::fclose(f);
  }
  ~ExporterProcess() { stop(); }
  int stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

std::string scrape(int port) {
  std::string cmd = "curl -sS --max-time 10 http://127.0.0.1:" + std::to_string(port) + "/metrics";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  if (p) pclose(p);
  return out;
}

/// Parses Prometheus text exposition format 0.0.4. Every sample line must match the grammar,
/// every sample's family must have a TYPE line before it, counters must end in _total.
/// Returns false (with *why) on the first violation; fills series "name{labels}" -> value.
bool parse_prometheus(const std::string& text, std::map<std::string, double>* series,
                      std::set<std::string>* names, std::string* why) {
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? ([-+]?([0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?|[Nn]a[Nn]|[Ii]nf))( -?[0-9]+)?$)");
  static const std::regex kType(
      R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|summary|histogram|untyped)$)");
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  std::map<std::string, std::string> types;
  size_t pos = 0;
  int lineno = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      *why = "last line has no newline";
      return false;
    }
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++lineno;
    std::smatch m;
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (std::regex_match(line, m, kType)) {
        if (types.count(m[1])) return *why = "TYPE twice for " + m[1].str(), false;
        types[m[1]] = m[2];
      } else if (!std::regex_match(line, kHelp)) {
        return *why = "line " + std::to_string(lineno) + ": bad comment: " + line, false;
      }
      continue;
    }
    if (!std::regex_match(line, m, kSample))
      return *why = "line " + std::to_string(lineno) + ": not a sample: " + line, false;
    std::string name = m[1];
    std::string family = name;
    for (const char* suffix : {"_count", "_sum", "_bucket"})
      if (!types.count(family) && family.size() > std::strlen(suffix) &&
          family.compare(family.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
        family = family.substr(0, family.size() - std::strlen(suffix));
    if (!types.count(family)) return *why = "no TYPE before " + name, false;
    if (types[family] == "counter" && name.size() > 6 && name.substr(name.size() - 6) != "_total")
      return *why = "counter without _total: " + name, false;
    names->insert(name);
    (*series)[name + m[2].str()] = std::strtod(m[7].str().c_str(), nullptr);
  }
  return true;
}

std::string labels(const std::string& device, pid_t pid, const std::string& extra = "") {
  return "{device=\"" + device + "\",port=\"1\",pid=\"" + std::to_string(pid) + "\"" + extra + "}";
}

TEST(ExporterTest, ScrapesRawCumulativeValues) {
  TempDir dir;
  stats::QpRecord* qp = nullptr;
  auto seg = make_segment(dir.path, "uroce0", &qp);
  ASSERT_TRUE(seg);
  // A stale segment (dead owner) must be skipped.
  stats::CreateOptions o;
  o.run_dir = dir.path;
  o.pid = dead_pid();
  o.start_time = 1;
  std::string err;
  auto ghost = stats::StatsSegment::create("ghost", lossless_summary(), &err, o);
  ASSERT_TRUE(ghost) << err;

  ExporterProcess exp(dir.path);
  ASSERT_GT(exp.port(), 0);
  std::string t1 = scrape(exp.port());
  std::map<std::string, double> s1, s2;
  std::set<std::string> names;
  std::string why;
  ASSERT_TRUE(parse_prometheus(t1, &s1, &names, &why)) << why << "\n" << t1;

  pid_t me = getpid();
  std::string base = labels("uroce0", me);
  EXPECT_EQ(s1["rdma_np_cnp_sent_total" + base], 7);
  EXPECT_EQ(s1["rdma_rp_cnp_handled_total" + base], 5);
  EXPECT_EQ(s1["rdma_rx_prio_pause_total" + labels("uroce0", me, ",priority=\"3\"")], 4);
  EXPECT_EQ(s1["rdma_tx_prio_queue_depth_bytes" + labels("uroce0", me, ",priority=\"3\"")], 1500);
  EXPECT_EQ(s1["rdma_tx_prio_queue_high_water_bytes" + labels("uroce0", me, ",priority=\"3\"")],
            9000);
  std::string ql = labels("uroce0", me, ",qp=\"18\"");
  EXPECT_EQ(s1["rdma_qp_retransmits_total" + ql], 4);
  EXPECT_EQ(s1["rdma_rp_current_rate_mbps" + ql], 2500);
  EXPECT_EQ(s1["rdma_rp_alpha" + ql], 0.25);
  EXPECT_EQ(s1["rdma_qp_state" + ql], 3);
  EXPECT_EQ(s1["rdma_qp_selective_repeat" + ql], 1);
  EXPECT_EQ(s1["rdma_qp_peer_timestamps" + ql], 1);
  EXPECT_EQ(s1["rdma_exporter_segments{state=\"live\"}"], 1);
  EXPECT_EQ(s1["rdma_exporter_segments{state=\"stale\"}"], 1);
  EXPECT_EQ(t1.find("device=\"ghost\""), std::string::npos);
  EXPECT_TRUE(names.count("rdma_device_info"));
  // Compatibility names (yuuki/rdma_exporter).
  EXPECT_EQ(s1["rdma_cc_tx_cnp_pkts_total" + base], 7);
  EXPECT_EQ(s1["rdma_cc_rx_cnp_pkts_total" + base], 5);
  EXPECT_EQ(s1["rdma_cc_rx_ce_pkts_total" + base], 11);
  EXPECT_EQ(s1["rdma_roce_pfc_pause_duration_total" + labels("uroce0", me, ",direction=\"rx\"")],
            250);

  // Traffic between the scrapes.
  seg->counters()->inc(Counter::np_cnp_sent, 2);
  seg->counters()->inc(Counter::tx_vport_rdma_unicast_bytes, 4096);
  stats::add(seg->port()->rx_prio_pause[3], 3);
  qp->inc(stats::QpCounter::tx_packets, 10);
  std::string t2 = scrape(exp.port());
  ASSERT_TRUE(parse_prometheus(t2, &s2, &names, &why)) << why;
  // Expect: raw cumulative values (7 + 2), not a per-scrape Add (7 + 9).
  EXPECT_EQ(s2["rdma_np_cnp_sent_total" + base], 9);
  EXPECT_EQ(s2["rdma_tx_vport_rdma_unicast_bytes_total" + base], 4096);
  EXPECT_GT(s2["rdma_tx_vport_rdma_unicast_bytes_total" + base],
            s1["rdma_tx_vport_rdma_unicast_bytes_total" + base]);
  EXPECT_EQ(s2["rdma_port_xmit_data_total" + base], 1024);  // 4096 bytes in 4-byte words
  EXPECT_EQ(s2["rdma_rx_prio_pause_total" + labels("uroce0", me, ",priority=\"3\"")], 7);
  EXPECT_EQ(s2["rdma_qp_tx_packets_total" + ql], 10);
  EXPECT_EQ(exp.stop(), 0);
}

TEST(ExporterTest, ListenFailureIsOneLine) {
  TempDir dir;
  RunResult r = run_uroce(dir.path, "exporter --listen 198.18.255.254:1");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("cannot listen on 198.18.255.254:1"), std::string::npos) << r.err;
}

void collect_exprs(const Json& j, std::vector<std::string>* out) {
  if (j.type == Json::kObject) {
    for (const auto& [k, v] : j.obj) {
      if ((k == "expr" || k == "definition") && v.type == Json::kString) out->push_back(v.str);
      collect_exprs(v, out);
    }
  } else if (j.type == Json::kArray) {
    for (const Json& v : j.arr) collect_exprs(v, out);
  }
}

TEST(DashboardTest, MetricNamesAreExported) {
  Json dash;
  std::string text = read_file(UROCE_SOURCE_DIR "/tools/grafana/uroce.json");
  ASSERT_TRUE(parse_json(text, &dash)) << "tools/grafana/uroce.json is not valid JSON";
  EXPECT_FALSE(dash["title"].str.empty());
  ASSERT_GE(dash["panels"].arr.size(), 8u);

  TempDir dir;
  auto seg = make_segment(dir.path);
  ASSERT_TRUE(seg);
  std::set<std::string> served;
  for (const auto& fam : exporter::collect_families(dir.path)) served.insert(fam.name);

  std::vector<std::string> exprs;
  collect_exprs(dash, &exprs);
  ASSERT_GE(exprs.size(), 10u);
  std::regex metric(R"(\brdma_[a-zA-Z0-9_]+)");
  std::set<std::string> used;
  for (const std::string& e : exprs)
    for (auto it = std::sregex_iterator(e.begin(), e.end(), metric); it != std::sregex_iterator();
         ++it)
      used.insert(it->str());
  ASSERT_GE(used.size(), 10u);
  for (const std::string& n : used) EXPECT_TRUE(served.count(n)) << n << " is not exported";
}

}  // namespace
}  // namespace uroce::test
