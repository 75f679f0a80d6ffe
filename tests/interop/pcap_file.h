/**
 * @file pcap_file.h
 * @brief Minimal reader for classic libpcap capture files (the format dumpcap -P writes), so
 *        that the fixture replay test needs neither libpcap nor tshark at run time.
 *
 * Supports the microsecond and nanosecond magics in either byte order, link type 1
 * (Ethernet). Format: https://www.tcpdump.org/manpages/pcap-savefile.5.html (24-byte file
 * header, then a 16-byte record header before each frame). Units: bytes.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace uroce::interop {

/// One captured frame: the bytes as captured (no FCS in these files).
struct PcapFrame {
  std::vector<uint8_t> bytes;  ///< captured bytes (caplen of them)
  uint32_t orig_len = 0;       ///< length on the wire; > bytes.size() if the capture cut it
};

/// Reads every frame of `path` into *frames. Returns an empty string on success, otherwise
/// one line saying what is wrong (missing file, bad magic, link type not Ethernet, truncated
/// record). Never throws.
std::string read_pcap(const std::string& path, std::vector<PcapFrame>* frames);

}  // namespace uroce::interop
