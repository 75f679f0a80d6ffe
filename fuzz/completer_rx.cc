/**
 * @file completer_rx.cc
 * @brief libFuzzer target: the requester side. An RC QP in RTS has READs (several packets at
 * MTU 256), WRITEs, SENDs and atomics outstanding; the input forges the peer's answers: ACKs and
 * NAKs with any syndrome and MSN, READ responses (first/middle/last/only) and atomic ACKs with
 * PSNs around the outstanding range, duplicates and stale ones, plus raw frames. Time jumps let
 * timeouts and retries fire.
 *
 * What must hold: no crash or sanitizer report; response data lands only in the local buffers
 * the requests named (canaries around them never change); every work request completes at most
 * once, and the completions come in the order the requests were posted.
 *
 * With the first input byte odd, the QP uses selective repeat (uroce's extension) and ACKs may
 * carry a forged SACKETH bitmap: the board, the loss detection and the resends must hold the
 * same invariants. With its bit 2 set, the QP uses peer timestamps and ACKs carry a TSETH whose
 * echo and hold come from the input (forged ones included).
 *
 * Input: one mode byte, then records, each a tag byte then fields (see the loop). Units: bytes,
 * ns.
 */
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_engine.h"
#include "transport/engine.h"
#include "transport/wire/build.h"

namespace {

using namespace uroce;
using namespace uroce::transport;
using fuzz::check;

constexpr size_t kCanary = 4096;
constexpr size_t kBuf = 16384;  ///< local buffers of the requests
constexpr uint8_t kCanaryByte = 0x5a;
constexpr uint32_t kSqPsn = 0xfffff0;  ///< close to the wrap, so PSN arithmetic wraps too
constexpr int kRequests = 12;

/// Response opcodes the completer handles; other values of the selector pick any opcode.
constexpr wire::Opcode kResponses[] = {
    wire::Opcode::kRcRdmaReadResponseFirst, wire::Opcode::kRcRdmaReadResponseMiddle,
    wire::Opcode::kRcRdmaReadResponseLast,  wire::Opcode::kRcRdmaReadResponseOnly,
    wire::Opcode::kRcAcknowledge,           wire::Opcode::kRcAtomicAcknowledge,
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> mem(kCanary + kBuf + kCanary, kCanaryByte);
  uint8_t* buf = mem.data() + kCanary;
  std::memset(buf, 0, kBuf);

  fuzz::Fixture f;
  Engine& e = f.e;
  MrKeys k = e.reg_mr(f.pd, reinterpret_cast<uint64_t>(buf), kBuf, 0xf).value();

  fuzz::Reader in{data, size};
  const uint8_t mode = in.u8();
  const bool selective = mode & 1, timestamps = mode & 4;
  const uint32_t rc = f.create_qp(QpType::kRc);
  if (selective) check(static_cast<bool>(e.set_selective_repeat(rc, true)));
  if (timestamps) check(static_cast<bool>(e.set_peer_timestamps(rc, true)));
  fuzz::rc_to_rts(e, rc, f.peer, kSqPsn);

  const WrOpcode ops[] = {WrOpcode::kRdmaRead, WrOpcode::kRdmaWrite, WrOpcode::kAtomicCmpAndSwp,
                          WrOpcode::kSend,     WrOpcode::kRdmaRead,  WrOpcode::kAtomicFetchAndAdd};
  for (int i = 0; i < kRequests; ++i) {
    const WrOpcode op = ops[i % 6];
    const bool atomic = op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
    f.post(rc, op, static_cast<uint64_t>(i),
           reinterpret_cast<uint64_t>(buf) + static_cast<uint64_t>(i) * 1024, atomic ? 8u : 1000u,
           k.lkey);
  }
  fuzz::NullSink sink;
  fuzz::AnyNeighbor neigh;
  Timestamp now{1000};
  e.poll_transmit(sink, neigh, now);

  wire::FrameSpec base = f.from_peer();
  base.dest_qpn = Qpn(rc);
  Cqe cqes[32];
  uint64_t next_wr = 0;  // completions arrive in posting order
  while (in.n) {
    const uint8_t tag = in.u8();
    if ((tag & 7) == 0) {
      f.deliver_raw(in, in.u16() % 4200, now);
    } else {
      wire::FrameSpec s = base;
      const uint8_t sel = in.u8();
      s.opcode = sel < 240 ? kResponses[sel % 6] : static_cast<wire::Opcode>(in.u8());
      // PSNs from a little before the first request to past the last, wrapping at 2^24.
      s.psn = Psn((tag & 8) ? in.u32() : kSqPsn - 4 + in.u8() % 64);
      s.aeth.syndrome = (tag & 16) ? in.u8() : 0;  // mostly a plain ACK
      s.aeth.msn = Msn(in.u8());
      s.atomic_ack_orig = uint64_t{in.u32()} << 32 | in.u32();
      s.ecn = in.u8() & 3;
      size_t plen = (tag & 32) ? in.u16() % 600 : 256;  // a full MTU, or any length
      if (selective && (tag & 128) && s.opcode == wire::Opcode::kRcAcknowledge) {
        s.ext = wire::UroceExt::kSack;
        s.sack.base = Psn(kSqPsn + in.u8() % 32 - 4);
        s.sack.nwords = static_cast<uint8_t>(1 + in.u8() % wire::kSackMaxWords);
        for (size_t w = 0; w < s.sack.nwords; ++w) s.sack.bits[w] = in.u32();
        plen = 0;
      }
      if (timestamps && s.opcode == wire::Opcode::kRcAcknowledge) {
        s.has_tseth = true;
        s.tseth = {static_cast<uint32_t>(now.ns) - in.u16() * 16u, in.u16() * 8u};
      }
      f.deliver(s, in, plen, now);
    }
    now.ns += (tag & 64) ? 40'000'000 : 1000;  // sometimes past the retransmission timer
    e.poll_transmit(sink, neigh, now);
    const size_t n = e.poll_cq(f.cq, cqes);
    for (size_t i = 0; i < n; ++i) {
      check(cqes[i].wr_id == next_wr);
      ++next_wr;
    }
    check(next_wr <= kRequests);
    for (size_t i = 0; i < kCanary; ++i) {
      check(mem[i] == kCanaryByte);
      check(buf[kBuf + i] == kCanaryByte);
    }
  }
  return 0;
}
