#include "util/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "util/fd.hpp"

extern char** environ;

namespace util {

pid_t spawn_quiet(const std::string& path, const char* name, const std::vector<std::string>& args,
                  int out_fd, bool new_session, const sigset_t* mask, int in_fd) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(name));
  for (const auto& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  if (in_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  } else {
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  }
  if (out_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, mask != nullptr ? mask : &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (new_session) {
    flags |= POSIX_SPAWN_SETSID;
  }
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, path.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return -1;
  }
  return pid;
}

ChildResult collect_child(pid_t pid, int read_fd, std::chrono::steady_clock::time_point deadline,
                          size_t max_bytes) {
  using Clock = std::chrono::steady_clock;
  ChildResult r;
  char buf[4096];
  while (read_fd >= 0 && r.output.size() < max_bytes) {  // read_fd < 0: nothing to read
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      break;
    }
    struct pollfd p {
      read_fd, POLLIN, 0
    };
    int ready = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
    if (ready < 0 && errno != EINTR) {
      break;  // not a pipe we can wait on: stop reading, reap below
    }
    if (ready <= 0) {
      continue;  // interrupted, or the deadline: the loop's test decides
    }
    ssize_t n = read_retry(read_fd, buf, sizeof buf);
    if (n <= 0) {
      break;
    }
    r.output.append(buf, static_cast<size_t>(n));
  }
  // Its output ended: it is exiting; give it until the deadline to be reaped.
  for (;;) {
    pid_t w = ::waitpid(pid, &r.status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) {
      r.finished = w == pid;
      return r;
    }
    if (w == 0 && Clock::now() >= deadline) {
      break;
    }
    ::usleep(1000);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &r.status, 0) < 0 && errno == EINTR) {
  }
  return r;
}

}  // namespace util
