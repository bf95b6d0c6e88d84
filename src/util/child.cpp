#include "util/child.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "util/fd.hpp"

namespace util {

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
