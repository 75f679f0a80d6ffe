/**
 * @file rs_table.cc
 * @brief The process's rsockets by number, their defaults (/etc/rdma/rsocket, as rsocket(7)
 * describes), and new sockets.
 */
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

namespace {

std::mutex& table_mu() {
  static std::mutex mu;
  return mu;
}

std::unordered_map<int, SocketPtr>& table() {
  static auto* t = new std::unordered_map<int, SocketPtr>;  // outlives static destructors
  return *t;
}

/// One integer from /etc/rdma/rsocket/<name>; false when the file is absent or unreadable.
bool read_conf(const char* name, uint32_t* v) {
  std::string path = std::string("/etc/rdma/rsocket/") + name;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return false;
  unsigned x = 0;
  bool ok = std::fscanf(f, "%u", &x) == 1;
  std::fclose(f);
  if (ok) *v = x;
  return ok;
}

Defaults load_defaults() {
  Defaults d;
  uint32_t v;
  if (read_conf("polling_time", &v)) d.polling_us = v;
  if (read_conf("inline_default", &v)) d.inline_size = static_cast<uint16_t>(v);
  if (read_conf("sqsize_default", &v)) d.sqsize = static_cast<uint16_t>(v);
  if (read_conf("rqsize_default", &v)) d.rqsize = static_cast<uint16_t>(v);
  if (read_conf("mem_default", &v)) d.mem = v < 1 ? 1 : v;
  if (read_conf("wmem_default", &v)) d.wmem = v < kSndLowat ? kSndLowat << 1 : v;
  if (read_conf("iomap_size", &v)) d.iomap_size = iomap_size_round(v);
  return d;
}

}  // namespace

const Defaults& defaults() {
  static const Defaults d = load_defaults();
  return d;
}

SocketPtr lookup(int fd) {
  std::lock_guard<std::mutex> g(table_mu());
  auto it = table().find(fd);
  return it == table().end() ? nullptr : it->second;
}

void insert(const SocketPtr& s) {
  std::lock_guard<std::mutex> g(table_mu());
  table()[s->fd] = s;
}

void remove(int fd) {
  std::lock_guard<std::mutex> g(table_mu());
  table().erase(fd);
}

SocketPtr alloc(const Socket* inherit) {
  auto s = std::make_shared<Socket>();
  if (inherit) {
    s->sbuf_size = inherit->sbuf_size;
    s->rbuf_size = inherit->rbuf_size;
    s->sq_inline = inherit->sq_inline;
    s->sq_size = inherit->sq_size;
    s->rq_size = inherit->rq_size;
    s->ctrl_max_seqno = inherit->ctrl_max_seqno;
    s->target_iomap_size = inherit->target_iomap_size;
    s->domain = inherit->domain;
  } else {
    const Defaults& d = defaults();
    s->sbuf_size = d.wmem;
    s->rbuf_size = d.mem;
    s->sq_inline = d.inline_size;
    s->sq_size = d.sqsize;
    s->rq_size = d.rqsize;
    s->target_iomap_size = d.iomap_size;
  }
  return s;
}

}  // namespace uroce::rdmacm::rs
