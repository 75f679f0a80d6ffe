/**
 * @file fake_endpoint.h
 * @brief A scripted endpoint for the simulator-core tests: sends RoCEv2-shaped IPv4 frames
 * (Ethernet + IPv4 with ECT(0) + UDP 4791 + BTH + payload, no valid ICRC) on its link,
 * honours PFC frames it receives, and records every frame that arrives. Units: ns, bytes.
 */
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/frame_bytes.h"
#include "sim/link.h"
#include "sim/simulator.h"
#include "transport/wire/pfc.h"

namespace uroce::sim::test {

inline MacAddr mac_of(uint8_t n) { return MacAddr{{0x02, 0, 0, 0, 0, n}}; }

/// Writes a RoCEv2-looking frame of exactly `len` bytes (len >= 66) from src to dst.
inline void make_roce_frame(std::vector<uint8_t>& b, size_t len, const MacAddr& src,
                            const MacAddr& dst, uint8_t dscp, uint32_t seq) {
  b.assign(len, 0);
  for (int i = 0; i < 6; ++i) {
    b[i] = dst.b[i];
    b[6 + i] = src.b[i];
  }
  b[12] = 0x08;
  b[13] = 0x00;
  size_t ip = 14;
  b[ip] = 0x45;
  b[ip + 1] = static_cast<uint8_t>(dscp << 2);
  uint16_t tot = static_cast<uint16_t>(len - 14);
  b[ip + 2] = static_cast<uint8_t>(tot >> 8);
  b[ip + 3] = static_cast<uint8_t>(tot);
  b[ip + 8] = 64;
  b[ip + 9] = 17;
  size_t udp = ip + 20;
  b[udp + 2] = kRoceUdpPort >> 8;
  b[udp + 3] = kRoceUdpPort & 0xff;
  size_t bth = udp + 8;
  b[bth] = 0x04;  // RC SEND_ONLY
  b[bth + 9] = static_cast<uint8_t>(seq >> 16);
  b[bth + 10] = static_cast<uint8_t>(seq >> 8);
  b[bth + 11] = static_cast<uint8_t>(seq);
  for (size_t i = bth + 12; i < len; ++i) b[i] = static_cast<uint8_t>(i * 7 + seq);
  set_ecn(b, Ecn::kEct0);  // also writes the IPv4 header checksum
}

inline bool ipv4_checksum_ok(std::span<const uint8_t> b) {
  size_t ip = ip_offset(b);
  uint32_t sum = 0;
  for (size_t i = 0; i < 20; i += 2) sum += static_cast<uint32_t>((b[ip + i] << 8) | b[ip + i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return sum == 0xffff;
}

class FakeEndpoint final : public Node, public HostPort, public LinkObserver {
 public:
  struct Rx {
    Timestamp t;
    uint64_t id;
    std::vector<uint8_t> bytes;
  };
  struct Tx {
    size_t len;
    MacAddr dst;
    uint8_t priority;
    uint8_t dscp;
  };

  FakeEndpoint(Simulator& sim, MacAddr mac) : sim_(sim), mac_(mac) { sim.add_node(this); }
  void attach(Link* l) override {
    link_ = l;
    l->set_observer(this);
  }
  /// Queues `n` frames to be sent as fast as the link takes them.
  void send(size_t n, size_t len, MacAddr dst, uint8_t priority = 0, uint8_t dscp = 26) {
    for (size_t i = 0; i < n; ++i) pending_.push_back(Tx{len, dst, priority, dscp});
  }

  Timestamp next_wake() const override {
    return !pending_.empty() && !blocked_ ? sim_.now() : Timestamp::never();
  }
  void poll(Timestamp now) override {
    while (!pending_.empty()) {
      const Tx& t = pending_.front();
      if (!link_->can_accept(t.len)) {
        blocked_ = true;
        return;
      }
      Frame f = sim_.pool().get(t.len);
      make_roce_frame(f.bytes, t.len, mac_, t.dst, t.dscp, seq_++);
      f.priority = t.priority;
      link_->enqueue(std::move(f), now);
      pending_.pop_front();
    }
  }
  void on_space(Timestamp) override { blocked_ = false; }

  void receive(uint32_t, Frame&& f, Timestamp now) override {
    wire::MacControlFrame m;
    if (wire::parse_mac_control(f.bytes, &m) == wire::MacControlParse::kOk) {
      ++pfc_rx;
      const uint64_t rate = link_->params().rate_bps;
      for (int p = 0; p < kPriorities; ++p)
        if (m.pause.class_enable & (1u << p))
          link_->pause(p, Duration::nanos(wire::pause_quanta_ns(m.pause.quanta[p], rate)), now);
    } else {
      rx.push_back(Rx{now, f.id, f.bytes});
    }
    sim_.pool().put(std::move(f));
  }

  std::vector<Rx> rx;
  uint64_t pfc_rx = 0;

 private:
  Simulator& sim_;
  MacAddr mac_;
  Link* link_ = nullptr;
  std::deque<Tx> pending_;
  bool blocked_ = false;
  uint32_t seq_ = 0;
};

}  // namespace uroce::sim::test
