/**
 * @file capture.h
 * @brief `uroce capture --device D --out FILE.pcap`: writes the frames a running program's
 * device receives and sends to a pcap file (libpcap, Ethernet link type) that Wireshark and
 * tshark decode as RoCEv2. Works through the capture ring of lib/stats (capture.h): no root,
 * no second queue. Stops after --count frames, after --seconds, when the program exits, or
 * on Ctrl-C. Frames the port answers itself (ARP, ND, PFC) are not captured.
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace uroce::tool {

struct CaptureOptions {
  std::string run_dir;    ///< empty: $UROCE_RUN_DIR or /dev/shm
  std::string device;     ///< required
  pid_t pid = 0;          ///< the program (0: the only one running the device)
  std::string out;        ///< pcap file to write
  uint64_t count = 0;     ///< stop after this many frames (0: no limit)
  double seconds = 0;     ///< stop after this long (0: no limit)
  uint32_t slots = 8192;  ///< ring slots (frames buffered between the program and this tool)
};

/// Returns the exit status: 0, 1 on an error (one line on stderr), 2 on bad arguments.
int capture(const CaptureOptions& o);

}  // namespace uroce::tool
