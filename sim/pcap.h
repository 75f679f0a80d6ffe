/**
 * @file pcap.h
 * @brief Writes simulated frames to a pcap file (nanosecond timestamps, LINKTYPE_ETHERNET)
 * for tshark/wireshark. Attach with Link::set_tap(). Units: ns (simulated time).
 * Format: https://www.tcpdump.org/manpages/pcap-savefile.5.html (magic 0xa1b23c4d = ns).
 */
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/time.h"
#include "sim/frame.h"

namespace uroce::sim {

class PcapWriter {
 public:
  explicit PcapWriter(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) return;
    // magic, version 2.4 (two 16-bit fields), thiszone, sigfigs, snaplen, LINKTYPE_ETHERNET;
    // host byte order, which the magic tells readers.
    const uint32_t magic = 0xa1b23c4du;
    const uint16_t ver[2] = {2, 4};
    const uint32_t rest[4] = {0, 0, 65535, 1};
    std::fwrite(&magic, 4, 1, f_);
    std::fwrite(ver, 2, 2, f_);
    std::fwrite(rest, 4, 4, f_);
  }
  ~PcapWriter() {
    if (f_) std::fclose(f_);
  }
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  bool ok() const { return f_ != nullptr; }
  void write(const Frame& fr, Timestamp t) {
    if (!f_) return;
    const uint32_t rec[4] = {static_cast<uint32_t>(t.ns / 1'000'000'000),
                             static_cast<uint32_t>(t.ns % 1'000'000'000),
                             static_cast<uint32_t>(fr.size()), static_cast<uint32_t>(fr.size())};
    std::fwrite(rec, 4, 4, f_);
    std::fwrite(fr.bytes.data(), 1, fr.size(), f_);
  }

 private:
  std::FILE* f_;
};

}  // namespace uroce::sim
