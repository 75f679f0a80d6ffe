/**
 * @file rs_io.cc
 * @brief Moving data on a connected rsocket: rsend/rsendv (rwrite, rwritev, rsendto,
 * rsendmsg) and rrecv (rread, rreadv, rrecvfrom, rrecvmsg), with send(2)/recv(2) semantics:
 * MSG_DONTWAIT or O_NONBLOCK make a call that cannot move a byte fail with EWOULDBLOCK,
 * MSG_WAITALL waits for the whole length, MSG_PEEK reads without consuming; a peer's shutdown
 * reads as end of stream (0) once its data is read; sending after the peer closed fails with
 * ECONNRESET. A call that moved some bytes returns their number even when it then fails.
 *
 * A send goes out in messages of at most kMaxTransfer bytes, starting at kOlapStartSize and
 * doubling, so the first bytes leave early; each fits the peer's current target SGE and our
 * free send buffer. Up to the inline size it is posted inline from the caller's buffer;
 * larger ones are copied into the send ring.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

namespace {

/// Sockets still opening take their next connection step first; EAGAIN while waiting.
bool ready(Socket& s) {
  std::lock_guard<std::mutex> g(s.mu);
  if (!(s.state & kOpening)) {
    if (!s.cq) {
      errno = ENOTCONN;
      return false;
    }
    return true;
  }
  if (do_connect(s)) {
    if (errno == EINPROGRESS) errno = EAGAIN;
    return false;
  }
  return true;
}

/// The bytes of one iovec array as a flat source: copy(dst, from, n).
struct IovSource {
  const iovec* iov;
  int cnt;
  size_t base = 0;  ///< stream offset where this chunk starts
  void copy(uint8_t* dst, size_t from, size_t n) const {
    size_t pos = 0;
    for (int i = 0; i < cnt && n; ++i) {
      const size_t len = iov[i].iov_len;
      if (from < pos + len) {
        const size_t off = from - pos;
        const size_t k = std::min(n, len - off);
        std::memcpy(dst, static_cast<const uint8_t*>(iov[i].iov_base) + off, k);
        dst += k;
        from += k;
        n -= k;
      }
      pos += len;
    }
  }
};

ssize_t sendv(int fd, const iovec* iov, int iovcnt, int flags) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!ready(*s)) return -1;
  size_t len = 0;
  for (int i = 0; i < iovcnt; ++i) len += iov[i].iov_len;
  const IovSource src{iov, iovcnt};
  std::lock_guard<std::mutex> sg(s->send_mu);
  std::unique_lock<std::mutex> lk(s->mu);
  int ret = 0;
  size_t done = 0;
  if (!s->iomap_queue.empty()) ret = send_iomaps(*s, lk, flags);
  for (uint32_t olen = kOlapStartSize; !ret && done < len;) {
    if ((ret = wait_can_send(*s, lk, flags))) break;
    uint32_t xfer = std::min(next_transfer(olen, len - done), s->sbuf_avail);
    xfer = std::min(xfer, s->tsgl[s->target_sge].length);
    ibv_sge sge[2];
    int n = 1;
    int wflags = 0;
    if (xfer <= s->sq_inline && iovcnt == 1) {
      sge[0] = {reinterpret_cast<uintptr_t>(static_cast<const uint8_t*>(iov[0].iov_base) + done),
                xfer, 0};
      wflags = IBV_SEND_INLINE;
    } else {
      n = stage(
          *s, [&](uint8_t* dst, uint32_t from, uint32_t k) { src.copy(dst, done + from, k); }, xfer,
          sge);
      if (xfer <= s->sq_inline) wflags = IBV_SEND_INLINE;
    }
    if ((ret = write_data(*s, sge, n, xfer, wflags))) break;
    done += xfer;
  }
  return (ret && done == 0) ? ret : static_cast<ssize_t>(done);
}

/// Copies up to len bytes of the receive ring, starting at message `head` and ring offset
/// `off`, without consuming them (MSG_PEEK).
size_t peek(Socket& s, uint8_t* buf, size_t len) {
  size_t got = 0;
  uint32_t head = s.rmsg_head, off = s.rbuf_off;
  const auto ring = static_cast<uint32_t>(s.rmsg.size());
  while (got < len && head != s.rmsg_tail) {
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(len - got, s.rmsg[head]));
    if (n == s.rmsg[head]) head = (head + 1) % ring;
    for (uint32_t k; n; n -= k, got += k) {
      k = std::min(n, s.rbuf_size - off);
      std::memcpy(buf + got, s.rbuf.get() + off, k);
      off = (off + k) % s.rbuf_size;
    }
  }
  return got;
}

/// Reads and consumes up to len bytes; their ring space returns to rbuf_avail (the next
/// credit update republishes it) and each message read whole counts as a receive consumed.
size_t consume(Socket& s, uint8_t* buf, size_t len) {
  size_t got = 0;
  const auto ring = static_cast<uint32_t>(s.rmsg.size());
  while (got < len && s.have_rdata()) {
    uint32_t& m = s.rmsg[s.rmsg_head];
    uint32_t n = static_cast<uint32_t>(std::min<size_t>(len - got, m));
    m -= n;
    if (m == 0) {
      s.rseq_no++;
      s.rmsg_head = (s.rmsg_head + 1) % ring;
    }
    for (uint32_t k; n; n -= k, got += k) {
      k = std::min(n, s.rbuf_size - s.rbuf_off);
      std::memcpy(buf + got, s.rbuf.get() + s.rbuf_off, k);
      s.rbuf_off = (s.rbuf_off + k) % s.rbuf_size;
      s.rbuf_avail += k;
    }
  }
  return got;
}

}  // namespace
}  // namespace uroce::rdmacm::rs

using namespace uroce::rdmacm::rs;
using uroce::rdmacm::fail;

UROCE_CM_EXPORT ssize_t rsend(int fd, const void* buf, size_t len, int flags) {
  iovec iov{const_cast<void*>(buf), len};
  return sendv(fd, &iov, 1, flags);
}

UROCE_CM_EXPORT ssize_t rsendto(int fd, const void* buf, size_t len, int flags, const sockaddr* dst,
                                socklen_t dst_len) {
  if (dst || dst_len) return fail(EISCONN);  // a stream socket: its peer is fixed
  return rsend(fd, buf, len, flags);
}

UROCE_CM_EXPORT ssize_t rsendmsg(int fd, const msghdr* m, int flags) {
  if (!m) return fail(EINVAL);
  if (m->msg_control && m->msg_controllen) return fail(ENOTSUP);
  return sendv(fd, m->msg_iov, static_cast<int>(m->msg_iovlen), flags);
}

UROCE_CM_EXPORT ssize_t rwrite(int fd, const void* buf, size_t len) {
  return rsend(fd, buf, len, 0);
}

UROCE_CM_EXPORT ssize_t rwritev(int fd, const iovec* iov, int iovcnt) {
  return sendv(fd, iov, iovcnt, 0);
}

UROCE_CM_EXPORT ssize_t rrecv(int fd, void* buf, size_t len, int flags) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  if (!ready(*s)) return -1;
  std::lock_guard<std::mutex> rg(s->recv_mu);
  std::unique_lock<std::mutex> lk(s->mu);
  auto* out = static_cast<uint8_t*>(buf);
  size_t got = 0;
  int ret = 0;
  do {
    if (!s->have_rdata() && (ret = get_comp(*s, lk, s->nonblocking(flags), conn_have_rdata))) break;
    if (flags & MSG_PEEK) {
      got = peek(*s, out, len);
      break;
    }
    got += consume(*s, out + got, len - got);
  } while (got < len && (flags & MSG_WAITALL) && (s->state & kReadable));
  return (ret && got == 0) ? ret : static_cast<ssize_t>(got);
}

UROCE_CM_EXPORT int rgetpeername(int fd, sockaddr* addr, socklen_t* len);

UROCE_CM_EXPORT ssize_t rrecvfrom(int fd, void* buf, size_t len, int flags, sockaddr* src,
                                  socklen_t* src_len) {
  ssize_t r = rrecv(fd, buf, len, flags);
  if (r > 0 && src) rgetpeername(fd, src, src_len);
  return r;
}

// As librdmacm: a vector read fills the first buffer only (a short read, which stream
// sockets allow).
UROCE_CM_EXPORT ssize_t rrecvmsg(int fd, msghdr* m, int flags) {
  if (!m) return fail(EINVAL);
  if (m->msg_control && m->msg_controllen) return fail(ENOTSUP);
  if (!m->msg_iovlen) return 0;
  return rrecv(fd, m->msg_iov[0].iov_base, m->msg_iov[0].iov_len, flags);
}

UROCE_CM_EXPORT ssize_t rread(int fd, void* buf, size_t len) { return rrecv(fd, buf, len, 0); }

UROCE_CM_EXPORT ssize_t rreadv(int fd, const iovec* iov, int iovcnt) {
  if (iovcnt <= 0) return iovcnt ? fail(EINVAL) : 0;
  return rrecv(fd, iov[0].iov_base, iov[0].iov_len, 0);
}
