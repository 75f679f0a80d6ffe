/**
 * @file file_writer.cc
 * @brief FileWriter (file_writer.h).
 */
#include "uroce-hostd/file_writer.h"

#include <pthread.h>

#include <cstdio>
#include <utility>

namespace uroce::hostd {

FileWriter::FileWriter() : thread_([this] { run(); }) {}

FileWriter::~FileWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void FileWriter::post(int key, Write w) {
  {
    std::lock_guard<std::mutex> l(mu_);
    queued_[key] = std::move(w);
    ++posted_;
  }
  cv_.notify_one();
}

void FileWriter::flush() {
  std::unique_lock<std::mutex> l(mu_);
  const uint64_t want = posted_;
  done_cv_.wait(l, [&] { return done_ >= want; });
}

void FileWriter::run() {
  pthread_setname_np(pthread_self(), "uroce-hostd-io");
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [&] { return stop_ || !queued_.empty(); });
    if (queued_.empty()) return;  // stopping, and everything ran
    std::map<int, Write> batch;
    batch.swap(queued_);
    const uint64_t upto = posted_;
    l.unlock();
    for (auto& [key, write] : batch) {
      const std::string err = write();
      if (!err.empty() && failed_.insert(key).second)
        std::fprintf(stderr, "uroce-hostd: %s\n", err.c_str());
    }
    l.lock();
    done_ = upto;
    done_cv_.notify_all();
  }
}

}  // namespace uroce::hostd
