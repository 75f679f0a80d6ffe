/**
 * @file scapy_test.cc
 * @brief Frames built by scapy (scapy.contrib.roce, tests/wire/scapy_frames.py) for every
 * operation over IPv4 and IPv6, and RoCE v1 frames (scapy's GRH layer) over IPv6 and
 * IPv4-mapped GIDs: our parser accepts each one and decodes it field by field. scapy's ICRC
 * (IPv4) and the script's own zlib-based ones (IPv6, RoCE v1) are independent of ours.
 */
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <sstream>

#include "subprocess_util.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

uint64_t num(const std::string& s) { return std::stoull(s, nullptr, 0); }

TEST(Scapy, ParserDecodesScapyFramesFieldByField) {
  UROCE_REQUIRE_SCAPY();
  std::string out;
  const std::string cmd =
      std::string(UROCE_PYTHON3) + " " UROCE_WIRE_TEST_DIR "/scapy_frames.py gen";
  ASSERT_EQ(test::run_capture(cmd, &out), 0) << out;
  const auto lines = test::lines_of(out);
  int frames = 0;
  int v1_frames = 0;
  std::map<int, int> opcodes_seen;
  for (const auto& line : lines) {
    std::istringstream in(line);
    std::string tag, name, hexstr;
    in >> tag >> name >> hexstr;
    if (tag != "FRAME") continue;
    SCOPED_TRACE(name);
    const auto e = test::parse_kv(in);
    const auto frame = test::unhex(hexstr);
    ParsedPacket p;
    const DropReason r = parse(frame, &p);
    ASSERT_EQ(r, DropReason::kOk) << to_string(r) << " " << hexstr;
    ++frames;
    v1_frames += p.roce_v1;
    EXPECT_EQ(p.roce_v1, e.count("v1") != 0);
    ++opcodes_seen[static_cast<int>(p.opcode)];

    // Every key the script printed is checked; an unknown key fails.
    const std::map<std::string, std::function<uint64_t()>> get = {
        {"v1", [&] { return p.roce_v1; }},
        {"ipver", [&] { return p.ip_version; }},
        {"dscp", [&] { return p.dscp; }},
        {"ecn", [&] { return p.ecn; }},
        {"ttl", [&] { return p.ttl; }},
        {"flow", [&] { return p.flow_label; }},
        {"sport", [&] { return p.udp_sport; }},
        {"opcode", [&] { return static_cast<uint64_t>(p.opcode); }},
        {"se", [&] { return p.se; }},
        {"m", [&] { return p.migreq; }},
        {"pad", [&] { return p.padcnt; }},
        {"tver", [&] { return p.tver; }},
        {"pkey", [&] { return p.pkey; }},
        {"fecn", [&] { return p.fecn; }},
        {"becn", [&] { return p.becn; }},
        {"dqpn", [&] { return p.dest_qpn.value(); }},
        {"ackreq", [&] { return p.ackreq; }},
        {"psn", [&] { return p.psn.value(); }},
        {"vlan", [&] { return p.has_vlan; }},
        {"pcp", [&] { return p.pcp; }},
        {"vid", [&] { return p.vid; }},
        {"reth_va", [&] { return p.has(ExtHdr::kReth) ? p.reth.va : ~0ull; }},
        {"reth_rkey", [&] { return p.has(ExtHdr::kReth) ? p.reth.rkey : ~0ull; }},
        {"reth_len", [&] { return p.has(ExtHdr::kReth) ? p.reth.dma_len : ~0ull; }},
        {"feth_plt", [&] { return p.has(ExtHdr::kFeth) ? p.feth.placement : ~0ull; }},
        {"feth_sel", [&] { return p.has(ExtHdr::kFeth) ? p.feth.selectivity : ~0ull; }},
        {"aeth_syn", [&] { return p.has(ExtHdr::kAeth) ? p.aeth.syndrome : ~0ull; }},
        {"aeth_msn", [&] { return p.has(ExtHdr::kAeth) ? p.aeth.msn.value() : ~0ull; }},
        {"atomic_va", [&] { return p.has(ExtHdr::kAtomicEth) ? p.atomic_eth.va : ~0ull; }},
        {"atomic_rkey", [&] { return p.has(ExtHdr::kAtomicEth) ? p.atomic_eth.rkey : ~0ull; }},
        {"atomic_swap", [&] { return p.has(ExtHdr::kAtomicEth) ? p.atomic_eth.swap_add : ~0ull; }},
        {"atomic_cmp", [&] { return p.has(ExtHdr::kAtomicEth) ? p.atomic_eth.compare : ~0ull; }},
        {"orig", [&] { return p.has(ExtHdr::kAtomicAckEth) ? p.atomic_ack_orig : ~0ull; }},
        {"imm", [&] { return p.has(ExtHdr::kImmDt) ? p.imm : ~0ull; }},
        {"ieth", [&] { return p.has(ExtHdr::kIeth) ? p.ieth_rkey : ~0ull; }},
        {"qkey", [&] { return p.has(ExtHdr::kDeth) ? p.deth.qkey : ~0ull; }},
        {"srcqp", [&] { return p.has(ExtHdr::kDeth) ? p.deth.src_qpn.value() : ~0ull; }},
        {"xrc_srqn", [&] { return p.has(ExtHdr::kXrcEth) ? p.xrc_srqn : ~0ull; }},
    };
    for (const auto& [k, v] : e) {
      if (k == "src" || k == "dst") {
        Gid g;
        ASSERT_TRUE(Gid::parse(v, &g)) << v;
        EXPECT_EQ(k == "src" ? p.src_ip : p.dst_ip, g) << k;
      } else if (k == "payload") {
        EXPECT_EQ(test::hex(p.payload), v == "-" ? "" : v);
      } else {
        auto it = get.find(k);
        ASSERT_NE(it, get.end()) << "unknown key " << k;
        EXPECT_EQ(it->second(), num(v)) << k;
      }
    }
    // Headers that the script did not describe must not be claimed present.
    if (!e.count("reth_va")) {
      EXPECT_FALSE(p.has(ExtHdr::kReth));
    }
    if (!e.count("aeth_syn")) {
      EXPECT_FALSE(p.has(ExtHdr::kAeth));
    }
    if (!e.count("imm")) {
      EXPECT_FALSE(p.has(ExtHdr::kImmDt));
    }
    if (!e.count("qkey")) {
      EXPECT_FALSE(p.has(ExtHdr::kDeth));
    }
    if (!e.count("feth_plt")) {
      EXPECT_FALSE(p.has(ExtHdr::kFeth));
    }
    if (!e.count("xrc_srqn")) {
      EXPECT_FALSE(p.has(ExtHdr::kXrcEth));
    }

    // Corrupting one payload/header byte after the BTH must fail the ICRC.
    auto bad = frame;
    bad[p.bth_offset + 9] ^= 0x01;  // PSN
    EXPECT_EQ(parse(bad, &p), DropReason::kBadIcrc);
  }
  EXPECT_EQ(frames, 76 + 12);  // RoCEv2 over IPv4 and IPv6 (XRC included), 12 RoCE v1
  EXPECT_EQ(v1_frames, 12);
  // SEND, WRITE, READ req/resp, ACK, atomics, atomic ACK, FLUSH, ATOMIC WRITE, UC, UD, XRC, CNP
  // all present.
  for (int op : {0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
                 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x17,
                 0x1c, 0x1d, 0x24, 0x2a, 0x64, 0x65, 0xa4, 0xab, 0xb1, 0xb3, 0x81}) {
    EXPECT_GE(opcodes_seen[op], 2) << op;
  }
}

}  // namespace
}  // namespace uroce::wire
