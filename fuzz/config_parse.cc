/**
 * @file config_parse.cc
 * @brief libFuzzer target: arbitrary text as a uroce.toml. config::parse() must either return a
 * configuration whose values are within the ranges docs/configuration.md gives, or refuse with
 * exactly one line naming the file; it never throws, crashes or trips a sanitizer.
 */
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/config.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool valid_mtu(uint32_t mtu) {
  return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string err;
  const auto cfg = uroce::config::parse(text, "fuzz.toml", &err);
  if (!cfg) {
    check(!err.empty());
    check(err.find('\n') == std::string::npos);
    check(err.rfind("fuzz.toml", 0) == 0);
    return 0;
  }
  for (const auto& d : cfg->devices) {
    check(!d.name.empty());
    check(valid_mtu(d.mtu));
    check(d.queues >= 1 && d.queues <= 16);
    check(d.roce_dscp < 64 && d.cnp_dscp < 64);
    for (uint8_t p : d.dscp_to_prio) check(p < 8);
    check(d.dcqcn.mode == "nvidia" || d.dcqcn.mode == "paper");
    check(d.dcqcn.max_burst_bytes <= 16777216);
  }
  return 0;
}
