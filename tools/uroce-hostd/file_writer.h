/**
 * @file file_writer.h
 * @brief uroce-hostd's file writes (the status file, the blocks file) on a thread of their
 * own, so that the thread moving frames never waits for a filesystem.
 *
 * A write to a disk-backed run directory can block for hundreds of milliseconds while the
 * filesystem commits its journal under other I/O (measured: a 300 ms rename in hostd.fork on
 * a busy disk). The daemon's clients' QPs time out meanwhile, and with the tests' 67 ms ACK
 * timeout and 7 retries a stall of half a second fails their WRITEs.
 *
 * Each file has a key; a write posted for a key replaces the one of that key not yet begun
 * (a file is written whole each time, so only the latest matters). A write returns an error
 * line or an empty string; the first error of each key is printed once on stderr.
 *
 * Thread-safety: post() and flush() from any thread; the writes run on the writer's thread.
 */
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace uroce::hostd {

class FileWriter {
 public:
  /// A whole-file write: empty on success, else what failed.
  using Write = std::function<std::string()>;

  FileWriter();
  /// Runs what was posted, then stops the thread.
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  /// Queues w as the next write of `key`, replacing a queued one of the same key.
  void post(int key, Write w);
  /// Returns once every write posted before the call has run.
  void flush();

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;       ///< work posted, or stop
  std::condition_variable done_cv_;  ///< a batch ran
  std::map<int, Write> queued_;
  uint64_t posted_ = 0, done_ = 0;  ///< batches: writes up to posted_ run once done_ reaches it
  bool stop_ = false;
  std::set<int> failed_;  ///< keys whose error was printed (the writer's thread only)
  std::thread thread_;
};

}  // namespace uroce::hostd
