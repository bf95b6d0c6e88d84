#include "capture/job_terminal.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>

#include "util/fd.hpp"

namespace {

// A terminal of our own to stand for gpualert's stdout.
struct OuterTerminal {
  util::UniqueFd master, slave;
  OuterTerminal() {
    master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
    EXPECT_TRUE(master.valid());
    EXPECT_EQ(::unlockpt(master.get()), 0);
    char name[128];
    EXPECT_EQ(::ptsname_r(master.get(), name, sizeof name), 0);
    slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    EXPECT_TRUE(slave.valid());
  }
  void resize(unsigned short rows, unsigned short cols) const {
    struct winsize ws {};
    ws.ws_row = rows;
    ws.ws_col = cols;
    EXPECT_EQ(::ioctl(master.get(), TIOCSWINSZ, &ws), 0);
  }
};

struct winsize size_of(int fd) {
  struct winsize ws {};
  EXPECT_EQ(::ioctl(fd, TIOCGWINSZ, &ws), 0);
  return ws;
}

TEST(JobTerminal, NothingWhenOurOutputIsNotATerminal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  util::UniqueFd r(fds[0]), w(fds[1]);
  EXPECT_FALSE(capture::JobTerminal::open(w.get()).has_value());
}

TEST(JobTerminal, ATtySizedLikeOursThatPassesTheJobsBytesUnchanged) {
  OuterTerminal outer;
  outer.resize(33, 111);
  auto t = capture::JobTerminal::open(outer.slave.get());
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(::isatty(t->slave()), 1);
  EXPECT_EQ(size_of(t->slave()).ws_col, 111);
  EXPECT_EQ(size_of(t->slave()).ws_row, 33);

  // No output processing: "\n" stays "\n" (the log gets the job's bytes).
  ASSERT_TRUE(util::write_all(t->slave(), "step 1\nstep 2\n").ok());
  util::UniqueFd master = t->take_master();
  std::string got;
  char buf[256];
  while (got.size() < 14) {
    struct pollfd p {
      master.get(), POLLIN, 0
    };
    ASSERT_EQ(::poll(&p, 1, 5000), 1);
    ssize_t n = ::read(master.get(), buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(got, "step 1\nstep 2\n");

  // Our window changes: on SIGWINCH (read from its signalfd) the pty follows.
  ASSERT_GE(t->winch_fd(), 0);
  outer.resize(40, 77);
  ::raise(SIGWINCH);  // blocked: it waits in the signalfd
  struct pollfd p {
    t->winch_fd(), POLLIN, 0
  };
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  t->on_winch();
  EXPECT_EQ(size_of(t->slave()).ws_col, 77);
  EXPECT_EQ(size_of(t->slave()).ws_row, 40);

  // The job's end: with the slave closed, the master reads EOF (EIO on Linux).
  t->close_slave();
  ssize_t n = ::read(master.get(), buf, sizeof buf);
  EXPECT_LE(n, 0);
}

}  // namespace
