#include "util/signals.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <tuple>
#include <utility>

namespace util {

namespace {

// A decimal number of at most 3 digits, or -1.
int small_number(std::string_view s) {
  if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string_view::npos) {
    return -1;
  }
  int n = 0;
  for (char c : s) {
    n = n * 10 + (c - '0');
  }
  return n;
}

int valid(int n) { return n > 0 && n < NSIG ? n : 0; }

// The kernel's struct sigaction on the architectures we build for (x86-64,
// arm64): handler, flags, restorer, mask. Only the handler is read or set.
struct KernelSigaction {
  void* handler = nullptr;
  unsigned long flags = 0;
  void* restorer = nullptr;
  unsigned long mask[_NSIG / (8 * sizeof(unsigned long))] = {};
};

}  // namespace

bool signal_ignored(int sig) {
  KernelSigaction current;
  if (::syscall(SYS_rt_sigaction, sig, nullptr, &current, _NSIG / 8) != 0) {
    return false;
  }
  return current.handler == reinterpret_cast<void*>(SIG_IGN);
}

void set_default_action(int sig) {
  KernelSigaction dfl;  // SIG_DFL is 0
  (void)::syscall(SYS_rt_sigaction, sig, &dfl, nullptr, _NSIG / 8);
}

std::string signal_name(int sig) {
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    return "SIGRTMIN+" + std::to_string(sig - SIGRTMIN);
  }
  if (const char* abbrev = ::sigabbrev_np(sig)) {
    return std::string("SIG") + abbrev;
  }
  return "SIG" + std::to_string(sig);
}

std::string signal_description(int sig) {
  const char* d = ::sigdescr_np(sig);
  return d != nullptr ? d : "";
}

int signal_number(std::string_view name) {
  if (int n = small_number(name); n >= 0) {
    return valid(n);
  }
  std::string up;
  for (char c : name) {
    up += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  }
  std::string_view s = up;
  if (s.substr(0, 3) == "SIG") {
    s.remove_prefix(3);
  }
  if (int n = small_number(s); n >= 0) {  // "SIG33"
    return valid(n);
  }
  for (auto [prefix, base, step] : {std::tuple{"RTMIN", SIGRTMIN, 1}, {"RTMAX", SIGRTMAX, -1}}) {
    std::string_view p(prefix);
    if (s.substr(0, p.size()) != p) {
      continue;
    }
    std::string_view rest = s.substr(p.size());
    if (rest.empty()) {
      return base;
    }
    int n = small_number(rest.substr(1));
    if (n < 0 || rest[0] != (step > 0 ? '+' : '-')) {
      return 0;
    }
    int sig = base + step * n;
    return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : 0;
  }
  static constexpr std::pair<std::string_view, int> k_aliases[] = {
      {"IOT", SIGABRT}, {"CLD", SIGCHLD}, {"POLL", SIGIO}};
  for (auto [alias, sig] : k_aliases) {
    if (s == alias) {
      return sig;
    }
  }
  for (int sig = 1; sig < SIGRTMIN; ++sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    if (abbrev != nullptr && s == abbrev) {
      return sig;
    }
  }
  return 0;
}

}  // namespace util
