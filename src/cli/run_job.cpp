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
  model::HostEvidence facts;
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

// The stall notice (--stall), from a thread of its own while the loop goes on: the
// run's facts so far go to stall.json beside report.json, and gpualert-notify builds
// the notice from it (the log's tail, the GPUs' last readings) with its own deadline.
// Returns what became of it, for report.json.
std::string send_stall_notice(const report::RunReport& stalled, const config::Config& config,
                              const std::string& config_file) {
  const std::string path = stalled.run_dir + "/stall.json";
  if (auto st = report::save(path, stalled); !st) {
    return "not sent: " + st.error();
  }
  if (config.notify_when == "never") {
    return "not sent (notify = never)";
  }
  NotifyOutcome out = notify_via_helper(stalled.run_dir, {}, 0, config_file, config, 0, {}, path);
  if (out.delivered) {
    return "sent to " + out.where;
  }
  if (out.queued && !config::has_channel(config)) {
    return "kept in the outbox (no SMTP, webhook or ntfy configured)";
  }
  return out.detail.empty() ? "kept in " + out.where : out.detail;
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
std::vector<std::string> fallback_bases(const config::Config& config,
                                        std::vector<std::string>& notes) {
  std::vector<std::string> bases;
  std::string state = config::state_dir(config);
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
// One `gpualert run`, as the steps run_job() takes in order. The members are what one
// step hands the next, declared in the order they come to exist, so that they are
// also let go of in the reverse order.
class JobRun {
 public:
  explicit JobRun(const RunOptions& o) : m_o(o) {}

  std::optional<RunEnding> apply_options();
  std::optional<RunEnding> load_rules();
  void describe_job();
  std::optional<RunEnding> make_run_dir();
  std::optional<RunEnding> set_up_capture();
  std::optional<RunEnding> open_pipes();
  void spawn();
  void start_watching();
  void arm_supervision();
  void supervise();
  void close_output();
  void gather_facts();
  void diagnose();
  void write_report();
  void close_log();
  RunEnding announce();

 private:
  double seconds_since_start() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - m_mono_start).count();
  }
  void ask_scheduler();
  void keep_provisional();
  void start_stall_notice();

  const RunOptions& m_o;
  config::Config m_config;
  OnlineDiagnosis* m_diagnosis = nullptr;
  report::RunReport m_rep;
  std::time_t m_start_t = 0;
  std::chrono::steady_clock::time_point m_mono_start;
  std::optional<util::Result<report::RunDir>> m_run_dir;
  std::optional<capture::JobTerminal> m_pty;
  std::vector<std::string> m_env;
  std::optional<supervise::SignalIntake> m_intake;
  std::optional<host::EvidenceWatch> m_watch;
  std::optional<capture::LogSink> m_sink;
  std::optional<capture::OutputFeed> m_feed;
  std::optional<capture::Tee> m_tee;
  bool m_one_pipe = false;
  util::UniqueFd m_out_w, m_err_w;
  int m_job_out = -1;
  supervise::SuperviseOptions m_sopt;
  std::variant<supervise::Spawned, supervise::SpawnFailure> m_spawned;
  gpu::Watch m_gpus;
  std::string m_journal;
  RunGroup m_group;           // the job's ranks agreeing on one notice (cli/group_notice.hpp)
  bool m_group_sends = true;  // this run sends the job's notice
  // What Slurm said when it began ending the job, asked once (keep_provisional and
  // gather_facts).
  std::vector<std::string> m_scheduler_lines;
  bool m_scheduler_asked = false;
  std::vector<std::string> m_held;  // the ids of a notice held back (keep_provisional)
  std::thread m_keeper;
  std::thread m_staller;
  std::string m_stall_notice;  // written by the staller, read after the join
  supervise::SuperviseResult m_result;
  double m_duration = 0;
  std::string m_unshown;
  model::HostEvidence m_host_ev;
  // report.json's file, created while the job starts (util::AtomicFile).
  std::optional<util::AtomicFile> m_report_file;
  std::string m_report_path;
};

// Flags over the config file (and its environment); a bad combination is a usage
// error before anything runs.
std::optional<RunEnding> JobRun::apply_options() {
  auto config_r = config::load_config(m_o.config_file);
  if (!config_r) {
    std::fprintf(stderr, "gpualert: error: %s\n", config_r.error().c_str());
    return RunEnding{2, std::nullopt};
  }
  m_config = std::move(*config_r);
  if (!m_o.to.empty()) {
    if (auto st = config::check_recipients(m_o.to); !st) {
      std::fprintf(stderr, "gpualert: error: --to: %s\n", st.error().c_str());
      return RunEnding{2, std::nullopt};
    }
    m_config.to = m_o.to;
  }
  if (!m_o.notify_when.empty()) {
    m_config.notify_when = m_o.notify_when;
  }
  if (m_o.notify_timeout) {
    m_config.notify_timeout = *m_o.notify_timeout;
  }
  if (m_o.budget) {
    m_config.budget_bytes = *m_o.budget;
  }
  if (!m_o.group.empty()) {
    m_config.group = m_o.group;
  }
  if (m_o.group_size) {
    m_config.group_size = m_o.group_size;
  }
  if (!m_o.array_mode.empty()) {
    m_config.array_mode = m_o.array_mode;
  }
  if (m_o.stall) {
    m_config.stall = *m_o.stall;
  }
  if (!m_o.stall_action.empty()) {
    if (m_o.stall_action == "kill" && !m_config.stall) {
      std::fprintf(stderr,
                   "gpualert: error: --stall-action kill needs --stall DURATION (or stall in "
                   "the config file)\n");
      return RunEnding{2, std::nullopt};
    }
    m_config.stall_action = m_o.stall_action;
  }
  return std::nullopt;
}

// A user's rules file is checked before anything runs (a broken one is a usage
// error); the embedded default is loaded right after the spawn, while the job starts.
std::optional<RunEnding> JobRun::load_rules() {
  std::optional<classify::RuleSet> preloaded;
  std::string rules_file = m_o.rules_file.empty() ? m_config.rules_file : m_o.rules_file;
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
  m_diagnosis = &s_diagnosis.emplace(std::move(preloaded));
  return std::nullopt;
}

// The job's facts for the header and the report, and its start: the clocks start here,
// just before the run directory is made.
void JobRun::describe_job() {
  m_rep.argv = m_o.command;
  m_rep.command = util::shell_join(m_o.command);
  m_rep.name = m_o.name.empty() ? default_job_name(environ, basename_of(m_o.command[0])) : m_o.name;
  m_rep.cwd = current_dir();
  m_rep.host = util::hostname();
  m_rep.user = util::username();
  m_start_t = std::time(nullptr);
  m_mono_start = std::chrono::steady_clock::now();
  m_rep.started = util::iso8601_local(m_start_t);
  m_rep.env = report::relevant_environment(environ);
  // Before the header: it records the group's key for a sweep.
  m_group = find_group(m_config, m_rep, ::getpid());
}

// The run directory and the header, on disk (synced) before the job starts; the job's
// environment names it. Without any run directory the job still runs, unlogged.
std::optional<RunEnding> JobRun::make_run_dir() {
  std::string log_dir = m_o.log_dir;
  if (log_dir.empty()) {
    log_dir = config::log_dir(m_config);
  }
  report::HeaderFacts header{m_rep.name, m_rep.argv, m_rep.cwd,
                             m_rep.host, m_rep.user, m_rep.started,
                             m_rep.env,  ::getpid(), report::current_boot_id()};
  std::vector<std::string> refused;
  report::RunDirRequest req{log_dir, {}, m_rep.name, m_rep.host, m_start_t};
  // The private fallbacks are looked at only when the log directory fails.
  m_run_dir = report::create_run_dir(req, header);
  auto& run_dir = *m_run_dir;
  if (!run_dir) {
    req.fallback_bases = fallback_bases(m_config, refused);
    run_dir = report::create_run_dir(req, header);
    for (const auto& why : refused) {
      std::fprintf(stderr, "gpualert: WARNING: %s\n", why.c_str());
    }
  }
  // Our stdout on a terminal: the job's stdout is a pty (see below), on which C
  // stdio and Python line-buffer by themselves, so the job needs no hints: no
  // stdbuf preload, which every descendant would inherit (`awk > file` inside
  // the job ran 7x slower for it).
  m_pty = capture::JobTerminal::open(STDOUT_FILENO);
  m_env = job_environment(environ, m_o.line_buffer && !m_pty, run_dir ? run_dir->path : "");
  if (!run_dir) {
    std::fprintf(stderr, "gpualert: WARNING: %s; running the job without a log or report\n",
                 run_dir.error().c_str());
    return run_unlogged(m_o, m_env);
  }
  m_rep.run_dir = run_dir->path;
  m_rep.log_path = run_dir->log_path;
  join_group(m_group, m_rep);  // a small file beside the run directory just made
  if (run_dir->fallback_reason) {
    m_rep.log_fallback = *run_dir->fallback_reason;
    m_rep.warnings.push_back(*run_dir->fallback_reason + "; the log is in " + run_dir->path);
    std::fprintf(stderr, "gpualert: WARNING: %s; logging to %s instead\n",
                 run_dir->fallback_reason->c_str(), run_dir->log_path.c_str());
  }
  say(m_o.quiet, "logging to " + run_dir->log_path);
  return std::nullopt;
}

// Signals blocked, the host's counters read, and the log's writer and the diagnosis's
// feed set up, all before the job exists.
std::optional<RunEnding> JobRun::set_up_capture() {
  auto intake = supervise::SignalIntake::open();
  if (!intake) {
    std::fprintf(stderr, "gpualert: error: %s\n", intake.error().c_str());
    return RunEnding{2, std::nullopt};
  }
  m_intake.emplace(std::move(*intake));
  // The memory cgroup's OOM counter before the job can use any memory.
  m_watch.emplace(host::EvidenceWatch::start());
  auto& run_dir = **m_run_dir;
  m_sink.emplace(std::move(run_dir.log_fd), run_dir.log_path, run_dir.header_bytes,
                 std::chrono::seconds(1));
  // Diagnosis reads what the job printed from memory, as it is copied (not the log
  // file back), so a disk that refused it does not blind the rules. The header is
  // skipped, not read: it is the wrapper's, and later lines keep their log line numbers.
  OnlineDiagnosis& diagnosis = *m_diagnosis;
  m_feed.emplace(
      [&diagnosis](std::string_view chunk) { diagnosis.feed(chunk); },
      [&diagnosis](uint64_t bytes, uint64_t newlines) { diagnosis.skip(bytes, newlines); });
  m_tee.emplace(*m_sink, &*m_feed);
  return std::nullopt;
}

// stdout and stderr to the same open file (`> slurm.out 2>&1`, or both the same
// terminal): one pipe, so the job's lines keep the order it wrote them in, in the
// log and there; different places: one pipe each. Our stdout on a terminal: the
// job's stdout (and stderr, if it goes there too) is a pty, so that it sees a tty.
std::optional<RunEnding> JobRun::open_pipes() {
  m_one_pipe = capture::same_destination(STDOUT_FILENO, STDERR_FILENO);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((!m_pty && ::pipe2(out_pipe, O_CLOEXEC) != 0) ||
      (!m_one_pipe && ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    std::fprintf(stderr, "gpualert: error: pipe: %s\n", std::strerror(errno));
    return RunEnding{2, std::nullopt};
  }
  m_out_w = util::UniqueFd(out_pipe[1]);
  m_err_w = util::UniqueFd(err_pipe[1]);
  m_job_out = m_pty ? m_pty->slave() : m_out_w.get();
  m_tee->add(m_pty ? m_pty->take_master() : util::UniqueFd(out_pipe[0]), STDOUT_FILENO);
  if (!m_one_pipe) {
    m_tee->add(util::UniqueFd(err_pipe[0]), STDERR_FILENO);
  }
  return std::nullopt;
}

// The job starts: nothing heavy comes before this (the rules, the kernel log and the
// GPU helper wait until it is on its way).
void JobRun::spawn() {
  // Interactive: the job stays in the terminal's foreground group with us, so a
  // pdb prompt can read the terminal and Ctrl-Z / fg stop and resume both.
  bool interactive = ::isatty(STDIN_FILENO) && ::tcgetpgrp(STDIN_FILENO) == ::getpgrp();
  m_rep.interactive = interactive;  // a Ctrl-C there is the person's own (notify/policy.hpp)
  m_sopt.mode =
      interactive ? supervise::JobControl::shared_group : supervise::JobControl::own_group;
  m_sopt.slurm_step = supervise::Forwarding::step_from_environment();
  m_sopt.timeout = m_o.timeout;
  m_sopt.kill_after = m_o.kill_after;
  m_sopt.stall = m_config.stall;
  m_sopt.stall_kill = m_config.stall_action == "kill";

  supervise::SpawnRequest sreq;
  sreq.argv = m_o.command;
  sreq.env = std::move(m_env);
  sreq.stdout_fd = m_job_out;
  sreq.stderr_fd = m_one_pipe ? m_job_out : m_err_w.get();
  sreq.own_process_group = !interactive;
  sreq.default_signals = &m_intake->child_defaults();
  m_spawned = supervise::spawn(sreq);
  m_out_w.reset();
  m_err_w.reset();
  if (m_pty) {
    m_pty->close_slave();
    m_sopt.extra_fd = m_pty->winch_fd();
    m_sopt.on_extra = [this] { m_pty->on_winch(); };
  }
}

// What follows the job while it runs, started once it is on its way.
void JobRun::start_watching() {
  // The kernel log is read from here on (the job is still in its exec), so that
  // opening /dev/kmsg does not stand between the header's sync and the job.
  auto* started = std::get_if<supervise::Spawned>(&m_spawned);
  m_watch->open_kernel_log(started ? started->pid : -1);
  m_gpus = started ? gpu::start(m_rep.run_dir, started->pid, m_config.gpu_sample_seconds)
                   : gpu::Watch{-1, m_rep.run_dir, "the job did not start"};
  m_sopt.watch_fd = m_watch->kernel_log_fd();
  m_sopt.on_watch_readable = [this] { m_watch->on_readable(); };
  // The rules are loaded now, while the job starts on another CPU (its first output
  // waits in the pipe meanwhile); not before the spawn, which they would delay.
  m_diagnosis->prepare();
  m_diagnosis->skip((*m_run_dir)->header_bytes, (*m_run_dir)->header_lines);
  // report.json's new inode now too, beside the job's start rather than after its end.
  if (auto f = util::AtomicFile::create(m_rep.run_dir + "/report.json")) {
    m_report_file = std::move(*f);
  }
}

// What the supervision loop starts or calls while the job runs: the helpers of a job
// that goes on, the provisional report while Slurm ends it, the stall notice.
void JobRun::arm_supervision() {
  // A job that goes on gets the sync thread and the diagnosis thread; one that
  // ends within sopt.helpers_after never does (its output is diagnosed at the end),
  // and its end needs no wake-up between threads (see SuperviseOptions::start_helpers).
  // The journal entry of a run in progress (for a sweep when the wrapper dies with the
  // job) is made here too: a job over within 50 ms pays nothing for it, and one killed
  // that soon is still found by a sweep of its log directory.
  m_sopt.start_helpers = [this] {
    m_sink->start_syncing();
    m_feed->start();
    m_journal = journal_add(m_config, m_rep.run_dir);
    sweep_journal_in_background(m_config, m_journal, m_o.config_file);
  };
  // On a thread of its own: asking Slurm (up to 2 s) and queueing the notice (up to
  // the notify timeout) must not stop the loop from draining the job's output and
  // passing signals on during Slurm's grace period, while the job checkpoints.
  m_sopt.keep_notice = [this] { m_keeper = std::thread([this] { keep_provisional(); }); };
  m_sopt.on_stall = [this] { start_stall_notice(); };
}

void JobRun::ask_scheduler() {
  if (!m_scheduler_asked) {
    m_scheduler_asked = true;
    m_scheduler_lines = scheduler_evidence(m_rep.env, std::chrono::seconds(2));
  }
}

// Slurm is ending the job, which has not exited 2 s after its SIGTERM: Slurm's
// SIGKILL may end gpualert with it. Keep a provisional report and a notice held
// back in the outbox (sent by a later flush if gpualert dies; withdrawn if not).
void JobRun::keep_provisional() {
  ask_scheduler();
  auto provisional = provisional_report(m_rep, m_scheduler_lines, seconds_since_start());
  auto write = [&] { return report::save(m_rep.run_dir + "/report.json", *provisional); };
  if (!provisional || !write()) {
    return;
  }
  // One held notice for a job's ranks (or a digest array), not one each.
  if (notify::should_notify(m_config, *provisional) && may_hold_notice(m_group, m_rep)) {
    m_held = notify_via_helper(m_rep.run_dir, m_o.attach, m_config.budget_bytes, m_o.config_file,
                               m_config, k_held_notice_s)
                 .ids;
    // A sweep that finds this run's wrapper gone replaces the held notice.
    provisional->held_notices = m_held;
    (void)write();
  }
}

// --stall: the notice is built and sent on its own thread (the loop never waits for
// it); rep is not written while the loop runs, so the copy taken here is consistent.
void JobRun::start_stall_notice() {
  report::RunReport now = m_rep;
  now.state = "stalled";
  now.duration_s = seconds_since_start();
  report::StallFacts facts;
  facts.after_s = std::chrono::duration<double>(*m_config.stall).count();
  facts.action = m_config.stall_action;
  facts.at_s = now.duration_s;
  now.stall = facts;
  m_staller = std::thread([this, now = std::move(now)] {
    m_stall_notice = send_stall_notice(now, m_config, m_o.config_file);
  });
}

// The job's life, from the supervision loop (or its failed start) to its reaping;
// the threads it started while the job ran are joined before the ending is judged.
void JobRun::supervise() {
  if (auto* f = std::get_if<supervise::SpawnFailure>(&m_spawned)) {
    std::fprintf(stderr, "gpualert: %s\n", f->message.c_str());
    m_sink->append_wrapper_lines(std::string(report::k_marker) + "could not start the job: " +
                                 util::printable_line(f->message) + "\n");
    m_result.status = supervise::ExitStatus::exited(f->shell_code);
    m_result.events.push_back("could not start the job: " + f->message);
    m_rep.warnings.push_back(f->message);
  } else {
    flush_outbox_in_background(m_config, m_o.config_file);
    m_result = supervise::supervise(std::get<supervise::Spawned>(m_spawned).pid, *m_intake, *m_tee,
                                    m_sopt);
    if (m_keeper.joinable()) {
      m_keeper.join();  // bounded: scontrol's and the notifier's own deadlines
    }
    if (m_staller.joinable()) {
      m_staller.join();  // bounded by the notifier's deadline; the stall notice goes out first
    }
  }
}

// The job is over: its end time, the footer after its last output, and the watches
// and the feed stopped, so that what they saw is complete before it is reported.
void JobRun::close_output() {
  auto end = Clock::now();
  m_duration = seconds_since_start();
  m_rep.ended = util::iso8601_local(Clock::to_time_t(end));
  m_rep.duration_s = m_duration;
  for (auto& stream : m_tee->streams()) {
    stream.pipe.reset();  // close our read ends: late writers get EPIPE, not a hang
  }
  m_sink->append_wrapper_lines(footer(m_result, m_rep.ended, *m_sink));
  m_sink->finish_writing();  // a sync thread makes its last fdatasync beside the diagnosis below
  keep_signals_blocked(std::move(*m_intake));
  m_watch->finish();
  m_feed->finish();
}

// The ending's facts into the report: the status, the stall, the log, the host's and
// the GPUs' evidence, and what could not be logged or shown.
void JobRun::gather_facts() {
  auto& rep = m_rep;
  const auto& result = m_result;
  rep.exit_code = result.status.code;
  if (result.status.signal) {
    rep.signal = supervise::signal_name(*result.status.signal);
  }
  rep.core_dumped = result.status.core_dumped;
  rep.wrapper_timeout = result.wrapper_timeout;
  if (result.stalled_at_s) {
    report::StallFacts facts;
    facts.after_s = std::chrono::duration<double>(*m_config.stall).count();
    facts.action = m_config.stall_action;
    facts.at_s = *result.stalled_at_s;
    facts.killed = result.stall_killed;
    facts.resumed_at_s = result.resumed_at_s;
    facts.notice = m_stall_notice;
    rep.stall = facts;
  }
  rep.log_bytes = m_sink->job_bytes();
  rep.sources = m_watch->sources();
  if (rep.env.count("SLURM_JOB_ID") != 0) {
    rep.cgroup_memory_peak = m_watch->memory_peak_bytes();  // the job's own cgroup under Slurm
  }
  gpu::finish(m_gpus, rep);  // its readings at the end, Xids and ECC counters into the report
  if (m_sink->first_error()) {
    rep.warnings.push_back("the log is incomplete: " + *m_sink->first_error() + " (" +
                           std::to_string(m_sink->lost_bytes()) + " bytes not written)");
  }
  if (m_feed->dropped() > 0) {
    rep.warnings.push_back("diagnosis did not read " + util::human_size(m_feed->dropped()) +
                           " in the middle of the log: the job printed faster than the rules "
                           "could read, and the copy is not held for them (`gpualert classify` "
                           "reads all of it)");
  }
  for (const auto& n : m_tee->notes()) {
    rep.warnings.push_back(n);
  }
  if (m_tee->unshown() > 0) {
    m_unshown = util::human_size(m_tee->unshown()) +
                " of the job's output could not be shown: the reader of gpualert's output "
                "stopped reading, and the log is not held back for it (output.log has all of it)";
    rep.warnings.push_back(m_unshown);
  }
}

// The verdict, from what the rules read while the job ran and the host's evidence.
void JobRun::diagnose() {
  auto& rep = m_rep;
  auto& host_ev = m_host_ev;
  const auto& result = m_result;
  model::ExitInfo exit_info{result.status.code, result.status.signal, result.wrapper_timeout,
                            result.stall_killed};
  host_ev.kernel_lines = m_watch->kernel_lines();
  host_ev.cgroup_oom_kills = m_watch->cgroup_oom_kills();
  host_ev.kernel_log_read = m_watch->kernel_log_read();
  host_ev.gpu_lines = rep.gpu_lines = gpu::xid_lines(rep);
  if (result.scheduler_ended) {
    // Slurm ended the job and printed why in its own output file, not here: ask it.
    ask_scheduler();
    host_ev.scheduler_lines = m_scheduler_lines;
    rep.scheduler_lines = m_scheduler_lines;
  }
  rep.cgroup_oom_kills = host_ev.cgroup_oom_kills;
  rep.kernel_log_read = host_ev.kernel_log_read;
  for (const auto& [k, v] : rep.env) {
    if (k.rfind("SLURM_", 0) == 0 || k.rfind("LSB_", 0) == 0 || k.rfind("PBS_", 0) == 0) {
      host_ev.scheduler[k] = v;
    }
  }
  rep.verdict = m_diagnosis->verdict(exit_info, host_ev);
  note_requeue(*rep.verdict, rep.scheduler_lines);
  if (!m_diagnosis->error().empty()) {
    rep.warnings.push_back(m_diagnosis->error());
  }
}

// kernel.log and report.json (or its fallback in the state dir), while the log is
// still open: its close waits for the sync thread's last fdatasync.
void JobRun::write_report() {
  const auto& rep = m_rep;
  if (!m_host_ev.kernel_lines.empty()) {
    std::string text;
    for (const auto& l : m_host_ev.kernel_lines) {
      text += l + "\n";
    }
    if (auto st = util::write_file_atomic(rep.run_dir + "/kernel.log", text); !st) {
      m_rep.warnings.push_back("kernel.log: " + st.error());
    }
  }
  // One notice per job: the other ranks' endings so far go into this report.
  m_group_sends = group_ending(m_group, m_rep);
  m_report_path = rep.run_dir + "/report.json";
  // report.json is derived from output.log (which is synced): `gpualert classify`
  // gives it again, so it is replaced atomically but not fsynced (report::save), off
  // the job's path.
  auto saved = m_report_file
                   ? m_report_file->commit(report::to_text(rep), util::Durability::replace_only)
                   : report::save(m_report_path, rep);
  m_report_file.reset();
  if (auto st = std::move(saved); !st) {
    // A full or broken log device must not lose the verdict too: keep it in the state dir.
    std::string fallback_dir = config::state_dir(m_config) + "/reports";
    std::string fallback =
        fallback_dir + "/" +
        util::safe_file_component(rep.run_dir.substr(rep.run_dir.find_last_of('/') + 1), 200) +
        ".json";
    std::fprintf(stderr, "gpualert: WARNING: could not write %s: %s\n", m_report_path.c_str(),
                 st.error().c_str());
    if (util::make_dirs(fallback_dir, 0700) &&
        report::save(fallback, rep, util::Durability::synced)) {
      std::fprintf(stderr, "gpualert: the report is in %s instead\n", fallback.c_str());
      m_report_path = fallback;
    }
  }
  journal_remove(m_journal);  // the final report is written (or kept in the state dir)
  if (m_sink->first_error()) {
    std::fprintf(stderr, "gpualert: WARNING: the log is incomplete: %s (%llu bytes not written)\n",
                 m_sink->first_error()->c_str(),
                 static_cast<unsigned long long>(m_sink->lost_bytes()));
  }
}

// The log on disk before the report is read or sent; a failed sync is said in the
// report the notice is built from.
void JobRun::close_log() {
  m_sink->close();  // the log is on disk before the report is read or sent (synced here if short)
  if (auto err = m_sink->sync_error()) {
    // The durability promise is broken: say so in the report the notice is built from.
    m_rep.warnings.push_back("the log may not be on disk: " + *err);
    say_late("gpualert: WARNING: the log may not be on disk: " + *err + "\n");
    if (auto st = report::save(m_report_path, m_rep); !st) {
      say_late("gpualert: WARNING: could not write " + m_report_path + ": " + st.error() + "\n");
    }
  }
  if (!m_unshown.empty()) {
    say_late("gpualert: WARNING: " + m_unshown + "\n");
  }
}

// Last, off the job's path: the Slurm comment (on its own, waited for on return),
// the notice (or the held one withdrawn), and the end line; returns the job's status.
RunEnding JobRun::announce() {
  const auto& rep = m_rep;
  host::CommentWrite comment =
      start_job_comment(rep, m_config);  // waited for on return, 2 s at most
  std::string notice;
  const bool notify_this = m_group_sends && notice_wanted(m_config, rep);
  if (!m_held.empty() && !notify_this) {
    withdraw_held_notice(m_held, m_o.config_file, m_config);  // this ending needs none
  }
  if (!m_group_sends) {
    notice = group_note(rep);
  }
  if (notify_this) {
    // The final notice replaces the held one, if one was kept.
    NotifyOutcome outcome = notify_via_helper(
        rep.run_dir, m_o.attach, m_config.budget_bytes, m_o.config_file, m_config, 0, m_held,
        m_report_path == rep.run_dir + "/report.json" ? std::string() : m_report_path);
    if (outcome.delivered) {
      notice = "notified " + outcome.where;
    } else {
      notice = outcome.detail.empty() ? "notification kept in " + outcome.where : outcome.detail;
    }
  }
  group_notice_done(m_group, m_rep);  // delivered, in the outbox, or not asked for
  std::string verdict = rep.verdict ? rep.verdict->label : "unknown";
  if (!m_o.quiet) {
    say_late("gpualert: " + verdict + " (" + m_result.status.describe() + " after " +
             util::human_duration(m_duration) + "); report: " + m_report_path +
             (notice.empty() ? "" : "; " + notice) + "\n");
  }
  return RunEnding{m_result.status.code, m_result.status.signal};
}

}  // namespace

// The steps of a run, in the order the product promises (run_job.hpp); each JobRun
// method's comment says why it is where it is. An early return is a usage error before
// anything ran, or a job run without a log.
RunEnding run_job(const RunOptions& o) {
  JobRun run(o);
  if (auto early = run.apply_options()) {
    return *early;
  }
  if (auto early = run.load_rules()) {
    return *early;
  }
  run.describe_job();
  if (auto early = run.make_run_dir()) {
    return *early;
  }
  if (auto early = run.set_up_capture()) {
    return *early;
  }
  if (auto early = run.open_pipes()) {
    return *early;
  }
  run.spawn();
  run.start_watching();
  run.arm_supervision();
  run.supervise();
  run.close_output();
  run.gather_facts();
  run.diagnose();
  run.write_report();
  run.close_log();
  return run.announce();
}

}  // namespace cli
