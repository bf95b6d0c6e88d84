// util/signals.hpp: the one table of signal names, from glibc (sigabbrev_np and
// sigdescr_np), so that every name gpualert writes ("SIGPROF") is one it reads back.
#pragma once

#include <string>
#include <string_view>

namespace util {

// "SIGSEGV" for 11; "SIGRTMIN+n" for realtime signals; "SIG<n>" otherwise.
std::string signal_name(int sig);
// "Segmentation fault" for 11; "" when glibc has no description.
std::string signal_description(int sig);
// Accepts what signal_name gives and the usual spellings: "SIGTERM", "TERM",
// "term", "15", "SIGRTMIN+2", "RTMAX-1", "SIG33", the aliases IOT, CLD, POLL.
// Returns 0 when the text names no signal of this system.
int signal_number(std::string_view name);

// Dispositions asked of and set in the kernel directly: glibc's sigaction refuses
// its two internal signals (32 and 33), which a job may die of all the same and
// which must then reach it, and us when we end like it, with their default action.
bool signal_ignored(int sig);
void set_default_action(int sig);

}  // namespace util
