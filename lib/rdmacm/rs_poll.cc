/**
 * @file rs_poll.cc
 * @brief rpoll and rselect over rsockets and ordinary descriptors together (rsocket(7)).
 *
 * An rsocket is readable when data waits or its peer shut its side down (POLLIN), writable
 * when a message can go (POLLOUT), POLLHUP once disconnected and its data read (rdma-core
 * reports the hang-up at once, which fails a reader that treats POLLHUP as an error while
 * data is still queued: rstream -T a), POLLERR on error or a failed connect; a listener is readable
 * when a connection request waits; a connecting socket is advanced by the poll itself. Ordinary
 * descriptors are polled as poll(2) would.
 *
 * rpoll first checks every descriptor without sleeping for defaults().polling_us, then arms
 * each rsocket (its CQ's completion channel once connected, its event channel before) and
 * sleeps in poll(2) on those and the ordinary descriptors. Events that concern no caller
 * (credit updates, connection steps) are processed and the sleep resumes.
 */
#include <poll.h>
#include <sys/select.h>

#include <chrono>
#include <vector>

#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

short poll_rs(Socket& s, short events, bool nonblock, Test test) {
  std::unique_lock<std::mutex> lk(s.mu);
  for (int round = 0; round < 2; ++round) {
    if ((s.state & kConnected) || s.state == kDisconnected || (s.state & kError)) {
      process_cq(s, lk, nonblock, test);
      short rev = 0;
      if ((events & POLLIN) && conn_have_rdata(s)) rev |= POLLIN;
      if ((events & POLLOUT) && can_send(s)) rev |= POLLOUT;
      // Data that came before the peer's disconnect is read first (as TCP reports POLLIN
      // before its hang-up); the hang-up shows once it is read.
      if (!(s.state & kConnected) && !s.have_rdata())
        rev |= s.state == kDisconnected ? POLLHUP : POLLERR;
      return rev;
    }
    if (s.state == kListening) {
      pollfd p{s.cm->channel->fd, events, 0};
      poll(&p, 1, 0);
      return p.revents;
    }
    if (!(s.state & kOpening)) break;
    if (do_connect(s)) {
      if (errno == EINPROGRESS) return 0;
      break;  // kConnectError
    }
  }
  if (s.state == kConnectError) return static_cast<short>((events & (POLLIN | POLLOUT)) | POLLERR);
  return 0;
}

namespace {

int check_all(pollfd* fds, nfds_t n) {
  int cnt = 0;
  for (nfds_t i = 0; i < n; ++i) {
    if (SocketPtr s = lookup(fds[i].fd))
      fds[i].revents = poll_rs(*s, fds[i].events, true, poll_all);
    else
      poll(&fds[i], 1, 0);
    if (fds[i].revents) cnt++;
  }
  return cnt;
}

/// Arms every rsocket and fills rfds with what to sleep on; the number of descriptors
/// already ready (then nothing needs to sleep).
int arm_all(std::vector<pollfd>& rfds, pollfd* fds, nfds_t n) {
  int cnt = 0;
  for (nfds_t i = 0; i < n; ++i) {
    rfds[i] = {fds[i].fd, fds[i].events, 0};
    SocketPtr s = lookup(fds[i].fd);
    if (!s) continue;
    fds[i].revents = poll_rs(*s, fds[i].events, false, is_cq_armed);
    if (fds[i].revents) cnt++;
    std::lock_guard<std::mutex> g(s->mu);
    rfds[i].fd = s->state >= kConnected && s->cq_channel ? s->cq_channel->fd : s->cm->channel->fd;
    rfds[i].events = POLLIN;
  }
  return cnt;
}

int take_events(std::vector<pollfd>& rfds, pollfd* fds, nfds_t n) {
  int cnt = 0;
  for (nfds_t i = 0; i < n; ++i) {
    if (!rfds[i].revents) continue;
    if (SocketPtr s = lookup(fds[i].fd)) {
      {
        std::lock_guard<std::mutex> w(s->wait_mu);
        get_cq_event(*s);
      }
      fds[i].revents = poll_rs(*s, fds[i].events, true, poll_all);
    } else {
      fds[i].revents = rfds[i].revents;
    }
    if (fds[i].revents) cnt++;
  }
  return cnt;
}

}  // namespace
}  // namespace uroce::rdmacm::rs

using namespace uroce::rdmacm::rs;

UROCE_CM_EXPORT int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::microseconds(defaults().polling_us);
  do {
    int n = check_all(fds, nfds);
    if (n || timeout == 0) return n;
  } while (clock::now() < until);
  std::vector<pollfd> rfds(nfds);
  for (;;) {
    if (int n = arm_all(rfds, fds, nfds)) return n;
    int r = poll(rfds.data(), nfds, timeout);
    if (r <= 0) return r;
    if (int n = take_events(rfds, fds, nfds)) return n;
  }
}

UROCE_CM_EXPORT int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds,
                            timeval* timeout) {
  std::vector<pollfd> fds;
  for (int fd = 0; fd < nfds; ++fd) {
    pollfd p{fd, 0, 0};
    if (readfds && FD_ISSET(fd, readfds)) p.events |= POLLIN;
    if (writefds && FD_ISSET(fd, writefds)) p.events |= POLLOUT;
    if (p.events || (exceptfds && FD_ISSET(fd, exceptfds))) fds.push_back(p);
  }
  const int ms = timeout ? static_cast<int>(timeout->tv_sec * 1000 + timeout->tv_usec / 1000) : -1;
  int r = rpoll(fds.data(), fds.size(), ms);
  if (readfds) FD_ZERO(readfds);
  if (writefds) FD_ZERO(writefds);
  if (exceptfds) FD_ZERO(exceptfds);
  if (r <= 0) return r;
  int cnt = 0;
  for (const pollfd& p : fds) {
    if (readfds && (p.revents & (POLLIN | POLLHUP))) {
      FD_SET(p.fd, readfds);
      cnt++;
    }
    if (writefds && (p.revents & POLLOUT)) {
      FD_SET(p.fd, writefds);
      cnt++;
    }
    if (exceptfds && (p.revents & ~(POLLIN | POLLOUT))) {
      FD_SET(p.fd, exceptfds);
      cnt++;
    }
  }
  return cnt;
}
