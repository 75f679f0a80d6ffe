/**
 * @file cc_algorithm.h
 * @brief Which congestion-control reaction a device's QPs run: the configuration's
 * `congestion_control`, lib/cc's factory, the stats segment's QP records and the tools share
 * this one enum and its names.
 */
#pragma once

#include <cstdint>
#include <string_view>

namespace uroce {

/// kDcqcnDelay runs both and sends at the lower of the two rates: DCQCN where switches mark
/// ECN, the delay-based control where they do not.
enum class CcAlgorithm : uint8_t { kOff, kDcqcn, kDelay, kDcqcnDelay };

/// Names by CcAlgorithm value, as the configuration spells them.
inline constexpr std::string_view kCcAlgorithmNames[] = {"off", "dcqcn", "delay", "dcqcn+delay"};

constexpr std::string_view to_string(CcAlgorithm a) {
  const auto i = static_cast<size_t>(a);
  return i < std::size(kCcAlgorithmNames) ? kCcAlgorithmNames[i] : "?";
}

}  // namespace uroce
