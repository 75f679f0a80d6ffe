/**
 * @file two_engines.cc
 * @brief The two-engine harness (see two_engines.h).
 */
#include "two_engines.h"

#include <gtest/gtest.h>

#include <cstring>

namespace uroce::transport::testing {

class TwoEngines::Sink final : public TxSink {
 public:
  Sink(TwoEngines* h, int src) : h_(h), src_(src) {}
  uint8_t* begin_frame(size_t max_len) override {
    buf_.resize(max_len);
    return buf_.data();
  }
  void end_frame(size_t len, const TxMeta&) override {
    buf_.resize(len);
    h_->send(src_, std::move(buf_));
    buf_ = {};
  }

 private:
  TwoEngines* h_;
  int src_;
  std::vector<uint8_t> buf_;
};

class TwoEngines::Neighbors final : public NeighborResolver {
 public:
  explicit Neighbors(TwoEngines* h) : h_(h) {}
  bool resolve(const Gid& ip, MacAddr* mac) override {
    for (auto& s : h_->side_) {
      if (s.gid == ip) {
        *mac = s.mac;
        return true;
      }
    }
    return false;
  }

 private:
  TwoEngines* h_;
};

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    if ((i & 7) == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    p[i] = static_cast<uint8_t>(x >> ((i & 7) * 8));
  }
}

TwoEngines::TwoEngines(uint64_t seed, bool ipv6, uint32_t max_mtu, uint32_t cq_depth) : rng_(seed) {
  for (int i = 0; i < 2; ++i) {
    Side& s = side_[i];
    s.mac = MacAddr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)}};
    if (ipv6) {
      Gid::parse(i == 0 ? "fd00::1" : "fd00::2", &s.gid);
    } else {
      s.gid = Gid::from_ipv4(0xc6120001u + static_cast<uint32_t>(i));  // 198.18.0.1 / .2
    }
    EngineConfig cfg;
    cfg.mac = s.mac;
    cfg.gids = {s.gid};
    cfg.max_mtu = max_mtu;
    cfg.key_seed = seed * 31 + static_cast<uint64_t>(i);
    s.engine = std::make_unique<Engine>(cfg, &s.counters, &s.observer);
    s.pd = s.engine->alloc_pd().value();
    s.scq = s.engine->create_cq(cq_depth).value();
    s.rcq = s.engine->create_cq(cq_depth).value();
    sink_[i] = std::make_unique<Sink>(this, i);
  }
  neigh_ = std::make_unique<Neighbors>(this);
}

TwoEngines::~TwoEngines() = default;

AddressVector TwoEngines::av_to_peer(int s) const {
  AddressVector av;
  av.dgid = side_[1 - s].gid;
  av.sgid_index = 0;
  av.hop_limit = 64;
  return av;
}

uint32_t TwoEngines::create_qp(int s, QpType type, uint32_t max_wr, uint32_t max_sge,
                               uint32_t max_inline) {
  Side& sd = side_[s];
  QpInitAttr ia;
  ia.type = type;
  ia.pd = sd.pd;
  ia.send_cq = sd.scq;
  ia.recv_cq = sd.rcq;
  ia.max_send_wr = max_wr;
  ia.max_recv_wr = max_wr;
  ia.max_send_sge = max_sge;
  ia.max_recv_sge = max_sge;
  ia.max_inline_data = max_inline;
  auto r = sd.engine->create_qp(ia);
  EXPECT_TRUE(r);
  return r.value();
}

void TwoEngines::ud_to_rts(int s, uint32_t qpn, uint32_t qkey, uint32_t sq_psn) {
  Engine& e = *side_[s].engine;
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qkey = qkey;
  a.pkey_index = 0;
  a.port_num = 1;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrQkey));
  a.qp_state = QpState::kRtr;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState));
  a.qp_state = QpState::kRts;
  a.sq_psn = sq_psn;
  ASSERT_TRUE(e.modify_qp(qpn, a, kAttrState | kAttrSqPsn));
}

std::pair<uint32_t, uint32_t> TwoEngines::connect(QpType type, const QpAttr& attr, uint32_t max_wr,
                                                  uint32_t max_sge, uint32_t max_inline,
                                                  uint32_t access) {
  uint32_t q[2] = {create_qp(0, type, max_wr, max_sge, max_inline),
                   create_qp(1, type, max_wr, max_sge, max_inline)};
  if (type == QpType::kUd) {
    ud_to_rts(0, q[0], attr.qkey, attr.sq_psn);
    ud_to_rts(1, q[1], attr.qkey, attr.sq_psn);
    return {q[0], q[1]};
  }
  for (int i = 0; i < 2; ++i) {
    Engine& e = *side_[i].engine;
    QpAttr a = attr;
    a.qp_state = QpState::kInit;
    a.qp_access_flags = access;
    EXPECT_TRUE(e.modify_qp(q[i], a, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrAccessFlags));
    a.qp_state = QpState::kRtr;
    a.av = av_to_peer(i);
    a.dest_qp_num = q[1 - i];
    uint32_t m = kAttrState | kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
    if (type == QpType::kRc) m |= kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    EXPECT_TRUE(e.modify_qp(q[i], a, m));
    a.qp_state = QpState::kRts;
    m = kAttrState | kAttrSqPsn;
    if (type == QpType::kRc) m |= kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
    EXPECT_TRUE(e.modify_qp(q[i], a, m));
  }
  return {q[0], q[1]};
}

void TwoEngines::send(int src, std::vector<uint8_t> bytes) {
  LinkOptions& o = link_[src];
  std::uniform_real_distribution<double> u(0, 1);
  stats_.sent[src]++;
  if (o.blackhole || u(rng_) < o.loss) {
    stats_.dropped[src]++;
    return;
  }
  if (o.corrupt > 0 && u(rng_) < o.corrupt && !bytes.empty()) {
    stats_.corrupted[src]++;
    // Flip a byte the ICRC covers (after Ethernet + IP), so the gate must drop it.
    size_t lo = std::min<size_t>(bytes.size() - 1, 14 + 20 + 8);
    size_t at = lo + rng_() % (bytes.size() - lo);
    bytes[at] ^= static_cast<uint8_t>(1 + rng_() % 255);
  }
  int copies = (o.duplicate > 0 && u(rng_) < o.duplicate) ? 2 : 1;
  if (copies == 2) stats_.duplicated[src]++;
  for (int c = 0; c < copies; ++c) {
    Duration d = o.latency;
    if (o.reorder > 0 && u(rng_) < o.reorder)
      d = d + Duration::nanos(
                  static_cast<int64_t>(rng_() % static_cast<uint64_t>(o.reorder_delay.ns + 1)));
    Frame f{now_ + d, seq_++, 1 - src, c + 1 < copies ? bytes : std::move(bytes)};
    inflight_.push(std::move(f));
  }
}

bool TwoEngines::step() {
  // Deliver everything due, then let both engines transmit.
  bool did = false;
  while (!inflight_.empty() && inflight_.top().at <= now_) {
    Frame f = std::move(const_cast<Frame&>(inflight_.top()));
    inflight_.pop();
    side_[f.dst].engine->on_frame(f.bytes, now_);
    did = true;
  }
  for (int i = 0; i < 2; ++i)
    if (side_[i].engine->poll_transmit(*sink_[i], *neigh_, now_) > 0) did = true;
  if (did) {
    stall_ = 0;
    return true;
  }
  Timestamp t = std::min(side_[0].engine->next_deadline(), side_[1].engine->next_deadline());
  if (!inflight_.empty()) t = std::min(t, inflight_.top().at);
  if (t.is_never()) return false;
  if (t > now_) {
    now_ = t;
    stall_ = 0;
  } else if (++stall_ > 1000) {
    ADD_FAILURE() << "engines report work now but send nothing";
    return false;
  }
  return true;
}

bool TwoEngines::run_until(const std::function<bool()>& pred, Duration max) {
  Timestamp end = now_ + max;
  while (!pred()) {
    if (now_ > end) return false;
    if (!step()) return pred();
  }
  return true;
}

}  // namespace uroce::transport::testing
