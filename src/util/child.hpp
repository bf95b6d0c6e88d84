// util/child.hpp: the output and exit of a child process, within a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace util {

struct ChildResult {
  std::string output;     // what it wrote to the pipe (at most max_bytes)
  int status = 0;         // its wait status, when finished
  bool finished = false;  // it exited by the deadline (else it was killed)
};

// Reads `read_fd` (the child's output pipe, whose write end the caller closed)
// until EOF, max_bytes or the deadline (read_fd < 0: none), then waits for `pid` until the
// deadline; a child still running then is killed (SIGKILL) and reaped.
ChildResult collect_child(pid_t pid, int read_fd, std::chrono::steady_clock::time_point deadline,
                          size_t max_bytes = 1u << 20);

}  // namespace util
