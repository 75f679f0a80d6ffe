/**
 * @file stats_segment_test.cc
 * @brief lib/stats: segment creation, lock-free writes seen by a reader, QP slots, removal at
 * destruction and at exit, stale detection (dead owner, reused pid), stale segments removed
 * (reap_stale(), and by a process's first segment) while live ones stay, an owner that exits
 * while being read, unreadable files, and counter baselines.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "stats/baseline.h"
#include "stats/proc.h"
#include "stats/reader.h"
#include "stats/segment.h"

namespace uroce::stats {
namespace {

namespace fs = std::filesystem;

class StatsSegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/dev/shm/uroce-stats-test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    opts_.run_dir = dir_;
    set_text(cfg_.profile, "lossless");
    set_text(cfg_.dcqcn_mode, "nvidia");
    cfg_.pfc_enabled_mask = 1u << 3;
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// A pid that certainly belongs to no process: a child that has exited and been reaped.
  static pid_t dead_pid() {
    pid_t c = fork();
    if (c == 0) _exit(0);
    int st;
    waitpid(c, &st, 0);
    return c;
  }

  std::string dir_;
  CreateOptions opts_;
  ConfigSummary cfg_{};
};

TEST_F(StatsSegmentTest, CreateWriteRead) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  // Expect: <dir>/uroce.uroce0.<pid>
  EXPECT_EQ(seg->path(), dir_ + "/uroce.uroce0." + std::to_string(getpid()));
  EXPECT_TRUE(fs::exists(seg->path()));

  seg->counters()->inc(Counter::np_cnp_sent, 7);
  seg->counters()->inc(Counter::roce_adp_retrans);
  add(seg->port()->rx_prio_pause[3], 5);
  set_with_high_water(seg->port()->tx_prio_queue_depth[3], seg->port()->tx_prio_queue_high_water[3],
                      9000);
  set_with_high_water(seg->port()->tx_prio_queue_depth[3], seg->port()->tx_prio_queue_high_water[3],
                      100);

  Snapshot s;
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk) << err;
  EXPECT_EQ(s.device, "uroce0");
  EXPECT_EQ(s.pid, getpid());
  EXPECT_EQ(s.start_time, process_start_time(getpid()));
  EXPECT_NE(s.start_time, 0u);
  ASSERT_EQ(s.counter_names.size(), kCounterCount);
  EXPECT_EQ(s.counter_names[0], kCounterNames[0]);
  EXPECT_EQ(s.counter("np_cnp_sent"), 7u);
  EXPECT_EQ(s.counter("roce_adp_retrans"), 1u);
  EXPECT_EQ(s.counter("no_such_counter"), 0u);
  EXPECT_EQ(s.port.rx_prio_pause[3], 5u);
  EXPECT_EQ(s.port.tx_prio_queue_depth[3], 100u);
  EXPECT_EQ(s.port.tx_prio_queue_high_water[3], 9000u);
  EXPECT_EQ(get_text(s.config.profile), "lossless");
  EXPECT_EQ(s.config.pfc_enabled_mask, 1u << 3);

  auto list = list_segments(dir_);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].state, SegmentState::kLive);
  EXPECT_EQ(list[0].device, "uroce0");
}

TEST_F(StatsSegmentTest, QpSlots) {
  opts_.qp_capacity = 2;
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  QpRecord* a = seg->add_qp(0x12, 0);
  QpRecord* b = seg->add_qp(0x11, 2);
  ASSERT_TRUE(a && b);
  // Expect: a third QP finds no slot.
  EXPECT_EQ(seg->add_qp(0x13, 0), nullptr);
  uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
  a->set_state(3);
  a->set_peer(0x99, gid);
  a->set_psns(100, 200);
  a->set_rate(2500.5, 10000, 0.25);
  a->inc(QpCounter::retransmits, 4);

  Snapshot s;
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk) << err;
  ASSERT_EQ(s.qps.size(), 2u);
  EXPECT_EQ(s.qps[0].qpn, 0x11u);  // sorted by qpn
  EXPECT_EQ(s.qps[0].type, 2u);
  const QpRecord& r = s.qps[1];
  EXPECT_EQ(r.qpn, 0x12u);
  EXPECT_EQ(r.state, 3u);
  EXPECT_EQ(r.peer_qpn, 0x99u);
  EXPECT_EQ(r.peer_gid[15], 2);
  EXPECT_EQ(r.sq_psn, 100u);
  EXPECT_EQ(r.rq_psn, 200u);
  EXPECT_DOUBLE_EQ(load_double(r.rate_mbps), 2500.5);
  EXPECT_DOUBLE_EQ(load_double(r.alpha), 0.25);
  EXPECT_EQ(r.counters[static_cast<size_t>(QpCounter::retransmits)], 4u);
  EXPECT_EQ(r.seq % 2, 0u);

  // Removing frees the slot; the next QP reuses it with zeroed counters.
  seg->remove_qp(a);
  QpRecord* c = seg->add_qp(0x14, 0);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk) << err;
  ASSERT_EQ(s.qps.size(), 2u);
  EXPECT_EQ(s.qps[1].qpn, 0x14u);
  EXPECT_EQ(s.qps[1].counters[static_cast<size_t>(QpCounter::retransmits)], 0u);
}

TEST_F(StatsSegmentTest, RemovedByDestructorWithBaseline) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  std::string path = seg->path();
  Snapshot s;
  ASSERT_EQ(read_segment(path, &s, &err), ReadStatus::kOk);
  ASSERT_TRUE(clear_counters(s, &err)) << err;
  EXPECT_TRUE(fs::exists(path + ".baseline"));
  seg.reset();
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".baseline"));
  EXPECT_TRUE(list_segments(dir_).empty());
}

TEST_F(StatsSegmentTest, RemovedAtExitWithoutDestructor) {
  std::string path = dir_ + "/uroce.exitdev.";
  pid_t c = fork();
  if (c == 0) {
    std::string err;
    auto seg = StatsSegment::create("exitdev", cfg_, &err, opts_);
    if (!seg) _exit(2);
    (void)seg.release();  // never destroyed, like a runtime kept for atexit-time closes
    std::exit(0);         // atexit handlers run
  }
  int st = 0;
  ASSERT_EQ(waitpid(c, &st, 0), c);
  ASSERT_TRUE(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  EXPECT_FALSE(fs::exists(path + std::to_string(c)));
  EXPECT_TRUE(list_segments(dir_).empty());
}

TEST_F(StatsSegmentTest, StaleWhenOwnerDead) {
  opts_.pid = dead_pid();
  opts_.start_time = 12345;
  std::string err;
  auto seg = StatsSegment::create("uroce1", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  seg->counters()->inc(Counter::np_cnp_sent, 3);
  auto list = list_segments(dir_);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].state, SegmentState::kStale);
  EXPECT_NE(list[0].problem.find("stale"), std::string::npos);
  EXPECT_NE(list[0].problem.find("rm " + seg->path()), std::string::npos);
  Snapshot s;
  EXPECT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kStale);
  EXPECT_TRUE(s.stale);
  EXPECT_EQ(s.counter("np_cnp_sent"), 3u);  // last values still readable
}

TEST_F(StatsSegmentTest, StaleWhenPidReused) {
  // Our own pid, but another start time: the pid now belongs to a different program.
  opts_.start_time = process_start_time(getpid()) + 1;
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  auto list = list_segments(dir_);
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].state, SegmentState::kStale);
}

TEST_F(StatsSegmentTest, ReapRemovesOnlySegmentsWhoseOwnerIsGone) {
  std::string err;
  auto live = StatsSegment::create("live0", cfg_, &err, opts_);  // this process
  ASSERT_TRUE(live) << err;
  CreateOptions init = opts_;  // another live process: pid 1, its start time read from /proc
  init.pid = 1;
  auto other = StatsSegment::create("init0", cfg_, &err, init);
  ASSERT_TRUE(other) << err;
  CreateOptions dead = opts_;  // a fake owner that is gone
  dead.pid = dead_pid();
  dead.start_time = 12345;
  auto gone = StatsSegment::create("gone0", cfg_, &err, dead);
  ASSERT_TRUE(gone) << err;
  std::ofstream(gone->path() + ".baseline") << "x";
  CreateOptions reused = opts_;  // our pid, another start time: the pid was reused
  reused.start_time = process_start_time(getpid()) + 1;
  auto reused_seg = StatsSegment::create("reused0", cfg_, &err, reused);
  ASSERT_TRUE(reused_seg) << err;
  std::ofstream(dir_ + "/uroce.junk.1") << std::string(4096, 'x');  // no valid header: kept

  EXPECT_EQ(reap_stale(dir_), 2);
  EXPECT_TRUE(fs::exists(live->path()));
  EXPECT_TRUE(fs::exists(other->path()));
  EXPECT_TRUE(fs::exists(dir_ + "/uroce.junk.1"));
  EXPECT_FALSE(fs::exists(gone->path()));
  EXPECT_FALSE(fs::exists(gone->path() + ".baseline"));
  EXPECT_FALSE(fs::exists(reused_seg->path()));
  EXPECT_EQ(reap_stale(dir_), 0);
  EXPECT_EQ(reap_summary(2, "/dev/shm"),
            "removed 2 stale segments in /dev/shm (their processes are gone)");
  EXPECT_EQ(reap_summary(1, "/x"), "removed 1 stale segment in /x (their processes are gone)");
  EXPECT_EQ(reap_summary(0, "/x"), "");
}

TEST_F(StatsSegmentTest, FirstSegmentOfAProcessReaps) {
  // A dead owner's segment, made in another folder and moved here, so that this process has
  // not yet created a segment in dir_ (and neither has the child it forks).
  char tmpl[] = "/dev/shm/uroce-stats-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string aside = tmpl;
  CreateOptions dead = opts_;
  dead.run_dir = aside;
  dead.pid = dead_pid();
  dead.start_time = 12345;
  std::string err;
  auto gone = StatsSegment::create("gone0", cfg_, &err, dead);
  ASSERT_TRUE(gone) << err;
  const std::string moved = dir_ + "/" + fs::path(gone->path()).filename().string();
  fs::rename(gone->path(), moved);
  const std::string log = aside + "/stderr";
  pid_t c = fork();
  if (c == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(2);
    auto seg = StatsSegment::create("child0", cfg_, &err, opts_);
    _exit(seg ? 0 : 3);
  }
  int st = 0;
  ASSERT_EQ(waitpid(c, &st, 0), c);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_FALSE(fs::exists(moved));
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "uroce: removed 1 stale segment in " + dir_ + " (their processes are gone)\n");
  fs::remove_all(aside);
}

/// What a new process prints on stderr when it creates its first segment in `dir`.
std::string first_segment_stderr(const std::string& dir, const ConfigSummary& cfg) {
  const std::string log = dir + "/stderr";
  pid_t c = fork();
  if (c == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(2);
    CreateOptions o;
    o.run_dir = dir;
    std::string err;
    auto seg = StatsSegment::create("warn0", cfg, &err, o);
    _exit(seg ? 0 : 3);
  }
  int st = 0;
  if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return "child failed";
  std::ifstream in(log);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool on_tmpfs(const std::string& dir) {
  struct statfs fs {};
  return statfs(dir.c_str(), &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

TEST_F(StatsSegmentTest, RunDirNotOnTmpfsIsNamedOnce) {
  // dir_ is under /dev/shm: nothing to say.
  ASSERT_TRUE(on_tmpfs(dir_));
  EXPECT_EQ(first_segment_stderr(dir_, cfg_), "");
  // A folder where the test runs (the build tree): the warning exactly when it is on a disk.
  char tmpl[] = "uroce-stats-test.XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string here = fs::absolute(tmpl).string();
  const std::string text = first_segment_stderr(here, cfg_);
  if (on_tmpfs(here)) {
    EXPECT_EQ(text, "");
  } else {
    EXPECT_EQ(text, "uroce: the run directory " + here +
                        " is not a tmpfs: updating the statistics there can wait for the disk "
                        "and stall the engine (use a tmpfs: UROCE_RUN_DIR, default /dev/shm)\n");
  }
  fs::remove_all(here);
}

TEST_F(StatsSegmentTest, OwnerExitsWhileRead) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  std::string path = seg->path();
  ReadHooks hooks;
  hooks.after_copy = [&] { seg.reset(); };  // the owner closes mid-read
  Snapshot s;
  EXPECT_EQ(read_segment(path, &s, &err, &hooks), ReadStatus::kOwnerExited);
  EXPECT_NE(err.find("exited while its counters were being read"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);
}

TEST_F(StatsSegmentTest, UnreadableFiles) {
  {
    std::ofstream(dir_ + "/uroce.junk.1") << std::string(4096, 'x');
    std::ofstream(dir_ + "/uroce.tiny.2") << "abc";
    std::ofstream(dir_ + "/uroce.other.3.baseline") << "ignored";
    std::ofstream(dir_ + "/unrelated") << "ignored";
  }
  auto list = list_segments(dir_);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].device, "junk");
  EXPECT_EQ(list[0].state, SegmentState::kUnreadable);
  EXPECT_NE(list[0].problem.find("bad magic"), std::string::npos) << list[0].problem;
  EXPECT_EQ(list[1].state, SegmentState::kUnreadable);
  EXPECT_NE(list[1].problem.find("too small"), std::string::npos) << list[1].problem;
  Snapshot s;
  std::string err;
  EXPECT_EQ(read_segment(dir_ + "/uroce.none.4", &s, &err), ReadStatus::kError);
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  if (geteuid() != 0) {  // root reads anything; the permission case needs a normal user
    std::string p = dir_ + "/uroce.junk.1";
    chmod(p.c_str(), 0);
    EXPECT_EQ(read_segment(p, &s, &err), ReadStatus::kError);
    EXPECT_NE(err.find("Permission denied"), std::string::npos) << err;
  }
}

TEST_F(StatsSegmentTest, VersionMismatchRefused) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  {
    std::fstream f(seg->path(), std::ios::in | std::ios::out | std::ios::binary);
    uint32_t v = kLayoutVersion + 1;
    f.seekp(offsetof(SegmentHeader, layout_version));
    f.write(reinterpret_cast<const char*>(&v), sizeof v);
  }
  Snapshot s;
  EXPECT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kError);
  EXPECT_NE(err.find("layout version " + std::to_string(kLayoutVersion + 1)), std::string::npos)
      << err;
}

TEST_F(StatsSegmentTest, BaselineSubtracts) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  QpRecord* q = seg->add_qp(5, 0);
  seg->counters()->inc(Counter::np_cnp_sent, 10);
  add(seg->port()->tx_prio_pause[3], 4);
  add(seg->port()->tx_pause_storm_error_events, 1);
  q->inc(QpCounter::tx_packets, 8);
  set_with_high_water(seg->port()->tx_prio_queue_depth[3], seg->port()->tx_prio_queue_high_water[3],
                      5000);
  store(seg->port()->tx_prio_queue_depth[3], 10);
  Snapshot s;
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk);
  ASSERT_TRUE(clear_counters(s, &err)) << err;
  // Expect: the high-water mark restarts at the current depth.
  EXPECT_EQ(load(seg->port()->tx_prio_queue_high_water[3]), 10u);

  seg->counters()->inc(Counter::np_cnp_sent, 2);
  add(seg->port()->tx_prio_pause[3], 1);
  q->inc(QpCounter::tx_packets, 3);
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk);
  EXPECT_EQ(s.counter("np_cnp_sent"), 12u);  // raw
  ASSERT_TRUE(apply_baseline(&s));
  EXPECT_EQ(s.counter("np_cnp_sent"), 2u);
  EXPECT_EQ(s.port.tx_prio_pause[3], 1u);
  EXPECT_EQ(s.port.tx_pause_storm_error_events, 0u);
  EXPECT_EQ(s.qps[0].counters[static_cast<size_t>(QpCounter::tx_packets)], 3u);
  EXPECT_EQ(s.port.tx_prio_queue_depth[3], 10u);  // gauges are not baselined
}

TEST_F(StatsSegmentTest, ConcurrentReaderSeesConsistentRecords) {
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  ASSERT_TRUE(seg) << err;
  QpRecord* q = seg->add_qp(7, 0);
  ASSERT_NE(q, nullptr);
  constexpr uint32_t kUpdates = 200000;
  std::atomic<bool> done{false};
  // Writer: peer QPN i with a GID whose last four bytes spell i; the counter counts updates.
  // (Far more identity changes than a real owner makes: one per 64 counter increments.)
  std::thread writer([&] {
    for (uint32_t i = 1; i <= kUpdates; ++i) {
      uint8_t gid[16] = {};
      for (int b = 0; b < 4; ++b) gid[12 + b] = static_cast<uint8_t>(i >> (8 * (3 - b)));
      q->set_peer(i, gid);
      // Data-path work between identity changes, as a real owner has.
      for (int k = 0; k < 64; ++k) q->inc(QpCounter::tx_packets);
      seg->counters()->inc(Counter::np_cnp_sent);
    }
    done.store(true);
  });
  uint64_t last = 0;
  int reads = 0, torn = 0, missing = 0;
  while (!done.load() || reads < 10) {
    Snapshot s;
    if (read_segment(seg->path(), &s, &err) != ReadStatus::kOk) {
      ADD_FAILURE() << err;
      break;
    }
    ++reads;
    // Expect: counters never go backwards; a QP record is never a mix of two updates.
    uint64_t v = s.counter("np_cnp_sent");
    EXPECT_GE(v, last);
    last = v;
    if (s.qps.empty()) {  // the reader gave up on a record changing too fast: allowed
      ++missing;
      continue;
    }
    const QpRecord& r = s.qps[0];
    uint32_t from_gid = (uint32_t{r.peer_gid[12]} << 24) | (uint32_t{r.peer_gid[13]} << 16) |
                        (uint32_t{r.peer_gid[14]} << 8) | r.peer_gid[15];
    torn += from_gid != r.peer_qpn;
  }
  writer.join();
  RecordProperty("reads", reads);
  RecordProperty("missing", missing);
  EXPECT_EQ(torn, 0);
  EXPECT_LT(missing, reads);
  Snapshot s;
  ASSERT_EQ(read_segment(seg->path(), &s, &err), ReadStatus::kOk);
  EXPECT_EQ(s.counter("np_cnp_sent"), kUpdates);
  EXPECT_EQ(s.qps[0].peer_qpn, kUpdates);
}

TEST_F(StatsSegmentTest, DisabledByEnvironment) {
  setenv("UROCE_STATS", "off", 1);
  std::string err;
  auto seg = StatsSegment::create("uroce0", cfg_, &err, opts_);
  unsetenv("UROCE_STATS");
  EXPECT_EQ(seg, nullptr);
  EXPECT_NE(err.find("disabled by UROCE_STATS=off"), std::string::npos) << err;
  EXPECT_TRUE(list_segments(dir_).empty());
}

TEST_F(StatsSegmentTest, CreateFailsInMissingFolder) {
  opts_.run_dir = dir_ + "/missing";
  std::string err;
  EXPECT_EQ(StatsSegment::create("uroce0", cfg_, &err, opts_), nullptr);
  EXPECT_NE(err.find("cannot create the stats segment: No such file or directory"),
            std::string::npos)
      << err;
}

TEST(StatsNames, ParseAndPrio) {
  std::string dev;
  pid_t pid = 0;
  EXPECT_TRUE(parse_segment_name("uroce.mlx-like_0.4242", &dev, &pid));
  EXPECT_EQ(dev, "mlx-like_0");
  EXPECT_EQ(pid, 4242);
  EXPECT_FALSE(parse_segment_name("uroce.dev.12.baseline", &dev, &pid));
  EXPECT_FALSE(parse_segment_name("uroce..12", &dev, &pid));
  EXPECT_FALSE(parse_segment_name("other.dev.12", &dev, &pid));
  EXPECT_EQ(prio_stat_name("rx_prio_pause_duration", 3), "rx_prio3_pause_duration");
  EXPECT_EQ(prio_stat_name("tx_prio_queue_high_water", 0), "tx_prio0_queue_high_water");
}

}  // namespace
}  // namespace uroce::stats
