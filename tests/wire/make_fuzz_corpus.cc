/**
 * @file make_fuzz_corpus.cc
 * @brief Writes the seed corpus of fuzz/parse_frame: frames from our builder (every opcode,
 * IPv4/IPv6, with/without 802.1Q, a few payload lengths; RoCE v1 with IPv4-mapped and IPv6
 * GIDs, one with 802.1Q), the CNP vector of docs/dcqcn-pfc.md §3.1 and an XRC request cut short
 * before its XRCETH. Usage: wire_make_fuzz_corpus <dir>. Units: bytes.
 */
#include <cstdio>
#include <string>

#include "wire_test_util.h"

using namespace uroce;
using namespace uroce::wire;

namespace {
void write(const std::string& dir, const std::string& name, const std::vector<uint8_t>& f) {
  const std::string path = dir + "/" + name;
  FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) std::exit(1);
  std::fwrite(f.data(), 1, f.size(), out);
  std::fclose(out);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int n = 0;
  for (int v = 0; v < 256; ++v) {
    const OpcodeInfo& info = kOpcodeTable[v];
    if (!info.valid) continue;
    for (int variant = 0; variant < 5; ++variant) {
      // 0: IPv4, 1: IPv6, 2: IPv4 + 802.1Q, 3: RoCE v1 (IPv4-mapped GIDs) + 802.1Q,
      // 4: RoCE v1 (IPv6 GIDs).
      FrameSpec s = test::default_spec(static_cast<Opcode>(v), variant == 1 || variant == 4);
      s.vlan = variant == 2 || variant == 3;
      s.roce_v1 = variant >= 3;
      s.pcp = 3;
      const size_t len = info.has_payload() ? static_cast<size_t>(variant % 3 * 5 + 1) : 0;
      std::vector<uint8_t> f;
      if (static_cast<Opcode>(v) == Opcode::kCnp) {
        f.resize(128);
        f.resize(build_cnp(s, f));
      } else {
        f = test::build_frame(s, len);
      }
      write(dir, std::string(info.name) + "_" + std::to_string(variant), f);
      ++n;
    }
  }
  // uroce's extensions (sr_ext.h, ts_ext.h): an SRETH, a SACKETH, TSETHs on both sides.
  struct Ext {
    const char* name;
    Opcode op;
    UroceExt ext;
    bool tseth;
  };
  for (const Ext& x : {Ext{"uroce_sreth", Opcode::kRcRdmaWriteFirst, UroceExt::kSreth, false},
                       Ext{"uroce_sreth_tseth", Opcode::kRcSendOnly, UroceExt::kSreth, true},
                       Ext{"uroce_tseth_request", Opcode::kRcRdmaWriteOnly, UroceExt::kNone, true},
                       Ext{"uroce_sack", Opcode::kRcAcknowledge, UroceExt::kSack, false},
                       Ext{"uroce_sack_tseth", Opcode::kRcAcknowledge, UroceExt::kSack, true},
                       Ext{"uroce_tseth_ack", Opcode::kRcAcknowledge, UroceExt::kNone, true}}) {
    FrameSpec s = test::default_spec(x.op);
    s.ext = x.ext;
    s.sreth = {1, 0xaabbccdd, 0x1000};
    s.sack.base = Psn(0x123458);
    s.sack.nwords = 2;
    s.sack.set(1);
    s.has_tseth = x.tseth;
    s.tseth = {0x01020304, x.op == Opcode::kRcAcknowledge ? 2500u : 0u};
    write(dir, x.name, test::build_frame(s, opcode_info(x.op).has_payload() ? 16 : 0));
    ++n;
  }
  std::vector<uint8_t> cnp = {0x02, 0, 0, 0, 0, 0x07, 0x02, 0, 0, 0, 0, 0x08, 0x08, 0x00};
  const auto ip = test::unhex(
      "4589003C98C64000201169271616160816161607DBAE12B7002800008100FFFF400000D200000000"
      "00000000000000000000000000000000DAFC1BEF");
  cnp.insert(cnp.end(), ip.begin(), ip.end());
  write(dir, "cnp_vector_dcqcn_md", cnp);
  // An XRC SEND_ONLY that ends where its XRCETH should start (the gate's kHeaderTruncated).
  FrameSpec rc = test::default_spec(Opcode::kRcSendOnly, false);
  FrameLayout l;
  std::vector<uint8_t> cut = test::build_frame(rc, 0, &l);
  cut[l.bth_offset] = static_cast<uint8_t>(Opcode::kXrcSendOnly);
  write(dir, "XRC_SEND_ONLY_truncated_xrceth", cut);
  std::printf("%d frames + the CNP vector + a truncated XRCETH written to %s\n", n, dir.c_str());
  return 0;
}
