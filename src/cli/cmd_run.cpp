// cli/cmd_run.cpp: `gpualert run [OPTIONS] -- COMMAND [ARGS...]`: options, then run_job().
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_job.hpp"
#include "util/signals.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

constexpr const char* k_run_help =
    R"(Run COMMAND unchanged, keep a durable log of everything it prints, diagnose
how it ended, and notify you. gpualert exits with exactly the status of COMMAND
(its exit code, or the same signal), whatever happens to the notification.

Before COMMAND starts, a run directory is created and synced:
  <log-dir>/<name>-<YYYYmmdd-HHMMSS>-<host>-<pid>/output.log, report.json, kernel.log
COMMAND's stdout and stderr still reach gpualert's stdout and stderr; the log
gets both, interleaved in arrival order. Signals sent to gpualert (Ctrl-C, kill,
scancel) reach COMMAND once. Set-up errors exit 2 before COMMAND runs; a COMMAND
that can't be found exits 127, one that can't be executed 126.

Examples:
  gpualert run -- python train.py --lr 3e-4
  gpualert run --name llama-ft --timeout 11h --attach 'ckpt/*.json' -- torchrun train.py
)";

}  // namespace

// Ends the process the way the child ended: same code, or the same signal
// re-raised on ourselves with its default action and no core file of ours.
[[noreturn]] void finish_like(const RunEnding& ending) {
  std::fflush(stdout);
  std::fflush(stderr);
  if (ending.signal) {
    int sig = *ending.signal;
    struct rlimit no_core {
      0, 0
    };
    ::setrlimit(RLIMIT_CORE, &no_core);
    util::set_default_action(sig);  // also for glibc's 32 and 33, which sigaction refuses
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    // tgkill, not raise(): glibc's raise refuses its internal signals 32 and 33.
    ::syscall(SYS_tgkill, ::getpid(), ::gettid(), sig);
    // Signals whose default is to ignore or stop can't end us: use the shell's code.
    std::_Exit(128 + sig);
  }
  std::_Exit(ending.exit_code.value_or(1));
}

int cmd_run(int argc, char** argv) {
  Options options("gpualert run", k_run_help);
  // Options end at "--" or at the first word that is neither one of ours nor an
  // option's value: the rest is the command, untouched (it may hold options of its
  // own, or another "--").
  options.stop_at_first_argument();
  options.usage("gpualert run [OPTIONS] -- COMMAND [ARGS...]");
  RunOptions o;
  std::string timeout, kill_after = "30s", budget, notify_timeout, stall;
  int group_size = 0;
  bool no_line_buffer = false;
  options.value(
      "--name", o.name,
      "job name shown in reports (default: $SLURM_JOB_NAME, else the command's basename)");
  options
      .value("--log-dir", o.log_dir,
             "where run directories go (default: $GPUALERT_LOG_DIR, else ./gpualert-logs)")
      .value_name("DIR");
  options.values("--to", o.to, "recipient, repeatable (default: $GPUALERT_TO)").value_name("ADDR");
  options.values("--attach", o.attach, "artifact glob to attach, repeatable (relative to cwd)")
      .value_name("GLOB");
  options.value("--budget", budget, "total attachment budget, e.g. 10MiB (default 10MiB)")
      .check(check_size, "SIZE");
  options
      .value("--notify", o.notify_when,
             "when to notify; failure+warnings: also a success with caveats (default always)")
      .choices({"always", "failure", "failure+warnings", "never"});
  options
      .value("--timeout", timeout,
             "stop the job after DURATION (90s, 2h, 1h30m): SIGTERM, then SIGKILL")
      .check(check_duration, "DURATION");
  options
      .value("--kill-after", kill_after,
             "after --timeout's SIGTERM, SIGKILL if still running (default 30s)")
      .check(check_duration, "DURATION");
  options
      .value("--stall", stall,
             "one notice when the job printed nothing for DURATION (30m suits most "
             "training jobs; default off)")
      .check(check_duration, "DURATION");
  options
      .value("--stall-action", o.stall_action,
             "after --stall: notify (leave the job running, the default) or kill "
             "(SIGTERM, then SIGKILL after --kill-after)")
      .choices({"notify", "kill"});
  options.value("--rules", o.rules_file, "extra or overriding rules (see `gpualert rules`)")
      .value_name("FILE");
  options.flag("-q,--quiet", o.quiet, "no start/end lines from gpualert itself on stderr");
  options
      .value("--notify-timeout", notify_timeout,
             "most that delivering may take before the message stays in the outbox (default 60s)")
      .check(check_duration, "DURATION");
  options
      .value("--config", o.config_file,
             "configuration file (default: $GPUALERT_CONFIG, else XDG config dir)")
      .value_name("FILE");
  options
      .value("--group", o.group,
             "runs sharing KEY (each rank of a job) send one notice together; Slurm steps "
             "of several tasks do by themselves; none: each its own")
      .value_name("KEY");
  auto& group_size_opt =
      options
          .value("--group-size", group_size,
                 "how many runs share --group's KEY (default: $WORLD_SIZE, else those seen)")
          .value_name("N")
          .range(1, 1000000);
  options
      .value("--array", o.array_mode,
             "a Slurm array's notices: each failing member its own, or one digest")
      .choices({"each", "digest"});
  options.flag("--no-line-buffer", no_line_buffer,
               "don't ask the job's runtimes for line-buffered stdout (PYTHONUNBUFFERED, stdbuf)");
  options.footer(
      "Environment: GPUALERT_LOG_DIR, GPUALERT_TO, GPUALERT_FROM, GPUALERT_SMTP_URL,\n"
      "GPUALERT_SMTP_USER, GPUALERT_SMTP_PASSWORD_FILE, GPUALERT_SMTP_CA_FILE,\n"
      "GPUALERT_WEBHOOK_URL, GPUALERT_WEBHOOK_FORMAT, GPUALERT_NTFY_URL, GPUALERT_STATE_DIR, "
      "GPUALERT_CONFIG,\n"
      "GPUALERT_NOTIFY_TIMEOUT (see gpualert.toml(5); its stall and stall_action keys are\n"
      "--stall's and --stall-action's defaults).\n"
      "Exit status: exactly COMMAND's; 2 for usage errors before COMMAND runs.");
  if (auto done = options.parse(
          argc, argv, "run",
          "usage: gpualert run [OPTIONS] -- COMMAND [ARGS...]  (see gpualert run --help)")) {
    return *done;
  }
  o.command.assign(argv + options.rest(), argv + argc);
  if (group_size_opt) {
    o.group_size = group_size;
  }
  if (o.command.empty() || o.command[0].empty()) {
    std::fprintf(stderr,
                 "gpualert: error: run: no command given (usage: gpualert run [OPTIONS] -- COMMAND "
                 "[ARGS...])\n");
    return 2;
  }
  if (!timeout.empty()) {
    o.timeout = *util::parse_duration(timeout);
  }
  o.kill_after = *util::parse_duration(kill_after);
  if (!stall.empty()) {
    o.stall = *util::parse_duration(stall);
  }
  if (!budget.empty()) {
    o.budget = *util::parse_size(budget);
  }
  if (!notify_timeout.empty()) {
    o.notify_timeout = *util::parse_duration(notify_timeout);
  }
  o.line_buffer = !no_line_buffer;
  RunEnding ending = run_job(o);
  finish_like(ending);
}

}  // namespace cli
