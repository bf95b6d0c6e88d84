// host/test_support.hpp: real processes for the host module's tests.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace host::testing {

// A real job: a first process (leading its own group) with a child, both waiting.
// `other` is a process outside it, as another job's would be.
struct RealJob {
  pid_t first = -1, child = -1, other = -1;
  RealJob() {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    first = ::fork();
    if (first == 0) {
      ::setpgid(0, 0);
      pid_t c = ::fork();
      if (c == 0) {
        ::pause();
        ::_exit(0);
      }
      (void)!::write(ready[1], &c, sizeof c);
      ::pause();
      ::_exit(0);
    }
    EXPECT_EQ(::read(ready[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
    ::close(ready[0]);
    ::close(ready[1]);
    other = ::fork();
    if (other == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~RealJob() {
    for (pid_t p : {child, first, other}) {
      ::kill(p, SIGKILL);
    }
    ::waitpid(first, nullptr, 0);
    ::waitpid(other, nullptr, 0);
  }
};

}  // namespace host::testing
