/**
 * @file symbols_test.cc
 * @brief Every symbol+version the installed rdma-core libibverbs.so.1 exports is exported by
 * ours (nm -D --with-symbol-versions), including the compat @IBVERBS_1.0 versions and the
 * private node; and ours exports nothing else (no C++ symbols leak) but uroce's own nodes
 * UROCE_PRIVATE_1 (lib/verbs/uroce_gsi.h, QP1 for uroce's librdmacm) and UROCE_1 (the public
 * extensions, uroce/uroce_ext.h).
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

/// Defined symbols with versions ("name@@NODE" / "name@NODE") of a shared library.
std::set<std::string> exported(const std::string& lib) {
  std::set<std::string> out;
  std::string cmd = "nm -D --with-symbol-versions --defined-only " + lib;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char addr[64], type[8], name[900];
    if (sscanf(line, "%63s %7s %899s", addr, type, name) != 3) continue;
    if (std::string(type) == "A") continue;  // version node definitions
    out.insert(name);
  }
  pclose(f);
  return out;
}

TEST(Symbols, OursExportsEverySystemSymbolWithItsVersion) {
  auto sys = exported(UROCE_SYSTEM_LIBIBVERBS);
  auto ours = exported(UROCE_OUR_LIBIBVERBS);
  ASSERT_GT(sys.size(), 150u);
  for (const auto& s : sys) EXPECT_TRUE(ours.count(s)) << "missing: " << s;
  for (const auto& s : ours) {
    if (s.find("@@UROCE_") != std::string::npos) continue;  // uroce's own nodes
    EXPECT_TRUE(sys.count(s)) << "extra export: " << s;
  }
  EXPECT_TRUE(ours.count("ibv_open_device@@IBVERBS_1.1"));
  EXPECT_TRUE(ours.count("ibv_open_device@IBVERBS_1.0"));
}

TEST(Symbols, UroceOwnNodeHoldsExactlyTheGsiInterface) {
  std::set<std::string> own;
  for (const auto& s : exported(UROCE_OUR_LIBIBVERBS))
    if (s.find("UROCE_PRIVATE") != std::string::npos) own.insert(s);
  EXPECT_EQ(own, (std::set<std::string>{
                     "uroce_gsi_close@@UROCE_PRIVATE_1", "uroce_gsi_fd@@UROCE_PRIVATE_1",
                     "uroce_gsi_open@@UROCE_PRIVATE_1", "uroce_gsi_recv@@UROCE_PRIVATE_1",
                     "uroce_gsi_send@@UROCE_PRIVATE_1", "uroce_route_gid@@UROCE_PRIVATE_1",
                     "uroce_shared_slot@@UROCE_PRIVATE_1", "uroce_hostd_port@@UROCE_PRIVATE_1"}));
}

TEST(Symbols, UrocePublicNodeHoldsExactlyTheExtensions) {
  std::set<std::string> own;
  for (const auto& s : exported(UROCE_OUR_LIBIBVERBS))
    if (s.find("@@UROCE_1") != std::string::npos) own.insert(s);
  EXPECT_EQ(own, (std::set<std::string>{"uroce_qp_set_ooo_placement@@UROCE_1"}));
}

TEST(Symbols, VendorLibraryImportsResolve) {
  // Every IBVERBS_* symbol libmlx5/libefa import (they are BIND_NOW) is exported by ours.
  auto ours = exported(UROCE_OUR_LIBIBVERBS);
  std::set<std::string> plain;
  for (auto s : ours) {
    auto at = s.find('@');
    std::string name = s.substr(0, at);
    std::string node = s.substr(s.rfind('@') + 1);
    plain.insert(name + "@" + node);
  }
  for (const char* lib :
       {"/lib/x86_64-linux-gnu/libmlx5.so.1", "/lib/x86_64-linux-gnu/libefa.so.1"}) {
    std::string cmd = std::string("nm -D --with-symbol-versions --undefined-only ") + lib;
    FILE* f = popen(cmd.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
      char type[8], name[900];
      if (sscanf(line, "%7s %899s", type, name) != 2) continue;
      std::string s = name;
      if (s.find("@IBVERBS_") == std::string::npos) continue;
      ++n;
      EXPECT_TRUE(plain.count(s)) << lib << " imports " << s;
    }
    pclose(f);
    EXPECT_GT(n, 10) << lib;
  }
}

}  // namespace
