/**
 * @file make_fuzz_corpus.cc
 * @brief Writes the seed corpus of fuzz/parse_frame: frames from our builder (every opcode,
 * IPv4/IPv6, with/without 802.1Q, a few payload lengths; RoCE v1 with IPv4-mapped and IPv6
 * GIDs, one with 802.1Q) and the CNP vector of
 * docs/dcqcn-pfc.md §3.1. Usage: wire_make_fuzz_corpus <dir>. Units: bytes.
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
  std::vector<uint8_t> cnp = {0x02, 0, 0, 0, 0, 0x07, 0x02, 0, 0, 0, 0, 0x08, 0x08, 0x00};
  const auto ip = test::unhex(
      "4589003C98C64000201169271616160816161607DBAE12B7002800008100FFFF400000D200000000"
      "00000000000000000000000000000000DAFC1BEF");
  cnp.insert(cnp.end(), ip.begin(), ip.end());
  write(dir, "cnp_vector_dcqcn_md", cnp);
  std::printf("%d frames + the CNP vector written to %s\n", n, dir.c_str());
  return 0;
}
