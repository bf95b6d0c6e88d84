#include "capture/job_terminal.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

namespace capture {

std::optional<JobTerminal> JobTerminal::open(int terminal) {
  if (::isatty(terminal) == 0) {
    return std::nullopt;
  }
  JobTerminal t;
  t.m_terminal = terminal;
  t.m_master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t.m_master.valid() || ::unlockpt(t.m_master.get()) != 0) {
    return std::nullopt;
  }
  // The slave from the master itself (Linux 4.13+): no path lookup in /dev/pts.
  t.m_slave.reset(::ioctl(t.m_master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!t.m_slave.valid()) {
    char name[128];
    if (::ptsname_r(t.m_master.get(), name, sizeof name) != 0) {
      return std::nullopt;
    }
    t.m_slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!t.m_slave.valid()) {
      return std::nullopt;
    }
  }
  struct termios tio {};
  if (::tcgetattr(t.m_slave.get(), &tio) == 0) {
    tio.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    ::tcsetattr(t.m_slave.get(), TCSANOW, &tio);
  }
  t.m_size.reset(::fcntl(t.m_master.get(), F_DUPFD_CLOEXEC, 0));
  t.copy_size();
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  if (::sigprocmask(SIG_BLOCK, &winch, nullptr) == 0) {
    t.m_winch.reset(::signalfd(-1, &winch, SFD_CLOEXEC | SFD_NONBLOCK));
  }
  return t;
}

void JobTerminal::copy_size() const {
  struct winsize ws {};
  if (::ioctl(m_terminal, TIOCGWINSZ, &ws) == 0) {
    ::ioctl(m_size.get(), TIOCSWINSZ, &ws);
  }
}

void JobTerminal::on_winch() {
  signalfd_siginfo info{};
  while (::read(m_winch.get(), &info, sizeof info) == sizeof info) {
  }
  copy_size();
}

}  // namespace capture
