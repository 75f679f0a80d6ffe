/**
 * @file capture.h
 * @brief The frame-capture ring of `uroce capture`: a file `<run dir>/uroce.<device>.<pid>.cap`
 * that the capturing tool creates and a running program fills with copies of the frames its
 * device receives and sends, so that a pcap can be written from outside the process without
 * root tools or a second NIC queue.
 *
 * Protocol: the tool creates the file (CaptureReader::create), the program notices it within
 * its stats refresh period (100 ms) and maps it (CaptureWriter::attach), copies each frame
 * into the next free slot (single producer: the engine's lock holder) and publishes it by
 * advancing `head` (release). The tool reads slots from `tail` to `head` (acquire) and
 * advances `tail`. A full ring drops the frame and counts it in `dropped`: capture never slows
 * the data path. The tool unlinks the file when done; the program sees the link count fall to
 * 0 at its next check and unmaps it.
 *
 * Units: bytes; timestamps in ns since the Unix epoch (CLOCK_REALTIME, as pcap wants).
 */
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace uroce::stats {

inline constexpr uint64_t kCaptureMagic = 0x50414345434f5255ull;  // "UROCECAP"
inline constexpr uint32_t kCaptureVersion = 1;
inline constexpr uint32_t kCaptureSnaplen = 4352;  ///< the largest RoCE frame (mtu 4096 + 256)

/// The file's first bytes. head/tail are frame counts (slot = count % slots).
struct CaptureHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t slots;             ///< number of slots
  uint32_t slot_bytes;        ///< bytes per slot: sizeof(CaptureSlot) + snaplen, 64-aligned
  uint32_t snaplen;           ///< longest stored frame; longer ones are cut (CaptureSlot::caplen)
  alignas(64) uint64_t head;  ///< frames published by the program
  alignas(64) uint64_t tail;  ///< frames consumed by the tool
  alignas(64) uint64_t dropped;  ///< frames lost to a full ring
};

/// One slot: this header, then caplen bytes of the frame.
struct CaptureSlot {
  uint64_t ts_ns;   ///< when the frame was seen (CLOCK_REALTIME)
  uint32_t len;     ///< the frame's length on the wire (without FCS)
  uint32_t caplen;  ///< bytes stored (<= snaplen)
  uint32_t dir;     ///< 0 received, 1 sent
  uint32_t reserved;
};

/// `<run dir>/uroce.<device>.<pid>.cap`.
std::string capture_path(const std::string& run_dir, std::string_view device, pid_t pid);

/// The program's side: maps a ring the tool created, copies frames into it.
class CaptureWriter {
 public:
  /// Maps the ring at path if it exists and is valid; nullptr otherwise.
  static std::unique_ptr<CaptureWriter> attach(const std::string& path);
  ~CaptureWriter();
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  /// Copies one frame (tx: sent, else received) stamped ts_ns; counts a drop when full.
  void write(std::span<const uint8_t> frame, bool tx, uint64_t ts_ns);
  /// True while the tool still holds the file (its link count is not 0).
  bool wanted() const;

 private:
  CaptureWriter(int fd, void* base, size_t size);
  int fd_;
  void* base_;
  size_t size_;
};

/// The tool's side: creates the ring, reads frames out of it, removes it.
class CaptureReader {
 public:
  /// Creates path (it must not exist) with `slots` slots. On failure sets *err (one line).
  static std::unique_ptr<CaptureReader> create(const std::string& path, uint32_t slots,
                                               std::string* err);
  /// Unmaps and unlinks the file.
  ~CaptureReader();
  CaptureReader(const CaptureReader&) = delete;
  CaptureReader& operator=(const CaptureReader&) = delete;

  /// Calls fn for every frame published since the last call; returns how many.
  size_t drain(const std::function<void(const CaptureSlot&, std::span<const uint8_t>)>& fn);
  /// Frames the program could not store because the ring was full.
  uint64_t dropped() const;

 private:
  CaptureReader(std::string path, void* base, size_t size);
  std::string path_;
  void* base_;
  size_t size_;
};

}  // namespace uroce::stats
