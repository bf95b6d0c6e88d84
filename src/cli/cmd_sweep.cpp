// cli/cmd_sweep.cpp: `gpualert sweep`, the report of runs whose wrapper is gone.
//
// A run is in progress while its wrapper holds the lock on output.log (see
// cli/run_state.hpp). A run directory without a final report.json whose lock can be
// taken (or, where the file system has no locks, whose header's pid is not a live
// gpualert on the same boot of the same host) lost its wrapper: it was SIGKILLed with
// the job, OOM-killed, or its node went down. Its log is classified as `classify`
// would, the scheduler is asked what became of the job, and a report.json marked
// "reconstructed" (with why) is written and notified, replacing any notice that a
// provisional report held back. Safe to run concurrently: the lock taken stays held
// while a run is reported.
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>

#include "classify/case_dir.hpp"
#include "classify/classifier.hpp"
#include "cli/commands.hpp"
#include "cli/group_notice.hpp"
#include "cli/notifier.hpp"
#include "cli/options.hpp"
#include "cli/run_state.hpp"
#include "cli/sweep.hpp"
#include "config/config.hpp"
#include "gpu/watch.hpp"
#include "host/scheduler.hpp"
#include "notify/policy.hpp"
#include "report/run_dir.hpp"
#include "report/run_report.hpp"
#include "supervise/exit_status.hpp"
#include "util/fd.hpp"
#include "util/scoped_env.hpp"
#include "util/text.hpp"

namespace cli {

namespace {

constexpr const char* k_final_states[] = {"COMPLETED",     "CANCELLED", "FAILED",
                                          "TIMEOUT",       "NODE_FAIL", "PREEMPTED",
                                          "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"};

bool is_final_state(const std::string& state) {
  for (const char* s : k_final_states) {
    if (state == s) {
      return true;
    }
  }
  return false;
}

// The footer's "status: exit 3" / "status: killed by SIGKILL (core dumped)".
bool exit_from_footer(const std::string& status, model::ExitInfo& exit, bool& core) {
  if (status.rfind("exit ", 0) == 0) {
    exit.exit_code = std::atoi(status.c_str() + 5);
    return true;
  }
  if (status.rfind("killed by ", 0) == 0) {
    std::string name = status.substr(10, status.find(' ', 10) - 10);
    int sig = classify::parse_signal(name);
    if (sig > 0) {
      exit.signal = sig;
      core = status.find("core dumped") != std::string::npos;
      return true;
    }
  }
  return false;
}

// Slurm's ExitCode "code:signal" of a job in a final state.
void exit_from_slurm(const std::string& exit_code, model::ExitInfo& exit) {
  auto colon = exit_code.find(':');
  if (colon == std::string::npos) {
    return;
  }
  int code = std::atoi(exit_code.substr(0, colon).c_str());
  int sig = std::atoi(exit_code.substr(colon + 1).c_str());
  if (sig > 0 && sig < 65) {
    exit.signal = sig;
  } else if (sig == 0) {
    exit.exit_code = code;
  }
}

bool pid_is_live_gpualert(long pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) {
    return false;
  }
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  return comm && std::getline(comm, name) && name.rfind("gpualert", 0) == 0;
}

// The variables a run recorded that say where its notice goes, put in the sweep's
// environment where it sets none (an epilog or cron line has none of the user's).
class RunNotifyEnv {
 public:
  explicit RunNotifyEnv(const std::map<std::string, std::string>& env) {
    for (const auto& [k, v] : env) {
      if (k.rfind("GPUALERT_", 0) == 0 && std::getenv(k.c_str()) == nullptr) {
        m_set.push_back(std::make_unique<util::ScopedEnv>(k, v));
      }
    }
  }

 private:
  std::vector<std::unique_ptr<util::ScopedEnv>> m_set;
};

struct SweepContext {
  std::string config_file;
  bool notify = true;
  bool quiet = false;
  std::chrono::milliseconds scheduler_deadline{5000};
};

enum class Outcome { done, running, reported, failed };

Outcome sweep_one(const std::string& run_dir, const SweepContext& ctx, std::string& message) {
  const std::string log = run_dir + "/output.log";
  const std::string report_path = run_dir + "/report.json";
  std::optional<report::RunReport> previous;
  if (::access(report_path.c_str(), F_OK) == 0) {
    auto r = report::load(report_path);
    if (r && r->state != "provisional") {
      return Outcome::done;
    }
    if (r) {
      previous = std::move(*r);
    }
  }
  util::UniqueFd lock(::open(log.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!lock.valid()) {
    message = "cannot open " + log + ": " + std::strerror(errno);
    return errno == ENOENT ? Outcome::done : Outcome::failed;
  }
  bool locked = ::flock(lock.get(), LOCK_EX | LOCK_NB) == 0;
  if (!locked && errno == EWOULDBLOCK) {
    return Outcome::running;  // the wrapper (or another sweep) holds it
  }
  auto facts = report::read_log_facts(log);
  if (!facts) {
    message = facts.error();
    return Outcome::failed;
  }
  struct stat st {};
  ::fstat(lock.get(), &st);
  const std::time_t now = std::time(nullptr);
  if (!facts->header_complete && now - st.st_mtime < 60) {
    return Outcome::running;  // being created
  }
  // Once the report is in place the wrapper's lock goes: one written since we looked.
  if (auto r = report::load(report_path); r && r->state != "provisional") {
    return Outcome::done;
  }
  const report::HeaderFacts& h = facts->header;
  const bool same_host = h.host == util::hostname();
  const std::string boot = report::current_boot_id();
  const bool rebooted = same_host && !h.boot_id.empty() && !boot.empty() && h.boot_id != boot;
  if (!locked && same_host && !rebooted && pid_is_live_gpualert(h.pid)) {
    return Outcome::running;  // no locks on this file system: the pid tells
  }

  // What the scheduler says became of the job.
  std::optional<host::SlurmJob> job;
  if (auto id = h.env.find("SLURM_JOB_ID"); id != h.env.end()) {
    job = host::query_slurm_job(id->second, ctx.scheduler_deadline);
  }
  if (!locked && !same_host && !(job && is_final_state(job->state)) && !facts->status) {
    return Outcome::running;  // another host's run that nothing says has ended
  }

  report::RunReport rep = previous ? *previous : report::RunReport{};
  rep.name = h.name;
  rep.command = facts->command;
  rep.cwd = h.cwd;
  rep.host = h.host;
  rep.user = h.user;
  rep.started = h.started;
  rep.env = h.env;
  rep.run_dir = run_dir;
  rep.log_path = log;
  rep.log_bytes = facts->size;
  rep.ended = facts->ended ? *facts->ended : util::iso8601_local(st.st_mtime);
  if (auto t0 = util::parse_iso8601(h.started)) {
    auto ended = facts->ended ? util::parse_iso8601(*facts->ended) : std::nullopt;
    std::time_t t1 = ended ? *ended : st.st_mtime;
    rep.duration_s = t1 >= *t0 ? static_cast<double>(t1 - *t0) : 0.0;
  }
  rep.warnings.clear();
  rep.state = "reconstructed";
  rep.sources = {{"kernel", "not read: reconstructed by gpualert sweep after the run"},
                 {"cgroup", "not read: reconstructed by gpualert sweep after the run"}};
  // The GPU helper writes its summary when the wrapper is gone, unless it died with it.
  rep.gpus.reset();
  rep.gpu_lines.clear();
  if (gpu::read_summary(run_dir, rep)) {
    rep.gpu_lines = gpu::xid_lines(rep);
  }

  model::ExitInfo exit;
  model::HostEvidence host_ev;
  bool core = false;
  std::string why = "gpualert's wrapper (pid " + std::to_string(h.pid) + " on " + h.host + ")";
  if (facts->status && exit_from_footer(*facts->status, exit, core)) {
    why += " ended after the job did, before writing its report";
  } else if (rebooted) {
    why += " did not survive a reboot of the host";
    host_ev.scheduler_lines.push_back(
        "gpualert: the host rebooted during the run (boot id changed); gpualert's wrapper (pid " +
        std::to_string(h.pid) + ") did not survive it");
  } else {
    why +=
        " was killed before the job's end was seen (with the job: Slurm's end of a step under "
        "cgroup tracking, a memory limit, KillWait's SIGKILL; or on its own)";
    if (job && is_final_state(job->state)) {
      exit_from_slurm(job->exit_code, exit);
    }
  }
  if (job) {
    int restarts_at_start = 0;
    if (auto rc = h.env.find("SLURM_RESTART_COUNT"); rc != h.env.end()) {
      restarts_at_start = std::atoi(rc->second.c_str());
    }
    for (auto& line : host::slurm_evidence(*job, restarts_at_start, "")) {
      host_ev.scheduler_lines.push_back(std::move(line));
    }
  }
  for (const auto& [k, v] : h.env) {
    if (k.rfind("SLURM_", 0) == 0 || k.rfind("LSB_", 0) == 0 || k.rfind("PBS_", 0) == 0) {
      host_ev.scheduler[k] = v;
    }
  }
  host_ev.gpu_lines = rep.gpu_lines;
  rep.exit_code = exit.exit_code;
  rep.signal =
      exit.signal ? std::optional<std::string>(supervise::signal_name(*exit.signal)) : std::nullopt;
  rep.core_dumped = core;
  rep.scheduler_lines = host_ev.scheduler_lines;
  rep.reconstructed = why;

  RunNotifyEnv notify_env(h.env);
  auto config = config::load_config(ctx.config_file);
  if (!config) {
    message = config.error();
    return Outcome::failed;
  }
  std::vector<std::string> rule_files;
  if (!config->rules_file.empty()) {
    rule_files.push_back(config->rules_file);
  }
  auto rules = classify::load_rules(rule_files);
  if (!rules) {
    message = rules.error();
    return Outcome::failed;
  }
  classify::Scanner scanner(*rules);
  if (auto s = classify::scan_file(log, scanner); !s) {
    message = s.error();
    return Outcome::failed;
  }
  rep.verdict = scanner.verdict(exit, host_ev);
  note_requeue(*rep.verdict, rep.scheduler_lines);
  rep.verdict->evidence.insert(rep.verdict->evidence.begin(),
                               model::EvidenceLine{0, "reconstructed: " + why, "wrapper"});
  rep.warnings.push_back("reconstructed by gpualert sweep: " + why +
                         "; the log is what the run left, the exit status what " +
                         (facts->status ? "its footer" : (job ? "Slurm" : "nothing")) + " said");
  // One of a job's wrapped ranks: it ends in the group like its wrapper would have
  // (the group's key is in the header's environment, not in the sweeper's config).
  config::Config member_config = *config;
  member_config.group.clear();
  member_config.group_size.reset();
  member_config.array_mode = "each";
  RunGroup group = find_group(member_config, rep, h.pid);
  const bool group_sends = group_ending(group, rep);
  std::vector<std::string> held = rep.held_notices;
  rep.held_notices.clear();
  if (auto s = report::save(report_path, rep, util::Durability::synced); !s) {
    message = "write " + report_path + ": " + s.error();
    return Outcome::failed;
  }
  // The file the dead wrapper had made ready for its report (util::AtomicFile).
  if (h.pid > 0 && same_host) {
    ::unlink((report_path + ".tmp." + std::to_string(h.pid)).c_str());
  }
  message = rep.verdict->label;
  if (ctx.notify && group_sends && notice_wanted(*config, rep)) {
    NotifyOutcome o =
        notify_via_helper(run_dir, {}, config->budget_bytes, ctx.config_file, *config, 0, held);
    message += o.delivered ? "; notified " + o.where
                           : "; " + (o.detail.empty() ? "notice kept in " + o.where : o.detail);
  } else if (!held.empty()) {
    withdraw_held_notice(held, ctx.config_file, *config);
  }
  if (ctx.notify) {
    group_notice_done(group, rep);
  }
  return Outcome::reported;
}

void add_run_dirs_under(const std::string& dir, std::vector<std::string>& out) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    return;
  }
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') {
      continue;
    }
    std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
        ::access((path + "/output.log").c_str(), F_OK) == 0) {
      out.push_back(path);
    }
  }
  ::closedir(d);
}

std::string absolute(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

}  // namespace

int sweep(const std::vector<std::string>& log_dirs, const std::string& config_file, bool quiet,
          bool journal_only) {
  auto config = config::load_config(config_file);
  if (!config) {
    std::fprintf(stderr, "gpualert: error: %s\n", config.error().c_str());
    return 2;
  }
  SweepContext ctx{config_file, true, quiet};
  // The journal of runs in progress, then every run directory of the log dirs.
  std::vector<std::pair<std::string, std::string>> candidates;  // run dir, journal entry
  const std::string jdir = journal_dir(*config);
  if (DIR* d = ::opendir(jdir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') {
        continue;
      }
      std::string entry = jdir + "/" + e->d_name;
      char target[PATH_MAX];
      ssize_t n = ::readlink(entry.c_str(), target, sizeof target - 1);
      if (n > 0) {
        candidates.emplace_back(std::string(target, static_cast<size_t>(n)), entry);
      }
    }
    ::closedir(d);
  }
  if (!journal_only) {
    for (const auto& dir : log_dirs) {
      std::vector<std::string> runs;
      add_run_dirs_under(absolute(dir), runs);
      std::sort(runs.begin(), runs.end());
      for (auto& r : runs) {
        candidates.emplace_back(std::move(r), "");
      }
    }
  }
  std::set<std::string> seen;
  int failures = 0;
  for (const auto& [run_dir, entry] : candidates) {
    if (!seen.insert(run_dir).second && entry.empty()) {
      continue;
    }
    if (::access(run_dir.c_str(), F_OK) != 0) {
      journal_remove(entry);  // the run directory was removed
      continue;
    }
    std::string message;
    Outcome o = sweep_one(run_dir, ctx, message);
    if (o == Outcome::done || o == Outcome::reported) {
      journal_remove(entry);
    }
    if (o == Outcome::reported && !ctx.quiet) {
      std::printf("reconstructed\t%s\t%s\n", run_dir.c_str(), message.c_str());
    } else if (o == Outcome::failed) {
      ++failures;
      std::fprintf(stderr, "gpualert: sweep: %s: %s\n", run_dir.c_str(), message.c_str());
    }
  }
  std::fflush(stdout);
  return failures > 0 ? 1 : 0;
}

bool journal_has_orphans(const config::Config& config, const std::string& own_entry) {
  const std::string jdir = journal_dir(config);
  DIR* d = ::opendir(jdir.c_str());
  if (d == nullptr) {
    return false;
  }
  bool found = false;
  int looked = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || jdir + "/" + e->d_name == own_entry) {
      continue;
    }
    if (++looked > 64) {
      found = true;  // many entries: let a sweep look at them all
      break;
    }
    std::string log = jdir + "/" + e->d_name + "/output.log";
    util::UniqueFd fd(::open(log.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid() || ::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) {
      found = true;  // gone, or its wrapper no longer holds it
      break;
    }
  }
  ::closedir(d);
  return found;
}

int cmd_sweep(int argc, char** argv) {
  Options options(
      "gpualert sweep",
      "Report runs whose wrapper is gone (killed with the job, node down): classify the log they "
      "left, ask the scheduler, write report.json (marked reconstructed), notify; then send the "
      "held notices that are due. Safe from a Slurm epilog, cron or a timer, and concurrently.");
  std::vector<std::string> dirs;
  std::string config_file;
  bool quiet = false, journal_only = false, no_flush = false;
  options.value("--config", config_file, "configuration file");
  options.flag("-q,--quiet", quiet, "print nothing but errors");
  options.flag("--journal", journal_only,
               "only the runs in this user's journal of runs in progress (the state dir)");
  options.flag("--no-flush", no_flush, "don't send the outbox's due notices afterwards");
  options.positionals("LOGDIR", dirs,
                      "log directories to look in (default: $GPUALERT_LOG_DIR, the configured "
                      "log_dir, else ./gpualert-logs), beside the journal");
  if (auto done = options.parse(argc, argv, "sweep")) {
    return *done;
  }
  auto config = config::load_config(config_file);
  if (!config) {
    std::fprintf(stderr, "gpualert: error: %s\n", config.error().c_str());
    return 2;
  }
  if (dirs.empty() && !journal_only) {
    dirs.push_back(config::log_dir(*config));
  }
  int rc = sweep(dirs, config_file, quiet, journal_only);
  if (!no_flush) {
    // Held notices whose time has come, and what earlier deliveries left.
    flush_outbox_now(*config, config_file);
  }
  return rc;
}

}  // namespace cli

namespace cli {

// `gpualert outbox flush` first reports the journal's runs whose wrapper is gone, so
// that their notices go out with the rest; every `outbox` command then runs in the
// helper, which holds the outbox.
int cmd_outbox_flush(int argc, char** argv) {
  bool flush = false;
  std::string config_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "flush") {
      flush = true;
    } else if (a == "--config" && i + 1 < argc) {
      config_file = argv[i + 1];
    } else if (a.rfind("--config=", 0) == 0) {
      config_file = a.substr(9);
    }
  }
  if (flush) {
    (void)sweep({}, config_file, /*quiet=*/true, /*journal_only=*/true);
  }
  return exec_notify_helper(argc, argv);
}

}  // namespace cli
