// supervise/spawn.hpp: start the job with posix_spawn, with a clean signal state.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <string>
#include <variant>
#include <vector>

#include "util/result.hpp"

namespace supervise {

struct SpawnRequest {
  std::vector<std::string> argv;              // argv[0] is looked up in PATH unless it has a '/'
  std::vector<std::string> env;               // the complete environment, "K=V"
  int stdout_fd = 1;                          // becomes the child's fd 1
  int stderr_fd = 2;                          // becomes the child's fd 2
  bool own_process_group = false;             // setpgid(0, 0) in the child
  const sigset_t* default_signals = nullptr;  // reset to SIG_DFL in the child
};

struct SpawnFailure {
  int err = 0;           // errno of the failed exec
  int shell_code = 126;  // 127 when not found, 126 when found but not executable
  std::string message;   // "python3x: command not found", "./x: Permission denied"
};

struct Spawned {
  pid_t pid = -1;
};

// On failure to exec, returns the failure instead of a pid (posix_spawn reports
// the exec's errno synchronously on glibc). The child starts with an empty signal mask.
std::variant<Spawned, SpawnFailure> spawn(const SpawnRequest& request);

}  // namespace supervise
