// util/child.hpp: the output and exit of a child process, within a deadline.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace util {

struct ChildResult {
  std::string output;     // what it wrote to the pipe (at most max_bytes)
  int status = 0;         // its wait status, when finished
  bool finished = false;  // it exited by the deadline (else it was killed)
};

// Starts `path` (argv[0] = `name`) with stdin on `in_fd` (or /dev/null when < 0),
// stdout on `out_fd` (or /dev/null when < 0), stderr on /dev/null, every signal at its
// default and the mask `mask` (empty when null); `new_session`: its own session, away
// from the terminal. The helpers gpualert starts beside a job. -1 with errno set when
// it could not start.
pid_t spawn_quiet(const std::string& path, const char* name, const std::vector<std::string>& args,
                  int out_fd, bool new_session, const sigset_t* mask = nullptr, int in_fd = -1);

// Reads `read_fd` (the child's output pipe, whose write end the caller closed)
// until EOF, max_bytes or the deadline (read_fd < 0: none), then waits for `pid` until the
// deadline; a child still running then is killed (SIGKILL) and reaped.
ChildResult collect_child(pid_t pid, int read_fd, std::chrono::steady_clock::time_point deadline,
                          size_t max_bytes = 1u << 20);

}  // namespace util
