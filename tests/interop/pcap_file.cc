/**
 * @file pcap_file.cc
 * @brief Classic pcap reader (see pcap_file.h). Units: bytes.
 */
#include "pcap_file.h"

#include <array>
#include <fstream>
#include <iterator>

namespace uroce::interop {
namespace {

constexpr uint32_t kMagicUsec = 0xa1b2c3d4;  ///< microsecond timestamps
constexpr uint32_t kMagicNsec = 0xa1b23c4d;  ///< nanosecond timestamps
constexpr uint32_t kLinkTypeEthernet = 1;
constexpr size_t kFileHeaderLen = 24;
constexpr size_t kRecordHeaderLen = 16;
constexpr uint32_t kMaxSnapLen = 256 * 1024;  ///< sanity bound on one record

uint32_t load32(const uint8_t* p, bool swap) {
  const uint32_t le =
      uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  const uint32_t be =
      uint32_t{p[3]} | uint32_t{p[2]} << 8 | uint32_t{p[1]} << 16 | uint32_t{p[0]} << 24;
  return swap ? be : le;
}

}  // namespace

std::string read_pcap(const std::string& path, std::vector<PcapFrame>* frames) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path;
  const std::vector<uint8_t> data{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  if (data.size() < kFileHeaderLen) return path + ": shorter than a pcap file header";
  // The magic tells the byte order the writer used: read it little-endian first.
  bool swap = false;
  const uint32_t magic = load32(data.data(), false);
  if (magic != kMagicUsec && magic != kMagicNsec) {
    swap = true;
    const uint32_t swapped = load32(data.data(), true);
    if (swapped != kMagicUsec && swapped != kMagicNsec) {
      return path + ": not a classic pcap file (pcapng? write with dumpcap -P)";
    }
  }
  if (load32(data.data() + 20, swap) != kLinkTypeEthernet) {
    return path + ": link type is not Ethernet";
  }
  frames->clear();
  size_t off = kFileHeaderLen;
  while (off < data.size()) {
    if (data.size() - off < kRecordHeaderLen) return path + ": truncated record header";
    const uint32_t caplen = load32(data.data() + off + 8, swap);
    const uint32_t origlen = load32(data.data() + off + 12, swap);
    off += kRecordHeaderLen;
    if (caplen > kMaxSnapLen || data.size() - off < caplen) {
      return path + ": truncated record";
    }
    PcapFrame f;
    f.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(off),
                   data.begin() + static_cast<std::ptrdiff_t>(off + caplen));
    f.orig_len = origlen;
    frames->push_back(std::move(f));
    off += caplen;
  }
  return {};
}

}  // namespace uroce::interop
