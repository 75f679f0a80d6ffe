/**
 * @file fixture_replay_test.cc
 * @brief Replays every RoCEv2 frame of the Soft-RoCE (Linux rdma_rxe) captures in
 *        tests/fixtures/ into uroce's receive gate, wire::parse() (issue #7).
 *
 * The expected values come from the sidecar rxe_<name>.tsv, which is tshark's decode of the
 * same pcap (check_fixtures.py keeps the two in step and checks the ICRCs with scapy). For each
 * frame: parse() accepts it (ICRC included, IBA Annex 17 A17.4.1) and reports the opcode,
 * destination QPN and PSN tshark reports, and the AETH syndrome on opcodes that carry one.
 * Then one payload-or-header byte after the BTH is flipped and parse() must refuse the frame
 * with kBadIcrc: the ICRC check is real, not skipped. Units: bytes.
 */
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "pcap_file.h"
#include "transport/wire/parse.h"

namespace uroce::interop {
namespace {

/// One line of a .tsv sidecar: what tshark decoded for one frame.
struct Expected {
  uint32_t frame = 0;     ///< 1-based frame number
  uint32_t opcode = 0;    ///< BTH opcode
  uint32_t dest_qpn = 0;  ///< BTH destination QP
  uint32_t psn = 0;       ///< BTH PSN
  int syndrome = -1;      ///< AETH syndrome byte, -1 when the frame has no AETH
};

std::string fixture_path(const std::string& name, const char* ext) {
  return std::string(UROCE_FIXTURES_DIR) + "/rxe_" + name + ext;
}

/// Reads a sidecar; returns false (and says why in *err) on a malformed line.
bool read_expected(const std::string& path, std::vector<Expected>* rows, std::string* err) {
  std::ifstream in(path);
  if (!in) {
    *err = "cannot open " + path;
    return false;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string f, op, qpn, psn, syn;
    if (!(s >> f >> op >> qpn >> psn >> syn)) {
      *err = path + ": bad line '" + line + "'";
      return false;
    }
    Expected e;
    e.frame = static_cast<uint32_t>(std::stoul(f));
    e.opcode = static_cast<uint32_t>(std::stoul(op, nullptr, 16));
    e.dest_qpn = static_cast<uint32_t>(std::stoul(qpn, nullptr, 16));
    e.psn = static_cast<uint32_t>(std::stoul(psn, nullptr, 16));
    e.syndrome = syn == "-" ? -1 : static_cast<int>(std::stoul(syn, nullptr, 16));
    rows->push_back(e);
  }
  return true;
}

class FixtureReplay : public ::testing::TestWithParam<std::string> {};

TEST_P(FixtureReplay, EveryFrameParsesAsTsharkDecodesIt) {
  std::vector<PcapFrame> frames;
  const std::string err = read_pcap(fixture_path(GetParam(), ".pcap"), &frames);
  ASSERT_EQ(err, "");
  std::vector<Expected> rows;
  std::string terr;
  ASSERT_TRUE(read_expected(fixture_path(GetParam(), ".tsv"), &rows, &terr)) << terr;
  ASSERT_FALSE(frames.empty());
  ASSERT_EQ(frames.size(), rows.size());

  for (size_t i = 0; i < frames.size(); ++i) {
    const Expected& e = rows[i];
    SCOPED_TRACE("frame " + std::to_string(e.frame));
    ASSERT_EQ(e.frame, i + 1);
    ASSERT_EQ(frames[i].bytes.size(), frames[i].orig_len);  // not cut by the snap length
    wire::ParsedPacket pkt;
    // Receive one frame rxe sent (in-order, as captured)
    // Expect: accepted, ICRC good, the BTH fields tshark saw
    ASSERT_EQ(wire::parse(frames[i].bytes, &pkt), wire::DropReason::kOk)
        << wire::to_string(wire::parse(frames[i].bytes, &pkt));
    EXPECT_EQ(static_cast<uint32_t>(pkt.opcode), e.opcode);
    EXPECT_EQ(pkt.dest_qpn.value(), e.dest_qpn);
    EXPECT_EQ(pkt.psn.value(), e.psn);
    EXPECT_EQ(pkt.ip_version, 4);
    EXPECT_EQ(pkt.udp_dport, 4791);
    if (e.syndrome >= 0) {
      ASSERT_TRUE(pkt.has(wire::ExtHdr::kAeth));
      EXPECT_EQ(pkt.aeth.syndrome, e.syndrome);
    } else {
      EXPECT_FALSE(pkt.has(wire::ExtHdr::kAeth));
    }
  }
}

TEST_P(FixtureReplay, FlippedByteAfterBthFailsIcrc) {
  std::vector<PcapFrame> frames;
  ASSERT_EQ(read_pcap(fixture_path(GetParam(), ".pcap"), &frames), "");
  ASSERT_FALSE(frames.empty());
  for (size_t i = 0; i < frames.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i + 1));
    wire::ParsedPacket pkt;
    ASSERT_EQ(wire::parse(frames[i].bytes, &pkt), wire::DropReason::kOk);
    // The last byte before the 4-byte ICRC is covered by it and masked by nothing.
    std::vector<uint8_t> bad = frames[i].bytes;
    const size_t ip_start = pkt.bth_offset - 8u - pkt.ip_header.size();  // 8: UDP header
    const size_t end = ip_start + pkt.ip_packet_len;
    ASSERT_GE(end, pkt.bth_offset + 12u + 4u);
    bad[end - 5] ^= 0x01;
    // Receive the frame with one bit flipped (corrupt)
    // Expect: dropped as kBadIcrc
    EXPECT_EQ(wire::parse(bad, &pkt), wire::DropReason::kBadIcrc);
  }
}

// Every fixture make-fixtures.sh writes; a missing file fails the test.
INSTANTIATE_TEST_SUITE_P(Rxe, FixtureReplay,
                         ::testing::Values("rc_send", "ud_send", "rc_write", "rc_read", "rc_atomic",
                                           "rc_send_bw", "rc_write_loss"),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace uroce::interop
