/**
 * @file subprocess_util.h
 * @brief Runs an external tool (python3 + scapy, tshark) for the interop tests and captures its
 * stdout; a missing tool fails the test with a message naming scripts/install-deps.sh.
 */
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace uroce::wire::test {

/// Runs `cmd` through /bin/sh, returns its exit status; stdout goes to *out.
inline int run_capture(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return -1;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  const int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// True if `path` names an executable file.
inline bool tool_present(const std::string& path) {
  return !path.empty() && path.find("NOTFOUND") == std::string::npos &&
         access(path.c_str(), X_OK) == 0;
}

/// Fails the current test (fatally) if python3 with scapy.contrib.roce is not usable.
#define UROCE_REQUIRE_SCAPY()                                                                  \
  do {                                                                                         \
    std::string out_;                                                                          \
    ASSERT_TRUE(::uroce::wire::test::tool_present(UROCE_PYTHON3))                              \
        << "python3 not found (" << UROCE_PYTHON3 << "); run scripts/install-deps.sh";         \
    ASSERT_EQ(::uroce::wire::test::run_capture(                                                \
                  std::string(UROCE_PYTHON3) + " -c 'import scapy.contrib.roce' 2>&1", &out_), \
              0)                                                                               \
        << "python3-scapy missing (" << out_ << "); run scripts/install-deps.sh";              \
  } while (0)

#define UROCE_REQUIRE_TSHARK()                                 \
  ASSERT_TRUE(::uroce::wire::test::tool_present(UROCE_TSHARK)) \
      << "tshark not found (" << UROCE_TSHARK << "); run scripts/install-deps.sh"

/// Splits "k=v k=v ..." tokens into a map.
inline std::map<std::string, std::string> parse_kv(std::istringstream& in) {
  std::map<std::string, std::string> m;
  std::string tok;
  while (in >> tok) {
    const auto eq = tok.find('=');
    if (eq != std::string::npos) m[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return m;
}

inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l))
    if (!l.empty()) v.push_back(l);
  return v;
}

}  // namespace uroce::wire::test
