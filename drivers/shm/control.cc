/**
 * @file control.cc
 * @brief The control protocol's paths, descriptor passing and the client's handshake
 * (control.h).
 */
#include "shm/control.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/run_path.h"

namespace uroce::shm {

std::string hostd_base(std::string_view ifname) { return netdev_run_path("hostd", ifname); }

bool hostd_running(std::string_view ifname) {
  const std::string base = hostd_base(ifname);
  // The daemon's lock: a socket left by a killed daemon does not count.
  int lock = ::open((base + ".lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (lock < 0) return false;
  const bool held = ::flock(lock, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(lock);
  struct stat st {};
  return held && ::stat((base + ".sock").c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

int send_msg(int sock, const void* msg, size_t len, std::span<const int> fds) {
  iovec iov{const_cast<void*>(msg), len};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 8)] = {};
  if (!fds.empty()) {
    if (fds.size() > 8) return EINVAL;
    mh.msg_control = ctl;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  const ssize_t n = ::sendmsg(sock, &mh, MSG_NOSIGNAL);
  if (n < 0) return errno;
  return static_cast<size_t>(n) == len ? 0 : EMSGSIZE;
}

long recv_msg(int sock, void* buf, size_t cap, std::span<int> fds, size_t* nfds) {
  *nfds = 0;
  iovec iov{buf, cap};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  alignas(cmsghdr) char ctl[CMSG_SPACE(sizeof(int) * 8)] = {};
  mh.msg_control = ctl;
  mh.msg_controllen = sizeof ctl;
  const ssize_t n = ::recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
  if (n < 0) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < k; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (*nfds < fds.size()) {
        fds[(*nfds)++] = fd;
      } else {
        ::close(fd);
      }
    }
  }
  if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (size_t i = 0; i < *nfds; ++i) ::close(fds[i]);
    *nfds = 0;
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

std::optional<Request> parse_request(std::span<const uint8_t> msg) {
  Request r;
  if (msg.size() != sizeof r) return std::nullopt;
  std::memcpy(&r, msg.data(), sizeof r);
  if (r.h.magic != kMagic || r.h.type != MsgType::kRequest || r.h.version != kProtocolVersion ||
      r.h.reserved != 0 || r.reserved != 0)
    return std::nullopt;
  const auto op = static_cast<uint32_t>(r.op);
  if (op < 1 || op > kOpLast) return std::nullopt;
  const bool gid_zero =
      std::all_of(std::begin(r.gid), std::end(r.gid), [](uint8_t b) { return !b; });
  switch (r.op) {
    case Op::kBind:
    case Op::kListen:
    case Op::kRelease:
      if (r.qpn || r.dqpn || r.sport) return std::nullopt;
      break;
    case Op::kConnect:
      if (r.ps || r.port || r.qpn > 0xffffff || r.dqpn > 0xffffff) return std::nullopt;
      break;
    case Op::kDisconnect:
      if (r.ps || r.port || r.dqpn || r.sport || !gid_zero || r.qpn > 0xffffff) return std::nullopt;
      break;
  }
  return r;
}

std::optional<uint32_t> hello_version(std::span<const uint8_t> msg) {
  MsgHeader h;
  if (msg.size() < sizeof h) return std::nullopt;
  std::memcpy(&h, msg.data(), sizeof h);
  if (h.magic != kMagic || h.type != MsgType::kHello) return std::nullopt;
  return h.version;
}

std::optional<Hello> parse_hello(std::span<const uint8_t> msg) {
  Hello h;
  if (msg.size() != sizeof h) return std::nullopt;
  std::memcpy(&h, msg.data(), sizeof h);
  if (h.h.magic != kMagic || h.h.type != MsgType::kHello || h.h.version != kProtocolVersion ||
      h.h.reserved != 0 || h.reserved != 0 || h.resume_block > 0xffffff ||
      std::find(std::begin(h.device), std::end(h.device), '\0') == std::end(h.device))
    return std::nullopt;
  return h;
}

std::optional<std::string> parse_refused(std::span<const uint8_t> msg) {
  Refused r;
  if (msg.size() != sizeof r) return std::nullopt;
  std::memcpy(&r, msg.data(), sizeof r);
  if (r.h.magic != kMagic || r.h.type != MsgType::kRefused ||
      std::find(std::begin(r.reason), std::end(r.reason), '\0') == std::end(r.reason))
    return std::nullopt;
  return std::string(r.reason);
}

int request(int sock, Request req, std::string* refused) {
  if (int e = send_msg(sock, &req, sizeof req); e != 0) return e;
  union {
    Reply rep;
    Refused ref;
  } m{};
  size_t nfds = 0;
  const long n = recv_msg(sock, &m, sizeof m, {}, &nfds);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? ETIMEDOUT : errno;
  if (n == 0) return ECONNRESET;
  if (auto why = parse_refused(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&m), static_cast<size_t>(n)))) {
    if (refused) *refused = *why;
    return ESHUTDOWN;
  }
  const Reply& rep = m.rep;
  if (static_cast<size_t>(n) != sizeof rep || rep.h.magic != kMagic ||
      rep.h.type != MsgType::kReply || rep.seq != req.seq || rep.error < 0)
    return EPROTO;
  return rep.error;
}

std::optional<Session> connect_daemon(std::string_view ifname, std::string_view device,
                                      std::string* err, uint32_t resume_block, bool* refused) {
  if (refused) *refused = false;
  const std::string path = hostd_base(ifname) + ".sock";
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) {
    *err = "socket path too long: " + path;
    return std::nullopt;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  Session s;
  s.sock = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  auto fail = [&](const std::string& what) -> std::optional<Session> {
    *err = what;
    if (s.sock >= 0) ::close(s.sock);
    return std::nullopt;
  };
  if (s.sock < 0) return fail(std::string("socket: ") + std::strerror(errno));
  if (::connect(s.sock, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return fail("cannot connect to " + path + ": " + std::strerror(errno));
  timeval tv{5, 0};
  ::setsockopt(s.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  Hello hello;
  const size_t n = std::min(device.size(), sizeof hello.device - 1);
  std::memcpy(hello.device, device.data(), n);
  hello.resume_block = resume_block;
  if (int e = send_msg(s.sock, &hello, sizeof hello); e != 0)
    return fail(std::string("sending hello: ") + std::strerror(e));
  union {
    Welcome w;
    Refused r;
  } m{};
  int fds[kWelcomeFds];
  size_t nfds = 0;
  const long got = recv_msg(s.sock, &m, sizeof m, fds, &nfds);
  auto close_fds = [&] {
    for (size_t i = 0; i < nfds; ++i) ::close(fds[i]);
  };
  if (got <= 0)
    return fail(got == 0 ? "the daemon closed the connection without an answer (a uroce-hostd "
                           "older than protocol version 3 does so)"
                         : std::string("no answer from the daemon: ") + std::strerror(errno));
  if (auto why = parse_refused(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(&m),
                                                        static_cast<size_t>(got)))) {
    close_fds();
    if (refused) *refused = true;
    return fail("refused: " + *why);
  }
  if (static_cast<size_t>(got) != sizeof(Welcome) || m.w.h.magic != kMagic ||
      m.w.h.type != MsgType::kWelcome || m.w.h.version != kProtocolVersion || nfds != kWelcomeFds) {
    close_fds();
    return fail("the daemon speaks another protocol (this process: version " +
                std::to_string(kProtocolVersion) + ")");
  }
  s.welcome = m.w;
  s.region_fd = fds[0];
  s.client_bell = fds[1];
  s.daemon_bell = fds[2];
  return s;
}

}  // namespace uroce::shm
