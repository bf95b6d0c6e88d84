#include "supervise/spawn.hpp"

#include <spawn.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace supervise {

namespace {

// RAII holders so that every posix_spawn object is destroyed on every path.
struct Attr {
  posix_spawnattr_t a;
  Attr() { posix_spawnattr_init(&a); }
  ~Attr() { posix_spawnattr_destroy(&a); }
};
struct Actions {
  posix_spawn_file_actions_t a;
  Actions() { posix_spawn_file_actions_init(&a); }
  ~Actions() { posix_spawn_file_actions_destroy(&a); }
};

SpawnFailure failure(const std::string& cmd, int err) {
  SpawnFailure f;
  f.err = err;
  if (err == ENOENT) {
    f.shell_code = 127;
    f.message = cmd + ": command not found";
    if (cmd.find('/') != std::string::npos) {
      f.message = cmd + ": No such file or directory";
    }
  } else {
    f.shell_code = 126;
    f.message = cmd + ": cannot execute: " + std::strerror(err);
  }
  return f;
}

}  // namespace

std::variant<Spawned, SpawnFailure> spawn(const SpawnRequest& req) {
  if (req.argv.empty()) {
    return failure("", ENOENT);
  }
  Attr attr;
  Actions actions;
  short flags = POSIX_SPAWN_SETSIGMASK;
  sigset_t empty;
  sigemptyset(&empty);
  int rc = posix_spawnattr_setsigmask(&attr.a, &empty);
  if (rc == 0 && req.default_signals != nullptr) {
    flags |= POSIX_SPAWN_SETSIGDEF;
    rc = posix_spawnattr_setsigdefault(&attr.a, req.default_signals);
  }
  if (rc == 0 && req.own_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    rc = posix_spawnattr_setpgroup(&attr.a, 0);
  }
  if (rc == 0) {
    rc = posix_spawnattr_setflags(&attr.a, flags);
  }
  if (rc == 0 && req.stdout_fd != 1) {
    rc = posix_spawn_file_actions_adddup2(&actions.a, req.stdout_fd, 1);
  }
  if (rc == 0 && req.stderr_fd != 2) {
    rc = posix_spawn_file_actions_adddup2(&actions.a, req.stderr_fd, 2);
  }
  if (rc != 0) {
    return failure(req.argv[0], rc);
  }
  std::vector<char*> argv;
  for (const auto& a : req.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : req.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  pid_t pid = -1;
  rc = posix_spawnp(&pid, argv[0], &actions.a, &attr.a, argv.data(), envp.data());
  if (rc != 0) {
    // A directory or a file without exec permission is found but not executable:
    // the shell says 126 for those, and so do we.
    struct stat st {};
    if (rc == EACCES || (req.argv[0].find('/') != std::string::npos &&
                         ::stat(req.argv[0].c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
      return failure(req.argv[0], rc == 0 ? EISDIR : rc);
    }
    return failure(req.argv[0], rc);
  }
  return Spawned{pid};
}

}  // namespace supervise
