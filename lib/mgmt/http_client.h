/**
 * @file http_client.h
 * @brief The management API's client (libcurl's multi interface): many nodes' requests at
 * once, each with its own deadline, so one view of a fabric costs about one round trip and a
 * dead node costs its timeout, not the sum of everyone's.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::mgmt {

struct Call {
  std::string method = "GET";
  std::string url;    ///< "http://198.18.0.1:7480/v1/state"
  std::string body;   ///< sent as application/json when not empty (or for non-GET methods)
  std::string token;  ///< "Authorization: Bearer <token>" when not empty
};

struct Result {
  int status = 0;     ///< HTTP status; 0: no answer (error says why)
  std::string body;   ///< the answer's body (at most 16 MiB kept)
  std::string error;  ///< transport failure: refused, timed out, ...
  bool ok() const { return status >= 200 && status < 300; }
};

/// Performs every call, at most `parallel` at a time, each bounded by timeout_ms; results in
/// the calls' order.
std::vector<Result> perform_all(const std::vector<Call>& calls, uint32_t timeout_ms,
                                size_t parallel = 64);

/// One call.
Result perform(const Call& call, uint32_t timeout_ms);

}  // namespace uroce::mgmt
