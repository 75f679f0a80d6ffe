/**
 * @file hostd_status.cc
 * @brief Fuzz target: uroce-hostd's status file as `uroce show` and the exporter read it
 * (stats::hostd_status_from_json, lib/stats/hostd_status.h): anyone may write into the run
 * directory, so any bytes must give a status or a refusal, never a crash; a status read
 * back is written again and reads the same.
 */
#include "stats/hostd_status.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string err;
  auto s = uroce::stats::hostd_status_from_json(
      std::string_view(reinterpret_cast<const char*>(data), size), &err);
  if (!s) return 0;
  const std::string again = uroce::stats::to_json(*s);
  auto back = uroce::stats::hostd_status_from_json(again, &err);
  if (!back || uroce::stats::to_json(*back) != again) std::abort();
  return 0;
}
