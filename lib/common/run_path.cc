/**
 * @file run_path.cc
 * @brief netdev_run_dir() and netdev_run_path() (run_path.h).
 */
#include "common/run_path.h"

#include <sys/stat.h>

#include <cstdlib>

namespace uroce {

std::string netdev_run_dir() {
  const char* dir = std::getenv("UROCE_RUN_DIR");
  return dir && *dir ? dir : "/run/uroce";
}

std::string netdev_run_path(std::string_view kind, std::string_view ifname) {
  struct stat st {};
  ::stat("/proc/self/ns/net", &st);
  return netdev_run_dir() + "/" + std::string(kind) + "-" + std::string(ifname) + "." +
         std::to_string(st.st_ino);
}

}  // namespace uroce
