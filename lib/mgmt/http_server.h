/**
 * @file http_server.h
 * @brief The management API's HTTP server (docs/fabric.md "The node API"): civetweb (Debian's
 * libcivetweb, the server prometheus-cpp embeds) parses HTTP; this class adds what every uroce
 * node's API needs the same way: reads (GET) open, every other method only with
 * `Authorization: Bearer <token>` (401 without, 403 with a wrong one, compared in constant
 * time), a bounded body (413), a bounded time per request (a slow client is cut off), and
 * JSON errors `{"error": "..."}`. The handler runs on civetweb's worker threads.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

struct mg_connection;
struct mg_context;

namespace uroce::mgmt {

struct Request {
  std::string method;  ///< "GET", "PATCH", ...
  std::string path;    ///< "/v1/settings"
  std::string query;   ///< the raw query string, "" if none
  std::string body;
};

struct Response {
  int status = 200;
  std::string body;  ///< JSON (or what content_type says)
  std::string content_type = "application/json";
};

/// {"error": what} with status.
Response error(int status, std::string_view what);
/// True when query (a=b&c=d) has key with value "1" or "true".
bool query_flag(std::string_view query, std::string_view key);

using Handler = std::function<Response(const Request&)>;

struct ServerOptions {
  std::string listen;             ///< "ADDR:PORT" (IPv6 as "[ADDR]:PORT"); port 0 picks one
  std::string token;              ///< writes need it; empty: every write is refused (403)
  uint32_t max_body = 64 * 1024;  ///< bytes
  uint32_t request_timeout_ms = 3000;
  int threads = 2;
};

class Server {
 public:
  /// Listening on return; nullptr with *err = one line (address in use, bad address).
  static std::unique_ptr<Server> start(const ServerOptions& o, Handler h, std::string* err);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const { return port_; }

 private:
  Server() = default;
  static int on_request(mg_connection* conn, void* self);

  ServerOptions o_;
  Handler handler_;
  mg_context* ctx_ = nullptr;
  uint16_t port_ = 0;
};

/// The token in file `path`: its first line, at least 16 characters. Refused unless the file
/// is a regular file owned by root or this user with no group or other permission bits.
bool read_token_file(const std::string& path, std::string* token, std::string* err);

/// a == b, in time that depends on their lengths only.
bool token_equal(std::string_view a, std::string_view b);

}  // namespace uroce::mgmt
