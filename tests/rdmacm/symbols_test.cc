/**
 * @file symbols_test.cc
 * @brief uroce's librdmacm.so.1 exports exactly what the installed rdma-core librdmacm.so.1
 * exports, each symbol with its version node (nm -D --with-symbol-versions), and its SONAME
 * is librdmacm.so.1.
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

std::set<std::string> exported(const std::string& lib) {
  std::set<std::string> out;
  FILE* f = popen(("nm -D --with-symbol-versions --defined-only " + lib).c_str(), "r");
  if (!f) return out;
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    char addr[64], type[8], name[900];
    if (sscanf(line, "%63s %7s %899s", addr, type, name) != 3) continue;
    out.insert(std::string(type) == "A" ? std::string("node:") + name : std::string(name));
  }
  pclose(f);
  return out;
}

TEST(RdmacmSymbols, SameSymbolsAndVersionNodesAsTheSystemLibrary) {
  auto sys = exported(UROCE_SYSTEM_LIBRDMACM);
  auto ours = exported(UROCE_OUR_LIBRDMACM);
  ASSERT_GT(sys.size(), 60u);
  for (const auto& s : sys) EXPECT_TRUE(ours.count(s)) << "missing: " << s;
  for (const auto& s : ours) EXPECT_TRUE(sys.count(s)) << "extra export: " << s;
  EXPECT_TRUE(ours.count("rdma_establish@@RDMACM_1.2"));
  EXPECT_TRUE(ours.count("rdma_get_remote_ece@@RDMACM_1.3"));
  EXPECT_TRUE(ours.count("node:RDMACM_1.0"));
}

TEST(RdmacmSymbols, SonameIsLibrdmacmSo1) {
  FILE* f = popen((std::string("readelf -d ") + UROCE_OUR_LIBRDMACM).c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string all;
  char line[512];
  while (fgets(line, sizeof line, f)) all += line;
  pclose(f);
  EXPECT_NE(all.find("Library soname: [librdmacm.so.1]"), std::string::npos) << all;
  EXPECT_NE(all.find("Shared library: [libibverbs.so.1]"), std::string::npos) << all;
}

}  // namespace
