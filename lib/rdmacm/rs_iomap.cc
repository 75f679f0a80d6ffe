/**
 * @file rs_iomap.cc
 * @brief Direct data placement (rsocket(7)): riomap, riounmap, riowrite.
 *
 * riomap(PROT_WRITE) registers a buffer for remote writes and takes a free slot of the
 * peer's target iomap (its size comes with the peer's connection data; RDMA_IOMAPSIZE sets
 * ours); the mapping is announced on the next rsend/riowrite by RDMA-writing an Iomap entry
 * {offset, address, key, length} into that slot, with an iomap-updated message. riowrite
 * finds the entry of the peer's mapping that covers a stream offset in our own target iomap
 * and RDMA-writes there, without immediate data: the peer's application is not told (it
 * learns by its own means, e.g. a message sent after). Direct writes need a send slot and
 * send-buffer room as data does, but no receive credit.
 */
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

namespace {

/// The peer's mapping covering stream offset off (our copies of the target iomap, taken as
/// its iomap-updated messages came).
bool find_iomap(Socket& s, uint64_t off, Iomap* out) {
  for (const Iomap& e : s.tiomap)
    if (e.sge.length && off >= e.offset && off < e.offset + e.sge.length) {
      *out = e;
      return true;
    }
  return false;
}

}  // namespace

int send_iomaps(Socket& s, std::unique_lock<std::mutex>& lk, int flags) {
  int ret = 0;
  while (!s.iomap_queue.empty()) {
    if (!can_send(s)) {
      if ((ret = get_comp(s, lk, s.nonblocking(flags), conn_can_send))) break;
      if (!(s.state & kWritable)) {
        errno = ECONNRESET;
        ret = -1;
        break;
      }
    }
    IomapMr* m = s.iomap_queue.front();
    Iomap e{m->offset,
            {reinterpret_cast<uintptr_t>(m->mr->addr), m->mr->rkey,
             static_cast<uint32_t>(m->mr->length)}};
    if (s.swap) {
      e.offset = __builtin_bswap64(e.offset);
      e.sge = to_peer(s, e.sge);
    }
    ibv_sge sg[2];
    int n = 1;
    int wflags = 0;
    if (s.sq_inline >= sizeof e) {
      sg[0] = {reinterpret_cast<uintptr_t>(&e), sizeof e, 0};
      wflags = IBV_SEND_INLINE;
    } else {
      n = stage(
          s,
          [&](uint8_t* dst, uint32_t from, uint32_t k) {
            std::memcpy(dst, reinterpret_cast<const uint8_t*>(&e) + from, k);
          },
          sizeof e, sg);
    }
    s.sseq_no++;
    s.sqe_avail--;
    s.sbuf_avail -= sizeof e;
    ret = post_write(s, sg, n, msg(Op::kIomapSgl, static_cast<uint32_t>(m->index)), true, wflags,
                     s.remote_iomap.addr + sizeof(Iomap) * m->index, s.remote_iomap.key);
    s.iomap_queue.erase(s.iomap_queue.begin());
    if (ret) break;
  }
  return ret;
}

}  // namespace uroce::rdmacm::rs

using namespace uroce::rdmacm::rs;
using uroce::rdmacm::fail;

UROCE_CM_EXPORT off_t riomap(int fd, void* buf, size_t len, int prot, int /*flags*/, off_t offset) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  if (!s->cm->pd || (prot & ~(PROT_WRITE | PROT_NONE))) return fail(EINVAL);
  IomapMr* m = nullptr;
  if (prot & PROT_WRITE) {
    for (IomapMr& slot : s->remote_maps)
      if (!slot.mr) {
        m = &slot;
        break;
      }
    if (!m) return fail(ENOMEM);  // no free entry in the peer's target iomap
    m->mr = ibv_reg_mr(s->cm->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (!m->mr) return -1;
  } else {
    auto local = std::make_unique<IomapMr>();
    local->mr = ibv_reg_mr(s->cm->pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
    if (!local->mr) return -1;
    m = local.get();
    s->local_maps.push_back(std::move(local));
  }
  if (offset == -1) offset = static_cast<off_t>(reinterpret_cast<uintptr_t>(buf));
  m->offset = static_cast<uint64_t>(offset);
  if (m->index >= 0) s->iomap_queue.push_back(m);
  return offset;
}

UROCE_CM_EXPORT int riounmap(int fd, void* buf, size_t len) {
  SocketPtr s = lookup(fd);
  if (!s) return fail(EBADF);
  std::lock_guard<std::mutex> g(s->mu);
  auto match = [&](const IomapMr& m) { return m.mr && m.mr->addr == buf && m.mr->length == len; };
  for (IomapMr& m : s->remote_maps)
    if (match(m)) {
      std::erase(s->iomap_queue, &m);
      ibv_dereg_mr(m.mr);
      m.mr = nullptr;
      return 0;
    }
  for (auto it = s->local_maps.begin(); it != s->local_maps.end(); ++it)
    if (match(**it)) {
      ibv_dereg_mr((*it)->mr);
      s->local_maps.erase(it);
      return 0;
    }
  return fail(EINVAL);
}

UROCE_CM_EXPORT size_t riowrite(int fd, const void* buf, size_t count, off_t offset, int flags) {
  SocketPtr s = lookup(fd);
  if (!s) return static_cast<size_t>(fail(EBADF));
  std::lock_guard<std::mutex> sg(s->send_mu);
  std::unique_lock<std::mutex> lk(s->mu);
  if (!s->cq) return static_cast<size_t>(fail(ENOTCONN));
  const auto* src = static_cast<const uint8_t*>(buf);
  int ret = 0;
  size_t done = 0;
  if (!s->iomap_queue.empty()) ret = send_iomaps(*s, lk, flags);
  for (uint32_t olen = kOlapStartSize; !ret && done < count;) {
    const uint64_t off = static_cast<uint64_t>(offset) + done;
    Iomap iom;
    if (!find_iomap(*s, off, &iom)) {
      if (done == 0) {
        errno = EINVAL;  // no mapping of the peer covers this offset
        ret = -1;
      }
      break;
    }
    if ((ret = wait_can_send(*s, lk, flags))) break;
    uint32_t xfer = std::min(next_transfer(olen, count - done), s->sbuf_avail);
    xfer = static_cast<uint32_t>(std::min<uint64_t>(xfer, iom.offset + iom.sge.length - off));
    ibv_sge sge[2];
    int n = 1;
    int wflags = 0;
    if (xfer <= s->sq_inline) {
      sge[0] = {reinterpret_cast<uintptr_t>(src + done), xfer, 0};
      wflags = IBV_SEND_INLINE;
    } else {
      n = stage(
          *s,
          [&](uint8_t* dst, uint32_t from, uint32_t k) { std::memcpy(dst, src + done + from, k); },
          xfer, sge);
    }
    s->sqe_avail--;
    s->sbuf_avail -= xfer;
    ret = post_write(*s, sge, n, msg(Op::kWrite, xfer), false, wflags,
                     iom.sge.addr + (off - iom.offset), iom.sge.key);
    if (!ret) done += xfer;
  }
  return (ret && done == 0) ? static_cast<size_t>(ret) : done;
}
