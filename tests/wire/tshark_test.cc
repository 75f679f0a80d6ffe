/**
 * @file tshark_test.cc
 * @brief Frames our builder makes, written to a pcap: tshark (Wireshark 4.0, InfiniBand over
 * UDP 4791 and, for RoCE v1, over EtherType 0x8915 starting with the GRH) must decode them with
 * the same field values (the BTH only for the IBA 1.5 opcodes it does not know), and scapy
 * (scapy_frames.py check: its GRH and BTH layers for RoCE v1) must parse them and find every
 * ICRC correct.
 */
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <vector>

#include "subprocess_util.h"
#include "transport/wire/build.h"
#include "transport/wire/parse.h"
#include "wire_test_util.h"

namespace uroce::wire {
namespace {

struct Built {
  FrameSpec spec;
  std::vector<uint8_t> frame;
  size_t payload_len;
};

std::vector<Built> frames_to_check() {
  std::vector<Built> v;
  const Opcode ops[] = {Opcode::kRcSendFirst,
                        Opcode::kRcSendMiddle,
                        Opcode::kRcSendLastWithImmediate,
                        Opcode::kRcSendOnly,
                        Opcode::kRcSendOnlyWithInvalidate,
                        Opcode::kRcRdmaWriteFirst,
                        Opcode::kRcRdmaWriteMiddle,
                        Opcode::kRcRdmaWriteLast,
                        Opcode::kRcRdmaWriteOnlyWithImmediate,
                        Opcode::kRcRdmaReadRequest,
                        Opcode::kRcRdmaReadResponseFirst,
                        Opcode::kRcRdmaReadResponseMiddle,
                        Opcode::kRcRdmaReadResponseOnly,
                        Opcode::kRcAcknowledge,
                        Opcode::kRcAtomicAcknowledge,
                        Opcode::kRcCompareSwap,
                        Opcode::kRcFetchAdd,
                        Opcode::kRcFlush,
                        Opcode::kRcAtomicWrite,
                        Opcode::kUcSendOnlyWithImmediate,
                        Opcode::kUcRdmaWriteOnly,
                        Opcode::kUdSendOnly,
                        Opcode::kUdSendOnlyWithImmediate,
                        Opcode::kXrcSendFirst,
                        Opcode::kXrcRdmaWriteOnlyWithImmediate,
                        Opcode::kXrcCompareSwap,
                        Opcode::kXrcRdmaReadResponseOnly,
                        Opcode::kXrcAcknowledge};
  uint32_t k = 0;
  // RoCEv2 over IPv4 and IPv6, RoCE v1 with IPv6 and with IPv4-mapped GIDs.
  for (int variant = 0; variant < 4; ++variant) {
    const bool ipv6 = variant == 1 || variant == 2;
    for (Opcode op : ops) {
      FrameSpec s = test::default_spec(op, ipv6);
      s.roce_v1 = variant >= 2;
      s.ttl = static_cast<uint8_t>(k + 1);
      ++k;
      s.psn = Psn(0xfff000 + k);
      s.dest_qpn = Qpn(0x10000 + k);
      s.se = (k & 1) != 0;
      s.ackreq = (k & 2) != 0;
      s.pkey = static_cast<uint16_t>(0x8000 + k);
      s.udp_sport = static_cast<uint16_t>(0xc000 + k);
      s.vlan = (k % 5) == 0;
      s.pcp = 5;
      s.vid = 42;
      s.dscp = static_cast<uint8_t>(k % 64);
      s.ecn = static_cast<uint8_t>(k % 4);
      const size_t n = opcode_info(op).has_payload() ? 17 + k : 0;
      v.push_back({s, test::build_frame(s, n), n});
    }
  }
  return v;
}

void write_pcap(const std::string& path, const std::vector<Built>& frames) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const uint32_t gh[] = {0xa1b2c3d4u, 0x00040002u, 0, 0, 65535, 1 /* LINKTYPE_ETHERNET */};
  std::fwrite(gh, sizeof(gh), 1, f);
  uint32_t t = 0;
  for (const auto& b : frames) {
    const uint32_t rh[] = {1700000000u, t++, static_cast<uint32_t>(b.frame.size()),
                           static_cast<uint32_t>(b.frame.size())};
    std::fwrite(rh, sizeof(rh), 1, f);
    std::fwrite(b.frame.data(), 1, b.frame.size(), f);
  }
  std::fclose(f);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/uroce-wire-XXXXXX";
    path_ = mkdtemp(tmpl) ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

uint64_t num(const std::string& s) {
  if (s == "True") return 1;
  if (s == "False") return 0;
  return std::stoull(s, nullptr, 0);
}

/// FT_BYTES fields ("11:22:33:44" or "11223344") as a number.
uint64_t bytes_num(const std::string& s) {
  uint64_t v = 0;
  for (uint8_t b : test::unhex(s)) v = v << 8 | b;
  return v;
}

const char* kFields[] = {"frame.protocols",
                         "infiniband.bth.opcode",
                         "infiniband.bth.se",
                         "infiniband.bth.m",
                         "infiniband.bth.padcnt",
                         "infiniband.bth.tver",
                         "infiniband.bth.p_key",
                         "infiniband.bth.destqp",
                         "infiniband.bth.a",
                         "infiniband.bth.psn",
                         "infiniband.reth.va",
                         "infiniband.reth.r_key",
                         "infiniband.reth.dmalen",
                         "infiniband.aeth.syndrome",
                         "infiniband.aeth.msn",
                         "infiniband.atomiceth.swapdt",
                         "infiniband.atomiceth.cmpdt",
                         "infiniband.atomicacketh.origremdt",
                         "infiniband.immdt",
                         "infiniband.ieth",
                         "infiniband.deth.q_key",
                         "infiniband.deth.srcqp",
                         "infiniband.invariant.crc",
                         "udp.srcport",
                         "udp.dstport",
                         "ip.checksum.status",
                         "vlan.priority",
                         "vlan.id",
                         "infiniband.vendor",
                         "infiniband.grh.ipver",
                         "infiniband.grh.tclass",
                         "infiniband.grh.flowlabel",
                         "infiniband.grh.paylen",
                         "infiniband.grh.nxthdr",
                         "infiniband.grh.hoplmt",
                         "infiniband.grh.sgid",
                         "infiniband.grh.dgid",
                         "eth.type"};
enum Col {
  kProtocols,
  kOpcode,
  kSe,
  kM,
  kPad,
  kTver,
  kPkey,
  kDestQp,
  kAckReq,
  kPsn,
  kRethVa,
  kRethRkey,
  kRethLen,
  kAethSyn,
  kAethMsn,
  kSwap,
  kCmp,
  kOrig,
  kImm,
  kIeth,
  kQkey,
  kSrcQp,
  kIcrc,
  kSport,
  kDport,
  kIpCsum,
  kVlanPcp,
  kVlanId,
  kVendor,
  kGrhIpver,
  kGrhTclass,
  kGrhFlow,
  kGrhPaylen,
  kGrhNxthdr,
  kGrhHoplmt,
  kGrhSgid,
  kGrhDgid,
  kEthType,
  kNumCols
};

/// IBA 1.5's FLUSH and ATOMIC WRITE: Wireshark 4.0 (Debian 12) names them "Unknown"; it names
/// the XRC opcodes but dissects no XRCETH (nor anything after the BTH of an XRC packet). It
/// shows what follows the BTH as "Unknown/Vendor Specific Data", so only the BTH is compared for
/// them (their extended headers are checked against scapy-built frames in scapy_test.cc and by
/// build_test.cc, their ICRC by scapy in ScapyFindsOurIcrcCorrect and the pcap e2e cases).
bool unknown_to_tshark(Opcode op) {
  return op == Opcode::kRcFlush || op == Opcode::kRcAtomicWrite || opcode_info(op).is(OpFlag::kXrc);
}

TEST(Tshark, DecodesOurFramesWithTheSameFields) {
  UROCE_REQUIRE_TSHARK();
  static_assert(sizeof(kFields) / sizeof(kFields[0]) == kNumCols);
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const auto frames = frames_to_check();
  const std::string pcap = dir.path() + "/built.pcap";
  write_pcap(pcap, frames);

  std::string cmd = std::string(UROCE_TSHARK) + " -n -o ip.check_checksum:TRUE -r " + pcap +
                    " -T fields -E separator=/t -E occurrence=f";
  for (const char* f : kFields) cmd += std::string(" -e ") + f;
  cmd += " 2>/dev/null";
  std::string out;
  ASSERT_EQ(test::run_capture(cmd, &out), 0) << cmd;
  std::vector<std::string> rows;
  {
    std::istringstream in(out);
    std::string l;
    while (std::getline(in, l)) rows.push_back(l);
  }
  ASSERT_EQ(rows.size(), frames.size()) << out;

  for (size_t i = 0; i < frames.size(); ++i) {
    const FrameSpec& s = frames[i].spec;
    const OpcodeInfo& info = opcode_info(s.opcode);
    SCOPED_TRACE(testing::Message() << "frame " << i << " " << info.name << " : " << rows[i]);
    std::vector<std::string> c;
    {
      std::string cell;
      std::istringstream in(rows[i]);
      while (std::getline(in, cell, '\t')) c.push_back(cell);
      c.resize(kNumCols);
    }
    const size_t l2 = s.vlan ? 18 : 14;
    if (s.roce_v1) {
      // Ethernet (EtherType 0x8915) then InfiniBand from its GRH; no IP, no UDP.
      EXPECT_NE(c[kProtocols].find("ethertype:infiniband"), std::string::npos) << c[kProtocols];
      EXPECT_EQ(c[kProtocols].find("udp"), std::string::npos) << c[kProtocols];
      EXPECT_EQ(c[kProtocols].find("ip"), std::string::npos) << c[kProtocols];
      if (!s.vlan) {
        EXPECT_EQ(num(c[kEthType]), 0x8915u);
      }
      EXPECT_EQ(num(c[kGrhIpver]), 6u);
      EXPECT_EQ(num(c[kGrhTclass]), uint64_t{s.dscp} << 2 | s.ecn);
      EXPECT_EQ(num(c[kGrhFlow]), s.flow_label);
      EXPECT_EQ(num(c[kGrhPaylen]), frames[i].frame.size() - l2 - 40);
      EXPECT_EQ(num(c[kGrhNxthdr]), 0x1bu);
      EXPECT_EQ(num(c[kGrhHoplmt]), s.ttl);
      Gid sgid, dgid;
      ASSERT_TRUE(Gid::parse(c[kGrhSgid], &sgid)) << c[kGrhSgid];
      ASSERT_TRUE(Gid::parse(c[kGrhDgid], &dgid)) << c[kGrhDgid];
      EXPECT_EQ(sgid, s.src_ip);
      EXPECT_EQ(dgid, s.dst_ip);
      EXPECT_TRUE(c[kSport].empty() && c[kDport].empty() && c[kIpCsum].empty());
    } else {
      EXPECT_NE(c[kProtocols].find("udp:infiniband"), std::string::npos) << c[kProtocols];
      EXPECT_TRUE(c[kGrhNxthdr].empty()) << "RoCEv2 carries an IP header, not a GRH";
      EXPECT_EQ(num(c[kSport]), s.udp_sport);
      EXPECT_EQ(num(c[kDport]), 4791u);
      if (!s.src_ip.is_ipv4_mapped()) {
        EXPECT_TRUE(c[kIpCsum].empty());
      } else {
        EXPECT_EQ(num(c[kIpCsum]), 1u) << "IPv4 checksum status (1 = good)";
      }
    }
    EXPECT_EQ(num(c[kOpcode]), static_cast<uint64_t>(s.opcode));
    EXPECT_EQ(num(c[kSe]), s.se);
    EXPECT_EQ(num(c[kM]), s.migreq);
    EXPECT_EQ(num(c[kPad]), (4 - frames[i].payload_len % 4) % 4);
    EXPECT_EQ(num(c[kTver]), 0u);
    EXPECT_EQ(num(c[kPkey]), s.pkey);
    EXPECT_EQ(num(c[kDestQp]), s.dest_qpn.value());
    EXPECT_EQ(num(c[kAckReq]), s.ackreq);
    EXPECT_EQ(num(c[kPsn]), s.psn.value());
    if (s.vlan) {
      EXPECT_EQ(num(c[kVlanPcp]), s.pcp);
      EXPECT_EQ(num(c[kVlanId]), s.vid);
    }
    if (unknown_to_tshark(s.opcode)) {
      EXPECT_FALSE(c[kVendor].empty());
      EXPECT_TRUE(c[kRethVa].empty() && c[kAethSyn].empty());
      continue;
    }
    EXPECT_TRUE(c[kVendor].empty());
    if (info.has(ExtHdr::kReth)) {
      EXPECT_EQ(num(c[kRethVa]), s.reth.va);
      EXPECT_EQ(num(c[kRethRkey]), s.reth.rkey);
      EXPECT_EQ(num(c[kRethLen]), s.reth.dma_len);
    }
    if (info.has(ExtHdr::kAeth)) {
      EXPECT_EQ(num(c[kAethSyn]), s.aeth.syndrome);
      EXPECT_EQ(num(c[kAethMsn]), s.aeth.msn.value());
    } else {
      EXPECT_TRUE(c[kAethSyn].empty());
    }
    if (info.has(ExtHdr::kAtomicEth)) {
      EXPECT_EQ(num(c[kSwap]), s.atomic_eth.swap_add);
      EXPECT_EQ(num(c[kCmp]), s.atomic_eth.compare);
    }
    if (info.has(ExtHdr::kAtomicAckEth)) {
      EXPECT_EQ(num(c[kOrig]), s.atomic_ack_orig);
    }
    if (info.has(ExtHdr::kImmDt)) {
      EXPECT_EQ(bytes_num(c[kImm]), s.imm);
    } else {
      EXPECT_TRUE(c[kImm].empty());
    }
    if (info.has(ExtHdr::kIeth)) {
      EXPECT_EQ(bytes_num(c[kIeth]), s.ieth_rkey);
    }
    if (info.has(ExtHdr::kDeth)) {
      EXPECT_EQ(num(c[kQkey]), s.deth.qkey);
      EXPECT_EQ(num(c[kSrcQp]), s.deth.src_qpn.value());
    }
    // tshark shows the ICRC as a big-endian read of the 4 wire bytes.
    const uint8_t* ic = frames[i].frame.data() + frames[i].frame.size() - 4;
    EXPECT_EQ(num(c[kIcrc]), load_be32(ic));
  }
}

TEST(Tshark, ScapyFindsOurIcrcCorrect) {
  UROCE_REQUIRE_SCAPY();
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  auto frames = frames_to_check();
  // Plus CNPs over IPv4, IPv6 and RoCE v1.
  for (int variant = 0; variant < 3; ++variant) {
    Built b{test::default_spec(Opcode::kCnp, variant != 0), std::vector<uint8_t>(128), 0};
    b.spec.roce_v1 = variant == 2;
    b.frame.resize(build_cnp(b.spec, b.frame));
    frames.push_back(b);
  }
  // Negative controls: one IPv4, one IPv6 and one RoCE v1 frame with a payload byte flipped;
  // scapy must call these bad (so "ok" above is not a tautology).
  const size_t good = frames.size();
  for (size_t src : {size_t{0}, good / 4, good / 2}) {
    Built b = frames[src];
    b.frame[b.frame.size() - 6] ^= 0x40;
    frames.push_back(b);
  }
  const std::string pcap = dir.path() + "/built.pcap";
  write_pcap(pcap, frames);
  std::string out;
  const std::string cmd = std::string(UROCE_PYTHON3) +
                          " " UROCE_WIRE_TEST_DIR "/scapy_frames.py check " + pcap + " 2>&1";
  ASSERT_EQ(test::run_capture(cmd, &out), 0) << out;
  size_t ok = 0, decoded = 0, decoded_v1 = 0;
  for (const auto& line : test::lines_of(out)) {
    std::istringstream in(line);
    std::string tag;
    size_t idx;
    in >> tag >> idx;
    if (tag == "ICRC") {
      std::string verdict;
      in >> verdict;
      EXPECT_EQ(verdict, idx < good ? "ok" : "bad") << line;
      ok += verdict == "ok";
    } else if (tag == "DECODE") {
      ASSERT_LT(idx, frames.size());
      const FrameSpec& s = frames[idx].spec;
      auto kv = test::parse_kv(in);
      EXPECT_EQ(num(kv["opcode"]), static_cast<uint64_t>(s.opcode)) << line;
      EXPECT_EQ(num(kv["dqpn"]), s.dest_qpn.value()) << line;
      const bool cnp = s.opcode == Opcode::kCnp;
      EXPECT_EQ(num(kv["psn"]), cnp ? 0u : s.psn.value()) << line;
      EXPECT_EQ(num(kv["becn"]), cnp ? 1u : s.becn) << line;
      EXPECT_EQ(num(kv["pkey"]), s.pkey) << line;
      EXPECT_EQ(kv.count("v1") != 0, s.roce_v1) << line;
      if (s.roce_v1) {
        // scapy's GRH layer: IPVer 6, NxtHdr 0x1B, PayLen, HopLmt, FlowLabel, the GIDs.
        const size_t l2 = s.vlan ? 18 : 14;
        EXPECT_EQ(num(kv["ipver"]), 6u) << line;
        EXPECT_EQ(num(kv["nexthdr"]), 0x1bu) << line;
        EXPECT_EQ(num(kv["paylen"]), frames[idx].frame.size() - l2 - 40) << line;
        EXPECT_EQ(num(kv["hoplmt"]), s.ttl) << line;
        EXPECT_EQ(num(kv["flow"]), s.flow_label) << line;
        Gid sgid, dgid;
        ASSERT_TRUE(Gid::parse(kv["sgid"], &sgid)) << line;
        ASSERT_TRUE(Gid::parse(kv["dgid"], &dgid)) << line;
        EXPECT_EQ(sgid, s.src_ip) << line;
        EXPECT_EQ(dgid, s.dst_ip) << line;
        ++decoded_v1;
      }
      ++decoded;
    }
  }
  EXPECT_EQ(ok, good) << out;
  EXPECT_EQ(decoded, frames.size());
  // The RoCE v1 frames (two per opcode), the v1 CNP and one negative control.
  const auto v1 =
      std::count_if(frames.begin(), frames.end(), [](const Built& f) { return f.spec.roce_v1; });
  EXPECT_GE(v1, 2 * 23 + 2);
  EXPECT_EQ(decoded_v1, static_cast<size_t>(v1));
}

}  // namespace
}  // namespace uroce::wire
