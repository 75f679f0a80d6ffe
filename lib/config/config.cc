/**
 * @file config.cc
 * @brief Finding the configuration file (config.h lookup order) and the built-in default.
 */
#include "config/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace uroce::config {

namespace {

/// Reads a whole file; false when it cannot be opened.
bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream os;
  os << in.rdbuf();
  *out = os.str();
  return !in.bad();
}

}  // namespace

std::string_view to_string(Device::LossRecovery r) {
  return r == Device::LossRecovery::kSelective ? "selective" : "go-back-n";
}

CcAlgorithm cc_in_force(const Device& dev) {
  using Cc = CcAlgorithm;
  if (dev.dcqcn.enabled) return dev.congestion_control;
  if (dev.congestion_control == Cc::kDcqcn) return Cc::kOff;
  if (dev.congestion_control == Cc::kDcqcnDelay) return Cc::kDelay;
  return dev.congestion_control;
}

Config builtin() {
  Config cfg;
  cfg.source = "built-in";
  Device dev;
  dev.name = "uroce0";
  dev.port = "loopback";
  dev.mtu = 1024;
  Address a;
  a.gid = Gid::from_ipv4(0xc6120001);  // 198.18.0.1
  a.prefix = 15;
  dev.addresses.push_back(a);
  cfg.devices.push_back(std::move(dev));
  return cfg;
}

std::optional<Config> load(std::string* err) {
  std::string text;
  if (const char* env = std::getenv("UROCE_CONFIG"); env && *env) {
    // An explicitly named file must exist: silently falling back would hide a typo.
    if (!read_file(env, &text)) {
      if (err)
        *err = std::string(env) +
               ": UROCE_CONFIG: cannot read the file; allowed: a readable TOML file";
      return std::nullopt;
    }
    return parse(text, env, err);
  }
  for (const char* path : {"./uroce.toml", "/etc/uroce/uroce.toml"})
    if (read_file(path, &text)) return parse(text, path, err);
  return builtin();
}

}  // namespace uroce::config
