/**
 * @file http_server.cc
 * @brief Server on civetweb (see http_server.h).
 */
#include "mgmt/http_server.h"

#include <civetweb.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace uroce::mgmt {

namespace {

void send(mg_connection* conn, const Response& r) {
  const char* reason = mg_get_response_code_text(conn, r.status);
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n",
            r.status, reason ? reason : "", r.content_type.c_str(), r.body.size());
  mg_write(conn, r.body.data(), r.body.size());
}

/// Connects to (and drops) the server's own listening socket.
void wake_listener(const std::string& listen, uint16_t port) {
  std::string host = listen.substr(0, listen.rfind(':'));
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* ai = nullptr;
  if (getaddrinfo(host.empty() ? "127.0.0.1" : host.c_str(), std::to_string(port).c_str(), &hints,
                  &ai) != 0)
    return;
  const int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    (void)connect(fd, ai->ai_addr, ai->ai_addrlen);
    close(fd);
  }
  freeaddrinfo(ai);
}

}  // namespace

Response error(int status, std::string_view what) {
  return Response{status, nlohmann::json{{"error", std::string(what)}}.dump(), "application/json"};
}

bool query_flag(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = kv.find('=');
    if (kv.substr(0, eq) != key) continue;
    std::string_view v = eq == std::string_view::npos ? std::string_view("1") : kv.substr(eq + 1);
    return v == "1" || v == "true";
  }
  return false;
}

bool token_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i)
    d = static_cast<unsigned char>(
        d | (static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i])));
  return d == 0;
}

bool read_token_file(const std::string& path, std::string* token, std::string* err) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    *err = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
      (st.st_mode & 077) != 0) {
    *err = path + ": a token file must be a regular file of root (or this user) with mode 0600";
    return false;
  }
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  if (line.size() < 16) {
    *err = path + ": the token (first line) is shorter than 16 characters";
    return false;
  }
  *token = std::move(line);
  return true;
}

std::unique_ptr<Server> Server::start(const ServerOptions& o, Handler h, std::string* err) {
  std::unique_ptr<Server> s(new Server());
  s->o_ = o;
  s->handler_ = std::move(h);
  const std::string threads = std::to_string(o.threads);
  const std::string timeout = std::to_string(o.request_timeout_ms);
  const char* options[] = {
      "listening_ports", o.listen.c_str(),    "num_threads", threads.c_str(), "request_timeout_ms",
      timeout.c_str(),   "enable_keep_alive", "no",          nullptr};
  mg_callbacks cb{};
  s->ctx_ = mg_start(&cb, nullptr, options);
  if (!s->ctx_) {
    *err = "cannot listen on " + o.listen + " (address in use or not this host's?)";
    return nullptr;
  }
  mg_server_port ports[4]{};
  if (mg_get_server_ports(s->ctx_, 4, ports) < 1) {
    *err = "cannot read the listening port of " + o.listen;
    return nullptr;
  }
  s->port_ = static_cast<uint16_t>(ports[0].port);
  mg_set_request_handler(s->ctx_, "/", &Server::on_request, s.get());
  return s;
}

Server::~Server() {
  if (!ctx_) return;
  // mg_stop waits for civetweb's listener, which polls in 2 s steps; a connection wakes it.
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    mg_stop(ctx_);
    stopped.store(true);
  });
  while (!stopped.load()) {
    wake_listener(o_.listen, port_);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stopper.join();
}

int Server::on_request(mg_connection* conn, void* self_ptr) {
  auto* self = static_cast<Server*>(self_ptr);
  const mg_request_info* ri = mg_get_request_info(conn);
  Request req;
  req.method = ri->request_method ? ri->request_method : "";
  req.path = ri->local_uri ? ri->local_uri : "";
  req.query = ri->query_string ? ri->query_string : "";
  const bool read_only = req.method == "GET" || req.method == "HEAD";
  if (!read_only) {
    const char* auth = mg_get_header(conn, "Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (!auth || std::strncmp(auth, kBearer.data(), kBearer.size()) != 0) {
      send(conn, error(401, "writes need \"Authorization: Bearer <token>\""));
      return 401;
    }
    if (self->o_.token.empty() || !token_equal(auth + kBearer.size(), self->o_.token)) {
      send(conn, error(403, self->o_.token.empty() ? "this node accepts no writes (no token)"
                                                   : "wrong token"));
      return 403;
    }
  }
  if (ri->content_length > static_cast<long long>(self->o_.max_body)) {
    send(conn, error(413, "body larger than " + std::to_string(self->o_.max_body) + " bytes"));
    return 413;
  }
  // Read up to one byte past the limit (a body without Content-Length is read to its end).
  std::vector<char> buf(self->o_.max_body + 1);
  size_t got = 0;
  while (got < buf.size()) {
    const int n = mg_read(conn, buf.data() + got, buf.size() - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > self->o_.max_body) {
    send(conn, error(413, "body larger than " + std::to_string(self->o_.max_body) + " bytes"));
    return 413;
  }
  req.body.assign(buf.data(), got);
  Response r;
  try {
    r = self->handler_(req);
  } catch (const std::exception& e) {
    r = error(500, e.what());
  }
  send(conn, r);
  return r.status;
}

}  // namespace uroce::mgmt
