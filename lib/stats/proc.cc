/**
 * @file proc.cc
 * @brief /proc-based process identity and segment naming (proc.h).
 */
#include "stats/proc.h"

#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace uroce::stats {

uint64_t process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return 0;
  std::string line;
  std::getline(in, line);
  // Field 2 (comm) is in parentheses and may hold spaces or ')': skip to the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  // After comm come field 3 (state) .. field 22 (starttime): 20 fields.
  for (int i = 3; i <= 22; ++i)
    if (!(rest >> field)) return 0;
  return std::strtoull(field.c_str(), nullptr, 10);
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  if (start_time == 0) return true;
  uint64_t now = process_start_time(pid);
  return now == 0 || now == start_time;  // unreadable /proc (hidepid): trust kill()
}

std::string run_dir(std::string_view explicit_dir) {
  if (!explicit_dir.empty()) return std::string(explicit_dir);
  if (const char* env = std::getenv("UROCE_RUN_DIR"); env && *env) return env;
  return "/dev/shm";
}

std::string segment_name(std::string_view device, pid_t pid) {
  return "uroce." + std::string(device) + "." + std::to_string(pid);
}

bool parse_segment_name(std::string_view name, std::string* device, pid_t* pid) {
  constexpr std::string_view kPrefix = "uroce.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  std::string_view rest = name.substr(kPrefix.size());
  size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  std::string_view dev = rest.substr(0, dot), num = rest.substr(dot + 1);
  if (num.empty() || num.size() > 9) return false;
  for (char c : num)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  for (char c : dev)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  *device = std::string(dev);
  *pid = static_cast<pid_t>(std::strtol(std::string(num).c_str(), nullptr, 10));
  return true;
}

}  // namespace uroce::stats
