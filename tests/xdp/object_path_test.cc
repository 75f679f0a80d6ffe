/**
 * @file object_path_test.cc
 * @brief Where uroce::xdp::object_path() looks for the XDP object (drivers/xdp/xdp.h): next to
 * the library or program that links uroce_xdp, in the build tree and in the installed layout;
 * $UROCE_XDP_PROG first.
 */
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "xdp/xdp.h"

namespace uroce::xdp {
namespace {

TEST(XdpObjectPath, CandidatesNextToTheModule) {
  using V = std::vector<std::string>;
  // Installed library, library in the build tree, program in bin/: each layout's own place
  // is among the candidates.
  EXPECT_EQ(object_candidates("/opt/u/lib/uroce/libibverbs.so.1"),
            (V{"/opt/u/lib/uroce/roce_steer.bpf.o", "/opt/u/lib/uroce/uroce/roce_steer.bpf.o",
               "/opt/u/lib/lib/uroce/roce_steer.bpf.o"}));
  EXPECT_EQ(object_candidates("/w/build/lib/libibverbs.so.1")[1],
            "/w/build/lib/uroce/roce_steer.bpf.o");
  EXPECT_EQ(object_candidates("/usr/bin/uroce-hostd")[2], "/usr/lib/uroce/roce_steer.bpf.o");
}

TEST(XdpObjectPath, FoundFromThisProgramAndOverridden) {
  // This test program lives in build/bin: the object is build/lib/uroce/roce_steer.bpf.o.
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string want = object_candidates(exe)[2];
  ASSERT_TRUE(std::filesystem::exists(want)) << want;
  unsetenv("UROCE_XDP_PROG");
  EXPECT_EQ(object_path(), want);
  setenv("UROCE_XDP_PROG", "/elsewhere/prog.o", 1);
  EXPECT_EQ(object_path(), "/elsewhere/prog.o");
  unsetenv("UROCE_XDP_PROG");
}

}  // namespace
}  // namespace uroce::xdp
