/**
 * @file hostd_ctl.cc
 * @brief hostd_start() / hostd_stop() (hostd_ctl.h).
 */
#include "hostd_ctl.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "profile_cmd.h"
#include "shm/control.h"

namespace uroce::tool {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kWait = std::chrono::seconds(10);
constexpr auto kLook = std::chrono::milliseconds(20);

std::string unit(const std::string& netdev) { return "uroce-hostd@" + netdev + ".service"; }

/// Runs argv, waits; its exit status, or -1 when it could not run.
int run(const std::vector<std::string>& argv) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> a;
    for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/// uroce-hostd beside this program (a build's bin/, or the package's), else from PATH.
std::string hostd_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto p = self.parent_path() / "uroce-hostd";
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "uroce-hostd";
}

/// pid runs (a zombie its parent has not reaped yet has ended).
bool running(pid_t pid) {
  std::string s;
  if (!read_text("/proc/" + std::to_string(pid) + "/stat", &s)) return false;
  const size_t paren = s.rfind(')');
  return paren != std::string::npos && paren + 2 < s.size() && s[paren + 2] != 'Z';
}

std::string tail(const std::string& path, size_t max = 600) {
  std::string s;
  read_text(path, &s);
  if (s.size() > max) s = s.substr(s.size() - max);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

/// Waits until cond() or kWait; `alive` returning false ends the wait early.
template <class Cond, class Alive = bool (*)()>
bool wait_for(
    Cond cond, Alive alive = [] { return true; }) {
  const auto end = Clock::now() + kWait;
  while (Clock::now() < end) {
    if (cond()) return true;
    if (!alive()) return cond();
    std::this_thread::sleep_for(kLook);  // polling a condition with a deadline
  }
  return cond();
}

bool start_direct(const std::string& netdev, std::string* how, std::string* err) {
  const std::string base = shm::hostd_base(netdev);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(base).parent_path(), ec);
  const std::string log = base + ".log";
  const std::string exe = hostd_path();
  const pid_t pid = fork();
  if (pid < 0) {
    *err = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid == 0) {
    setsid();  // outlives this command and its terminal
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in >= 0) dup2(in, 0);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    for (int fd = 3; fd < 1024; ++fd) close(fd);
    execlp(exe.c_str(), exe.c_str(), "--netdev", netdev.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "uroce: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  int st = 0;
  bool exited = false;
  const bool up = wait_for([&] { return shm::hostd_running(netdev); },
                           [&] {
                             exited = waitpid(pid, &st, WNOHANG) == pid;
                             return !exited;
                           });
  if (!up) {
    if (!exited) kill(pid, SIGTERM);
    *err = "uroce-hostd for " + netdev + " did not start (" + log + "): " + tail(log);
    return false;
  }
  *how = "uroce-hostd started for " + netdev + ", pid " + std::to_string(pid) + ", log " + log;
  return true;
}

}  // namespace

HostdManager resolve(HostdManager m) {
  if (m != HostdManager::kAuto) return m;
  return access("/run/systemd/system", F_OK) == 0 ? HostdManager::kSystemd : HostdManager::kDirect;
}

bool parse_hostd_manager(const std::string& s, HostdManager* out) {
  if (s == "auto")
    *out = HostdManager::kAuto;
  else if (s == "systemd")
    *out = HostdManager::kSystemd;
  else if (s == "direct")
    *out = HostdManager::kDirect;
  else if (s == "none")
    *out = HostdManager::kNone;
  else
    return false;
  return true;
}

pid_t hostd_pid(const std::string& netdev) {
  if (!shm::hostd_running(netdev)) return 0;
  std::ifstream in(shm::hostd_base(netdev) + ".lock");
  long pid = 0;
  return (in >> pid) && pid > 0 ? static_cast<pid_t>(pid) : 0;
}

bool hostd_start(const std::string& netdev, HostdManager m, std::string* how, std::string* err) {
  m = resolve(m);
  if (m == HostdManager::kNone) {
    *how = "no uroce-hostd started (--daemon none): each process opens " + netdev +
           " itself, one at a time";
    return true;
  }
  if (shm::hostd_running(netdev)) {
    *how = "uroce-hostd serves " + netdev + " already, pid " + std::to_string(hostd_pid(netdev));
    return true;
  }
  if (m == HostdManager::kDirect) return start_direct(netdev, how, err);
  // Enabled as well as started: the device stays in the configuration across reboots, and so
  // does its daemon (the unit waits for the netdev to appear).
  if (run({"systemctl", "enable", "--now", unit(netdev)}) != 0) {
    *err =
        "systemctl enable --now " + unit(netdev) + " failed (journalctl -u " + unit(netdev) + ")";
    return false;
  }
  if (!wait_for([&] { return shm::hostd_running(netdev); })) {
    *err = unit(netdev) + " started but does not serve " + netdev + " (journalctl -u " +
           unit(netdev) + ")";
    return false;
  }
  *how = unit(netdev) + " enabled and started, pid " + std::to_string(hostd_pid(netdev));
  return true;
}

bool hostd_stop(const std::string& netdev, HostdManager m, std::string* how, std::string* err) {
  m = resolve(m);
  if (m == HostdManager::kNone) return true;
  // The device is removed, as `rdma link delete` removes an rxe device: SIGUSR2 makes the
  // daemon end every client's session for good (each device gone at once) and send a DREQ for
  // each connection, then exit 0 (no restart by systemd). SIGTERM would keep the clients
  // waiting for a next daemon (a restart).
  const pid_t pid = hostd_pid(netdev);
  if (pid != 0) {
    kill(pid, SIGUSR2);
    auto gone = [&] { return !shm::hostd_running(netdev) && !running(pid); };
    if (!wait_for(gone)) {
      kill(pid, SIGKILL);
      if (!wait_for(gone)) {
        *err = "uroce-hostd pid " + std::to_string(pid) + " for " + netdev + " does not stop";
        return false;
      }
    }
  }
  if (m == HostdManager::kSystemd && run({"systemctl", "disable", "--now", unit(netdev)}) != 0) {
    *err = "systemctl disable --now " + unit(netdev) + " failed";
    return false;
  }
  if (pid == 0) {
    if (m == HostdManager::kSystemd) *how = unit(netdev) + " disabled and stopped";
    return true;
  }
  *how = "uroce-hostd for " + netdev + " (pid " + std::to_string(pid) + ") stopped" +
         (m == HostdManager::kSystemd ? ", " + unit(netdev) + " disabled" : "");
  return true;
}

}  // namespace uroce::tool
