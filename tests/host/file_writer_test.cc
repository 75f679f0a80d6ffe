/**
 * @file file_writer_test.cc
 * @brief uroce-hostd's FileWriter (tools/uroce-hostd/file_writer.h): writes run on its thread,
 * a queued write of a key is replaced by a newer one, flush() waits for what was posted, and
 * the destructor runs what is still queued.
 */
#include "uroce-hostd/file_writer.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace uroce::hostd {
namespace {

/// What the writes did, in order (written from the writer's thread).
struct Log {
  std::mutex mu;
  std::vector<std::string> done;
  void add(const std::string& s) {
    std::lock_guard<std::mutex> l(mu);
    done.push_back(s);
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> l(mu);
    return done;
  }
};

TEST(FileWriter, RunsOnItsOwnThreadAndFlushWaits) {
  Log log;
  FileWriter w;
  std::thread::id where;
  w.post(0, [&] {
    where = std::this_thread::get_id();
    log.add("status");
    return std::string();
  });
  w.flush();
  EXPECT_EQ(log.get(), std::vector<std::string>{"status"});
  EXPECT_NE(where, std::this_thread::get_id());
}

TEST(FileWriter, AQueuedWriteIsReplacedByTheNewerOneOfItsKey) {
  Log log;
  FileWriter w;
  std::promise<void> started, release;
  std::shared_future<void> go = release.get_future().share();
  // The thread is held in a write of key 0 while key 1 gets two writes and key 0 another.
  w.post(0, [&] {
    started.set_value();
    go.wait();
    log.add("status 1");
    return std::string();
  });
  started.get_future().wait();
  for (const char* s : {"blocks 1", "blocks 2"})
    w.post(1, [&log, s] {
      log.add(s);
      return std::string();
    });
  w.post(0, [&] {
    log.add("status 2");
    return std::string();
  });
  release.set_value();
  w.flush();
  EXPECT_EQ(log.get(), (std::vector<std::string>{"status 1", "status 2", "blocks 2"}));
}

TEST(FileWriter, DestructorRunsWhatIsQueued) {
  Log log;
  {
    FileWriter w;
    for (int i = 0; i < 3; ++i)
      w.post(i, [&log, i] {
        log.add(std::to_string(i));
        return std::string();
      });
  }
  EXPECT_EQ(log.get(), (std::vector<std::string>{"0", "1", "2"}));
}

TEST(FileWriter, AFailingWriteDoesNotStopTheOthers) {
  Log log;
  FileWriter w;
  w.post(0, [] { return std::string("status file: /nowhere: No such file or directory"); });
  w.post(1, [&] {
    log.add("blocks");
    return std::string();
  });
  w.flush();
  w.post(0, [&] {
    log.add("status");
    return std::string();
  });
  w.flush();
  EXPECT_EQ(log.get(), (std::vector<std::string>{"blocks", "status"}));
}

}  // namespace
}  // namespace uroce::hostd
