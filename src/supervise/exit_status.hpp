// supervise/exit_status.hpp: a child's wait status, decoded once into separate fields.
#pragma once

#include <optional>
#include <string>

namespace supervise {

struct ExitStatus {
  std::optional<int> code;    // exited normally with this code
  std::optional<int> signal;  // killed by this signal
  bool core_dumped = false;

  static ExitStatus from_wait_status(int status);
  static ExitStatus exited(int code) { return ExitStatus{code, std::nullopt, false}; }
  // "exit 1", "SIGKILL": for people.
  std::string describe() const;
  // The shell's view: code, or 128+signal.
  int shell_code() const;
};

// "SIGSEGV" for 11; "SIG<n>" for numbers without a name.
std::string signal_name(int sig);
// Accepts "SIGTERM", "TERM", "term", "15". Returns 0 when unknown.
int signal_number(const std::string& name);

}  // namespace supervise
