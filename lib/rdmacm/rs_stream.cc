/**
 * @file rs_stream.cc
 * @brief The connected rsocket stream (rsocket.h): its QP, buffers and registrations, the
 * connection data, completion processing, receive credits and the writes that carry data and
 * messages (rs_wire.h has the formats).
 *
 * Receive side: rq_size zero-length receives are posted; each RDMA WRITE WITH IMMEDIATE from
 * the peer consumes one and is reposted when its completion is taken. Data lands in the
 * receive ring `rbuf` (rbuf_size bytes, published to the peer half by half) and is read in
 * order from rbuf_off. Send side: data longer than the inline size is copied into the send
 * ring `sbuf` and written from there; a send completion gives its bytes and queue slot back
 * (sq_sig_all, so every send completes, in order).
 */
#include <endian.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "rdmacm/export.h"
#include "rdmacm/rsocket.h"

namespace uroce::rdmacm::rs {

namespace {

constexpr uint64_t kRecvFlag = uint64_t{1} << 63;  ///< wr_id of a receive

uint16_t max_qp_size(Socket& s) {
  ibv_device_attr a{};
  if (ibv_query_device(s.cm->verbs, &a)) return kQpMaxSize;
  return static_cast<uint16_t>(std::min<int>(a.max_qp_wr, kQpMaxSize));
}

int post_recv(Socket& s) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = kRecvFlag;
  if (int r = ibv_post_recv(s.cm->qp, &wr, &bad)) {
    errno = r;
    return -1;
  }
  return 0;
}

Sge swapped(Sge e) {
  return {__builtin_bswap64(e.addr), __builtin_bswap32(e.key), __builtin_bswap32(e.length)};
}

/// Half the receive ring: the unit the peer gets to fill.
uint32_t half(const Socket& s) { return s.rbuf_size >> 1; }

int give_credits(Socket& s) {
  return (s.rbuf_avail >= half(s) || static_cast<int16_t>(s.rseq_no - s.rseq_comp) >= 0) &&
         ctrl_avail(s) && (s.state & kConnected);
}

/// Grants credits up to rseq_no + rq_size, and republishes a free half of the receive ring
/// when there is one (the SGE goes into the peer's target SGL entry remote_sge).
void send_credits(Socket& s) {
  s.ctrl_seqno++;
  s.rseq_comp = static_cast<uint16_t>(s.rseq_no + (s.rq_size >> 1));
  const uint32_t m = msg(Op::kSgl, uint32_t{s.rseq_no} + s.rq_size);
  if (s.rbuf_avail < half(s)) {
    post_msg(s, m);
    return;
  }
  Sge e =
      to_peer(s, {reinterpret_cast<uintptr_t>(s.rbuf.get() + s.rbuf_free), s.rmr->rkey, half(s)});
  ibv_sge sg{};
  int flags = 0;
  if (s.sq_inline >= sizeof e) {
    sg.addr = reinterpret_cast<uintptr_t>(&e);
    flags = IBV_SEND_INLINE;
  } else {
    uint8_t* ctrl = s.sbuf.get() + s.sbuf_size + sizeof(Sge) * (s.ctrl_seqno & (kCtrlSlots - 1));
    std::memcpy(ctrl, &e, sizeof e);
    sg.addr = reinterpret_cast<uintptr_t>(ctrl);
    sg.lkey = s.smr->lkey;
  }
  sg.length = sizeof e;
  post_write(s, &sg, 1, m, true, flags, s.remote_sgl.addr + s.remote_sge * sizeof(Sge),
             s.remote_sgl.key);
  s.rbuf_avail -= half(s);
  s.rbuf_free += half(s);
  if (s.rbuf_free >= s.rbuf_size) s.rbuf_free = 0;
  if (++s.remote_sge >= static_cast<int>(s.remote_sgl.length)) s.remote_sge = 0;
}

/// One receive completion: a message from the peer, `len` bytes written with it.
void on_message(Socket& s, uint32_t m, uint32_t len) {
  switch (msg_op(m)) {
    case Op::kSgl:
      s.sseq_comp = static_cast<uint16_t>(msg_data(m));
      if (len >= sizeof(Sge)) {  // it also published a buffer half: take the entry it wrote
        s.tsgl[s.tsgl_next] = s.target_sgl()[s.tsgl_next];
        s.tsgl_next = (s.tsgl_next + 1) % kSglSize;
      }
      break;
    case Op::kIomapSgl:
      if (msg_data(m) < s.tiomap.size()) s.tiomap[msg_data(m)] = s.target_iomap()[msg_data(m)];
      break;
    case Op::kCtrl:
      if (msg_data(m) == static_cast<uint32_t>(Ctrl::kDisconnect)) {
        s.state = kDisconnected;
      } else if (msg_data(m) == static_cast<uint32_t>(Ctrl::kShutdown)) {
        if (s.state & kWritable)
          s.state &= ~kReadable;
        else
          s.state = kDisconnected;
      }
      break;  // keepalive: nothing to do
    case Op::kData: {
      const uint32_t next = (s.rmsg_tail + 1) % static_cast<uint32_t>(s.rmsg.size());
      if (next == s.rmsg_head) break;  // more than the credits allow: dropped
      s.rmsg[s.rmsg_tail] = msg_data(m);
      s.rmsg_tail = next;
      break;
    }
    default: break;  // reserved types
  }
}

/// One send completion: its queue slot and send-buffer bytes come back.
void on_send_done(Socket& s, const ibv_wc& wc) {
  const auto m = static_cast<uint32_t>(wc.wr_id);
  switch (msg_op(m)) {
    case Op::kSgl: s.ctrl_max_seqno++; break;
    case Op::kCtrl:
      s.ctrl_max_seqno++;
      if (msg_data(m) == static_cast<uint32_t>(Ctrl::kDisconnect)) s.state = kDisconnected;
      break;
    case Op::kIomapSgl:
      s.sqe_avail++;
      s.sbuf_avail += sizeof(Iomap);
      break;
    default:  // data and direct writes
      s.sqe_avail++;
      s.sbuf_avail += msg_data(m);
      break;
  }
  if (wc.status != IBV_WC_SUCCESS && (s.state & kConnected)) {
    // UROCE_RSOCKET_DEBUG=1: why a connection failed (the program only sees EIO/ECONNRESET).
    if (const char* d = getenv("UROCE_RSOCKET_DEBUG"); d && *d == '1')
      std::fprintf(stderr, "uroce: rsocket %d: send failed: %s (message %#x)\n", s.fd,
                   ibv_wc_status_str(wc.status), static_cast<unsigned>(wc.wr_id));
    s.state = kError;
    s.err = EIO;
  }
}

}  // namespace

Sge to_peer(const Socket& s, Sge e) { return s.swap ? swapped(e) : e; }

bool ctrl_avail(const Socket& s) { return s.ctrl_seqno != s.ctrl_max_seqno; }

bool can_send(Socket& s) {
  return s.sqe_avail > 0 && s.sbuf_avail >= kSndLowat && s.sseq_no != s.sseq_comp &&
         s.tsgl[s.target_sge].length != 0;
}

bool conn_can_send(Socket& s) { return can_send(s) || !(s.state & kWritable); }

int wait_can_send(Socket& s, std::unique_lock<std::mutex>& lk, int flags) {
  if (can_send(s)) return 0;
  if (int ret = get_comp(s, lk, s.nonblocking(flags), conn_can_send)) return ret;
  if (!(s.state & kWritable)) return fail(ECONNRESET);
  return 0;
}

uint32_t next_transfer(uint32_t& olen, size_t left) {
  if (olen >= left) return static_cast<uint32_t>(left);
  const uint32_t xfer = olen;
  if (olen < kMaxTransfer) olen <<= 1;
  return xfer;
}
bool conn_have_rdata(Socket& s) { return s.have_rdata() || !(s.state & kReadable); }
bool conn_can_send_ctrl(Socket& s) { return ctrl_avail(s) || !(s.state & kConnected); }
bool conn_all_sends_done(Socket& s) {
  return (static_cast<int>(s.ctrl_max_seqno) - static_cast<int>(s.ctrl_seqno)) + s.sqe_avail ==
             s.sq_size ||
         !(s.state & kConnected);
}

int create_ep(Socket& s) {
  const uint16_t max = max_qp_size(s);
  s.sq_size = std::clamp<uint16_t>(s.sq_size, kQpMinSize, max);
  s.rq_size = std::clamp<uint16_t>(s.rq_size, kQpMinSize, max);
  if (s.rbuf_size < 2) s.rbuf_size = 2;
  if (s.sbuf_size < kSndLowat) s.sbuf_size = kSndLowat << 1;

  s.cq_channel = ibv_create_comp_channel(s.cm->verbs);
  if (!s.cq_channel) return -1;
  s.cm->recv_cq_channel = s.cm->send_cq_channel = s.cq_channel;
  s.cq = ibv_create_cq(s.cm->verbs, s.sq_size + s.rq_size, s.cm, s.cq_channel, 0);
  if (!s.cq) return -1;
  s.cm->recv_cq = s.cm->send_cq = s.cq;
  if ((s.fd_flags & O_NONBLOCK) && fcntl(s.cq_channel->fd, F_SETFL, O_NONBLOCK)) return -1;

  ibv_qp_init_attr qa{};
  qa.qp_context = &s;
  qa.send_cq = qa.recv_cq = s.cq;
  qa.qp_type = IBV_QPT_RC;
  qa.sq_sig_all = 1;
  qa.cap.max_send_wr = s.sq_size;
  qa.cap.max_recv_wr = s.rq_size;
  qa.cap.max_send_sge = 2;
  qa.cap.max_recv_sge = 1;
  qa.cap.max_inline_data = s.sq_inline;
  if (rdma_create_qp(s.cm, nullptr, &qa)) return -1;
  s.sq_inline = static_cast<uint16_t>(qa.cap.max_inline_data);

  // Buffers: the send ring (plus kCtrlSlots SGEs for credit updates when they cannot go
  // inline), the target SGL + iomap and the receive ring, the last two remotely writable.
  const uint32_t sbuf_total =
      s.sbuf_size + (s.sq_inline < sizeof(Sge) ? sizeof(Sge) * kCtrlSlots : 0);
  const size_t target_len = sizeof(Sge) * kSglSize + sizeof(Iomap) * s.target_iomap_size;
  s.sbuf = std::make_unique<uint8_t[]>(sbuf_total);
  s.target = std::make_unique<uint8_t[]>(target_len);
  s.rbuf = std::make_unique<uint8_t[]>(s.rbuf_size);
  const int remote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  s.smr = ibv_reg_mr(s.cm->pd, s.sbuf.get(), sbuf_total, IBV_ACCESS_LOCAL_WRITE);
  s.tmr = ibv_reg_mr(s.cm->pd, s.target.get(), target_len, remote);
  s.rmr = ibv_reg_mr(s.cm->pd, s.rbuf.get(), s.rbuf_size, remote);
  if (!s.smr || !s.tmr || !s.rmr) return -1;

  s.rmsg.assign(s.rq_size + 1u, 0);
  s.sbuf_avail = s.sbuf_size;
  s.sbuf_head = 0;
  s.rbuf_free = half(s);  // the first half goes to the peer in the connection data
  s.rbuf_avail = half(s);
  s.sqe_avail = s.sq_size - static_cast<int>(s.ctrl_max_seqno);
  s.rseq_comp = static_cast<uint16_t>(s.rq_size >> 1);
  for (int i = 0; i < s.rq_size; ++i)
    if (post_recv(s)) return -1;
  return 0;
}

ConnData conn_data(Socket& s) {
  ConnData d;
  d.flags = kConnFlagIomap;  // little-endian host: kConnFlagNet clear
  d.credits = s.rq_size;
  d.iomap_size = s.target_iomap_size;
  d.target_sgl = {reinterpret_cast<uintptr_t>(s.target.get()), s.tmr->rkey, kSglSize};
  d.data_buf = {reinterpret_cast<uintptr_t>(s.rbuf.get()), s.rmr->rkey, half(s)};
  return d;
}

void save_conn_data(Socket& s, const ConnData& d) {
  s.remote_sgl = d.target_sgl;
  if (s.remote_sgl.length == 0) s.remote_sgl.length = 1;
  s.remote_sge = s.remote_sgl.length > 1 ? 1 : 0;
  s.swap = (d.flags & kConnFlagNet) != 0;
  if (d.flags & kConnFlagIomap) {
    s.remote_iomap = {s.remote_sgl.addr + sizeof(Sge) * s.remote_sgl.length, s.remote_sgl.key,
                      d.iomap_size};
  }
  s.remote_maps.assign(s.remote_iomap.length, IomapMr{});
  for (size_t i = 0; i < s.remote_maps.size(); ++i) s.remote_maps[i].index = static_cast<int>(i);
  s.tsgl = {d.data_buf, Sge{}};  // the peer's next SGL update writes entry 1
  s.tsgl_next = 1;
  s.tiomap.assign(s.target_iomap_size, Iomap{});
  s.sseq_comp = d.credits;
}

int post_write(Socket& s, ibv_sge* sg, int n, uint32_t m, bool imm, int flags, uint64_t addr,
               uint32_t rkey) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = m;
  wr.sg_list = sg;
  wr.num_sge = n;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = static_cast<unsigned>(flags);
  if (imm) wr.imm_data = htobe32(m);
  wr.wr.rdma.remote_addr = addr;
  wr.wr.rdma.rkey = rkey;
  if (int r = ibv_post_send(s.cm->qp, &wr, &bad)) {
    errno = r;
    return -1;
  }
  return 0;
}

int post_msg(Socket& s, uint32_t m) { return post_write(s, nullptr, 0, m, true, 0, 0, 0); }

int stage(Socket& s, const std::function<void(uint8_t*, uint32_t, uint32_t)>& copy, uint32_t len,
          ibv_sge sg[2]) {
  const uint32_t left = s.sbuf_size - s.sbuf_head;
  uint8_t* head = s.sbuf.get() + s.sbuf_head;
  sg[0] = {reinterpret_cast<uintptr_t>(head), std::min(len, left), s.smr->lkey};
  copy(head, 0, sg[0].length);
  if (len < left) {
    s.sbuf_head += len;
    return 1;
  }
  s.sbuf_head = len - left;
  if (len == left) return 1;
  sg[1] = {reinterpret_cast<uintptr_t>(s.sbuf.get()), len - left, s.smr->lkey};
  copy(s.sbuf.get(), left, len - left);
  return 2;
}

int write_data(Socket& s, ibv_sge* sg, int n, uint32_t len, int flags) {
  s.sseq_no++;
  s.sqe_avail--;
  s.sbuf_avail -= len;
  Sge& t = s.tsgl[s.target_sge];
  const uint64_t addr = t.addr;
  t.addr += len;
  t.length -= len;
  if (t.length == 0 && ++s.target_sge == kSglSize) s.target_sge = 0;
  return post_write(s, sg, n, msg(Op::kData, len), true, flags, addr, t.key);
}

void update_credits(Socket& s) {
  if (give_credits(s)) send_credits(s);
}

int poll_cq(Socket& s) {
  ibv_wc wc[16];
  int n, received = 0;
  while ((n = ibv_poll_cq(s.cq, 16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].wr_id & kRecvFlag) {
        if (wc[i].status != IBV_WC_SUCCESS) continue;  // flushed
        received++;
        if (wc[i].wc_flags & IBV_WC_WITH_IMM)
          on_message(s, be32toh(wc[i].imm_data), wc[i].byte_len);
      } else {
        on_send_done(s, wc[i]);
      }
    }
  }
  int ret = 0;
  if (n < 0) {
    errno = EIO;
    ret = -1;
  }
  if (s.state & kConnected) {
    while (!ret && received--) ret = post_recv(s);
    if (ret) {
      s.state = kError;
      s.err = errno;
    }
  }
  return ret;
}

int get_cq_event(Socket& s) {
  if (!s.cq_armed.load() || !s.cq) return 0;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  if (ibv_get_cq_event(s.cq_channel, &cq, &ctx)) return -1;  // EAGAIN, EINTR ...
  if (++s.unack_events >= static_cast<uint32_t>(s.sq_size + s.rq_size)) {
    ibv_ack_cq_events(s.cq, s.unack_events);
    s.unack_events = 0;
  }
  s.cq_armed.store(false);
  return 0;
}

int process_cq(Socket& s, std::unique_lock<std::mutex>& lk, bool nonblock, Test test) {
  int ret;
  for (;;) {
    update_credits(s);
    ret = poll_cq(s);
    if (test(s)) {
      ret = 0;
      break;
    }
    if (ret) break;
    if (nonblock) {
      errno = EWOULDBLOCK;
      ret = -1;
      break;
    }
    if (!s.cq_armed.load()) {
      ibv_req_notify_cq(s.cq, 0);
      s.cq_armed.store(true);
      continue;  // poll once more: a completion may have come before the arm
    }
    update_credits(s);
    std::unique_lock<std::mutex> w(s.wait_mu);
    lk.unlock();
    ret = get_cq_event(s);
    const int saved = errno;
    w.unlock();
    lk.lock();
    if (ret) {
      if (saved != EAGAIN && saved != EINTR) s.state = kError;
      errno = saved;
      break;
    }
  }
  update_credits(s);
  return ret;
}

int get_comp(Socket& s, std::unique_lock<std::mutex>& lk, bool nonblock, Test test) {
  using clock = std::chrono::steady_clock;
  const auto until = clock::now() + std::chrono::microseconds(defaults().polling_us);
  do {
    int ret = process_cq(s, lk, true, test);
    if (!ret || nonblock || errno != EWOULDBLOCK) return ret;
  } while (clock::now() < until);
  return process_cq(s, lk, false, test);
}

void free_socket(Socket& s) {
  for (IomapMr& m : s.remote_maps)
    if (m.mr) ibv_dereg_mr(m.mr);
  s.remote_maps.clear();
  s.iomap_queue.clear();
  for (auto& m : s.local_maps)
    if (m->mr) ibv_dereg_mr(m->mr);
  s.local_maps.clear();
  if (s.cm) {
    if (s.cq && s.unack_events) ibv_ack_cq_events(s.cq, s.unack_events);
    s.unack_events = 0;
    if (s.cq || s.cq_channel) rdma_destroy_qp(s.cm);  // also its CQ and channel
    s.cq = nullptr;
    s.cq_channel = nullptr;
  }
  for (ibv_mr** mr : {&s.smr, &s.tmr, &s.rmr})
    if (*mr) {
      ibv_dereg_mr(*mr);
      *mr = nullptr;
    }
  if (s.cm) rdma_destroy_id(s.cm);
  s.cm = nullptr;
}

}  // namespace uroce::rdmacm::rs
