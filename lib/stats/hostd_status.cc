/**
 * @file hostd_status.cc
 * @brief uroce-hostd's status file (hostd_status.h): JSON with nlohmann::json.
 */
#include "stats/hostd_status.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "stats/proc.h"

namespace uroce::stats {
namespace {

using Json = nlohmann::json;
constexpr std::string_view kPrefix = "uroce-hostd.";
constexpr std::string_view kSuffix = ".json";

Json worker_json(const HostdWorkerStatus& w) {
  return Json{{"id", w.id},     {"frames_in", w.frames_in},   {"frames_out", w.frames_out},
              {"busy", w.busy}, {"tx_backlog", w.tx_backlog}, {"rx_backlog", w.rx_backlog}};
}

Json client_json(const HostdClientStatus& c) {
  return Json{{"slot", c.slot},
              {"worker", c.worker},
              {"pid", c.pid},
              {"uid", c.uid},
              {"command", c.command},
              {"device", c.device},
              {"to_client", c.to_client},
              {"from_client", c.from_client},
              {"to_wire", c.to_wire},
              {"switched", c.switched},
              {"dropped", c.dropped},
              {"cm_refused", c.cm_refused},
              {"refused", c.refused},
              {"rx_depth", c.rx_depth},
              {"tx_depth", c.tx_depth}};
}

/// Reads j[key] into *out; throws (caught by the caller) when it is missing or not a value of
/// T: an integer of T's range (no float, no conversion), a number for a double, a string.
template <typename T>
void get(const Json& j, const char* key, T* out) {
  const Json& v = j.at(key);
  if constexpr (std::is_same_v<T, std::string>) {
    *out = v.get<std::string>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) throw std::invalid_argument(std::string(key) + ": not a number");
    *out = v.get<double>();
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > std::numeric_limits<T>::max())
      throw std::invalid_argument(std::string(key) + ": not an unsigned integer in range");
    *out = static_cast<T>(v.get<uint64_t>());
  } else {
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<T>::min() ||
        v.get<int64_t>() > std::numeric_limits<T>::max())
      throw std::invalid_argument(std::string(key) + ": not an integer in range");
    *out = static_cast<T>(v.get<int64_t>());
  }
}

}  // namespace

std::string hostd_status_path(const std::string& run_dir, std::string_view netdev, pid_t pid) {
  return run_dir + "/" + std::string(kPrefix) + std::string(netdev) + "." + std::to_string(pid) +
         std::string(kSuffix);
}

std::string to_json(const HostdStatus& s) {
  Json j{{"netdev", s.netdev}, {"pid", s.pid}, {"start_time", s.start_time}};
  Json& workers = j["workers"] = Json::array();
  for (const HostdWorkerStatus& w : s.workers) workers.push_back(worker_json(w));
  Json& clients = j["clients"] = Json::array();
  for (const HostdClientStatus& c : s.clients) clients.push_back(client_json(c));
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<HostdStatus> hostd_status_from_json(std::string_view text, std::string* err) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *err = "not a JSON object";
    return std::nullopt;
  }
  try {
    HostdStatus s;
    get(j, "netdev", &s.netdev);
    get(j, "pid", &s.pid);
    get(j, "start_time", &s.start_time);
    for (const Json& w : j.at("workers")) {
      HostdWorkerStatus x;
      get(w, "id", &x.id);
      get(w, "frames_in", &x.frames_in);
      get(w, "frames_out", &x.frames_out);
      get(w, "busy", &x.busy);
      get(w, "tx_backlog", &x.tx_backlog);
      get(w, "rx_backlog", &x.rx_backlog);
      s.workers.push_back(x);
    }
    for (const Json& c : j.at("clients")) {
      HostdClientStatus x;
      get(c, "slot", &x.slot);
      get(c, "worker", &x.worker);
      get(c, "pid", &x.pid);
      get(c, "uid", &x.uid);
      get(c, "command", &x.command);
      get(c, "device", &x.device);
      get(c, "to_client", &x.to_client);
      get(c, "from_client", &x.from_client);
      get(c, "to_wire", &x.to_wire);
      get(c, "switched", &x.switched);
      get(c, "dropped", &x.dropped);
      get(c, "cm_refused", &x.cm_refused);
      for (const auto& [why, n] : c.at("refused").items()) {
        if (!n.is_number_unsigned()) throw std::invalid_argument("refused: not a count");
        x.refused[why] = n.get<uint64_t>();
      }
      get(c, "rx_depth", &x.rx_depth);
      get(c, "tx_depth", &x.tx_depth);
      s.clients.push_back(std::move(x));
    }
    return s;
  } catch (const std::exception& e) {
    *err = e.what();
    return std::nullopt;
  }
}

bool write_hostd_status(const std::string& path, const HostdStatus& s, std::string* err) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << to_json(s) << "\n";
    if (!out) {
      *err = tmp + ": " + std::strerror(errno);
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    *err = path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::vector<HostdStatus> read_hostd_statuses(const std::string& dir_in,
                                             std::vector<std::string>* errors) {
  const std::string dir = run_dir(dir_in);
  std::vector<HostdStatus> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) continue;
    const std::string path = dir + "/" + std::string(name);
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    std::string err;
    auto s = hostd_status_from_json(text.str(), &err);
    if (!s) {
      errors->push_back(path + ": " + err);
      continue;
    }
    if (s->pid <= 0 || !process_alive(s->pid, s->start_time)) {  // a daemon that was killed
      ::unlink(path.c_str());
      continue;
    }
    out.push_back(std::move(*s));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(),
            [](const HostdStatus& a, const HostdStatus& b) { return a.netdev < b.netdev; });
  return out;
}

}  // namespace uroce::stats
