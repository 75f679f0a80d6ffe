/**
 * @file cm_mad.cc
 * @brief Fuzz target: transport/wire/cm.h parse_cm_mad() on arbitrary bytes. It never reads
 * past the input, and any MAD it accepts is rebuilt by build_cm_mad() into one that parses
 * to the same message (what the CM would answer from is what it read).
 */
#include <cstdint>
#include <cstdlib>

#include "transport/wire/cm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace uroce::wire::cm;
  ParseError err{};
  auto mad = parse_cm_mad(std::span<const uint8_t>(data, size), &err);
  if (!mad) {
    if (!to_string(err)[0]) std::abort();
    return 0;
  }
  uint8_t out[kMadLen];
  build_cm_mad(*mad, std::span<uint8_t, kMadLen>(out, kMadLen));
  auto again = parse_cm_mad(out);
  if (!again || !(*again == *mad)) std::abort();
  return 0;
}
