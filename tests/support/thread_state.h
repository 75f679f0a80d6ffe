/**
 * @file thread_state.h
 * @brief For tests that wait until another thread of theirs sleeps (in a library call that
 * must block): the scheduler state of a thread of this process.
 */
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace uroce::test_support {

/// The scheduler state letter of thread tid of this process ('R', 'S', ...); '?' if unknown.
inline char thread_state(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  const size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? '?' : line[close + 2];
}

}  // namespace uroce::test_support
