// capture/job_terminal.hpp: a pseudo-terminal for the job's output when ours is a terminal.
//
// With gpualert's stdout on a terminal, the job writes to the slave side of a pty
// instead of a pipe, so it sees a tty as it would without the wrapper (colours,
// columns, line-buffered stdio), and the Tee reads the master side. Only output
// goes through it: the job's stdin stays the real terminal, in whose foreground
// process group it stays when interactive, so a pdb prompt, Ctrl-C (once) and
// Ctrl-Z / fg work as before. Output processing is off on the pty (no "\n" to
// "\r\n"): the log gets the job's bytes, and the real terminal does its own.
// The window size is copied from the real terminal at the start and on each
// SIGWINCH (blocked and read from winch_fd() in the poll loop).
#pragma once

#include <optional>

#include "util/fd.hpp"

namespace capture {

class JobTerminal {
 public:
  // A pty sized like `terminal`, or nothing (not a tty, no ptys available).
  static std::optional<JobTerminal> open(int terminal);
  int master() const { return m_master.get(); }
  int slave() const { return m_slave.get(); }
  util::UniqueFd take_master() { return std::move(m_master); }
  // After the spawn: the job holds the slave; ours would keep EOF from coming.
  void close_slave() { m_slave.reset(); }
  // A signalfd that is readable when our window size changed, or -1.
  int winch_fd() const { return m_winch.get(); }
  // Reads winch_fd() and copies the real terminal's size to the pty.
  void on_winch();

 private:
  void copy_size() const;
  int m_terminal = -1;
  util::UniqueFd m_master, m_slave, m_winch;
  util::UniqueFd m_size;  // a copy of the master, for resizing after take_master()
};

}  // namespace capture
