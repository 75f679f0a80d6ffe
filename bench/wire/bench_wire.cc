/**
 * @file bench_wire.cc
 * @brief Wire micro-benchmarks: ICRC (ISA-L CRC-32) over 64 B / 1 KiB / 4 KiB next to memcpy of
 * the same size, and build + parse of a 4 KiB RC WRITE_MIDDLE frame's headers (the payload copy
 * and the payload's ICRC are payload work and excluded; BM_BuildParseWriteMiddleFull includes
 * them for reference). Units: ns per iteration, bytes/s.
 *   <build>/bin/bench_wire --benchmark_min_time=0.3
 */
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "transport/wire/build.h"
#include "transport/wire/icrc.h"
#include "transport/wire/parse.h"

namespace {

using namespace uroce;
using namespace uroce::wire;

void BM_Icrc(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> buf(n, 0x5a);
  uint32_t crc = 0;
  for (auto _ : st) {
    crc = crc32_update(crc, buf);
    benchmark::DoNotOptimize(crc);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * n));
}
BENCHMARK(BM_Icrc)->Arg(64)->Arg(1024)->Arg(4096);

void BM_Memcpy(benchmark::State& st) {
  const size_t n = static_cast<size_t>(st.range(0));
  std::vector<uint8_t> src(n, 0x5a), dst(n);
  for (auto _ : st) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * n));
}
BENCHMARK(BM_Memcpy)->Arg(64)->Arg(1024)->Arg(4096);

FrameSpec write_middle_spec() {
  FrameSpec s;
  s.src_mac = {{0x02, 0, 0, 0, 0, 1}};
  s.dst_mac = {{0x02, 0, 0, 0, 0, 2}};
  s.src_ip = Gid::from_ipv4(0xc6120001);
  s.dst_ip = Gid::from_ipv4(0xc6120002);
  s.dscp = 26;
  s.ecn = 2;  // ECT(0)
  s.opcode = Opcode::kRcRdmaWriteMiddle;
  s.dest_qpn = Qpn(0x11);
  return s;
}

/// Headers only, TX and RX as they happen in the stack: the TX side builds a frame into its
/// buffer (build_headers + finalize_lengths + the ICRC of the masked pseudo-header); the RX side
/// parses a frame that arrived in another buffer (parse_headers + the pseudo-header ICRC).
/// The 4 KiB payload copy and its ICRC are payload work and not included.
void BM_BuildParseWriteMiddle(benchmark::State& st) {
  constexpr size_t kPayload = 4096;
  std::vector<uint8_t> tx(kPayload + kMaxFrameOverhead, 0);
  std::vector<uint8_t> rx(kPayload + kMaxFrameOverhead, 0);
  FrameSpec s = write_middle_spec();
  const size_t rx_len = finalize(rx, build_headers(s, rx), kPayload);
  uint32_t psn = 0;
  ParsedPacket p;
  for (auto _ : st) {
    s.psn = Psn(++psn);
    const FrameLayout l = build_headers(s, tx);
    const size_t len = finalize_lengths(tx, l, kPayload);
    uint32_t tx_crc = icrc_pseudo_header(tx.data() + l.l3_offset, 20);
    benchmark::DoNotOptimize(tx_crc);
    benchmark::DoNotOptimize(len);
    const DropReason r = parse_headers(std::span<const uint8_t>(rx.data(), rx_len), &p);
    uint32_t rx_crc = icrc_pseudo_header(p.ip_header.data(), p.ip_header.size());
    benchmark::DoNotOptimize(rx_crc);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(p);
  }
  if (p.payload.size() != kPayload || p.opcode != Opcode::kRcRdmaWriteMiddle) {
    st.SkipWithError("parse broken");
  }
}
BENCHMARK(BM_BuildParseWriteMiddle);

/// The same, but parsing the frame just built in the same buffer: the parser's loads then hit
/// the builder's stores still in the store buffer (store-forwarding stalls), which a received
/// frame never does. Kept to show the difference.
void BM_BuildParseSameBuffer(benchmark::State& st) {
  constexpr size_t kPayload = 4096;
  std::vector<uint8_t> buf(kPayload + kMaxFrameOverhead, 0);
  FrameSpec s = write_middle_spec();
  uint32_t psn = 0;
  ParsedPacket p;
  for (auto _ : st) {
    s.psn = Psn(++psn);
    const FrameLayout l = build_headers(s, buf);
    const size_t len = finalize_lengths(buf, l, kPayload);
    uint32_t tx_crc = icrc_pseudo_header(buf.data() + l.l3_offset, 20);
    benchmark::DoNotOptimize(tx_crc);
    const DropReason r = parse_headers(std::span<const uint8_t>(buf.data(), len), &p);
    uint32_t rx_crc = icrc_pseudo_header(p.ip_header.data(), p.ip_header.size());
    benchmark::DoNotOptimize(rx_crc);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(p);
  }
  if (p.psn != Psn(psn) || p.payload.size() != kPayload) st.SkipWithError("round trip broken");
}
BENCHMARK(BM_BuildParseSameBuffer);

/// Whole frames: the same plus the ICRC over the 4 KiB payload on both sides (payload work).
void BM_BuildParseWriteMiddleFull(benchmark::State& st) {
  constexpr size_t kPayload = 4096;
  std::vector<uint8_t> buf(kPayload + kMaxFrameOverhead, 0);
  FrameSpec s = write_middle_spec();
  ParsedPacket p;
  for (auto _ : st) {
    const FrameLayout l = build_headers(s, buf);
    const size_t len = finalize(buf, l, kPayload);
    const DropReason r = parse(std::span<const uint8_t>(buf.data(), len), &p);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(p);
  }
  if (parse(std::span<const uint8_t>(buf.data(), buf.size() - 3), &p) != DropReason::kOk) {
    st.SkipWithError("frame invalid");
  }
}
BENCHMARK(BM_BuildParseWriteMiddleFull);

void BM_ParseHeadersOnly(benchmark::State& st) {
  std::vector<uint8_t> buf(4096 + kMaxFrameOverhead, 0);
  const FrameLayout l = build_headers(write_middle_spec(), buf);
  const size_t len = finalize(buf, l, 4096);
  ParsedPacket p;
  for (auto _ : st) {
    benchmark::DoNotOptimize(parse_headers(std::span<const uint8_t>(buf.data(), len), &p));
    benchmark::DoNotOptimize(p);
  }
}
BENCHMARK(BM_ParseHeadersOnly);

void BM_BuildHeadersOnly(benchmark::State& st) {
  std::vector<uint8_t> buf(4096 + kMaxFrameOverhead, 0);
  FrameSpec s = write_middle_spec();
  for (auto _ : st) {
    const FrameLayout l = build_headers(s, buf);
    benchmark::DoNotOptimize(finalize_lengths(buf, l, 4096));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_BuildHeadersOnly);

void BM_IcrcPseudoHeader(benchmark::State& st) {
  std::vector<uint8_t> buf(4096 + kMaxFrameOverhead, 0);
  const FrameLayout l = build_headers(write_middle_spec(), buf);
  finalize(buf, l, 4096);
  for (auto _ : st) {
    benchmark::DoNotOptimize(icrc_pseudo_header(buf.data() + l.l3_offset, 20));
  }
}
BENCHMARK(BM_IcrcPseudoHeader);

}  // namespace

BENCHMARK_MAIN();
