#include "cli/run_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include "capture/feed.hpp"
#include "capture/job_terminal.hpp"
#include "capture/tee.hpp"
#include "classify/classifier.hpp"
#include "cli/group_notice.hpp"
#include "cli/job_comment.hpp"
#include "cli/job_env.hpp"
#include "cli/notifier.hpp"
#include "cli/online_diagnosis.hpp"
#include "cli/run_state.hpp"
#include "gpu/watch.hpp"
#include "host/evidence.hpp"
#include "host/scheduler.hpp"
#include "notify/policy.hpp"
#include "report/run_dir.hpp"
#include "report/run_report.hpp"
#include "supervise/spawn.hpp"
#include "supervise/supervisor.hpp"
#include "util/text.hpp"

extern char** environ;

namespace cli {

namespace {

// How long a notice kept while Slurm ends the job is held back in the outbox: longer
// than Slurm's grace between SIGTERM and SIGKILL (KillWait, 30 s by default) and our
// own end after it; then any flush sends it.
constexpr int64_t k_held_notice_s = 300;

using Clock = std::chrono::system_clock;

// The report of a job that Slurm is ending and that has not exited 2 s after Slurm's
// SIGTERM, in case Slurm's SIGKILL ends gpualert too: judged from the scheduler's
// facts and that SIGTERM, and saying that it is provisional. Nothing if the rules
// can't be loaded.
std::optional<report::RunReport> provisional_report(report::RunReport rep,
                                                    const std::vector<std::string>& scheduler,
                                                    double duration_s) {
  auto rules = classify::RuleSet::load_default(/*with_documentation=*/false);
  if (!rules) {
    return std::nullopt;
  }
  classify::HostEvidence facts;
  facts.scheduler_lines = scheduler;
  classify::Scanner scanner(std::move(*rules));
  scanner.finish();
  rep.verdict = scanner.verdict({std::nullopt, SIGTERM, false}, facts);
  note_requeue(*rep.verdict, scheduler);
  rep.state = "provisional";
  for (auto& e : rep.verdict->evidence) {
    if (e.source == "exit") {  // the job has not ended yet: say what is known
      e.text = "Slurm sent SIGTERM to end the job, which had not exited 2 s later";
    }
  }
  rep.scheduler_lines = facts.scheduler_lines;
  rep.ended = util::iso8601_local(std::time(nullptr));
  rep.duration_s = duration_s;
  rep.warnings.push_back(
      "provisional: Slurm was ending the job, which had not exited 2 s after Slurm's SIGTERM; "
      "this report was written in case Slurm's SIGKILL ended gpualert too (the job's log is "
      "complete up to then in output.log)");
  return rep;
}

void say(bool quiet, const std::string& line) {
  if (!quiet) {
    std::fprintf(stderr, "gpualert: %s\n", line.c_str());
    std::fflush(stderr);
  }
}

std::string basename_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string current_dir() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string(".");
}

// Where the run directory goes when the log directory can't be used: private
// places only (the log holds everything the job printed). The tmp one is refused
// when someone else made it first; `notes` says why a place was left out.
std::vector<std::string> fallback_bases(const notify::Config& config,
                                        std::vector<std::string>& notes) {
  std::vector<std::string> bases;
  std::string state = notify::state_dir(config);
  if (util::make_dirs(state, 0700)) {
    if (auto st = util::private_dir(state + "/runs"); st) {
      bases.push_back(state + "/runs");
    } else {
      notes.push_back(st.error());
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string t = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
  std::string mine = t + "/gpualert-" + std::to_string(::geteuid());
  if (auto st = util::private_dir(mine); st) {
    bases.push_back(mine + "/runs");
  } else {
    notes.push_back(st.error());
  }
  return bases;
}

// The signals stay blocked and go to the signalfd until the process exits: one
// that arrives after the job ended (a late kill, a Ctrl-C while the notice is sent)
// stays pending and is dropped with the process, instead of killing the wrapper
// with a status that is not the job's. Kept in static storage, never destroyed:
// `run` ends with _Exit (finish_like), which unblocks only a signal it re-raises.
void keep_signals_blocked(supervise::SignalIntake intake) {
  static std::optional<supervise::SignalIntake> s_kept;
  s_kept.emplace(std::move(intake));
}

// Without any run directory the job still runs, exactly as without gpualert.
RunEnding run_unlogged(const RunOptions& o, const std::vector<std::string>& env) {
  supervise::SpawnRequest req;
  req.argv = o.command;
  req.env = env;
  auto intake = supervise::SignalIntake::open();
  if (!intake) {
    std::fprintf(stderr, "gpualert: error: %s\n", intake.error().c_str());
    return RunEnding{2, std::nullopt};
  }
  req.default_signals = &intake->child_defaults();
  auto spawned = supervise::spawn(req);
  if (auto* f = std::get_if<supervise::SpawnFailure>(&spawned)) {
    std::fprintf(stderr, "gpualert: %s\n", f->message.c_str());
    return RunEnding{f->shell_code, std::nullopt};
  }
  util::UniqueFd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
  capture::LogSink sink(std::move(devnull), "/dev/null", 0, std::chrono::seconds(3600));
  capture::Tee tee(sink);
  auto result = supervise::supervise(std::get<supervise::Spawned>(spawned).pid, *intake, tee,
                                     supervise::SuperviseOptions{});
  keep_signals_blocked(std::move(*intake));
  return RunEnding{result.status.code, result.status.signal};
}

// The wrapper's own lines after the job: a stalled reader of our stderr (one
// that stopped reading the job's output too) gets at most a second per line.
void say_late(const std::string& text) {
  std::fflush(stderr);
  struct pollfd p {
    STDERR_FILENO, POLLOUT, 0
  };
  if (::poll(&p, 1, 1000) == 1 && (p.revents & POLLOUT) != 0) {
    (void)util::write_all(STDERR_FILENO, text);
  }
}

std::string footer(const supervise::SuperviseResult& r, const std::string& ended,
                   const capture::LogSink& sink) {
  std::string m(report::k_marker);
  std::string out = std::string(report::k_output_ends) + "\n";
  for (const auto& e : r.events) {
    out += m + e + "\n";
  }
  if (sink.first_error()) {
    out += m + "log incomplete: " + *sink.first_error() + "\n";
  }
  out += m + "ended: " + ended + "\n";
  out += m + "status: " + r.status.describe() + "\n";
  return out;
}

// What a member of a group whose notice another member sends says on stderr.
std::string group_note(const report::RunReport& rep) {
  if (!rep.job_group || rep.job_group->value("send", false)) {
    return "the array's digest goes out when its last member ends";
  }
  const auto& g = *rep.job_group;
  std::string noun = g.value("noun", "rank");
  if (g.value("role", "") == "covered") {
    std::string by = g.value("covered_by", "");
    return "the job's notice is " + noun + " " + (by.empty() ? "another's" : by + "'s") + " (" +
           g.value("dir", "") + ")";
  }
  return "the job's notice is left to the last " + noun + " to end (" + g.value("dir", "") + ")";
}

}  // namespace

RunEnding run_job(const RunOptions& o) {
  auto config_r = notify::load_config(o.config_file);
  if (!config_r) {
    std::fprintf(stderr, "gpualert: error: %s\n", config_r.error().c_str());
    return RunEnding{2, std::nullopt};
  }
  notify::Config config = std::move(*config_r);
  if (!o.to.empty()) {
    if (auto st = notify::check_recipients(o.to); !st) {
      std::fprintf(stderr, "gpualert: error: --to: %s\n", st.error().c_str());
      return RunEnding{2, std::nullopt};
    }
    config.to = o.to;
  }
  if (!o.notify_when.empty()) {
    config.notify_when = o.notify_when;
  }
  if (o.notify_timeout) {
    config.notify_timeout = *o.notify_timeout;
  }
  if (o.budget) {
    config.budget_bytes = *o.budget;
  }
  if (!o.group.empty()) {
    config.group = o.group;
  }
  if (o.group_size) {
    config.group_size = o.group_size;
  }
  if (!o.array_mode.empty()) {
    config.array_mode = o.array_mode;
  }

  // A user's rules file is checked before anything runs (a broken one is a usage
  // error); the embedded default is loaded right after the spawn, while the job starts.
  std::optional<classify::RuleSet> preloaded;
  std::string rules_file = o.rules_file.empty() ? config.rules_file : o.rules_file;
  if (!rules_file.empty()) {
    auto rules = classify::load_rules({rules_file});
    if (!rules) {
      std::fprintf(stderr, "gpualert: error: %s\n", rules.error().c_str());
      return RunEnding{2, std::nullopt};
    }
    preloaded = std::move(*rules);
  }
  // Not destroyed here: `run` ends with _Exit right after run_job returns
  // (finish_like), so the compiled rules and the scanner are left for the kernel
  // to take back, instead of being freed one regex at a time (~0.06 ms per job).
  static std::optional<OnlineDiagnosis> s_diagnosis;
  OnlineDiagnosis& diagnosis = s_diagnosis.emplace(std::move(preloaded));

  report::RunReport rep;
  rep.argv = o.command;
  rep.command = util::shell_join(o.command);
  rep.name = o.name.empty() ? default_job_name(environ, basename_of(o.command[0])) : o.name;
  rep.cwd = current_dir();
  rep.host = util::hostname();
  rep.user = util::username();
  std::time_t start_t = std::time(nullptr);
  auto mono_start = std::chrono::steady_clock::now();
  rep.started = util::iso8601_local(start_t);
  rep.env = report::relevant_environment(environ);
  // Before the header: it records the group's key for a sweep.
  RunGroup group = find_group(config, rep, ::getpid());

  std::string log_dir = o.log_dir;
  if (log_dir.empty()) {
    log_dir = notify::log_dir(config);
  }
  report::HeaderFacts header{rep.name, rep.argv,   rep.cwd,
                             rep.host, rep.user,   rep.started,
                             rep.env,  ::getpid(), report::current_boot_id()};
  std::vector<std::string> refused;
  report::RunDirRequest req{log_dir, {}, rep.name, rep.host, start_t};
  // The private fallbacks are looked at only when the log directory fails.
  auto run_dir = report::create_run_dir(req, header);
  if (!run_dir) {
    req.fallback_bases = fallback_bases(config, refused);
    run_dir = report::create_run_dir(req, header);
    for (const auto& why : refused) {
      std::fprintf(stderr, "gpualert: WARNING: %s\n", why.c_str());
    }
  }
  // Our stdout on a terminal: the job's stdout is a pty (see below), on which C
  // stdio and Python line-buffer by themselves, so the job needs no hints: no
  // stdbuf preload, which every descendant would inherit (`awk > file` inside
  // the job ran 7x slower for it).
  std::optional<capture::JobTerminal> pty = capture::JobTerminal::open(STDOUT_FILENO);
  std::vector<std::string> env =
      job_environment(environ, o.line_buffer && !pty, run_dir ? run_dir->path : "");
  if (!run_dir) {
    std::fprintf(stderr, "gpualert: WARNING: %s; running the job without a log or report\n",
                 run_dir.error().c_str());
    return run_unlogged(o, env);
  }
  rep.run_dir = run_dir->path;
  rep.log_path = run_dir->log_path;
  join_group(group, rep);  // a small file beside the run directory just made
  if (run_dir->fallback_reason) {
    rep.log_fallback = *run_dir->fallback_reason;
    rep.warnings.push_back(*run_dir->fallback_reason + "; the log is in " + run_dir->path);
    std::fprintf(stderr, "gpualert: WARNING: %s; logging to %s instead\n",
                 run_dir->fallback_reason->c_str(), run_dir->log_path.c_str());
  }
  say(o.quiet, "logging to " + run_dir->log_path);

  auto intake = supervise::SignalIntake::open();
  if (!intake) {
    std::fprintf(stderr, "gpualert: error: %s\n", intake.error().c_str());
    return RunEnding{2, std::nullopt};
  }
  // The memory cgroup's OOM counter before the job can use any memory.
  auto watch = host::EvidenceWatch::start();
  capture::LogSink sink(std::move(run_dir->log_fd), run_dir->log_path, run_dir->header_bytes,
                        std::chrono::seconds(1));
  // Diagnosis reads what the job printed from memory, as it is copied (not the log
  // file back), so a disk that refused it does not blind the rules. The header is
  // skipped, not read: it is the wrapper's, and later lines keep their log line numbers.
  capture::OutputFeed feed(
      [&diagnosis](std::string_view chunk) { diagnosis.feed(chunk); },
      [&diagnosis](uint64_t bytes, uint64_t newlines) { diagnosis.skip(bytes, newlines); });
  capture::Tee tee(sink, &feed);

  // stdout and stderr to the same open file (`> slurm.out 2>&1`, or both the same
  // terminal): one pipe, so the job's lines keep the order it wrote them in, in the
  // log and there; different places: one pipe each. Our stdout on a terminal: the
  // job's stdout (and stderr, if it goes there too) is a pty, so that it sees a tty.
  const bool one_pipe = capture::same_destination(STDOUT_FILENO, STDERR_FILENO);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((!pty && ::pipe2(out_pipe, O_CLOEXEC) != 0) ||
      (!one_pipe && ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    std::fprintf(stderr, "gpualert: error: pipe: %s\n", std::strerror(errno));
    return RunEnding{2, std::nullopt};
  }
  util::UniqueFd out_w(out_pipe[1]), err_w(err_pipe[1]);
  const int job_out = pty ? pty->slave() : out_w.get();
  tee.add(pty ? pty->take_master() : util::UniqueFd(out_pipe[0]), STDOUT_FILENO);
  if (!one_pipe) {
    tee.add(util::UniqueFd(err_pipe[0]), STDERR_FILENO);
  }

  // Interactive: the job stays in the terminal's foreground group with us, so a
  // pdb prompt can read the terminal and Ctrl-Z / fg stop and resume both.
  bool interactive = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  rep.interactive = interactive;  // a Ctrl-C there is the person's own (notify/policy.hpp)
  supervise::SuperviseOptions sopt;
  sopt.mode = interactive ? supervise::JobControl::shared_group : supervise::JobControl::own_group;
  sopt.slurm_step = supervise::Forwarding::step_from_environment();
  sopt.timeout = o.timeout;
  sopt.kill_after = o.kill_after;

  supervise::SpawnRequest sreq;
  sreq.argv = o.command;
  sreq.env = std::move(env);
  sreq.stdout_fd = job_out;
  sreq.stderr_fd = one_pipe ? job_out : err_w.get();
  sreq.own_process_group = !interactive;
  sreq.default_signals = &intake->child_defaults();
  auto spawned = supervise::spawn(sreq);
  out_w.reset();
  err_w.reset();
  if (pty) {
    pty->close_slave();
    sopt.extra_fd = pty->winch_fd();
    sopt.on_extra = [&pty] { pty->on_winch(); };
  }
  // The kernel log is read from here on (the job is still in its exec), so that
  // opening /dev/kmsg does not stand between the header's sync and the job.
  auto* started = std::get_if<supervise::Spawned>(&spawned);
  watch.open_kernel_log(started ? started->pid : -1);
  gpu::Watch gpus = started ? gpu::start(rep.run_dir, started->pid, config.gpu_sample_seconds)
                            : gpu::Watch{-1, rep.run_dir, "the job did not start"};
  sopt.watch_fd = watch.kernel_log_fd();
  sopt.on_watch_readable = [&watch] { watch.on_readable(); };
  // The rules are loaded now, while the job starts on another CPU (its first output
  // waits in the pipe meanwhile); not before the spawn, which they would delay.
  diagnosis.prepare();
  diagnosis.skip(run_dir->header_bytes, run_dir->header_lines);
  // A job that goes on gets the sync thread and the diagnosis thread; one that
  // ends within sopt.helpers_after never does (its output is diagnosed at the end),
  // and its end needs no wake-up between threads (see SuperviseOptions::start_helpers).
  // The journal entry of a run in progress (for a sweep when the wrapper dies with the
  // job) is made here too: a job over within 50 ms pays nothing for it, and one killed
  // that soon is still found by a sweep of its log directory.
  std::string journal;
  sopt.start_helpers = [&sink, &feed, &journal, &config, &rep, &o] {
    sink.start_syncing();
    feed.start();
    journal = journal_add(config, rep.run_dir);
    sweep_journal_in_background(config, journal, o.config_file);
  };

  // What Slurm said when it began ending the job, asked once (see below and the end).
  std::vector<std::string> scheduler_lines;
  bool scheduler_asked = false;
  auto ask_scheduler = [&] {
    if (!scheduler_asked) {
      scheduler_asked = true;
      scheduler_lines = scheduler_evidence(rep.env, std::chrono::seconds(2));
    }
  };
  // Slurm is ending the job, which has not exited 2 s after its SIGTERM: Slurm's
  // SIGKILL may end gpualert with it. Keep a provisional report and a notice held
  // back in the outbox (sent by a later flush if gpualert dies; withdrawn if not).
  std::vector<std::string> held;
  // On a thread of its own: asking Slurm (up to 2 s) and queueing the notice (up to
  // the notify timeout) must not stop the loop from draining the job's output and
  // passing signals on during Slurm's grace period, while the job checkpoints.
  std::thread keeper;
  auto keep = [&] {
    ask_scheduler();
    auto provisional = provisional_report(
        rep, scheduler_lines,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - mono_start).count());
    auto write = [&] {
      return util::write_file_atomic(rep.run_dir + "/report.json", report::to_text(*provisional),
                                     0644, util::Durability::replace_only);
    };
    if (!provisional || !write()) {
      return;
    }
    // One held notice for a job's ranks (or a digest array), not one each.
    if (notify::should_notify(config, *provisional) && may_hold_notice(group, rep)) {
      held = notify_via_helper(rep.run_dir, o.attach, config.budget_bytes, o.config_file, config,
                               k_held_notice_s)
                 .ids;
      // A sweep that finds this run's wrapper gone replaces the held notice.
      provisional->held_notices = held;
      (void)write();
    }
  };
  sopt.keep_notice = [&] { keeper = std::thread(keep); };

  supervise::SuperviseResult result;
  if (auto* f = std::get_if<supervise::SpawnFailure>(&spawned)) {
    std::fprintf(stderr, "gpualert: %s\n", f->message.c_str());
    sink.append_wrapper_lines(std::string(report::k_marker) + "could not start the job: " +
                              util::printable_line(f->message) + "\n");
    result.status = supervise::ExitStatus::exited(f->shell_code);
    result.events.push_back("could not start the job: " + f->message);
    rep.warnings.push_back(f->message);
  } else {
    flush_outbox_in_background(config, o.config_file);
    result = supervise::supervise(std::get<supervise::Spawned>(spawned).pid, *intake, tee, sopt);
    if (keeper.joinable()) {
      keeper.join();  // bounded: scontrol's and the notifier's own deadlines
    }
  }
  auto end = Clock::now();
  double duration =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - mono_start).count();
  rep.ended = util::iso8601_local(Clock::to_time_t(end));
  rep.duration_s = duration;
  for (auto& stream : tee.streams()) {
    stream.pipe.reset();  // close our read ends: late writers get EPIPE, not a hang
  }
  sink.append_wrapper_lines(footer(result, rep.ended, sink));
  sink.finish_writing();  // a sync thread makes its last fdatasync beside the diagnosis below
  keep_signals_blocked(std::move(*intake));
  watch.finish();
  feed.finish();

  rep.exit_code = result.status.code;
  if (result.status.signal) {
    rep.signal = supervise::signal_name(*result.status.signal);
  }
  rep.core_dumped = result.status.core_dumped;
  rep.wrapper_timeout = result.wrapper_timeout;
  rep.log_bytes = sink.job_bytes();
  rep.sources = watch.sources();
  if (rep.env.count("SLURM_JOB_ID") != 0) {
    rep.cgroup_memory_peak = watch.memory_peak_bytes();  // the job's own cgroup under Slurm
  }
  gpu::finish(gpus, rep);  // its readings at the end, Xids and ECC counters into the report
  if (sink.first_error()) {
    rep.warnings.push_back("the log is incomplete: " + *sink.first_error() + " (" +
                           std::to_string(sink.lost_bytes()) + " bytes not written)");
  }
  if (feed.dropped() > 0) {
    rep.warnings.push_back("diagnosis did not read " + util::human_size(feed.dropped()) +
                           " in the middle of the log: the job printed faster than the rules "
                           "could read, and the copy is not held for them (`gpualert classify` "
                           "reads all of it)");
  }
  for (const auto& n : tee.notes()) {
    rep.warnings.push_back(n);
  }
  std::string unshown;
  if (tee.unshown() > 0) {
    unshown = util::human_size(tee.unshown()) +
              " of the job's output could not be shown: the reader of gpualert's output stopped "
              "reading, and the log is not held back for it (output.log has all of it)";
    rep.warnings.push_back(unshown);
  }

  classify::ExitInfo exit_info{result.status.code, result.status.signal, result.wrapper_timeout};
  classify::HostEvidence host_ev;
  host_ev.kernel_lines = watch.kernel_lines();
  host_ev.cgroup_oom_kills = watch.cgroup_oom_kills();
  host_ev.kernel_log_read = watch.kernel_log_read();
  host_ev.gpu_lines = rep.gpu_lines = gpu::xid_lines(rep);
  if (result.scheduler_ended) {
    // Slurm ended the job and printed why in its own output file, not here: ask it.
    ask_scheduler();
    host_ev.scheduler_lines = scheduler_lines;
    rep.scheduler_lines = scheduler_lines;
  }
  rep.cgroup_oom_kills = host_ev.cgroup_oom_kills;
  rep.kernel_log_read = host_ev.kernel_log_read;
  for (const auto& [k, v] : rep.env) {
    if (k.rfind("SLURM_", 0) == 0 || k.rfind("LSB_", 0) == 0 || k.rfind("PBS_", 0) == 0) {
      host_ev.scheduler[k] = v;
    }
  }
  rep.verdict = diagnosis.verdict(exit_info, host_ev);
  note_requeue(*rep.verdict, rep.scheduler_lines);
  if (!diagnosis.error().empty()) {
    rep.warnings.push_back(diagnosis.error());
  }

  if (!host_ev.kernel_lines.empty()) {
    std::string text;
    for (const auto& l : host_ev.kernel_lines) {
      text += l + "\n";
    }
    if (auto st = util::write_file_atomic(rep.run_dir + "/kernel.log", text); !st) {
      rep.warnings.push_back("kernel.log: " + st.error());
    }
  }
  // One notice per job: the other ranks' endings so far go into this report.
  const bool group_sends = group_ending(group, rep);
  std::string report_path = rep.run_dir + "/report.json";
  std::string report_text = report::to_text(rep);
  // report.json is derived from output.log (which is synced): `gpualert classify`
  // gives it again, so it is replaced atomically but not fsynced, off the job's path.
  if (auto st =
          util::write_file_atomic(report_path, report_text, 0644, util::Durability::replace_only);
      !st) {
    // A full or broken log device must not lose the verdict too: keep it in the state dir.
    std::string fallback_dir = notify::state_dir(config) + "/reports";
    std::string fallback =
        fallback_dir + "/" +
        util::safe_file_component(rep.run_dir.substr(rep.run_dir.find_last_of('/') + 1), 200) +
        ".json";
    std::fprintf(stderr, "gpualert: WARNING: could not write %s: %s\n", report_path.c_str(),
                 st.error().c_str());
    if (util::make_dirs(fallback_dir, 0700) && util::write_file_atomic(fallback, report_text)) {
      std::fprintf(stderr, "gpualert: the report is in %s instead\n", fallback.c_str());
      report_path = fallback;
    }
  }
  journal_remove(journal);  // the final report is written (or kept in the state dir)
  if (sink.first_error()) {
    std::fprintf(stderr, "gpualert: WARNING: the log is incomplete: %s (%llu bytes not written)\n",
                 sink.first_error()->c_str(), static_cast<unsigned long long>(sink.lost_bytes()));
  }

  sink.close();  // the log is on disk before the report is read or sent (synced here if short)
  if (auto err = sink.sync_error()) {
    // The durability promise is broken: say so in the report the notice is built from.
    rep.warnings.push_back("the log may not be on disk: " + *err);
    say_late("gpualert: WARNING: the log may not be on disk: " + *err + "\n");
    if (auto st = util::write_file_atomic(report_path, report::to_text(rep), 0644,
                                          util::Durability::replace_only);
        !st) {
      say_late("gpualert: WARNING: could not write " + report_path + ": " + st.error() + "\n");
    }
  }
  if (!unshown.empty()) {
    say_late("gpualert: WARNING: " + unshown + "\n");
  }
  host::CommentWrite comment = start_job_comment(rep, config);  // waited for on return, 2 s at most
  std::string notice;
  const bool notify_this = group_sends && notice_wanted(config, rep);
  if (!held.empty() && !notify_this) {
    withdraw_held_notice(held, o.config_file, config);  // this ending needs none
  }
  if (!group_sends) {
    notice = group_note(rep);
  }
  if (notify_this) {
    // The final notice replaces the held one, if one was kept.
    NotifyOutcome outcome = notify_via_helper(
        rep.run_dir, o.attach, config.budget_bytes, o.config_file, config, 0, held,
        report_path == rep.run_dir + "/report.json" ? std::string() : report_path);
    if (outcome.delivered) {
      notice = "notified " + outcome.where;
    } else {
      notice = outcome.detail.empty() ? "notification kept in " + outcome.where : outcome.detail;
    }
  }
  group_notice_done(group, rep);  // delivered, in the outbox, or not asked for
  std::string verdict = rep.verdict ? rep.verdict->label : "unknown";
  if (!o.quiet) {
    say_late("gpualert: " + verdict + " (" + result.status.describe() + " after " +
             util::human_duration(duration) + "); report: " + report_path +
             (notice.empty() ? "" : "; " + notice) + "\n");
  }
  return RunEnding{result.status.code, result.status.signal};
}

}  // namespace cli
