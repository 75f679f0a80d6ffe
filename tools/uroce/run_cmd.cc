/**
 * @file run_cmd.cc
 * @brief `uroce run` (run_cmd.h).
 */
#include "run_cmd.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "rdma_ns.h"

namespace uroce::tool {

namespace fs = std::filesystem;

std::string private_lib_dir(const std::string& exe) {
  const fs::path bin = fs::path(exe).parent_path();
  std::error_code ec;
  for (const fs::path& dir : {bin / ".." / "lib" / "uroce", bin / ".." / "lib"}) {
    const fs::path d = dir.lexically_normal();
    if (fs::exists(d / "libibverbs.so.1", ec)) return d.string();
  }
  return {};
}

int run(const RunOptions& o) {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  const std::string lib = ec ? std::string() : private_lib_dir(exe.string());
  if (lib.empty()) {
    std::fprintf(stderr, "uroce run: no libibverbs.so.1 in %s/../lib/uroce or %s/../lib\n",
                 exe.parent_path().c_str(), exe.parent_path().c_str());
    return 1;
  }
  std::string path = lib;
  if (const char* old = std::getenv("LD_LIBRARY_PATH"); old && *old) path += std::string(":") + old;
  setenv("LD_LIBRARY_PATH", path.c_str(), 1);
  if (!o.config.empty()) {
    const fs::path cfg = fs::absolute(o.config, ec);
    if (ec || !fs::is_regular_file(cfg, ec)) {
      std::fprintf(stderr, "uroce run: --config %s: no such file\n", o.config.c_str());
      return 1;
    }
    setenv("UROCE_CONFIG", cfg.c_str(), 1);
  }
  return exec_with_rdma_files(o.argv, "uroce run", true);
}

}  // namespace uroce::tool
