#include "supervise/exit_status.hpp"

#include <sys/wait.h>

#include <cctype>
#include <csignal>
#include <cstring>

#include "util/assert.hpp"

namespace supervise {

namespace {

struct SignalEntry {
  int number;
  const char* name;
};

constexpr SignalEntry k_signals[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},       {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},     {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"},     {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"},     {SIGTERM, "SIGTERM"}, {SIGSTKFLT, "SIGSTKFLT"},
    {SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"},     {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"},
    {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},     {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"},
    {SIGXFSZ, "SIGXFSZ"}, {SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
    {SIGIO, "SIGIO"},     {SIGPWR, "SIGPWR"},       {SIGSYS, "SIGSYS"},
};

}  // namespace

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

std::string signal_name(int sig) {
  for (const auto& e : k_signals) {
    if (e.number == sig) {
      return e.name;
    }
  }
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  }
  return "SIG" + std::to_string(sig);
}

int signal_number(const std::string& name) {
  if (!name.empty() && std::isdigit(static_cast<unsigned char>(name[0]))) {
    int n = std::atoi(name.c_str());
    return (n > 0 && n < NSIG) ? n : 0;
  }
  std::string up;
  for (char c : name) {
    up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (up.rfind("SIG", 0) != 0) {
    up = "SIG" + up;
  }
  for (const auto& e : k_signals) {
    if (up == e.name) {
      return e.number;
    }
  }
  return 0;
}

}  // namespace supervise
