/**
 * @file hostd_status_test.cc
 * @brief uroce-hostd's status file (lib/stats/hostd_status.h): what the daemon writes reads
 * back the same; text that is not a status (not JSON, missing fields, other types) is
 * refused with a reason; the directory reader skips a dead daemon's file and names a bad one.
 */
#include "stats/hostd_status.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "stats/proc.h"

namespace uroce::stats {
namespace {

HostdStatus sample(int32_t pid) {
  HostdStatus s;
  s.netdev = "veth0";
  s.pid = pid;
  s.start_time = process_start_time(pid);
  s.workers.push_back({0, 10, 20, 0.25, 3, 4});
  HostdClientStatus c;
  c.slot = 7;
  c.worker = 1;
  c.pid = 4242;
  c.uid = 1000;
  c.command = "ib_write_bw";
  c.device = "uroce0";
  c.to_client = 1;
  c.from_client = 2;
  c.to_wire = 3;
  c.switched = 4;
  c.dropped = 5;
  c.cm_refused = 6;
  c.refused = {{"src_qpn", 8}, {"udp_sport", 9}};
  c.rx_depth = 11;
  c.tx_depth = 12;
  s.clients.push_back(c);
  return s;
}

TEST(HostdStatus, WhatIsWrittenReadsBackTheSame) {
  const HostdStatus s = sample(99);
  std::string err;
  auto back = hostd_status_from_json(to_json(s), &err);
  ASSERT_TRUE(back) << err;
  EXPECT_EQ(back->netdev, "veth0");
  EXPECT_EQ(back->pid, 99);
  EXPECT_EQ(back->start_time, s.start_time);
  ASSERT_EQ(back->workers.size(), 1u);
  EXPECT_EQ(back->workers[0].frames_out, 20u);
  EXPECT_DOUBLE_EQ(back->workers[0].busy, 0.25);
  EXPECT_EQ(back->workers[0].rx_backlog, 4u);
  ASSERT_EQ(back->clients.size(), 1u);
  const HostdClientStatus& c = back->clients[0];
  EXPECT_EQ(c.slot, 7u);
  EXPECT_EQ(c.worker, 1u);
  EXPECT_EQ(c.pid, 4242);
  EXPECT_EQ(c.command, "ib_write_bw");
  EXPECT_EQ(c.dropped, 5u);
  EXPECT_EQ(c.cm_refused, 6u);
  EXPECT_EQ(c.refused.at("udp_sport"), 9u);
  EXPECT_EQ(c.tx_depth, 12u);
}

TEST(HostdStatus, TextThatIsNoStatusIsRefusedWithAReason) {
  for (const char* bad : {"", "not json", "[1,2]", "{}", R"({"netdev":"x","pid":"1"})",
                          R"({"netdev":"x","pid":1,"workers":[{"id":0}],"clients":[]})",
                          R"({"netdev":"x","pid":1,"workers":[],"clients":[{"slot":"7"}]})"}) {
    std::string err;
    EXPECT_FALSE(hostd_status_from_json(bad, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
}

TEST(HostdStatus, TheReaderRemovesADeadDaemonsFileAndNamesABadOne) {
  const std::string dir =
      std::filesystem::temp_directory_path() / ("hostd_status_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string err;
  ASSERT_TRUE(write_hostd_status(hostd_status_path(dir, "veth0", ::getpid()),
                                 sample(static_cast<int32_t>(::getpid())), &err))
      << err;
  // A pid above the kernel's pid_max belongs to no process.
  HostdStatus dead = sample(1 << 23);
  dead.netdev = "veth1";
  ASSERT_TRUE(write_hostd_status(hostd_status_path(dir, "veth1", 1 << 23), dead, &err)) << err;
  std::ofstream(dir + "/uroce-hostd.veth2.1.json") << "{broken";
  std::vector<std::string> errors;
  const auto got = read_hostd_statuses(dir, &errors);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].netdev, "veth0");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("uroce-hostd.veth2.1.json"), std::string::npos) << errors[0];
  EXPECT_FALSE(std::filesystem::exists(hostd_status_path(dir, "veth1", 1 << 23)));
  // This process's pid with another start time: a daemon whose pid was reused is gone too.
  HostdStatus reused = sample(static_cast<int32_t>(::getpid()));
  reused.netdev = "veth3";
  reused.start_time += 1;
  ASSERT_TRUE(write_hostd_status(hostd_status_path(dir, "veth3", ::getpid()), reused, &err));
  errors.clear();
  EXPECT_EQ(read_hostd_statuses(dir, &errors).size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(hostd_status_path(dir, "veth3", ::getpid())));
  EXPECT_FALSE(std::filesystem::exists(hostd_status_path(dir, "veth0", ::getpid()) + ".tmp"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace uroce::stats
