/**
 * @file eal_args_test.cc
 * @brief The EAL command line (drivers/dpdk/eal_args.h) without starting EAL: --no-pci vs
 * -a, --vdev, --no-huge -m vs --in-memory, the lcore CPU set, quiet logging, user overrides;
 * and the host probes (meminfo, mounts, PCI address forms).
 */
#include "dpdk/eal_args.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace uroce::dpdk {
namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

EalPlan base() {
  EalPlan p;
  p.file_prefix = "uroce-42-abc";
  p.cpus = "0-1";
  return p;
}

TEST(EalArgs, VdevWithoutHugepages) {
  EalPlan p = base();
  p.vdevs = {"net_memif0,role=server,socket=/tmp/a.sock"};
  auto a = build_eal_args(p);
  EXPECT_EQ(a, (std::vector<std::string>{"uroce", "--file-prefix=uroce-42-abc", "--no-pci",
                                         "--vdev=net_memif0,role=server,socket=/tmp/a.sock",
                                         "--no-huge", "-m", "512", "--lcores=0@(0-1)",
                                         "--no-telemetry", "--log-level=error"}));
  // --no-huge must never come with --in-memory (EAL refuses the pair).
  EXPECT_FALSE(has(a, "--in-memory"));
}

TEST(EalArgs, ZeroCopyMemifClientGetsSingleFileSegments) {
  EalPlan p = base();
  p.vdevs = {"net_memif0,role=client,socket=/tmp/a.sock,zero-copy=yes"};
  auto a = build_eal_args(p);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--single-file-segments"), 1);
  p.extra = {"--single-file-segments"};  // given by the user: not twice
  a = build_eal_args(p);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--single-file-segments"), 1);
  p.extra.clear();
  p.vdevs = {"net_memif0,role=client,socket=/tmp/a.sock"};  // copy mode: not needed
  EXPECT_FALSE(has(build_eal_args(p), "--single-file-segments"));
  p.vdevs.clear();  // ports probed after EAL starts: the plan says it
  p.memif_zero_copy = true;
  EXPECT_TRUE(has(build_eal_args(p), "--single-file-segments"));
  EXPECT_TRUE(is_memif_zero_copy("net_memif0,role=client,socket=/s,zero-copy=yes"));
  EXPECT_FALSE(is_memif_zero_copy("net_af_packet0,iface=v,zero-copy=yes"));
  EXPECT_TRUE(is_memif_port("net_memif1,role=server,socket=/s"));
  EXPECT_FALSE(is_memif_port("net_af_xdp0,iface=v"));
  EXPECT_FALSE(is_memif_port("eth_net_memif0"));  // a prefix, not a substring
}

TEST(EalArgs, HugepagesUseInMemory) {
  EalPlan p = base();
  p.hugepages = true;
  auto a = build_eal_args(p);
  EXPECT_TRUE(has(a, "--in-memory"));
  EXPECT_FALSE(has(a, "--no-huge"));
  EXPECT_FALSE(has(a, "-m"));
}

TEST(EalArgs, PciPortsAreAllowListedInsteadOfNoPci) {
  EalPlan p = base();
  p.pci = {"0000:03:00.0", "0000:03:00.1"};
  auto a = build_eal_args(p);
  EXPECT_FALSE(has(a, "--no-pci"));
  auto it = std::find(a.begin(), a.end(), "-a");
  ASSERT_NE(it, a.end());
  EXPECT_EQ(*(it + 1), "0000:03:00.0");
  EXPECT_EQ(*(it + 2), "-a");
  EXPECT_EQ(*(it + 3), "0000:03:00.1");
}

TEST(EalArgs, UserArgumentsComeLastAndReplaceTheAutomaticOnes) {
  EalPlan p = base();
  p.extra = {"--no-huge", "-m", "1024", "-l", "1", "--log-level=pmd.net.memif:debug"};
  auto a = build_eal_args(p);
  EXPECT_EQ(std::count(a.begin(), a.end(), "--no-huge"), 1);
  EXPECT_FALSE(has(a, "512"));
  EXPECT_FALSE(has(a, "--lcores=0@(0-1)"));
  EXPECT_FALSE(has(a, "--log-level=error"));
  ASSERT_GE(a.size(), 6u);
  EXPECT_TRUE(std::equal(p.extra.begin(), p.extra.end(), a.end() - 6));
}

TEST(EalArgs, LogLevelFromPlan) {
  EalPlan p = base();
  p.log_level = "debug";
  EXPECT_TRUE(has(build_eal_args(p), "--log-level=debug"));
}

TEST(EalArgs, NoCpuListLeavesLcoresToEal) {
  EalPlan p = base();
  p.cpus = "";
  for (const std::string& s : build_eal_args(p))
    EXPECT_EQ(s.rfind("--lcores", 0), std::string::npos);
}

TEST(EalHost, FreeHugepageBytes) {
  const char* none =
      "MemTotal: 100 kB\nHugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       "
      "2048 kB\n";
  EXPECT_EQ(free_hugepage_bytes(none), 0u);
  const char* some =
      "HugePages_Total:      64\nHugePages_Free:       60\nHugePages_Rsvd: 0\nHugepagesize:       "
      "2048 kB\n";
  EXPECT_EQ(free_hugepage_bytes(some), 60ull * 2048 * 1024);
  EXPECT_EQ(free_hugepage_bytes(""), 0u);
}

TEST(EalHost, HugetlbfsMount) {
  EXPECT_TRUE(hugetlbfs_mounted(
      "proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"));
  EXPECT_FALSE(
      hugetlbfs_mounted("proc /proc proc rw 0 0\nnone /mnt/hugetlbfs-notes tmpfs rw 0 0\n"));
}

TEST(EalHost, PciAddressForms) {
  EXPECT_TRUE(is_pci_port("0000:03:00.0"));
  EXPECT_TRUE(is_pci_port("03:00.1"));
  EXPECT_TRUE(is_pci_port("0000:af:1f.7"));
  EXPECT_FALSE(is_pci_port("net_memif0,role=server"));
  EXPECT_FALSE(is_pci_port("loopback"));
  EXPECT_FALSE(is_pci_port("0000:03:00"));
  EXPECT_FALSE(is_pci_port("000:03:00.0"));
}

TEST(EalHost, CpuList) {
  EXPECT_EQ(cpu_list({0, 1}), "0-1");
  EXPECT_EQ(cpu_list({0}), "0");
  EXPECT_EQ(cpu_list({0, 1, 2, 5, 7, 8}), "0-2,5,7-8");
  EXPECT_EQ(cpu_list({}), "");
}

}  // namespace
}  // namespace uroce::dpdk
