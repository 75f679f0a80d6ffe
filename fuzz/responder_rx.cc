/**
 * @file responder_rx.cc
 * @brief libFuzzer target: arbitrary frames into an engine with an RC QP in RTS (and a UD
 * QP), registered memory surrounded by canaries. The engine must never crash, never trip a
 * sanitizer, and never write outside the regions it was given write access to.
 *
 * Input: a sequence of records. Each record starts with a tag byte:
 *   tag & 3 == 0: raw frame: 2-byte length, then that many bytes, given to on_frame() as is.
 *   otherwise:    structured: fields (opcode, PSN offset, RETH/AtomicETH/AETH values, payload
 *                 length, flags) are read from the input and a well-formed frame with a valid
 *                 ICRC addressed to one of the QPs is built with the wire builder, so the
 *                 fuzzer reaches the responder's and completer's logic past the gate.
 * After each record the engine transmits (into a discarding sink) and fake time advances.
 * With the first input byte odd, the RC QP uses selective repeat (uroce's extension) and
 * structured SEND/WRITE requests may carry an SRETH (recv_seq, R_Key, VA or offset from the
 * input): out-of-order placement must keep to the same regions.
 * With bit 1 of the first byte set, structured frames go to an XRC_RECV QP instead of the RC
 * QP, and each record has one more byte after its payload length: the XRCETH's SRQ number (an
 * XRC SRQ of the QP's domain, one of another domain, a basic SRQ, or any 24-bit value).
 * With bit 2 set, the RC QP uses peer timestamps and RC requests carry a TSETH (its stamp from
 * the input, after the SRETH byte).
 * Units: bytes, ns.
 */
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "fuzz_engine.h"
#include "transport/engine.h"
#include "transport/wire/build.h"

namespace {

using namespace uroce;
using namespace uroce::transport;

constexpr size_t kCanary = 4096;
constexpr size_t kRw = 16384;  ///< region with every access (receive buffers live here too)
constexpr size_t kRo = 4096;   ///< region with REMOTE_READ only: must never change
constexpr uint8_t kCanaryByte = 0xa5;

using fuzz::AnyNeighbor;
using fuzz::check;
using fuzz::NullSink;
using fuzz::Reader;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Memory: [canary][rw region][canary][ro region][canary].
  std::vector<uint8_t> mem(kCanary + kRw + kCanary + kRo + kCanary, kCanaryByte);
  uint8_t* rw = mem.data() + kCanary;
  uint8_t* ro = rw + kRw + kCanary;
  for (size_t i = 0; i < kRw; ++i) rw[i] = static_cast<uint8_t>(i * 7);
  for (size_t i = 0; i < kRo; ++i) ro[i] = static_cast<uint8_t>(i * 13);
  const std::vector<uint8_t> ro_copy(ro, ro + kRo);

  fuzz::Fixture f;
  Engine& e = f.e;
  MrKeys krw =
      e.reg_mr(f.pd, reinterpret_cast<uint64_t>(rw), kRw, 0xf | kAccessFlushGlobal).value();
  MrKeys kro = e.reg_mr(f.pd, reinterpret_cast<uint64_t>(ro), kRo, kAccessRemoteRead).value();

  Reader in{data, size};
  const uint8_t mode = in.u8();
  const bool selective = mode & 1;
  const bool xrc = mode & 2;
  const bool timestamps = mode & 4;
  const uint32_t rc = f.create_qp(QpType::kRc);
  if (selective) check(static_cast<bool>(e.set_selective_repeat(rc, true)));
  if (timestamps) check(static_cast<bool>(e.set_peer_timestamps(rc, true)));
  fuzz::rc_to_rts(e, rc, f.peer, 1000);
  const uint32_t ud = f.create_qp(QpType::kUd);
  QpAttr u;
  u.qp_state = QpState::kInit;
  u.qkey = 0x1234;
  e.modify_qp(ud, u, kAttrState | kAttrPkeyIndex | kAttrPort | kAttrQkey);
  u.qp_state = QpState::kRtr;
  e.modify_qp(ud, u, kAttrState);
  // XRC: a domain with an SRQ (receives in the rw region) and an XRC_RECV QP, another domain
  // with its own SRQ, and a basic SRQ.
  const uint32_t xrcd = e.alloc_xrcd().value();
  const uint32_t other_xrcd = e.alloc_xrcd().value();
  const uint32_t srqs[3] = {e.create_xrc_srq(f.pd, xrcd, f.cq, 8, 1, 0).value(),
                            e.create_xrc_srq(f.pd, other_xrcd, f.cq, 8, 1, 0).value(),
                            e.create_srq(f.pd, 8, 1, 0).value()};
  QpInitAttr xa;
  xa.type = QpType::kXrcRecv;
  xa.xrcd = xrcd;
  const uint32_t xq = e.create_qp(xa).value();
  fuzz::xrc_recv_to_rts(e, xq, f.peer);
  const uint32_t target = xrc ? xq : rc;

  // Receive buffers (in the rw region) and outstanding requests, so responses have a target.
  for (int i = 0; i < 8; ++i) {
    Sge sg{reinterpret_cast<uint64_t>(rw) + static_cast<uint64_t>(i) * 1024, 1024, krw.lkey};
    RecvWr r;
    r.wr_id = static_cast<uint64_t>(i);
    r.sg = &sg;
    r.num_sge = 1;
    e.post_recv(rc, r);
    e.post_recv(ud, r);
    for (uint32_t s : srqs) e.post_srq_recv(s, r);
  }
  const WrOpcode ops[] = {WrOpcode::kRdmaRead, WrOpcode::kRdmaWrite, WrOpcode::kAtomicFetchAndAdd,
                          WrOpcode::kSend, WrOpcode::kRdmaRead};
  for (int i = 0; i < 5; ++i) {
    f.post(rc, ops[i], 100 + static_cast<uint64_t>(i),
           reinterpret_cast<uint64_t>(rw) + 8192 + static_cast<uint64_t>(i) * 1024,
           ops[i] == WrOpcode::kAtomicFetchAndAdd ? 8u : 600u, krw.lkey);
  }
  NullSink sink;
  AnyNeighbor neigh;
  Timestamp now{1000};
  e.poll_transmit(sink, neigh, now);

  const wire::FrameSpec base = f.from_peer();
  Cqe cqes[32];
  while (in.n) {
    uint8_t tag = in.u8();
    if ((tag & 3) == 0) {
      f.deliver_raw(in, in.u16() % 4200, now);
    } else {
      wire::FrameSpec s = base;
      s.opcode = static_cast<wire::Opcode>(in.u8());
      bool to_ud = tag & 4;
      s.dest_qpn = Qpn(to_ud ? ud : (tag & 8) ? in.u32() : target);
      s.psn = Psn((tag & 16) ? in.u32() : in.u8());  // near the expected PSNs, or anywhere
      s.ackreq = tag & 32;
      s.se = tag & 64;
      uint8_t sel = in.u8();
      uint64_t off = in.u16();
      // Addresses mostly inside (or around) the regions, with valid or random keys.
      uint64_t va = (sel & 1) ? reinterpret_cast<uint64_t>(ro) + off - 64
                              : reinterpret_cast<uint64_t>(rw) + off - 64;
      if (sel & 2) va = uint64_t{in.u32()} << 32 | in.u32();
      uint32_t rkey = (sel & 4) ? in.u32() : (sel & 1) ? kro.rkey : krw.rkey;
      s.reth = {va, rkey, in.u16() * ((sel & 8) ? 1u : 97u)};
      s.atomic_eth = {va & ~uint64_t{(sel & 16) ? 0u : 7u}, rkey, in.u32(), in.u32()};
      // FLUSH's FETH from the first AtomicETH word: placement type bits 3:0, selectivity 5:4.
      s.feth = {static_cast<uint8_t>(s.atomic_eth.swap_add & 0xf),
                static_cast<uint8_t>((s.atomic_eth.swap_add >> 4) & 3)};
      s.aeth.syndrome = in.u8();
      s.aeth.msn = Msn(in.u8());
      s.atomic_ack_orig = in.u32();
      s.imm = in.u32();
      s.ieth_rkey = in.u32();
      s.deth = {(sel & 32) ? 0x1234u : in.u32(), Qpn(in.u16())};
      s.pkey = (sel & 64) ? in.u16() : uint16_t{0xffff};
      s.ecn = in.u8() & 3;
      size_t plen = in.u16() % 1100;
      if (xrc) {
        const uint8_t x = in.u8();
        s.xrc_srqn = x < 3 ? srqs[x] : (uint32_t{x} << 16 | in.u16());
      }
      const wire::OpcodeInfo& oi = wire::opcode_info(s.opcode);
      if (selective && (sel & 128) && oi.is(wire::OpFlag::kRc) && oi.is(wire::OpFlag::kRequest) &&
          (oi.is(wire::OpFlag::kSend) || oi.is(wire::OpFlag::kWrite))) {
        s.ext = wire::UroceExt::kSreth;
        s.sreth = {in.u8() % 16u, rkey, oi.is(wire::OpFlag::kWrite) ? va : off};
      }
      if (timestamps && oi.is(wire::OpFlag::kRc) && oi.is(wire::OpFlag::kRequest)) {
        s.has_tseth = true;
        s.tseth.stamp = in.u32();
      }
      f.deliver(s, in, plen, now);
    }
    now.ns += (tag >> 7) ? 20'000'000 : 1000;  // sometimes jump past every timer
    e.poll_transmit(sink, neigh, now);
    e.poll_cq(f.cq, cqes);
    // Canaries and the read-only region never change.
    for (size_t i = 0; i < kCanary; ++i) {
      check(mem[i] == kCanaryByte);
      check(rw[kRw + i] == kCanaryByte);
      check(ro[kRo + i] == kCanaryByte);
    }
    check(std::memcmp(ro, ro_copy.data(), kRo) == 0);
  }
  return 0;
}
