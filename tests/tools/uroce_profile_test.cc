/**
 * @file uroce_profile_test.cc
 * @brief `uroce profile list | show | apply | diff` on temporary config files: the keys are
 * written with comments, everything else is kept, the write is atomic with a .bak, the result
 * validates with lib/config; unknown profiles, malformed files and inline tables are refused
 * with one line and nothing written. Also `uroce doctor` on broken environments, and its UCX
 * check, and `uroce rdma-ns` (the /dev/infiniband nodes and sysfs GID types UCX reads), and
 * `uroce run` (the library path, the config and rdma-ns's files, for one program).
 */
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <regex>

#include "cli_support.h"
#include "config/config.h"
#include "stats/segment.h"

namespace uroce::test {
namespace {

constexpr const char* kConfig =
    "# lab host A\n"
    "[[device]]\n"
    "name = \"uroce0\"\n"
    "port = \"net_memif0,role=server\"\n"
    "addresses = [\"198.18.0.1/15\"]\n"
    "mtu = 4096   # jumbo frames\n"
    "\n"
    "[device.pfc]\n"
    "watchdog_detect_ms = 100\n"
    "\n"
    "[device.dcqcn]\n"
    "rpg_hai_rate = 60\n"
    "\n"
    "[[device]]\n"
    "name = \"uroce1\"\n"
    "addresses = [\n"
    "  \"198.18.0.2/15\",\n"
    "]\n"
    "roce_dscp = 3\n"
    "dscp_to_prio = { \"3\" = 4 }\n";

/// key text as a regex matching it literally.
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("[]{}()*+?.\\^$|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path + "/uroce.toml";
    write_file(path_, kConfig);
    chmod(path_.c_str(), 0640);
  }
  RunResult run(const std::string& args) { return run_uroce(dir_.path, args); }
  config::Config parsed() {
    std::string err;
    auto c = config::parse(read_file(path_), path_, &err);
    EXPECT_TRUE(c) << err;
    return c ? *c : config::Config{};
  }
  int files_in_dir() {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path))
      n += e.path().filename().string()[0] != '.';
    return n;
  }
  TempDir dir_;
  std::string path_;
};

TEST_F(ProfileTest, ApplyWritesCommentedKeysKeepsTheRestWithBackup) {
  RunResult r = run("profile apply lossless --config " + path_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("uroce0: lossless: off -> on"), std::string::npos) << r.out;
  std::string text = read_file(path_);
  // Every managed key carries a comment.
  for (const char* key : {"profile = \"lossless\"", "ecn = true", "enabled = [3]",
                          "xoff_bytes = 65536", "xon_bytes = 32768", "mode = \"nvidia\""})
    EXPECT_TRUE(std::regex_search(text, std::regex("\n" + escape(key) + " +# "))) << key << "\n"
                                                                                  << text;
  // The user's lines are kept.
  for (const char* kept :
       {"# lab host A\n", "mtu = 4096   # jumbo frames\n", "watchdog_detect_ms = 100\n",
        "rpg_hai_rate = 60\n", "dscp_to_prio = { \"3\" = 4 }\n", "  \"198.18.0.2/15\",\n"})
    EXPECT_NE(text.find(kept), std::string::npos) << kept << "\n" << text;
  EXPECT_EQ(read_file(path_ + ".bak"), kConfig);
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(files_in_dir(), 2);  // the file and its backup, no temporaries

  config::Config c = parsed();
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].profile, "lossless");
  EXPECT_TRUE(c.devices[0].pfc.enabled[3]);
  EXPECT_EQ(c.devices[0].pfc.xoff_bytes, 65536u);
  EXPECT_EQ(c.devices[0].pfc.watchdog_detect_ms, 100u);
  EXPECT_EQ(c.devices[0].dcqcn.params.at("rpg_hai_rate"), 60);
  // lossless: ECN on, DCQCN in nvidia mode, CNPs (DSCP 48) on priority 6.
  EXPECT_TRUE(c.devices[0].ecn);
  EXPECT_TRUE(c.devices[0].dcqcn.enabled);
  EXPECT_EQ(c.devices[0].dcqcn.mode, "nvidia");
  EXPECT_EQ(c.devices[0].cnp_dscp, 48);
  EXPECT_EQ(c.devices[0].dscp_to_prio[c.devices[0].cnp_dscp], 6);
  // uroce1 sends RoCE with DSCP 3, mapped to priority 4: PFC goes there.
  EXPECT_EQ(c.devices[1].profile, "lossless");
  EXPECT_TRUE(c.devices[1].pfc.enabled[4]);
  EXPECT_FALSE(c.devices[1].pfc.enabled[3]);
}

TEST_F(ProfileTest, HpcThenLosslessRemovesTheTuning) {
  ASSERT_EQ(run("profile apply hpc --config " + path_).status, 0);
  config::Config c = parsed();
  EXPECT_EQ(c.devices[0].dcqcn.params.at("rpg_time_reset"), 100);
  EXPECT_EQ(c.devices[0].dcqcn.params.at("min_time_between_cnps"), 0);
  ASSERT_EQ(run("profile apply lossless --config " + path_).status, 0);
  c = parsed();
  EXPECT_EQ(c.devices[0].dcqcn.params.count("rpg_time_reset"), 0u);
  EXPECT_EQ(c.devices[0].dcqcn.params.count("min_time_between_cnps"), 0u);
  EXPECT_EQ(c.devices[0].dcqcn.params.at("rpg_hai_rate"), 60);
  // Applying it again changes nothing and writes nothing.
  std::string before = read_file(path_);
  RunResult r = run("profile apply lossless --config " + path_);
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("already uses profile lossless"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(path_), before);
}

TEST_F(ProfileTest, OneDeviceOnly) {
  ASSERT_EQ(run("profile apply storage --config " + path_ + " --device uroce1").status, 0);
  config::Config c = parsed();
  EXPECT_EQ(c.devices[0].profile, "");
  EXPECT_EQ(c.devices[1].profile, "storage");
  EXPECT_EQ(c.devices[1].pfc.xoff_bytes, 256u * 1024);
  RunResult r = run("profile apply storage --config " + path_ + " --device nosuch");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("no device named \"nosuch\""), std::string::npos) << r.err;
}

TEST_F(ProfileTest, DiffChangesNothing) {
  ASSERT_EQ(run("profile apply lossless --config " + path_).status, 0);
  std::string before = read_file(path_);
  RunResult r = run("profile diff lossy --config " + path_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("uroce0: profile: \"lossless\" -> \"lossy\"\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uroce0: lossless: on -> off\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uroce0: pfc priorities: [3] -> []\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uroce1: pfc priorities: [4] -> []\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("uroce0: congestion_control: \"dcqcn\" -> \"dcqcn+delay\"\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("uroce0: loss_recovery: \"go-back-n\" -> \"selective\"\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(read_file(path_), before);
  // Applied, the profile writes both keys, so a key the file had before cannot override it.
  ASSERT_EQ(run("profile apply lossy --config " + path_).status, 0);
  const std::string after = read_file(path_);
  EXPECT_NE(after.find("congestion_control = \"dcqcn+delay\""), std::string::npos) << after;
  EXPECT_NE(after.find("loss_recovery = \"selective\""), std::string::npos) << after;
}

TEST_F(ProfileTest, UnknownProfileRefused) {
  RunResult r = run("profile apply turbo --config " + path_);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "uroce: unknown profile \"turbo\"; known profiles: lossless, lossy, hpc, storage\n");
  EXPECT_EQ(read_file(path_), kConfig);
  EXPECT_EQ(files_in_dir(), 1);
  EXPECT_EQ(run("profile show turbo").status, 2);
  EXPECT_EQ(run("profile diff turbo --config " + path_).status, 2);
}

TEST_F(ProfileTest, MalformedConfigRefused) {
  std::string bad = std::string(kConfig) + "mtu = \"big\"\n";
  write_file(path_, bad);
  RunResult r = run("profile apply lossless --config " + path_);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(path_ + ": device[1].mtu: is a string"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(path_), bad);
  EXPECT_EQ(files_in_dir(), 1);

  write_file(path_, "[[device]\nname = \"x\"\n");
  r = run("profile apply lossless --config " + path_);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("TOML syntax"), std::string::npos) << r.err;

  r = run("profile apply lossless --config " + dir_.path + "/missing.toml");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("missing.toml: cannot read"), std::string::npos) << r.err;
}

TEST_F(ProfileTest, InlineTablesRefused) {
  std::string text =
      "[[device]]\nname = \"a\"\naddresses = [\"198.18.0.1/15\"]\npfc = { enabled = [2] }\n";
  write_file(path_, text);
  RunResult r = run("profile apply lossless --config " + path_);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("device[0].pfc: written inline; move it to a [device.pfc] table"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_file(path_), text);
}

TEST_F(ProfileTest, ListAndShow) {
  RunResult r = run("profile list");
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(count_lines(r.out), 4);
  for (const char* p : {"lossless ", "lossy ", "hpc ", "storage "})
    EXPECT_NE(r.out.find(p), std::string::npos);
  r = run("profile show storage");
  ASSERT_EQ(r.status, 0);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nxoff_bytes = 262144 +# profile storage: ")));
  r = run("profile show hpc");
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nrpg_time_reset = 100 +# profile hpc: ")));
}

class DoctorTest : public ::testing::Test {
 protected:
  RunResult run() {
    return run_uroce(dir_.path, "doctor", "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  }
  TempDir dir_;
  std::string cfg_ = dir_.path + "/uroce.toml";
};

TEST_F(DoctorTest, BrokenEnvironmentListsFixes) {
  write_file(
      cfg_,
      "[[device]]\nname = \"a\"\nport = \"net_af_packet0,iface=uroce-nosuch0\"\n"
      "addresses = [\"198.18.0.1/15\"]\n"
      "[[device]]\nname = \"b\"\nport = \"net_memif0,role=client,socket-abstract=no,socket=" +
          dir_.path +
          "/nodir/m.sock\"\naddresses = [\"198.18.0.2/15\"]\n"
          "[[device]]\nname = \"c\"\nport = \"net_nosuchpmd0\"\naddresses = [\"198.18.0.3/15\"]\n");
  stats::CreateOptions o;
  o.run_dir = dir_.path;
  o.pid = dead_pid();
  o.start_time = 1;
  std::string err;
  auto ghost = stats::StatsSegment::create("ghost", stats::ConfigSummary{}, &err, o);
  ASSERT_TRUE(ghost) << err;
  RunResult r = run();
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("ok    config: " + cfg_ + " parses (3 devices)"), std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find(
          "FAIL  a (net_af_packet0,iface=uroce-nosuch0): interface uroce-nosuch0 does not exist\n"
          "      fix: sudo ip link add uroce-nosuch0 type veth"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("memif socket folder " + dir_.path +
                       "/nodir does not exist\n      fix: mkdir -p " + dir_.path + "/nodir\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("FAIL  c (net_nosuchpmd0): no PMD librte_net_nosuchpmd.so"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("warn  stats: " + ghost->path() + " is left over from process " +
                       std::to_string(o.pid) + " that is gone\n      fix: rm " + ghost->path()),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("3 problems found"), std::string::npos) << r.out;
}

TEST_F(DoctorTest, HealthyLoopbackPasses) {
  write_file(cfg_, "[[device]]\nname = \"uroce0\"\naddresses = [\"198.18.0.1/15\"]\n");
  RunResult r = run();
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ok    uroce0 (loopback)"), std::string::npos) << r.out;
}

TEST_F(DoctorTest, HugepagesMissingWarnsWithTheFix) {
  // A DPDK port and a meminfo with no free hugepages: a warning (the driver falls back to
  // --no-huge), the command that reserves them, and no failure. With 512 MB free: ok.
  write_file(cfg_,
             "[[device]]\nname = \"r\"\nport = \"net_ring0\"\naddresses = [\"198.18.0.1/15\"]\n");
  const std::string mi = dir_.path + "/meminfo";
  write_file(mi,
             "HugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n");
  RunResult r = run_uroce(dir_.path, "doctor --meminfo " + mi,
                          "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_NE(
      r.out.find("warn  hugepages: 0 MB free (< 128 MB): the driver runs DPDK with --no-huge"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      fix: echo 256 | sudo tee /proc/sys/vm/nr_hugepages"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  write_file(mi,
             "HugePages_Total:     256\nHugePages_Free:      256\nHugepagesize:       2048 kB\n");
  r = run_uroce(dir_.path, "doctor --meminfo " + mi,
                "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_NE(r.out.find("ok    hugepages: 512 MB free"), std::string::npos) << r.out;
}

TEST_F(DoctorTest, UcxInstalledWithoutDeviceNodesWarnsWithTheFix) {
  // Two devices and a (fake) UCX module: the UCX check looks for /dev/infiniband/uverbs0..1.
  // This host has no RDMA driver, so they are missing: a warning naming `uroce rdma-ns`.
  write_file(cfg_,
             "[[device]]\nname = \"a\"\naddresses = [\"198.18.0.1/15\"]\n"
             "[[device]]\nname = \"b\"\naddresses = [\"198.18.0.2/15\"]\n");
  const std::string module = dir_.path + "/libuct_ib.so.0";
  write_file(module, "");
  ASSERT_FALSE(std::filesystem::exists("/dev/infiniband/uverbs0")) << "host has an RDMA driver";
  RunResult r = run_uroce(dir_.path, "doctor --ucx-module " + module,
                          "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_NE(r.out.find("warn  ucx: /dev/infiniband/uverbs0 (and more) missing: UCX"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      fix: run the program as `uroce rdma-ns -- PROGRAM ARGS`"),
            std::string::npos)
      << r.out;
  // Without UCX the check does not run.
  r = run_uroce(dir_.path, "doctor --ucx-module " + dir_.path + "/none",
                "UROCE_RUN_DIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_EQ(r.out.find("ucx:"), std::string::npos) << r.out;
}

class RdmaNsTest : public DoctorTest {
 protected:
  RunResult run(const std::string& args) {
    return run_uroce(dir_.path, "rdma-ns " + args, "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  }
  // The tool's temporary folders go to $TMPDIR, this test's own folder (tests run in parallel).
  bool leftovers() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_.path))
      if (e.path().filename().string().rfind("uroce-rdma-ns.", 0) == 0) return true;
    return false;
  }
  static constexpr const char* kTwoDevices =
      "[[device]]\nname = \"a\"\naddresses = [\"198.18.0.1/15\", \"fd00::1/64\"]\n"
      "[[device]]\nname = \"b\"\naddresses = [\"198.18.0.2/15\"]\nroce_v1 = true\n";
};

TEST_F(RdmaNsTest, ReportsMissingFilesWithTheCommands) {
  write_file(cfg_, kTwoDevices);
  ASSERT_FALSE(std::filesystem::exists("/dev/infiniband")) << "host has an RDMA driver";
  RunResult r = run("");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("missing /dev/infiniband/uverbs0\nmissing /dev/infiniband/uverbs1\n"
                       "missing /sys/class/infiniband/a\nmissing /sys/class/infiniband/b\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  mkdir -p /dev/infiniband\n  mknod -m 666 /dev/infiniband/uverbs0 c 1 3\n"
                       "  mknod -m 666 /dev/infiniband/uverbs1 c 1 3\n"),
            std::string::npos)
      << r.out;
}

TEST_F(RdmaNsTest, RunsAProgramWithTheFilesAndLeavesTheHostAlone) {
  // Needs root (a mount namespace): the project's tests run as root.
  ASSERT_EQ(geteuid(), 0u) << "uroce rdma-ns needs root";
  write_file(cfg_, kTwoDevices);
  ASSERT_FALSE(std::filesystem::exists("/dev/infiniband")) << "host has an RDMA driver";
  ASSERT_FALSE(std::filesystem::exists("/sys/class/infiniband/a"));
  // Inside: a readable, writable character device per device (UCX's test), the GID table and
  // its types in sysfs as the kernel writes them, the rest of /sys/class as it was, and the
  // host's /dev/shm still the host's (a file made inside is seen outside).
  const std::string shm = "/dev/shm/uroce-rdma-ns-test-" + std::to_string(getpid());
  const std::string inside = dir_.path + "/inside.txt";
  RunResult r =
      run("-- sh -c 'test -c /dev/infiniband/uverbs0 && test -r /dev/infiniband/uverbs1 && "
          "test -w /dev/infiniband/uverbs1 && test -e /sys/class/net/lo && touch " +
          shm +
          " && cd /sys/class/infiniband && for f in a/ports/1/gids/0 a/ports/1/gids/1 "
          "a/ports/1/gid_attrs/types/0 a/ports/1/gid_attrs/types/1 b/ports/1/gids/0 "
          "b/ports/1/gid_attrs/types/0 b/ports/1/gids/1 b/ports/1/gid_attrs/types/1; do "
          "echo \"$f=$(cat $f)\"; done > " +
          inside + " && exit 7'");
  EXPECT_EQ(r.status, 7) << r.out << r.err;  // the program's own exit status
  EXPECT_EQ(read_file(inside),
            "a/ports/1/gids/0=0000:0000:0000:0000:0000:ffff:c612:0001\n"
            "a/ports/1/gids/1=fd00:0000:0000:0000:0000:0000:0000:0001\n"
            "a/ports/1/gid_attrs/types/0=RoCE v2\n"
            "a/ports/1/gid_attrs/types/1=RoCE v2\n"
            "b/ports/1/gids/0=0000:0000:0000:0000:0000:ffff:c612:0002\n"
            "b/ports/1/gid_attrs/types/0=RoCE v2\n"
            // b has roce_v1 = true: its RoCE v1 GID after the RoCEv2 one, as the kernel names it.
            "b/ports/1/gids/1=0000:0000:0000:0000:0000:ffff:c612:0002\n"
            "b/ports/1/gid_attrs/types/1=IB/RoCE v1\n");
  EXPECT_TRUE(std::filesystem::exists(shm));
  std::filesystem::remove(shm);
  EXPECT_FALSE(std::filesystem::exists("/dev/infiniband"));
  EXPECT_FALSE(std::filesystem::exists("/sys/class/infiniband/a"));
  EXPECT_FALSE(leftovers());
  // A program that does not exist: 127 and its name.
  r = run("-- /nonexistent/program");
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("uroce rdma-ns: /nonexistent/program: No such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(leftovers());
}

TEST_F(RdmaNsTest, HostModeDeviceGetsItsNetdevsGidsAndState) {
  // A host-mode device (`netdev =`) on a veth in a namespace of its own: the GIDs are
  // the netdev's addresses in uroce's order (link-local, IPv4, other IPv6), each with its type
  // and netdev (UCX reads gid_attrs/ndevs), and the port's state follows the netdev's.
  ASSERT_EQ(geteuid(), 0u) << "network namespaces need root";
  const std::string ns = "uroce-rdmans-" + std::to_string(getpid());
  const std::string ip = "ip -n " + ns + " ";
  ASSERT_EQ(std::system(("ip netns add " + ns).c_str()), 0);
  struct Remove {
    std::string ns;
    ~Remove() { [[maybe_unused]] int r = std::system(("ip netns del " + ns).c_str()); }
  } remove{ns};
  // No duplicate address detection (a tentative address is no GID); a fixed MAC, so the
  // link-local address is fe80::ff:fe00:5.
  ASSERT_EQ(std::system(("ip netns exec " + ns +
                         " sysctl -qw net.ipv6.conf.all.accept_dad=0 "
                         "net.ipv6.conf.default.accept_dad=0 && " +
                         ip + "link add d0 address 02:00:00:00:00:05 type veth peer name d1 && " +
                         ip + "addr add 198.18.5.1/24 dev d0 && " + ip +
                         "addr add 2001:2::5/64 dev d0 nodad && " + ip + "link set d1 up && " + ip +
                         "link set d0 up")
                            .c_str()),
            0);
  write_file(cfg_, "[[device]]\nname = \"a\"\nnetdev = \"d0\"\nmtu = 1024\n");
  const std::string inside = dir_.path + "/inside.txt";
  auto dump = [&] {
    return run_uroce(dir_.path,
                     "rdma-ns -- sh -c 'cd /sys/class/infiniband/a && for f in $(find . -type f "
                     "| sort); do echo \"$f=$(cat $f)\"; done > " +
                         inside + "'",
                     "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_ + " ip netns exec " + ns);
  };
  RunResult r = dump();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_file(inside),
            "./parent=d0\n"
            "./ports/1/gid_attrs/ndevs/0=d0\n"
            "./ports/1/gid_attrs/ndevs/1=d0\n"
            "./ports/1/gid_attrs/ndevs/2=d0\n"
            "./ports/1/gid_attrs/types/0=RoCE v2\n"
            "./ports/1/gid_attrs/types/1=RoCE v2\n"
            "./ports/1/gid_attrs/types/2=RoCE v2\n"
            "./ports/1/gids/0=fe80:0000:0000:0000:0000:00ff:fe00:0005\n"
            "./ports/1/gids/1=0000:0000:0000:0000:0000:ffff:c612:0501\n"
            "./ports/1/gids/2=2001:0002:0000:0000:0000:0000:0000:0005\n"
            "./ports/1/link_layer=Ethernet\n"
            "./ports/1/phys_state=5: LinkUp\n"
            "./ports/1/state=4: ACTIVE\n");
  // device/net/ lists the netdev (where rdma-core's test suite looks for it), a link to the
  // netdev's own sysfs folder.
  r = run_uroce(dir_.path,
                "rdma-ns -- sh -c 'ls /sys/class/infiniband/a/device/net/ > " + inside +
                    " && cat /sys/class/infiniband/a/device/net/d0/address >> " + inside + "'",
                "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_ + " ip netns exec " + ns);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(read_file(inside), "d0\n02:00:00:00:00:05\n");
  // Down: the port is down and its link disabled, as the kernel shows rxe's.
  ASSERT_EQ(std::system((ip + "link set d0 down").c_str()), 0);
  r = dump();
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const std::string down = read_file(inside);
  EXPECT_NE(down.find("./ports/1/phys_state=3: Disabled\n./ports/1/state=1: DOWN\n"),
            std::string::npos)
      << down;
  EXPECT_FALSE(leftovers());
  // A netdev that is not there: the tool says so and runs nothing.
  write_file(cfg_, "[[device]]\nname = \"a\"\nnetdev = \"nosuch0\"\nmtu = 1024\n");
  r = run_uroce(dir_.path, "rdma-ns -- true",
                "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_ + " ip netns exec " + ns);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("uroce rdma-ns: device a: no such netdev 'nosuch0'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(leftovers());
}

TEST_F(DoctorTest, MalformedConfigFails) {
  write_file(cfg_, "[[device]]\nname = \"uroce0\"\nmtu = 1000\naddresses = [\"198.18.0.1/15\"]\n");
  RunResult r = run();
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("FAIL  config: " + cfg_ + ": device[0].mtu: 1000 is not a power of two"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("      fix: edit " + cfg_), std::string::npos) << r.out;
}

TEST_F(RdmaNsTest, RunSetsLibraryPathConfigAndKernelFiles) {
  ASSERT_EQ(geteuid(), 0u) << "the kernel files need root (a mount namespace)";
  write_file(cfg_, kTwoDevices);
  write_file(dir_.path + "/other.toml",
             "[[device]]\nname = \"b\"\naddresses = [\"198.18.0.9/15\"]\n");
  // The build tree's libibverbs.so.1 first, before what LD_LIBRARY_PATH had; --config (a path
  // relative to the working folder) as an absolute UROCE_CONFIG; rdma-ns's files for its
  // devices; the program's own exit status.
  const std::string inside = dir_.path + "/inside.txt";
  RunResult r = run_uroce(dir_.path,
                          "run --config other.toml -- sh -c 'echo \"$LD_LIBRARY_PATH\" > " +
                              inside + " && echo \"$UROCE_CONFIG\" >> " + inside +
                              " && cat /sys/class/infiniband/b/ports/1/gids/0 >> " + inside +
                              " && test -c /dev/infiniband/uverbs0 && exit 5'",
                          "TMPDIR=" + dir_.path + " LD_LIBRARY_PATH=/x/keep UROCE_CONFIG=" + cfg_);
  EXPECT_EQ(r.status, 5) << r.out << r.err;
  const std::string lib =
      std::filesystem::canonical(std::filesystem::path(UROCE_BIN).parent_path() / ".." / "lib");
  EXPECT_EQ(read_file(inside), lib + ":/x/keep\n" + dir_.path +
                                   "/other.toml\n0000:0000:0000:0000:0000:ffff:c612:0009\n");
  EXPECT_FALSE(std::filesystem::exists("/dev/infiniband"));
  EXPECT_FALSE(leftovers());
  // A config file that is not there, a program that is not there: one line each.
  r = run_uroce(dir_.path, "run --config nope.toml -- true",
                "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "uroce run: --config nope.toml: no such file\n");
  r = run_uroce(dir_.path, "run -- /nonexistent/program",
                "TMPDIR=" + dir_.path + " UROCE_CONFIG=" + cfg_);
  EXPECT_EQ(r.status, 127);
  EXPECT_NE(r.err.find("uroce run: /nonexistent/program: No such file or directory"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(leftovers());
}

}  // namespace
}  // namespace uroce::test
