// cli/notify_main.cpp: gpualert-notify, the helper that holds everything that needs libcurl.
//
// `gpualert outbox|test-notify|notify ...` exec this binary with the same
// arguments, and `run` starts it to build and send a run's notice (cli/notifier.hpp).
#include <cstdio>
#include <string_view>

#include "cli/commands.hpp"

namespace {

constexpr cli::Command k_commands[] = {
    {"outbox", cli::cmd_outbox, "list or flush notifications not yet delivered"},
    {"test-notify", cli::cmd_test_notify, "send a test notification and say what failed"},
    {"notify", cli::cmd_notify, "(re)send the notification of a finished run directory"},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2) {
    for (const auto& c : k_commands) {
      if (c.name == std::string_view(argv[1])) {
        return c.fn(argc - 1, argv + 1);
      }
    }
  }
  std::fprintf(stderr,
               "gpualert-notify: the notification helper of gpualert; use `gpualert outbox`, "
               "`gpualert test-notify` or `gpualert notify`\n");
  return 2;
}
