/**
 * @file testbed.h
 * @brief Scenario set-up on the real engine (tests and benchmarks): two EngineHosts joined by a
 * pair of links (or through a Switch), QP creation and the RESET -> INIT -> RTR -> RTS transitions
 * with the attribute masks ibv_modify_qp(3) lists per QP type, and the byte-count knob.
 *
 * Addresses: MACs 02:00:00:00:00:0N, IPv4 198.18.0.N (GID ::ffff:198.18.0.N).
 * Units: ns, bytes, bit/s.
 */
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <vector>

#include "sim/engine_host.h"
#include "sim/link.h"
#include "sim/pcap.h"
#include "sim/simulator.h"
#include "sim/switch.h"
#include "transport/engine.h"

namespace uroce::sim {

inline MacAddr host_mac(int i) { return MacAddr{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(i + 1)}}; }
inline Gid host_gid(int i) { return Gid::from_ipv4(0xc6120001u + static_cast<uint32_t>(i)); }

/// Bytes each RC transfer test moves: UROCE_SIM_BYTES, default 32 MiB.
inline uint64_t sim_bytes(uint64_t def = 32ull << 20) {
  const char* s = std::getenv("UROCE_SIM_BYTES");
  if (!s || !*s) return def;
  return std::strtoull(s, nullptr, 0);
}

struct FabricOptions {
  LinkParams link{
      .rate_bps = 100'000'000'000ull, .propagation = Duration::nanos(1000), .max_frames = 256};
  bool via_switch = false;
  SwitchConfig sw;
  uint32_t max_mtu = 4096;
  transport::LossRecovery loss_recovery = transport::LossRecovery::kGoBackN;  ///< both hosts
};

/// Two hosts, A (index 0) and B (index 1).
class TwoHostFabric {
 public:
  explicit TwoHostFabric(const FabricOptions& o = {}) : opt_(o) {
    for (int i = 0; i < 2; ++i) {
      transport::EngineConfig cfg;
      cfg.mac = host_mac(i);
      cfg.gids = {host_gid(i)};
      cfg.max_mtu = o.max_mtu;
      cfg.link_speed_bps = o.link.rate_bps;
      cfg.key_seed = 0x1234 + static_cast<uint64_t>(i);
      cfg.loss_recovery = o.loss_recovery;
      host[i] = std::make_unique<EngineHost>(sim, cfg, i == 0 ? "A" : "B");
      host[i]->neighbors().add(host_gid(1 - i), host_mac(1 - i));
    }
    LinkParams sw_link = o.link;
    sw_link.max_frames = 0;
    if (o.via_switch) {
      sw = std::make_unique<Switch>(sim, o.sw);
      for (int i = 0; i < 2; ++i) {
        uint32_t port = sw->add_port(sw_link, host[i].get(), 0);
        sw->add_route(host_mac(i), port);
        tx[i] = std::make_unique<Link>(sim, o.link, sw.get(), port);
        host[i]->attach(tx[i].get());
      }
    } else {
      for (int i = 0; i < 2; ++i) {
        tx[i] = std::make_unique<Link>(sim, o.link, host[1 - i].get(), 0);
        host[i]->attach(tx[i].get());
      }
    }
    // Debug aid: UROCE_SIM_PCAP=file.pcap records both directions as the receivers see them,
    // from simulated time UROCE_SIM_PCAP_FROM_NS on (default 0).
    if (const char* p = std::getenv("UROCE_SIM_PCAP"); p && *p) {
      pcap = std::make_unique<PcapWriter>(p);
      const char* from = std::getenv("UROCE_SIM_PCAP_FROM_NS");
      int64_t from_ns = from ? std::strtoll(from, nullptr, 0) : 0;
      for (int i = 0; i < 2; ++i)
        wire_from(i).set_tap([this, from_ns](const Frame& fr, Timestamp t) {
          if (t.ns >= from_ns) pcap->write(fr, t);
        });
    }
  }
  /// The link carrying frames from host `from` towards the other host that impairments act on
  /// (the last hop, so the switch queue sees every frame).
  Link& wire_from(int from) { return sw ? sw->egress(static_cast<uint32_t>(1 - from)) : *tx[from]; }
  void impair(int from, const Impairments& imp) { wire_from(from).set_impairments(imp); }

  Simulator sim;
  std::unique_ptr<EngineHost> host[2];
  std::unique_ptr<Link> tx[2];
  std::unique_ptr<Switch> sw;
  std::unique_ptr<PcapWriter> pcap;

 private:
  FabricOptions opt_;
};

/// One QP with its PD and CQs on a host.
struct Endpoint {
  EngineHost* h = nullptr;
  transport::QpType type = transport::QpType::kRc;
  uint32_t pd = 0, scq = 0, rcq = 0, qpn = 0;
  int index = 0;  ///< host index in the fabric (address)
};

inline Endpoint make_endpoint(EngineHost& h, int index, transport::QpType type,
                              uint32_t depth = 256) {
  Endpoint e;
  e.h = &h;
  e.type = type;
  e.index = index;
  auto& eng = h.engine();
  auto pd = eng.alloc_pd();
  auto scq = eng.create_cq(depth * 2);
  auto rcq = eng.create_cq(depth * 2);
  if (!pd || !scq || !rcq) return e;
  e.pd = pd.value();
  e.scq = scq.value();
  e.rcq = rcq.value();
  transport::QpInitAttr a;
  a.type = type;
  a.pd = e.pd;
  a.send_cq = e.scq;
  a.recv_cq = e.rcq;
  a.max_send_wr = depth;
  a.max_recv_wr = depth;
  a.max_send_sge = 4;
  a.max_recv_sge = 4;
  a.max_inline_data = 64;
  auto q = eng.create_qp(a);
  if (q) e.qpn = q.value();
  return e;
}

/// Connection parameters (ibv_qp_attr fields) for both ends.
struct ConnParams {
  uint8_t path_mtu = 3;    ///< ibv_mtu: 1 = 256 ... 5 = 4096
  uint32_t psn_a = 0x100;  ///< A's send PSN = B's expected receive PSN
  uint32_t psn_b = 0x200;
  uint8_t timeout = 8;  ///< 4.096 us * 2^8 = 1.048576 ms
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  ///< 0.01 ms
  uint8_t max_rd_atomic = 16;
  uint32_t qkey = 0x11111111;
  uint32_t access = transport::kAccessLocalWrite | transport::kAccessRemoteWrite |
                    transport::kAccessRemoteRead | transport::kAccessRemoteAtomic |
                    transport::kAccessFlushGlobal;
};

/// Moves `e` to RTS (or RTR/RTS for UD) towards `peer`. Returns the first failing Status.
inline Status bring_up(Endpoint& e, const Endpoint& peer, const ConnParams& c, bool is_a) {
  using namespace transport;
  auto& eng = e.h->engine();
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.pkey_index = 0;
  a.port_num = 1;
  uint32_t mask = kAttrState | kAttrPkeyIndex | kAttrPort;
  if (e.type == QpType::kUd) {
    a.qkey = c.qkey;
    mask |= kAttrQkey;
  } else {
    a.qp_access_flags = c.access;
    mask |= kAttrAccessFlags;
  }
  if (Status s = eng.modify_qp(e.qpn, a, mask); !s) return s;

  a = QpAttr{};
  a.qp_state = QpState::kRtr;
  mask = kAttrState;
  if (e.type != QpType::kUd) {
    a.av.dgid = host_gid(peer.index);
    a.av.sgid_index = 0;
    a.av.hop_limit = 64;
    a.path_mtu = c.path_mtu;
    a.dest_qp_num = peer.qpn;
    a.rq_psn = is_a ? c.psn_b : c.psn_a;
    mask |= kAttrAv | kAttrPathMtu | kAttrDestQpn | kAttrRqPsn;
    if (e.type == QpType::kRc) {
      a.max_dest_rd_atomic = c.max_rd_atomic;
      a.min_rnr_timer = c.min_rnr_timer;
      mask |= kAttrMaxDestRdAtomic | kAttrMinRnrTimer;
    }
  }
  if (Status s = eng.modify_qp(e.qpn, a, mask); !s) return s;

  a = QpAttr{};
  a.qp_state = QpState::kRts;
  a.sq_psn = is_a ? c.psn_a : c.psn_b;
  mask = kAttrState | kAttrSqPsn;
  if (e.type == QpType::kRc) {
    a.timeout = c.timeout;
    a.retry_cnt = c.retry_cnt;
    a.rnr_retry = c.rnr_retry;
    a.max_rd_atomic = c.max_rd_atomic;
    mask |= kAttrTimeout | kAttrRetryCnt | kAttrRnrRetry | kAttrMaxQpRdAtomic;
  }
  return eng.modify_qp(e.qpn, a, mask);
}

inline Status connect(Endpoint& a, Endpoint& b, const ConnParams& c) {
  if (Status s = bring_up(a, b, c, true); !s) return s;
  return bring_up(b, a, c, false);
}

/// A registered buffer, 8-byte aligned (atomics need it).
struct Region {
  std::vector<uint64_t> words;
  transport::MrKeys keys;
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words.data()); }
  uint64_t addr() { return reinterpret_cast<uint64_t>(words.data()); }
  size_t size() const { return words.size() * 8; }
  std::span<uint8_t> bytes() { return {data(), size()}; }
};

inline Region make_region(Endpoint& e, size_t bytes, uint32_t access) {
  Region r;
  r.words.assign((bytes + 7) / 8, 0);
  auto k = e.h->engine().reg_mr(e.pd, r.addr(), r.size(), access);
  if (k) r.keys = k.value();
  return r;
}

/// Deterministic payload byte `off` of message `msg`.
inline uint8_t pattern(uint64_t msg, uint64_t off) {
  uint64_t x = (msg * 0x9e3779b97f4a7c15ull) ^ (off * 0xbf58476d1ce4e5b9ull);
  x ^= x >> 29;
  return static_cast<uint8_t>(x ^ (x >> 17));
}

inline void fill(std::span<uint8_t> b, uint64_t msg) {
  for (size_t i = 0; i < b.size(); ++i) b[i] = pattern(msg, i);
}

/// Index of the first byte that differs from pattern(msg, .), or -1.
inline int64_t first_mismatch(std::span<const uint8_t> b, uint64_t msg) {
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != pattern(msg, i)) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace uroce::sim
