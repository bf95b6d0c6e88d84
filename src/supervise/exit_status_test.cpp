#include "supervise/exit_status.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace {

int wait_status_of(void (*body)()) {
  pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST(ExitStatus, CodeAndSignalAreSeparate) {
  auto s = supervise::ExitStatus::from_wait_status(wait_status_of([] { ::_exit(42); }));
  EXPECT_EQ(s.code, 42);
  EXPECT_FALSE(s.signal.has_value());
  EXPECT_EQ(s.describe(), "exit 42");
  EXPECT_EQ(s.shell_code(), 42);

  auto k = supervise::ExitStatus::from_wait_status(wait_status_of([] { ::raise(SIGKILL); }));
  EXPECT_FALSE(k.code.has_value());
  EXPECT_EQ(k.signal, SIGKILL);
  EXPECT_EQ(k.describe(), "killed by SIGKILL");
  EXPECT_EQ(k.shell_code(), 137);
}

TEST(SignalNames, RoundTrip) {
  for (int sig : {SIGHUP, SIGINT, SIGTERM, SIGKILL, SIGSEGV, SIGBUS, SIGABRT, SIGUSR1}) {
    EXPECT_EQ(supervise::signal_number(supervise::signal_name(sig)), sig);
  }
  EXPECT_EQ(supervise::signal_number("term"), SIGTERM);
  EXPECT_EQ(supervise::signal_number("9"), SIGKILL);
  EXPECT_EQ(supervise::signal_number("SIGNOPE"), 0);
}
