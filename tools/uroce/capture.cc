/**
 * @file capture.cc
 * @brief `uroce capture` (capture.h): finds the program, creates its capture ring, drains the
 * ring into a pcap until done, then removes the ring so the program stops copying.
 */
#include "capture.h"

#include <pcap/pcap.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include "stats/capture.h"
#include "stats/proc.h"
#include "stats/reader.h"

namespace uroce::tool {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

int error(const std::string& line) {
  std::fprintf(stderr, "uroce capture: %s\n", line.c_str());
  return 1;
}

}  // namespace

int capture(const CaptureOptions& o) {
  if (o.device.empty() || o.out.empty()) {
    std::fprintf(stderr, "uroce capture: --device and --out are required\n");
    return 2;
  }
  const std::string dir = stats::run_dir(o.run_dir);
  std::vector<pid_t> live;
  for (const stats::SegmentInfo& s : stats::list_segments(dir))
    if (s.device == o.device && s.state == stats::SegmentState::kLive &&
        (o.pid == 0 || s.pid == o.pid))
      live.push_back(s.pid);
  if (live.empty())
    return error("no running program has device " + o.device +
                 (o.pid ? " in process " + std::to_string(o.pid) : "") + " (in " + dir + ")");
  if (live.size() > 1) {
    std::string pids;
    for (pid_t p : live) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    return error("device " + o.device + " is open in processes " + pids + "; pick one with --pid");
  }
  const pid_t pid = live[0];

  pcap_t* dead = pcap_open_dead(DLT_EN10MB, static_cast<int>(stats::kCaptureSnaplen));
  if (!dead) return error("pcap_open_dead failed");
  pcap_dumper_t* dump = pcap_dump_open(dead, o.out.c_str());
  if (!dump) {
    std::string e = o.out + ": " + pcap_geterr(dead);
    pcap_close(dead);
    return error(e);
  }
  std::string err;
  auto ring = stats::CaptureReader::create(stats::capture_path(dir, o.device, pid), o.slots, &err);
  if (!ring) {
    pcap_dump_close(dump);
    pcap_close(dead);
    return error(err);
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);

  const auto start = std::chrono::steady_clock::now();
  uint64_t frames = 0;
  bool program_gone = false;
  while (!g_stop.load() && (o.count == 0 || frames < o.count)) {
    size_t n = ring->drain([&](const stats::CaptureSlot& s, std::span<const uint8_t> data) {
      if (o.count && frames >= o.count) return;
      pcap_pkthdr h{};
      h.ts.tv_sec = static_cast<time_t>(s.ts_ns / 1'000'000'000ull);
      h.ts.tv_usec = static_cast<suseconds_t>(s.ts_ns % 1'000'000'000ull / 1000);
      h.caplen = static_cast<bpf_u_int32>(data.size());
      h.len = s.len;
      pcap_dump(reinterpret_cast<u_char*>(dump), &h, data.data());
      ++frames;
    });
    if (o.seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
            o.seconds)
      break;
    if (n == 0) {
      if (!stats::process_alive(pid, 0)) {
        program_gone = true;
        break;
      }
      timespec ts{0, 1'000'000};  // 1 ms between empty polls of the ring
      nanosleep(&ts, nullptr);
    }
  }
  const uint64_t dropped = ring->dropped();
  ring.reset();  // unlinks the ring: the program stops copying at its next check
  pcap_dump_close(dump);
  pcap_close(dead);
  std::fprintf(stderr,
               "uroce capture: %llu frames of %s (pid %d) written to %s; %llu dropped by "
               "a full ring%s\n",
               static_cast<unsigned long long>(frames), o.device.c_str(), static_cast<int>(pid),
               o.out.c_str(), static_cast<unsigned long long>(dropped),
               program_gone ? "; the program exited" : "");
  return 0;
}

}  // namespace uroce::tool
