/**
 * @file fixture_responder_test.cc
 * @brief Replays the requests of the Soft-RoCE (Linux rdma_rxe) captures in tests/fixtures/
 *        into uroce's RC responder and compares what uroce answers with what rxe answered
 *        (issue #7: "replayed into uroce's parser and responder").
 *
 * Each capture holds one or more connections (a perftest or pingpong run each). For every
 * connection, the requester's frames are parsed, re-addressed to an EngineUnderTest QP (PSNs
 * shifted to its rq_psn, RETH/AtomicETH addresses and rkey mapped into its registered region),
 * rebuilt, and fed in capture order, loss and resends included; the rest of each frame
 * (opcode, flags, lengths, payload, atomic operands) is rxe's. Then:
 * - WRITE: every written byte is in uroce's memory, the last ACK covers the last PSN, and
 *   uroce NAKs (PSN sequence error) exactly the PSNs rxe NAKed (the loss capture);
 * - READ: with uroce's memory holding the bytes rxe returned, uroce's READ responses match
 *   rxe's opcode for opcode, PSN for PSN and byte for byte;
 * - ATOMIC: with each target holding rxe's initial value, uroce returns the original values
 *   rxe returned, in order, and each target ends as IBA 9.4.5 says for rxe's operands.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pcap_file.h"
#include "support/packet_builder.h"
#include "transport/wire/parse.h"

namespace uroce::interop {
namespace {

using transport::testing::EngineUnderTest;
using wire::Opcode;

constexpr uint32_t kPsnMask = 0xffffff;

/// One RC connection of a capture: the requester's frames and the responder's, in order.
struct Connection {
  std::vector<wire::ParsedPacket> requests;
  std::vector<wire::ParsedPacket> responses;
};

/// The capture's frames, parsed (the packets point into `frames`, which must outlive them).
struct Capture {
  std::vector<PcapFrame> frames;
  std::vector<Connection> connections;  ///< by first appearance
};

/// Groups a capture's RC frames into connections, keyed by the requester's destination QPN.
void load(const std::string& name, Capture* c) {
  std::string err =
      read_pcap(std::string(UROCE_FIXTURES_DIR) + "/rxe_" + name + ".pcap", &c->frames);
  ASSERT_EQ(err, "");
  std::map<uint32_t, size_t> by_req_qpn;   // requests' dest QPN -> connection
  std::map<uint32_t, size_t> by_resp_qpn;  // responses' dest QPN (the requester's QP)
  std::map<size_t, Gid> requester_ip;
  for (const PcapFrame& f : c->frames) {
    wire::ParsedPacket p;
    if (wire::parse(f.bytes, &p) != wire::DropReason::kOk || p.opcode == Opcode::kCnp) continue;
    if (p.info->is(wire::OpFlag::kRequest)) {
      auto [it, fresh] = by_req_qpn.try_emplace(p.dest_qpn.value(), c->connections.size());
      if (fresh) {
        c->connections.emplace_back();
        requester_ip[it->second] = p.src_ip;
      }
      c->connections[it->second].requests.push_back(p);
    } else {
      // A response goes to the requester: the connection whose requests came from its dst IP
      // and that has no response QPN yet, or the one it already belongs to.
      size_t conn = SIZE_MAX;
      if (auto it = by_resp_qpn.find(p.dest_qpn.value()); it != by_resp_qpn.end()) {
        conn = it->second;
      } else {
        for (size_t i = c->connections.size(); i-- > 0;)
          if (requester_ip[i] == p.dst_ip) {
            conn = i;
            break;
          }
        if (conn == SIZE_MAX) continue;
        by_resp_qpn[p.dest_qpn.value()] = conn;
      }
      c->connections[conn].responses.push_back(p);
    }
  }
}

/// Maps one connection onto an EngineUnderTest: PSNs onto its rq_psn, addresses into `mem`.
struct Mapping {
  uint32_t psn_base = 0;
  uint64_t va_base = 0;
  uint32_t psn(Psn p) const { return (p.value() - psn_base + EngineUnderTest::kRqPsn) & kPsnMask; }
};

Mapping mapping_of(const Connection& c) {
  Mapping m;
  m.psn_base = c.requests.front().psn.value();
  m.va_base = UINT64_MAX;
  for (const auto& p : c.requests) {
    if (p.has(wire::ExtHdr::kReth)) m.va_base = std::min(m.va_base, p.reth.va);
    if (p.has(wire::ExtHdr::kAtomicEth)) m.va_base = std::min(m.va_base, p.atomic_eth.va);
  }
  if (m.va_base == UINT64_MAX) m.va_base = 0;
  return m;
}

/// rxe's request p, re-addressed to t's QP and region.
std::vector<uint8_t> readdress(EngineUnderTest& t, const Mapping& m, const wire::ParsedPacket& p) {
  wire::FrameSpec s = t.pb.spec(p.opcode, m.psn(p.psn), p.ackreq);
  s.se = p.se;
  if (p.has(wire::ExtHdr::kReth)) {
    s.reth = p.reth;
    s.reth.va = t.va(p.reth.va - m.va_base);
    s.reth.rkey = t.keys.rkey;
  }
  if (p.has(wire::ExtHdr::kAtomicEth)) {
    s.atomic_eth = p.atomic_eth;
    s.atomic_eth.va = t.va(p.atomic_eth.va - m.va_base);
    s.atomic_eth.rkey = t.keys.rkey;
  }
  s.imm = p.imm;
  return t.pb.build(s, p.payload);
}

/// Feeds every request and returns what uroce sent back (CNPs left out).
std::vector<transport::testing::Captured> replay(EngineUnderTest& t, const Mapping& m,
                                                 const Connection& c) {
  std::vector<transport::testing::Captured> out;
  for (const auto& p : c.requests) {
    t.rx(readdress(t, m, p));
    t.tx();
    while (!t.sink.empty()) {
      auto f = t.sink.pop();
      if (f.p.opcode != Opcode::kCnp) out.push_back(std::move(f));
    }
  }
  return out;
}

bool is_nak_seq(const wire::ParsedPacket& p) {
  return p.opcode == Opcode::kRcAcknowledge && p.aeth.syndrome == 0x60;
}

void check_writes(const std::string& name, size_t min_connections) {
  Capture cap;
  ASSERT_NO_FATAL_FAILURE(load(name, &cap));
  ASSERT_GE(cap.connections.size(), min_connections);
  for (const Connection& c : cap.connections) {
    SCOPED_TRACE("connection of " + std::to_string(c.requests.size()) + " requests");
    ASSERT_FALSE(c.requests.empty());
    EngineUnderTest t;
    Mapping m = mapping_of(c);
    auto out = replay(t, m, c);
    // Expected memory: every accepted (in-sequence) WRITE packet's payload at its offset.
    std::vector<uint8_t> want(t.mem(), t.mem() + EngineUnderTest::kRegion);
    uint32_t expect_psn = m.psn(c.requests.front().psn);
    uint64_t next_va = 0;
    for (const auto& p : c.requests) {
      if (m.psn(p.psn) != expect_psn) continue;  // out of sequence: dropped, resent later
      expect_psn = (expect_psn + 1) & kPsnMask;
      if (p.has(wire::ExtHdr::kReth)) next_va = p.reth.va - m.va_base;
      ASSERT_LE(next_va + p.payload.size(), want.size());
      std::copy(p.payload.begin(), p.payload.end(), want.begin() + static_cast<long>(next_va));
      next_va += p.payload.size();
    }
    EXPECT_TRUE(std::equal(want.begin(), want.end(), t.mem())) << "memory differs";
    EXPECT_TRUE(t.canaries_intact());
    // ACKs: the last one covers the last PSN.
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back().p.opcode, Opcode::kRcAcknowledge);
    EXPECT_TRUE(out.back().p.aeth.is_ack());
    EXPECT_EQ(out.back().p.psn.value(), (expect_psn - 1) & kPsnMask);
    // NAKs: uroce NAKs the PSNs rxe NAKed.
    std::set<uint32_t> rxe_naks, our_naks;
    for (const auto& r : c.responses)
      if (is_nak_seq(r)) rxe_naks.insert(m.psn(r.psn));
    for (const auto& f : out)
      if (is_nak_seq(f.p)) our_naks.insert(f.p.psn.value());
    EXPECT_EQ(our_naks, rxe_naks);
  }
}

TEST(FixtureResponder, RxeWritesLandInUroceMemory) { check_writes("rc_write", 2); }

/// rxe's SEND messages (in-sequence packets, FIRST..LAST or ONLY) land in uroce's posted
/// receive buffers byte for byte, one completion per message, in order.
void check_sends(const std::string& name, size_t min_connections) {
  Capture cap;
  ASSERT_NO_FATAL_FAILURE(load(name, &cap));
  ASSERT_GE(cap.connections.size(), min_connections);
  constexpr uint32_t kBuf = 4096;
  for (const Connection& c : cap.connections) {
    SCOPED_TRACE("connection of " + std::to_string(c.requests.size()) + " requests");
    EngineUnderTest t;
    Mapping m = mapping_of(c);
    std::vector<std::vector<uint8_t>> msgs;
    std::vector<uint8_t> cur;
    uint32_t expect_psn = m.psn(c.requests.front().psn);
    for (const auto& p : c.requests) {
      if (m.psn(p.psn) != expect_psn) continue;  // out of sequence: dropped, resent later
      expect_psn = (expect_psn + 1) & kPsnMask;
      cur.insert(cur.end(), p.payload.begin(), p.payload.end());
      if (p.opcode == Opcode::kRcSendOnly || p.opcode == Opcode::kRcSendLast ||
          p.opcode == Opcode::kRcSendOnlyWithImmediate ||
          p.opcode == Opcode::kRcSendLastWithImmediate) {
        msgs.push_back(std::move(cur));
        cur.clear();
      }
    }
    ASSERT_FALSE(msgs.empty());
    ASSERT_LE(msgs.size() * kBuf, EngineUnderTest::kRegion);
    for (size_t i = 0; i < msgs.size(); ++i) {
      ASSERT_LE(msgs[i].size(), kBuf);
      t.post_recv(i, i * kBuf, kBuf);
    }
    replay(t, m, c);
    auto q = t.cqes();
    ASSERT_EQ(q.size(), msgs.size());
    for (size_t i = 0; i < msgs.size(); ++i) {
      EXPECT_EQ(q[i].wr_id, i);
      EXPECT_EQ(q[i].status, transport::WcStatus::kSuccess);
      EXPECT_EQ(q[i].opcode, transport::WcOpcode::kRecv);
      EXPECT_EQ(q[i].byte_len, msgs[i].size());
      EXPECT_TRUE(std::equal(msgs[i].begin(), msgs[i].end(), t.mem() + i * kBuf))
          << "message " << i;
    }
    EXPECT_TRUE(t.canaries_intact());
  }
}

TEST(FixtureResponder, RxeSendsLandInUrocesReceiveBuffers) {
  check_sends("rc_send", 2);
  check_sends("rc_send_bw", 1);
}

TEST(FixtureResponder, RxeLossPatternGetsTheNaksRxeSent) {
  check_writes("rc_write_loss", 1);
  // The capture must contain the thing this test is about.
  Capture cap;
  ASSERT_NO_FATAL_FAILURE(load("rc_write_loss", &cap));
  size_t naks = 0;
  for (const auto& c : cap.connections)
    for (const auto& r : c.responses) naks += is_nak_seq(r);
  EXPECT_GT(naks, 0u);
}

TEST(FixtureResponder, RxeReadsGetRxesResponsesByteForByte) {
  Capture cap;
  ASSERT_NO_FATAL_FAILURE(load("rc_read", &cap));
  ASSERT_GE(cap.connections.size(), 2u);
  for (const Connection& c : cap.connections) {
    SCOPED_TRACE("connection of " + std::to_string(c.requests.size()) + " requests");
    EngineUnderTest t;
    Mapping m = mapping_of(c);
    // uroce's memory holds what rxe's returned: response i of request k at request k's VA.
    size_t ri = 0;
    for (const auto& q : c.requests) {
      uint64_t off = q.reth.va - m.va_base;
      uint32_t left = q.reth.dma_len;
      while (left > 0 && ri < c.responses.size()) {
        const auto& r = c.responses[ri++];
        ASSERT_LE(off + r.payload.size(), EngineUnderTest::kRegion);
        std::copy(r.payload.begin(), r.payload.end(), t.mem() + off);
        off += r.payload.size();
        left -= static_cast<uint32_t>(std::min<size_t>(left, r.payload.size()));
      }
    }
    auto out = replay(t, m, c);
    ASSERT_EQ(out.size(), c.responses.size());
    for (size_t i = 0; i < out.size(); ++i) {
      SCOPED_TRACE("response " + std::to_string(i));
      EXPECT_EQ(out[i].p.opcode, c.responses[i].opcode);
      EXPECT_EQ(out[i].p.psn.value(), m.psn(c.responses[i].psn));
      EXPECT_TRUE(std::equal(out[i].p.payload.begin(), out[i].p.payload.end(),
                             c.responses[i].payload.begin(), c.responses[i].payload.end()));
    }
  }
}

TEST(FixtureResponder, RxeAtomicsReturnTheOriginalsRxeReturned) {
  Capture cap;
  ASSERT_NO_FATAL_FAILURE(load("rc_atomic", &cap));
  ASSERT_GE(cap.connections.size(), 2u);
  for (const Connection& c : cap.connections) {
    SCOPED_TRACE("connection of " + std::to_string(c.requests.size()) + " requests");
    ASSERT_FALSE(c.responses.empty());
    EngineUnderTest t;
    Mapping m = mapping_of(c);
    // Each target starts with the value rxe reported as original for the first atomic on it
    // (perftest spreads them over its buffer, which it filled with random bytes).
    ASSERT_EQ(c.requests.size(), c.responses.size());
    std::set<uint64_t> seen;
    for (size_t i = 0; i < c.requests.size(); ++i) {
      const uint64_t off = c.requests[i].atomic_eth.va - m.va_base;
      ASSERT_LE(off + 8, EngineUnderTest::kRegion);
      if (!seen.insert(off).second) continue;
      const uint64_t orig = c.responses[i].atomic_ack_orig;
      std::memcpy(t.mem() + off, &orig, sizeof orig);  // host order, as the atomic reads it
    }
    // What each target must hold afterwards (IBA 9.4.5): orig + add, or swap if orig == compare.
    std::map<uint64_t, uint64_t> after;
    for (size_t i = 0; i < c.requests.size(); ++i) {
      const auto& q = c.requests[i];
      const uint64_t off = q.atomic_eth.va - m.va_base;
      const uint64_t orig = after.count(off) ? after[off] : c.responses[i].atomic_ack_orig;
      after[off] = q.opcode == Opcode::kRcFetchAdd
                       ? orig + q.atomic_eth.swap_add
                       : (orig == q.atomic_eth.compare ? q.atomic_eth.swap_add : orig);
    }
    auto out = replay(t, m, c);
    for (const auto& [off, v] : after) {
      uint64_t got;
      std::memcpy(&got, t.mem() + off, sizeof got);
      EXPECT_EQ(got, v) << "target at offset " << off;
    }
    ASSERT_EQ(out.size(), c.responses.size());
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(out[i].p.opcode, Opcode::kRcAtomicAcknowledge) << i;
      EXPECT_EQ(out[i].p.atomic_ack_orig, c.responses[i].atomic_ack_orig) << i;
      EXPECT_EQ(out[i].p.psn.value(), m.psn(c.responses[i].psn)) << i;
    }
  }
}

}  // namespace
}  // namespace uroce::interop
