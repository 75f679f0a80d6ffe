/**
 * @file uroce_link_test.cc
 * @brief `uroce link add | del | show` on temporary config files and a fake sysfs: add writes
 * a [[device]] bound to the netdev that lib/config reads back, refuses a second device on the
 * same netdev or name; del removes exactly that device (the file goes with the last one);
 * show reports the netdev's state.
 */
#include <gtest/gtest.h>

#include <filesystem>

#include "cli_support.h"
#include "config/config.h"

namespace uroce::test {
namespace {

class LinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path + "/uroce.toml";
    sys_ = dir_.path + "/net";
    std::filesystem::create_directories(sys_ + "/veth-a");
    write_file(sys_ + "/veth-a/operstate", "up\n");
    write_file(sys_ + "/veth-a/mtu", "1500\n");
    std::filesystem::create_directories(sys_ + "/veth-b");
    write_file(sys_ + "/veth-b/operstate", "down\n");
    write_file(sys_ + "/veth-b/mtu", "9000\n");
  }
  RunResult link(const std::string& args) {
    return run_uroce(dir_.path, "link " + args + " --config " + path_);
  }
  config::Config parsed() {
    std::string err;
    auto cfg = config::parse(read_file(path_), path_, &err);
    EXPECT_TRUE(cfg) << err;
    return cfg ? *cfg : config::Config{};
  }
  TempDir dir_;
  std::string path_, sys_;
};

TEST_F(LinkTest, AddCreatesTheFileWithADeviceOnTheNetdev) {
  RunResult r = link("add uroce0 netdev veth-a");
  ASSERT_EQ(r.status, 0) << r.err;
  config::Config c = parsed();
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "uroce0");
  EXPECT_EQ(c.devices[0].netdev, "veth-a");
  EXPECT_TRUE(c.devices[0].addresses.empty());
  EXPECT_FALSE(std::filesystem::exists(path_ + ".bak"));
}

TEST_F(LinkTest, AddKeepsWhatIsThereAndRefusesDuplicates) {
  write_file(path_,
             "# lab\n[[device]]\nname = \"m0\"\nport = \"net_memif0\"\naddresses = "
             "[\"198.18.0.1/15\"]\n[device.pfc]\nxoff_bytes = 1000\nxon_bytes = 500\n");
  ASSERT_EQ(link("add uroce0 netdev veth-a").status, 0);
  config::Config c = parsed();
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].pfc.xoff_bytes, 1000u);
  EXPECT_EQ(c.devices[1].netdev, "veth-a");
  EXPECT_NE(read_file(path_).find("# lab"), std::string::npos);
  const std::string before = read_file(path_);
  RunResult same_netdev = link("add uroce1 netdev veth-a");
  EXPECT_EQ(same_netdev.status, 1);
  EXPECT_NE(same_netdev.err.find("already the netdev of device uroce0"), std::string::npos)
      << same_netdev.err;
  RunResult same_name = link("add m0 netdev veth-b");
  EXPECT_EQ(same_name.status, 1);
  EXPECT_NE(same_name.err.find("exists already"), std::string::npos) << same_name.err;
  RunResult bad_name = link("add uroce2 netdev a/b");
  EXPECT_EQ(bad_name.status, 1);
  EXPECT_NE(bad_name.err.find("is not an interface name"), std::string::npos) << bad_name.err;
  EXPECT_EQ(read_file(path_), before);
}

TEST_F(LinkTest, DelRemovesOnlyThatDeviceAndTheLastRemovesTheFile) {
  ASSERT_EQ(link("add uroce0 netdev veth-a").status, 0);
  ASSERT_EQ(link("add uroce1 netdev veth-b").status, 0);
  ASSERT_EQ(link("del uroce0").status, 0);
  config::Config c = parsed();
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].name, "uroce1");
  RunResult missing = link("del uroce0");
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("no device named uroce0"), std::string::npos);
  ASSERT_EQ(link("del uroce1").status, 0);
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_TRUE(std::filesystem::exists(path_ + ".bak"));
}

TEST_F(LinkTest, ShowReportsTheNetdevState) {
  ASSERT_EQ(link("add uroce0 netdev veth-a").status, 0);
  ASSERT_EQ(link("add uroce1 netdev veth-b").status, 0);
  ASSERT_EQ(link("add uroce2 netdev gone0").status, 0);
  RunResult r = run_uroce(dir_.path, "link show --config " + path_, "UROCE_SYSFS_NET=" + sys_);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("link uroce0/1 state ACTIVE physical_state LINK_UP netdev veth-a mtu 1500"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("link uroce1/1 state DOWN physical_state DISABLED netdev veth-b mtu 9000"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("netdev gone0 (missing)"), std::string::npos) << r.out;
}

TEST(ConfigNetdev, NetdevRefusesTheKeysTheKernelSupplies) {
  std::string err;
  auto ok = config::parse("[[device]]\nnetdev = \"eth0\"\nmtu = 2048\n", "t", &err);
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(ok->devices[0].netdev, "eth0");
  EXPECT_EQ(ok->devices[0].port, "netdev:eth0");
  EXPECT_FALSE(
      config::parse("[[device]]\nnetdev = \"eth0\"\naddresses = [\"198.18.0.1/15\"]\n", "t", &err));
  EXPECT_EQ(err,
            "t: device[0].addresses: not allowed with netdev (the kernel's interface supplies "
            "it); allowed: netdev alone, or port + addresses without netdev");
  EXPECT_FALSE(config::parse("[[device]]\nnetdev = \"eth0\"\nport = \"net_memif0\"\n", "t", &err));
  EXPECT_FALSE(config::parse(
      "[[device]]\nnetdev = \"eth0\"\n[[device]]\nname = \"u1\"\nnetdev = \"eth0\"\n", "t", &err));
  EXPECT_NE(err.find("one device per netdev"), std::string::npos) << err;
  EXPECT_FALSE(config::parse("[[device]]\nnetdev = \"\"\n", "t", &err));
  EXPECT_FALSE(config::parse("[[device]]\nnetdev = \"way-too-long-name0\"\n", "t", &err));
}

// exclusive: only beside netdev (a DPDK port is one process's anyway); default off.
TEST(ConfigNetdev, ExclusiveOnlyWithNetdev) {
  std::string err;
  auto d = config::parse("[[device]]\nnetdev = \"eth0\"\n", "t", &err);
  ASSERT_TRUE(d) << err;
  EXPECT_FALSE(d->devices[0].exclusive);
  auto x = config::parse("[[device]]\nnetdev = \"eth0\"\nexclusive = true\n", "t", &err);
  ASSERT_TRUE(x) << err;
  EXPECT_TRUE(x->devices[0].exclusive);
  EXPECT_FALSE(config::parse("[[device]]\nport = \"loopback\"\nexclusive = true\n", "t", &err));
  EXPECT_EQ(err,
            "t: device[0].exclusive: only with netdev (a DPDK port is always one process's); "
            "allowed: netdev = \"IF\" beside it, or no exclusive");
  EXPECT_FALSE(config::parse("[[device]]\nnetdev = \"eth0\"\nexclusive = 1\n", "t", &err));
}

// add --exclusive writes exclusive = true; add and del with --daemon none start and stop
// nothing (the netdev here is a fake).
TEST_F(LinkTest, AddExclusiveWritesIt) {
  RunResult r = link("add uroce0 netdev veth-a --exclusive --daemon none");
  ASSERT_EQ(r.status, 0) << r.err;
  config::Config c = parsed();
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_TRUE(c.devices[0].exclusive);
  EXPECT_NE(r.out.find("exclusive"), std::string::npos) << r.out;
  EXPECT_NE(link("add u1 netdev veth-b --daemon bogus").status, 0);
  ASSERT_EQ(link("del uroce0 --daemon none").status, 0);
}

}  // namespace
}  // namespace uroce::test
