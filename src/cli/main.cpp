// cli/main.cpp: the subcommand table. Only main decides how the process ends.
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "cli/commands.hpp"
#include "cli/notifier.hpp"

namespace {

constexpr cli::Command k_commands[] = {
    {"run", cli::cmd_run, "run a job, keep its log, diagnose its end, notify"},
    {"classify", cli::cmd_classify, "diagnose a log offline"},
    {"eval", cli::cmd_eval, "measure the rules on a labelled corpus"},
    {"rules", cli::cmd_rules, "list the rules, or check a rules file"},
    // These need libcurl, which lives in the gpualert-notify helper (cli/notifier.hpp).
    {"outbox", cli::cmd_outbox_flush, "list or flush notifications not yet delivered"},
    {"sweep", cli::cmd_sweep, "report runs whose wrapper is gone; send held notices that are due"},
    {"stats", cli::cmd_stats, "labels per node and GPU across many runs; drain candidates"},
    {"test-notify", cli::exec_notify_helper, "send a test notification and say what failed"},
    {"notify", cli::exec_notify_helper, "(re)send the notification of a finished run directory"},
};

void usage(FILE* out) {
  std::fputs(
      "usage: gpualert COMMAND [ARGS...]\n\n"
      "GPUAlert wraps a training job unchanged, keeps a durable log of what it printed,\n"
      "names the root cause when it ends, and tells you by email.\n\n"
      "commands:\n",
      out);
  for (const auto& c : k_commands) {
    std::fprintf(out, "  %-12s %s\n", std::string(c.name).c_str(), std::string(c.summary).c_str());
  }
  std::fputs("\n`gpualert COMMAND --help` describes each command.\n", out);
}

}  // namespace

int main(int argc, char** argv) {
  // One malloc arena, and buffers of a few MiB from the heap: a thread of ours no
  // longer maps a 64 MiB arena and grows it 4 KiB at a time with mprotect, and
  // freeing a buffer no longer unmaps it (each unmap in a threaded process is a TLB
  // shootdown across CPUs). Our threads allocate little and rarely at once.
  ::mallopt(M_ARENA_MAX, 1);
  ::mallopt(M_MMAP_THRESHOLD, 8 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 32 << 20);
  // A closed stdin/stdout/stderr would let our own pipes and files take fds 0-2
  // and be handed to the job in the wrong place: fill them with /dev/null first.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) {
      int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
      if (null_fd >= 0 && null_fd != fd) {
        ::dup2(null_fd, fd);
        ::close(null_fd);
      }
    }
  }
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "version") {
    std::puts("gpualert " GPUALERT_VERSION);
    return 0;
  }
  for (const auto& c : k_commands) {
    if (c.name == name) {
      return c.fn(argc - 1, argv + 1);
    }
  }
  std::fprintf(stderr, "gpualert: error: unknown command '%s' (see gpualert --help)\n", argv[1]);
  return 2;
}
