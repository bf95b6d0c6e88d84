#include "supervise/exit_status.hpp"

#include <sys/wait.h>

#include <cctype>
#include <csignal>
#include <cstring>

#include "util/assert.hpp"
#include "util/signals.hpp"

namespace supervise {

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.core_dumped = WCOREDUMP(status);
  }
  GPUALERT_ASSERT(s.code.has_value() != s.signal.has_value());
  return s;
}

std::string ExitStatus::describe() const {
  if (signal) {
    return "killed by " + signal_name(*signal) + (core_dumped ? " (core dumped)" : "");
  }
  return "exit " + std::to_string(code.value_or(-1));
}

int ExitStatus::shell_code() const { return signal ? 128 + *signal : code.value_or(1); }

std::string signal_name(int sig) { return util::signal_name(sig); }

int signal_number(const std::string& name) { return util::signal_number(name); }

}  // namespace supervise
