/**
 * @file engine.cc
 * @brief Engine control path: PDs, MRs, CQs, SRQs, QP create/modify/query/destroy (IBA Vol 1
 * §10.2-10.3, §11), and posting work requests (ibv_post_send(3), ibv_post_recv(3)).
 *
 * Every object is addressed by a small integer id (PD, CQ, SRQ: index + 1; QP: QPN). Storage
 * is allocated here, on the control path; the data path only uses what create_* allocated.
 */
#include "transport/engine.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "transport/engine_impl.h"
#include "transport/qp_state.h"

namespace uroce::transport {

Duration rnr_timer_delay(uint8_t code) {
  // IBA Vol 1 Table 45, in microseconds x 100 (0 = 655.36 ms).
  static constexpr std::array<uint32_t, 32> kCentiUs = {
      65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
      48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
      2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return Duration::nanos(int64_t{kCentiUs[code & 31]} * 10'000);
}

Duration local_ack_timeout(uint8_t timeout) {
  if (timeout == 0) return Duration::nanos(std::numeric_limits<int64_t>::max() / 4);
  return Duration::nanos(int64_t{4096} << std::min<uint8_t>(timeout, 31));
}

Engine::Impl::Impl(const EngineConfig& c, CounterBlock* k, EngineObserver* o)
    : cfg(c), ctr(k), obs(o), mrs(c.key_seed), gsi(cfg, k, o) {
  if (cfg.cc) np = cfg.cc->make_np();
  cfg.sr_window = std::bit_ceil(std::clamp<uint32_t>(cfg.sr_window, 16, 32 * wire::kSackMaxWords));
  qps.resize(kFirstQpSlot);
  qp_gen.resize(kFirstQpSlot);
  if (cfg.qpn_block_bits) {
    cfg.qpn_block_bits = std::clamp(cfg.qpn_block_bits, kMinQpnBlockBits, kMaxQpnBlockBits);
    cfg.qpn_block &= (1u << (24 - cfg.qpn_block_bits)) - 1;
    block_next = cfg.qpn_block == 0 ? kFirstQpSlot : 0;
  }
}

Engine::Engine(const EngineConfig& cfg, CounterBlock* counters, EngineObserver* observer)
    : impl_(std::make_unique<Impl>(cfg, counters, observer)) {}
Engine::~Engine() = default;

const EngineConfig& Engine::config() const { return impl_->cfg; }
CounterBlock& Engine::counters() { return *impl_->ctr; }

// ---- Lookup ---------------------------------------------------------------------------------

Qp* Engine::Impl::find_qp(uint32_t qpn) const {
  const uint32_t slot = qp_slot(qpn);
  if (slot >= qps.size() || !qps[slot]) return nullptr;
  Qp* qp = qps[slot].get();
  return qp->qpn == qpn ? qp : nullptr;
}

std::optional<uint32_t> Engine::Impl::next_block_slot() {
  const uint32_t first = cfg.qpn_block == 0 ? kFirstQpSlot : 0;
  const uint32_t n = (1u << cfg.qpn_block_bits) - first;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = first + (block_next - first + i) % n;
    if (slot < qps.size() && qps[slot]) continue;
    block_next = first + (slot - first + 1) % n;
    return slot;
  }
  return std::nullopt;  // every number of the block is a live QP
}

Cq* Engine::Impl::find_cq(uint32_t id) {
  if (id == 0 || id > cqs.size() || !cqs[id - 1].live) return nullptr;
  return &cqs[id - 1];
}

Srq* Engine::Impl::find_srq(uint32_t id) {
  if (id == 0 || id > srqs.size() || !srqs[id - 1].live) return nullptr;
  return &srqs[id - 1];
}

void Engine::Impl::activate(Qp& qp) {
  if (qp.in_active) return;
  qp.in_active = true;
  active.push_back(&qp);
}

void Engine::Impl::async_event(AsyncEventType t, uint32_t id) {
  if (obs) obs->on_async_event(AsyncEvent{t, id});
}

// ---- PD -------------------------------------------------------------------------------------

Result<uint32_t> Engine::alloc_pd() {
  auto& pds = impl_->pds;
  for (size_t i = 0; i < pds.size(); ++i) {
    if (!pds[i].live) {
      pds[i] = Pd{true, 0};
      return static_cast<uint32_t>(i + 1);
    }
  }
  if (pds.size() >= kMaxPds) return Status::no_memory();
  pds.push_back(Pd{true, 0});
  return static_cast<uint32_t>(pds.size());
}

Status Engine::dealloc_pd(uint32_t pd) {
  auto& pds = impl_->pds;
  if (pd == 0 || pd > pds.size() || !pds[pd - 1].live) return Status::not_found();
  if (pds[pd - 1].users || impl_->mrs.count_pd(pd)) return Status::busy();
  pds[pd - 1].live = false;
  return Status::ok();
}

namespace {

/// Removes qpn's completions from c, keeping the others in order.
void drop_cqes_of(Cq& c, uint32_t qpn) {
  const uint32_t n = c.ring.size();
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Cqe e = c.ring.at(i);
    if (e.qp_num != qpn) c.ring.at(kept++) = e;
  }
  for (uint32_t i = kept; i < n; ++i) c.ring.pop_back();
}

}  // namespace

// ---- MR -------------------------------------------------------------------------------------

Result<MrKeys> Engine::reg_mr(uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                              uint32_t access) {
  auto& pds = impl_->pds;
  if (pd == 0 || pd > pds.size() || !pds[pd - 1].live) return Status::not_found();
  auto r = impl_->mrs.reg(pd, addr, len, iova, access);
  if (!r) return r.status();
  return MrKeys{r->lkey, r->rkey};
}

Status Engine::rereg_mr(uint32_t lkey, uint32_t pd, uint64_t addr, uint64_t len, uint64_t iova,
                        uint32_t access) {
  auto& pds = impl_->pds;
  if (pd == 0 || pd > pds.size() || !pds[pd - 1].live) return Status::not_found();
  return impl_->mrs.rereg(lkey, pd, addr, len, iova, access);
}

Status Engine::dereg_mr(uint32_t lkey) { return impl_->mrs.dereg(lkey); }

bool Engine::on_demand_supported() { return MemoryTable::on_demand_available(); }

Result<uint64_t> Engine::prefetch_mr(uint32_t pd, uint32_t lkey, uint64_t addr, uint64_t len,
                                     bool write) {
  return impl_->mrs.prefetch(lkey, pd, addr, len, write);
}

Status Engine::populate(uint64_t host, uint64_t len, bool write) {
  return MemoryTable::populate(host, len, write) ? Status::ok() : Status(EFAULT);
}

Result<uint32_t> Engine::alloc_mw(uint32_t pd, MwType type) {
  auto& pds = impl_->pds;
  if (pd == 0 || pd > pds.size() || !pds[pd - 1].live) return Status::not_found();
  if (type != MwType::kType1 && type != MwType::kType2) return Status::invalid();
  auto r = impl_->mrs.alloc_mw(pd, type);
  if (!r) return r.status();
  return r->rkey;
}

Status Engine::dealloc_mw(uint32_t rkey) { return impl_->mrs.dealloc_mw(rkey); }

// ---- CQ -------------------------------------------------------------------------------------

Result<uint32_t> Engine::create_cq(uint32_t depth) {
  if (depth == 0 || depth > kMaxCqe) return Status::invalid();
  auto& cqs = impl_->cqs;
  size_t i = 0;
  while (i < cqs.size() && cqs[i].live) ++i;
  if (i >= kMaxCqs) return Status::no_memory();
  if (i == cqs.size()) cqs.emplace_back();
  Cq& cq = cqs[i];
  cq = Cq{};
  cq.live = true;
  cq.depth = depth;
  cq.ring.reset(depth);
  return static_cast<uint32_t>(i + 1);
}

Status Engine::resize_cq(uint32_t id, uint32_t depth) {
  Cq* cq = impl_->find_cq(id);
  if (!cq) return Status::not_found();
  if (depth == 0 || depth > kMaxCqe || depth < cq->ring.size()) return Status::invalid();
  Ring<Cqe> n(depth);
  while (!cq->ring.empty()) {
    *n.push() = cq->ring.front();
    cq->ring.pop();
  }
  cq->ring = std::move(n);
  cq->depth = depth;
  return Status::ok();
}

Status Engine::destroy_cq(uint32_t id) {
  Cq* cq = impl_->find_cq(id);
  if (!cq) return Status::not_found();
  if (cq->users) return Status::busy();
  *cq = Cq{};
  std::erase(impl_->cq_mod_waiting, id);
  return Status::ok();
}

size_t Engine::poll_cq(uint32_t id, std::span<Cqe> out) {
  Cq* cq = impl_->find_cq(id);
  if (!cq) return 0;
  size_t n = 0;
  while (n < out.size() && !cq->ring.empty()) {
    out[n++] = cq->ring.front();
    cq->ring.pop();
  }
  return n;
}

Status Engine::req_notify_cq(uint32_t id, bool solicited_only) {
  Cq* cq = impl_->find_cq(id);
  if (!cq) return Status::not_found();
  cq->armed = true;
  cq->solicited_only = solicited_only;
  return Status::ok();
}

Status Engine::modify_cq(uint32_t id, uint32_t count, Duration period) {
  Cq* cq = impl_->find_cq(id);
  if (!cq) return Status::not_found();
  if (count > kMaxCqModCount || period.ns < 0 || period > Duration::micros(kMaxCqModPeriodUs))
    return Status::invalid();
  cq->mod_count = static_cast<uint16_t>(count);
  cq->mod_period = period;
  // An event held back under the old bounds goes now if the new ones say so.
  if (cq->mod_seen > 0 && Impl::cq_event_due(*cq, impl_->last_now)) impl_->signal_cq(id, *cq);
  return Status::ok();
}

void Engine::advance_clock(Timestamp now) {
  if (now > impl_->last_now) impl_->last_now = now;
}

// ---- SRQ ------------------------------------------------------------------------------------

Result<uint32_t> Engine::create_srq(uint32_t pd, uint32_t max_wr, uint32_t max_sge,
                                    uint32_t limit) {
  auto& pds = impl_->pds;
  if (pd == 0 || pd > pds.size() || !pds[pd - 1].live) return Status::not_found();
  if (max_wr == 0 || max_wr > kMaxQpWr || max_sge == 0 || max_sge > kMaxSge || limit > max_wr)
    return Status::invalid();
  auto& srqs = impl_->srqs;
  size_t i = 0;
  while (i < srqs.size() && srqs[i].live) ++i;
  if (i == srqs.size()) srqs.emplace_back();
  Srq& s = srqs[i];
  s = Srq{};
  s.live = true;
  s.id = static_cast<uint32_t>(i + 1);
  s.pd = pd;
  s.max_sge = max_sge;
  s.limit = limit;
  s.ring.reset(max_wr);
  s.sges.assign(size_t{s.ring.capacity()} * max_sge, Sge{});
  pds[pd - 1].users++;
  return static_cast<uint32_t>(i + 1);
}

Status Engine::modify_srq(uint32_t id, uint32_t max_wr, uint32_t limit, uint32_t mask) {
  constexpr uint32_t kSrqMaxWr = 1, kSrqLimit = 2;  // IBV_SRQ_MAX_WR, IBV_SRQ_LIMIT
  Srq* s = impl_->find_srq(id);
  if (!s) return Status::not_found();
  if (mask & ~(kSrqMaxWr | kSrqLimit)) return Status::invalid();
  if (mask & kSrqMaxWr) {
    // Resizing is not supported beyond the allocated capacity.
    if (max_wr == 0 || max_wr > s->ring.capacity()) return Status::invalid();
  }
  if (mask & kSrqLimit) {
    if (limit > s->ring.capacity()) return Status::invalid();
    s->limit = limit;
  }
  return Status::ok();
}

Status Engine::query_srq(uint32_t id, uint32_t* max_wr, uint32_t* max_sge, uint32_t* limit) {
  Srq* s = impl_->find_srq(id);
  if (!s) return Status::not_found();
  if (max_wr) *max_wr = s->ring.capacity();
  if (max_sge) *max_sge = s->max_sge;
  if (limit) *limit = s->limit;
  return Status::ok();
}

Status Engine::destroy_srq(uint32_t id) {
  Srq* s = impl_->find_srq(id);
  if (!s) return Status::not_found();
  if (s->users) return Status::busy();
  impl_->pds[s->pd - 1].users--;
  if (s->xrcd) impl_->xrcds[s->xrcd - 1].users--;
  if (Cq* cq = impl_->find_cq(s->cq)) cq->users--;
  *s = Srq{};
  return Status::ok();
}

Result<uint32_t> Engine::alloc_xrcd() {
  auto& x = impl_->xrcds;
  size_t i = 0;
  while (i < x.size() && x[i].live) ++i;
  if (i >= kMaxXrcds) return Status::no_memory();
  if (i == x.size()) x.emplace_back();
  x[i] = Xrcd{};
  x[i].live = true;
  return static_cast<uint32_t>(i + 1);
}

Status Engine::dealloc_xrcd(uint32_t id) {
  auto& x = impl_->xrcds;
  if (id == 0 || id > x.size() || !x[id - 1].live) return Status::not_found();
  if (x[id - 1].users) return Status::busy();
  x[id - 1] = Xrcd{};
  return Status::ok();
}

Result<uint32_t> Engine::create_xrc_srq(uint32_t pd, uint32_t xrcd, uint32_t cq, uint32_t max_wr,
                                        uint32_t max_sge, uint32_t limit) {
  auto& x = impl_->xrcds;
  if (xrcd == 0 || xrcd > x.size() || !x[xrcd - 1].live) return Status::not_found();
  Cq* c = impl_->find_cq(cq);
  if (!c) return Status::not_found();
  auto r = create_srq(pd, max_wr, max_sge, limit);
  if (!r) return r;
  Srq* s = impl_->find_srq(r.value());
  s->xrcd = xrcd;
  s->cq = cq;
  x[xrcd - 1].users++;
  c->users++;
  return r;
}

Status Engine::post_srq_recv(uint32_t id, const RecvWr& wr) {
  Srq* s = impl_->find_srq(id);
  if (!s) return Status::not_found();
  if (wr.num_sge > s->max_sge || (wr.num_sge && !wr.sg)) return Status::invalid();
  uint32_t pos = s->ring.tail_pos();
  RecvWqe* w = s->ring.push();
  if (!w) return Status::no_memory();
  w->wr_id = wr.wr_id;
  w->num_sge = wr.num_sge;
  std::copy_n(wr.sg, wr.num_sge, s->sges.data() + size_t{s->ring.slot_of(pos)} * s->max_sge);
  return Status::ok();
}

// ---- QP -------------------------------------------------------------------------------------

Result<uint32_t> Engine::create_qp(QpInitAttr& a) {
  Impl& m = *impl_;
  if (a.type != QpType::kRc && a.type != QpType::kUc && a.type != QpType::kUd &&
      a.type != QpType::kXrcSend && a.type != QpType::kXrcRecv)
    return Status::invalid();
  const bool xrc_recv = a.type == QpType::kXrcRecv;
  if (xrc_recv) {
    // Only its domain: the XRC SRQs its requests name bring the PD, the WQEs and the CQ.
    if (a.xrcd == 0 || a.xrcd > m.xrcds.size() || !m.xrcds[a.xrcd - 1].live)
      return Status::not_found();
    a.pd = a.send_cq = a.recv_cq = a.srq = 0;
    a.max_send_wr = a.max_recv_wr = a.max_send_sge = a.max_recv_sge = a.max_inline_data = 0;
  } else {
    a.xrcd = 0;
    if (a.pd == 0 || a.pd > m.pds.size() || !m.pds[a.pd - 1].live) return Status::not_found();
  }
  if (a.type == QpType::kXrcSend) {
    a.recv_cq = a.srq = 0;  // no receive queue
    a.max_recv_wr = a.max_recv_sge = 0;
  }
  Cq* scq = a.send_cq ? m.find_cq(a.send_cq) : nullptr;
  Cq* rcq = a.recv_cq ? m.find_cq(a.recv_cq) : nullptr;
  if ((!scq && !xrc_recv) || (!rcq && !is_xrc(a.type))) return Status::not_found();
  Srq* srq = nullptr;
  if (a.srq) {
    srq = m.find_srq(a.srq);
    if (!srq || srq->xrcd) return Status::not_found();
  }
  if (a.max_send_wr > kMaxQpWr || a.max_recv_wr > kMaxQpWr || a.max_send_sge > kMaxSge ||
      a.max_recv_sge > kMaxSge || a.max_inline_data > kMaxInline)
    return Status::invalid();
  size_t slot;
  uint32_t qpn;
  if (m.cfg.qpn_block_bits) {
    // A block of the daemon's: the next free number after the last one given (cyclic).
    auto s = m.next_block_slot();
    if (!s) return Status::no_memory();
    slot = *s;
    if (slot >= m.qps.size()) {
      m.qps.resize(slot + 1);
      m.qp_gen.resize(slot + 1);
    }
    qpn = ((m.cfg.qpn_block << m.cfg.qpn_block_bits) | static_cast<uint32_t>(slot)) & 0xffffff;
  } else {
    // Slot: reuse a free one (bumping its generation) or grow.
    slot = kFirstQpSlot;
    while (slot < m.qps.size() && m.qps[slot]) ++slot;
    static_assert(kFirstQpSlot + kMaxQps <= (1u << kQpSlotBits));
    if (slot >= kFirstQpSlot + kMaxQps) return Status::no_memory();  // max_qp live QPs
    if (slot == m.qps.size()) {
      m.qps.emplace_back();
      m.qp_gen.push_back(0);
    }
    // The generation takes the 8 bits above the slot (wrapping within them).
    const uint8_t gen = ++m.qp_gen[slot];
    qpn = uint32_t{gen} << kQpSlotBits | static_cast<uint32_t>(slot);
  }
  auto qp = std::make_unique<Qp>();
  qp->qpn = qpn;
  qp->type = a.type;
  // Round capacities up and write them back (ibv_create_qp(3) semantics).
  const bool has_rq = !srq && !is_xrc(a.type);
  a.max_send_wr = xrc_recv ? 0 : std::bit_ceil(std::max(a.max_send_wr, 1u));
  a.max_recv_wr = has_rq ? std::bit_ceil(std::max(a.max_recv_wr, 1u)) : 0;
  a.max_send_sge = xrc_recv ? 0 : std::max(a.max_send_sge, 1u);
  if (!xrc_recv) {
    // As rxe (rxe_qp_init_req): a send WQE holds max(max_send_sge SGEs of 16 bytes,
    // max_inline_data bytes), and both are reported as what that WQE holds, so a program
    // that asked for no inline data may still send its SGEs' worth inline, as on rxe.
    const uint32_t wqe = std::max(a.max_send_sge * 16, a.max_inline_data);
    a.max_send_sge = std::min(wqe / 16, kMaxSge);
    a.max_inline_data = std::min(wqe, kMaxInline);
  }
  a.max_recv_sge = has_rq ? std::max(a.max_recv_sge, 1u) : 0;
  qp->init = a;
  // Rings of at least one entry; a queue the type lacks stays empty (posting to it is EINVAL).
  qp->req.sq.reset(std::max(a.max_send_wr, 1u));
  qp->req.sq_sges.assign(size_t{a.max_send_wr} * a.max_send_sge, Sge{});
  qp->req.sq_inline.assign(size_t{a.max_send_wr} * a.max_inline_data, 0);
  if (srq) {
    qp->resp.srq = srq;
    srq->users++;
  } else {
    qp->resp.rq.reset(std::max(a.max_recv_wr, 1u));
    qp->resp.rq_sges.assign(size_t{a.max_recv_wr} * a.max_recv_sge, Sge{});
  }
  qp->resp.resp_q.reset(kRespQueueDepth);
  qp->resp.replay.assign(1, AtomicReplay{});  // resized with max_dest_rd_atomic (modify_qp)
  if (a.type == QpType::kRc && m.cfg.loss_recovery == LossRecovery::kSelective)
    m.sr_setup(*qp, true);
  qp->timestamps = a.type == QpType::kRc && m.cfg.peer_timestamps;
  qp->ooo_placement = a.type == QpType::kRc && m.cfg.ooo_placement;
  qp->attr.max_send_wr = a.max_send_wr;
  qp->attr.max_recv_wr = a.max_recv_wr;
  qp->attr.max_send_sge = a.max_send_sge;
  qp->attr.max_recv_sge = a.max_recv_sge;
  qp->attr.max_inline_data = a.max_inline_data;
  qp->mtu = a.type == QpType::kUd ? m.cfg.max_mtu : 1024;
  if (m.cfg.cc) qp->cc = m.cfg.cc->make_qp(qp->qpn, m.cfg.link_speed_bps);
  if (!qp->cc) qp->cc = std::make_unique<NoCongestion>();
  if (scq) scq->users++;
  if (rcq) rcq->users++;
  if (a.pd) m.pds[a.pd - 1].users++;
  if (a.xrcd) m.xrcds[a.xrcd - 1].users++;
  m.qps[slot] = std::move(qp);
  return qpn;
}

namespace {

/// Value checks of the attributes present in mask (EINVAL on a bad value).
Status check_values(const EngineConfig& cfg, const Qp& qp, const QpAttr& a, uint32_t mask) {
  // Any IBA MTU up to the port's max_mtu (4096), as rxe and mlx5 take it; one above the
  // link's is sent at the link's (modify_qp).
  if ((mask & kAttrPathMtu) && (a.path_mtu < 1 || a.path_mtu > 5)) return Status::invalid();
  if ((mask & kAttrTimeout) && a.timeout > 31) return Status::invalid();
  if ((mask & kAttrRetryCnt) && a.retry_cnt > 7) return Status::invalid();
  if ((mask & kAttrRnrRetry) && a.rnr_retry > 7) return Status::invalid();
  if ((mask & kAttrMinRnrTimer) && a.min_rnr_timer > 31) return Status::invalid();
  if ((mask & kAttrMaxQpRdAtomic) && a.max_rd_atomic > kMaxRdAtomic) return Status::invalid();
  if ((mask & kAttrMaxDestRdAtomic) && a.max_dest_rd_atomic > kMaxRdAtomic)
    return Status::invalid();
  if ((mask & kAttrPort) && a.port_num != 1) return Status::invalid();
  if ((mask & kAttrPkeyIndex) && a.pkey_index != 0) return Status::invalid();
  if ((mask & kAttrDestQpn) && a.dest_qp_num > k24BitMask) return Status::invalid();
  if ((mask & kAttrAccessFlags) &&
      (a.qp_access_flags & ~(kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                             kAccessRemoteAtomic | kAccessFlushGlobal | kAccessFlushPersistent)))
    return Status::invalid();
  if (mask & kAttrAv) {
    if (a.av.sgid_index >= cfg.gids.size() || cfg.gids[a.av.sgid_index].is_zero() ||
        a.av.dgid.is_zero())
      return Status::invalid();
    if (a.av.dgid.is_ipv4_mapped() != cfg.gids[a.av.sgid_index].is_ipv4_mapped())
      return Status::invalid();
  }
  if ((mask & kAttrCurState) && a.cur_qp_state != qp.state) return Status::invalid();
  return Status::ok();
}

uint16_t hash_sport(uint32_t a, uint32_t b) {
  uint32_t h = a * 0x9e3779b1u ^ b * 0x85ebca6bu;
  h ^= h >> 15;
  return static_cast<uint16_t>(0xc000 | (h & 0x3fff));  // 49152..65535, as rxe
}

}  // namespace

Status Engine::modify_qp(uint32_t qpn, const QpAttr& a, uint32_t mask) {
  Impl& m = *impl_;
  Qp* qp = m.find_qp(qpn);
  if (!qp) return Status::not_found();
  QpState cur = qp->state;
  QpState next = (mask & kAttrState) ? a.qp_state : cur;
  if (static_cast<uint8_t>(next) > static_cast<uint8_t>(QpState::kErr)) return Status::invalid();
  if (Status s = check_modify_mask(qp->type, cur, next, mask); !s) return s;
  if (Status s = check_values(m.cfg, *qp, a, mask); !s) return s;
  // Cap changes (kAttrCap) are never in the table, so no resize here.
  const bool connected = qp->type != QpType::kUd;
  const bool live = next != QpState::kReset && next != QpState::kInit && next != QpState::kErr;
  if (m.obs && connected && live &&
      (cur == QpState::kInit || cur == QpState::kReset || (mask & (kAttrAv | kAttrDestQpn)))) {
    // The path it will send on, told before anything changes so that a refusal leaves the QP.
    const AddressVector& av = (mask & kAttrAv) ? a.av : qp->attr.av;
    const uint32_t dqpn = (mask & kAttrDestQpn) ? a.dest_qp_num : qp->attr.dest_qp_num;
    const uint16_t sport = av.udp_sport ? av.udp_sport : hash_sport(qp->qpn, dqpn);
    if (int err = m.obs->on_qp_connect(qp->qpn, av.dgid, dqpn, sport)) return Status(err);
  }
  if (m.obs && connected && next == QpState::kReset && cur != QpState::kReset)
    m.obs->on_qp_disconnect(qp->qpn);

  QpAttr& q = qp->attr;
  if (mask & kAttrAccessFlags) q.qp_access_flags = a.qp_access_flags;
  if (mask & kAttrPkeyIndex) q.pkey_index = a.pkey_index;
  if (mask & kAttrPort) q.port_num = a.port_num;
  if (mask & kAttrQkey) q.qkey = a.qkey;
  if (mask & kAttrAv) q.av = a.av;
  if (mask & kAttrPathMtu) {
    q.path_mtu = a.path_mtu;
    qp->mtu = std::min(mtu_bytes(a.path_mtu), m.cfg.max_mtu);
  }
  if (mask & kAttrTimeout) q.timeout = a.timeout;
  if (mask & kAttrRetryCnt) q.retry_cnt = a.retry_cnt;
  if (mask & kAttrRnrRetry) q.rnr_retry = a.rnr_retry;
  if (mask & kAttrMaxQpRdAtomic) q.max_rd_atomic = a.max_rd_atomic;
  if (mask & kAttrMaxDestRdAtomic) {
    q.max_dest_rd_atomic = a.max_dest_rd_atomic;
    // Responder resources for that many READs/atomics, allocated here, never per packet.
    // (IBA allows the attribute only on INIT->RTR and SQD->SQD, with nothing queued.)
    const uint32_t n = std::max<uint32_t>(a.max_dest_rd_atomic, 1);
    if (qp->resp.resp_q.empty() && qp->resp.resp_q.capacity() < resp_queue_depth(n))
      qp->resp.resp_q.reset(resp_queue_depth(n));
    if (qp->resp.replay.size() != n) {
      qp->resp.replay.assign(n, AtomicReplay{});
      qp->resp.replay_next = 0;
    }
  }
  if (mask & kAttrMinRnrTimer) q.min_rnr_timer = a.min_rnr_timer;
  if (mask & kAttrDestQpn) q.dest_qp_num = a.dest_qp_num;
  if (mask & kAttrEnSqdAsyncNotify) q.en_sqd_async_notify = a.en_sqd_async_notify;
  if (mask & kAttrRqPsn) {
    q.rq_psn = a.rq_psn & k24BitMask;
    qp->resp.epsn = Psn(q.rq_psn);
  }
  if (mask & kAttrSqPsn) {
    q.sq_psn = a.sq_psn & k24BitMask;
    qp->req.next_psn = qp->req.max_psn = qp->comp.una = Psn(q.sq_psn);
    qp->comp.acked_psn = Psn(q.sq_psn) - 1;
  }
  if (mask & (kAttrRetryCnt | kAttrRnrRetry)) {
    qp->comp.retry_left = q.retry_cnt;
    qp->comp.rnr_left = q.rnr_retry;
  }
  if (mask & (kAttrAv | kAttrDestQpn)) {
    qp->udp_sport = q.av.udp_sport ? q.av.udp_sport : hash_sport(qp->qpn, q.dest_qp_num);
    qp->dmac_valid = false;
    if (qp->type != QpType::kUd) m.fill_template(*qp);
  }

  if (next != cur) {
    qp->state = next;
    switch (next) {
      case QpState::kReset: {
        // Back to the initial state: queues emptied without completions.
        qp->req.sq.clear();
        qp->resp.rq.clear();
        qp->resp.resp_q.clear();
        qp->req.send_pos = qp->req.started_end = qp->req.sq.head_pos();
        qp->req.send_off = 0;
        qp->req.rd_atomic_out = qp->resp.resp_rd_atomic = 0;
        qp->resp.cur_recv = false;
        qp->resp.rx_msg = ResponderState::RxMsg::kNone;
        qp->resp.nak_sent = qp->comp.any_ack = qp->resp.comm_est = qp->cnp.cnp_pending =
            qp->cnp.cnp_target = false;
        if (m.np) m.np->forget(qp->qpn);
        qp->fatal_raised = false;
        qp->comp.retrans_at = qp->req.rnr_until = qp->req.neigh_retry_at = Timestamp::never();
        qp->req.probe_at = qp->resp.dack_at = qp->req.rtt_sent = Timestamp::never();
        qp->req.srtt = qp->req.rttvar = Duration{};
        qp->req.force_ackreq = false;
        qp->resp.msn = Msn(0);
        for (auto& r : qp->resp.replay) r.valid = false;
        m.sr_setup(*qp, qp->selective);
        qp->resp.ts_arrived = Timestamp::never();
        // Its completions still in its CQs go too, as rdma-core's mlx5 provider cleans the CQs
        // on RESET: a QP brought back from ERR does not hand its old flush completions to the
        // next poll of its new life.
        for (uint32_t id : {qp->init.send_cq, qp->init.recv_cq})
          if (Cq* c = m.find_cq(id)) drop_cqes_of(*c, qp->qpn);
        break;
      }
      case QpState::kErr:
        qp->state = cur;  // qp_error() performs the transition (flush, last-WQE event)
        m.qp_error(*qp);
        break;
      case QpState::kRts:
        qp->comp.retry_left = q.retry_cnt;
        qp->comp.rnr_left = q.rnr_retry;
        m.activate(*qp);
        break;
      case QpState::kSqd:
        qp->req.sqd_notified = false;
        m.activate(*qp);
        break;
      default: break;
    }
  }
  return Status::ok();
}

Status Engine::query_qp(uint32_t qpn, QpAttr* attr, QpInitAttr* init) {
  Qp* qp = impl_->find_qp(qpn);
  if (!qp) return Status::not_found();
  if (attr) {
    *attr = qp->attr;
    attr->qp_state = attr->cur_qp_state = qp->state;
    attr->sq_psn = qp->req.next_psn.value();
    attr->rq_psn = qp->resp.epsn.value();
    attr->sq_draining =
        qp->state == QpState::kSqd && qp->req.sq.head_pos() != qp->req.started_end ? 1 : 0;
  }
  if (init) *init = qp->init;
  return Status::ok();
}

uint64_t Engine::qp_rate_bps(uint32_t qpn) const {
  const Qp* qp = impl_->find_qp(qpn);
  return qp && qp->cc ? qp->cc->rate_bps() : 0;
}

bool Engine::qp_cc_state(uint32_t qpn, Timestamp now, QpCcState* out) const {
  const Qp* qp = impl_->find_qp(qpn);
  if (!qp || !qp->cc) return false;
  *out = qp->cc->state(now);
  return true;
}

bool Engine::qp_traffic(uint32_t qpn, QpTraffic* out) const {
  const Qp* qp = impl_->find_qp(qpn);
  if (!qp) return false;
  *out = qp->traffic;
  return true;
}

namespace {

/// Applies `set` to an RC QP in RESET or INIT (the per-QP extension settings, agreed before
/// the QP is connected). ENOENT: no such QP; EINVAL: not RC, or past INIT.
template <typename Set>
Status set_before_rtr(Qp* qp, Set set) {
  if (!qp) return Status::not_found();
  if (qp->type != QpType::kRc || (qp->state != QpState::kReset && qp->state != QpState::kInit))
    return Status::invalid();
  set(*qp);
  return Status::ok();
}

}  // namespace

Status Engine::set_selective_repeat(uint32_t qpn, bool on) {
  return set_before_rtr(impl_->find_qp(qpn), [&](Qp& qp) { impl_->sr_setup(qp, on); });
}

bool Engine::selective_repeat(uint32_t qpn) const {
  const Qp* qp = impl_->find_qp(qpn);
  return qp && qp->selective;
}

Status Engine::set_ooo_placement(uint32_t qpn, bool on) {
  return set_before_rtr(impl_->find_qp(qpn), [&](Qp& qp) { qp.ooo_placement = on; });
}

bool Engine::ooo_placement(uint32_t qpn) const {
  const Qp* qp = impl_->find_qp(qpn);
  return qp && qp->ooo_placement;
}

Status Engine::set_peer_timestamps(uint32_t qpn, bool on) {
  return set_before_rtr(impl_->find_qp(qpn), [&](Qp& qp) { qp.timestamps = on; });
}

bool Engine::peer_timestamps(uint32_t qpn) const {
  const Qp* qp = impl_->find_qp(qpn);
  return qp && qp->timestamps;
}

Duration Engine::longest_retry_budget() const {
  Duration most{};
  for (const auto& qp : impl_->qps) {
    if (!qp || (qp->type != QpType::kRc && qp->type != QpType::kXrcSend)) continue;
    if (qp->state != QpState::kRts && qp->state != QpState::kSqd && qp->state != QpState::kSqe)
      continue;
    if (qp->attr.timeout == 0) return local_ack_timeout(0);  // waits for ever
    const Duration t = local_ack_timeout(qp->attr.timeout);
    most = std::max(most, Duration::nanos(t.ns * (int64_t{qp->attr.retry_cnt} + 1)));
  }
  return most;
}

void Engine::fail_all_qps() {
  for (const auto& qp : impl_->qps) {
    if (!qp || qp->state == QpState::kReset) continue;
    impl_->qp_error(*qp);
  }
}

Status Engine::destroy_qp(uint32_t qpn) {
  Impl& m = *impl_;
  Qp* qp = m.find_qp(qpn);
  if (!qp) return Status::not_found();
  if (Cq* c = m.find_cq(qp->init.send_cq)) c->users--;
  if (Cq* c = m.find_cq(qp->init.recv_cq)) c->users--;
  if (qp->resp.srq && qp->type != QpType::kXrcRecv) qp->resp.srq->users--;
  if (qp->init.pd) m.pds[qp->init.pd - 1].users--;
  if (qp->init.xrcd) m.xrcds[qp->init.xrcd - 1].users--;
  if (m.obs && qp->type != QpType::kUd && qp->state != QpState::kReset)
    m.obs->on_qp_disconnect(qpn);
  std::erase(m.active, qp);
  if (m.np) m.np->forget(qpn);
  m.qps[m.qp_slot(qpn)].reset();
  return Status::ok();
}

// ---- Posting --------------------------------------------------------------------------------

Status Engine::post_send(uint32_t qpn, const SendWr& wr, Timestamp now) {
  Impl& m = *impl_;
  Qp* qp = m.find_qp(qpn);
  if (!qp) return Status::not_found();
  m.last_now = std::max(m.last_now, now);
  switch (qp->state) {
    case QpState::kRts:
    case QpState::kSqd:
    case QpState::kSqe:
    case QpState::kErr: break;
    default: return Status::invalid();
  }
  bool ok_op = false;
  switch (qp->type) {
    case QpType::kRc: ok_op = true; break;
    case QpType::kXrcSend:
      // As RC but FLUSH and ATOMIC WRITE (no XRC opcodes for them, opcodes.def).
      ok_op = wr.opcode != WrOpcode::kFlush && wr.opcode != WrOpcode::kAtomicWrite;
      break;
    case QpType::kXrcRecv: ok_op = false; break;
    case QpType::kUc:
      ok_op = wr.opcode == WrOpcode::kSend || wr.opcode == WrOpcode::kSendWithImm ||
              wr.opcode == WrOpcode::kRdmaWrite || wr.opcode == WrOpcode::kRdmaWriteWithImm ||
              wr.opcode == WrOpcode::kLocalInv || wr.opcode == WrOpcode::kBindMw;
      break;
    case QpType::kUd:
      ok_op = (wr.opcode == WrOpcode::kSend || wr.opcode == WrOpcode::kSendWithImm) && wr.ah;
      break;
  }
  if (!ok_op) return Status::invalid();
  const bool flush = wr.opcode == WrOpcode::kFlush;
  const bool atomic_write = wr.opcode == WrOpcode::kAtomicWrite;
  if (flush) {
    // A defined placement type and selectivity level; the RETH carries at most 2^31 bytes
    // (IBA C9-94).
    if (wr.flush_type == 0 || (wr.flush_type & ~(kFlushGlobal | kFlushPersistent)) ||
        wr.flush_level > kFlushMr || wr.flush_len > (1u << 31))
      return Status::invalid();
  }
  // A bind names an allocated window (ibv_post_send(3): EINVAL for a bad WR).
  if (wr.opcode == WrOpcode::kBindMw && !m.mrs.find_mw(wr.mw_rkey)) return Status::invalid();
  if (wr.num_sge > qp->init.max_send_sge || (wr.num_sge && !wr.sg)) return Status::invalid();
  uint64_t total = 0;
  // Local operations, ATOMIC_WRITE (its 8 bytes are in the WR) and FLUSH carry no SGEs.
  const bool no_data =
      wr.opcode == WrOpcode::kLocalInv || wr.opcode == WrOpcode::kBindMw || flush || atomic_write;
  if (!no_data)
    for (uint32_t i = 0; i < wr.num_sge; ++i) total += wr.sg[i].length;
  bool inl = (wr.send_flags & kSendInline) && !no_data && wr.opcode != WrOpcode::kRdmaRead &&
             wr.opcode != WrOpcode::kAtomicCmpAndSwp && wr.opcode != WrOpcode::kAtomicFetchAndAdd;
  if (inl && total > qp->init.max_inline_data) return Status::invalid();
  if (qp->type == QpType::kUd && wr.ah && wr.ah->sgid_index >= m.cfg.gids.size())
    return Status::invalid();

  uint32_t pos = qp->req.sq.tail_pos();
  SendWqe* w = qp->req.sq.push();
  if (!w) return Status::no_memory();
  *w = SendWqe{};
  w->wr_id = wr.wr_id;
  w->opcode = wr.opcode;
  w->flags = wr.send_flags;
  w->signaled = (wr.send_flags & kSendSignaled) || qp->init.sq_sig_all;
  w->remote_addr = wr.remote_addr;
  w->rkey = wr.rkey;
  w->imm = wr.opcode == WrOpcode::kSendWithInv || wr.opcode == WrOpcode::kLocalInv
               ? wr.invalidate_rkey
               : wr.imm_data;
  w->compare_add = wr.compare_add;
  w->swap = wr.swap;
  w->num_sge = no_data ? 0 : wr.num_sge;
  if (is_local_op(*w)) {
    // Local operations carry no data; a bind's fields go where SendWqe has room for them.
    w->num_sge = 0;
    if (wr.opcode == WrOpcode::kBindMw) {
      w->imm = wr.mw_rkey;
      w->remote_addr = wr.bind_addr;
      w->compare_add = wr.bind_len;
      w->swap = uint64_t{wr.bind_lkey} << 32 | wr.bind_access;
    }
  }
  w->inline_data = inl;
  if (qp->type == QpType::kXrcSend) w->remote_qpn = wr.xrc_srqn & k24BitMask;
  if (qp->type == QpType::kUd) {
    w->av = *wr.ah;
    w->remote_qpn = wr.remote_qpn & k24BitMask;
    w->remote_qkey = wr.remote_qkey;
  }
  if (total > kMaxMsgSize) {
    w->local_error = WcStatus::kLocLenErr;
    total = 0;
  }
  w->length = static_cast<uint32_t>(total);
  uint32_t slot = qp->req.sq.slot_of(pos);
  if (inl) {
    // Inline: the bytes are copied now; no lkey needed (ibv_post_send(3), IBV_SEND_INLINE).
    uint8_t* dst = qp->req.sq_inline.data() + size_t{slot} * qp->init.max_inline_data;
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      std::memcpy(dst, reinterpret_cast<const void*>(wr.sg[i].addr), wr.sg[i].length);
      dst += wr.sg[i].length;
    }
  } else {
    std::copy_n(wr.sg, w->num_sge, qp->req.sq_sges.data() + size_t{slot} * qp->init.max_send_sge);
  }
  if (wr.opcode == WrOpcode::kRdmaRead) {
    // length is what is read into the SGEs.
  } else if (wr.opcode == WrOpcode::kAtomicCmpAndSwp || wr.opcode == WrOpcode::kAtomicFetchAndAdd) {
    if (w->length != 8) w->local_error = WcStatus::kLocLenErr;
    w->length = 8;
  } else if (atomic_write) {
    w->length = 8;
  } else if (flush) {
    w->length = wr.flush_len;
    w->imm = (uint32_t{wr.flush_level} << wire::kFethSelectivityShift) | wr.flush_type;
  }
  if (qp->state == QpState::kErr) {
    // Posting to a QP in ERR completes the WR at once with WR_FLUSH_ERR.
    m.flush_sq(*qp);
    return Status::ok();
  }
  if (qp->state == QpState::kSqe) {
    m.flush_sq(*qp);
    return Status::ok();
  }
  m.activate(*qp);
  return Status::ok();
}

Status Engine::post_recv(uint32_t qpn, const RecvWr& wr) {
  Impl& m = *impl_;
  Qp* qp = m.find_qp(qpn);
  if (!qp) return Status::not_found();
  if (qp->resp.srq || is_xrc(qp->type) || qp->state == QpState::kReset) return Status::invalid();
  if (wr.num_sge > qp->init.max_recv_sge || (wr.num_sge && !wr.sg)) return Status::invalid();
  uint32_t pos = qp->resp.rq.tail_pos();
  RecvWqe* w = qp->resp.rq.push();
  if (!w) return Status::no_memory();
  w->wr_id = wr.wr_id;
  w->num_sge = wr.num_sge;
  std::copy_n(wr.sg, wr.num_sge,
              qp->resp.rq_sges.data() + size_t{qp->resp.rq.slot_of(pos)} * qp->init.max_recv_sge);
  if (qp->state == QpState::kErr) m.flush_rq(*qp);
  return Status::ok();
}

// ---- Packet interface -------------------------------------------------------------------------

void Engine::on_frame(std::span<const uint8_t> frame, Timestamp now) {
  impl_->on_frame(frame, now);
}

size_t Engine::poll_transmit(TxSink& sink, NeighborResolver& neigh, Timestamp now) {
  const size_t mads = impl_->gsi.transmit(sink, neigh, now);
  return mads + impl_->poll_transmit(sink, neigh, now);
}

Timestamp Engine::next_deadline() const {
  return earliest(impl_->gsi.next_deadline(impl_->last_now), impl_->next_deadline());
}

void Engine::set_gids(std::vector<Gid> gids, size_t v1_base) {
  impl_->cfg.gids = std::move(gids);
  impl_->cfg.gid_v1_base = v1_base;
}

bool Engine::has_tx_work() const {
  if (impl_->gsi.has_tx_work()) return true;
  for (const Qp* qp : impl_->active)
    if (impl_->qp_tx_time(*qp) <= impl_->last_now) return true;
  return false;
}

void Engine::enable_gsi(bool on) { impl_->gsi.enable(on); }
size_t Engine::poll_gsi(std::span<GsiMad> out) { return impl_->gsi.poll(out); }
Status Engine::post_gsi(const GsiMad& m, Timestamp now) {
  if (now > impl_->last_now) impl_->last_now = now;
  return impl_->gsi.post(m, now);
}

}  // namespace uroce::transport
