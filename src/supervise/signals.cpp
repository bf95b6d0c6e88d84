#include "supervise/signals.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "util/signals.hpp"
#include "util/text.hpp"

namespace supervise {

namespace {

// sigaddset refuses glibc's internal signals; posix_spawn's SETSIGDEF honours them.
void add_any(sigset_t& set, int sig) {
  constexpr size_t k_bits = 8 * sizeof set.__val[0];
  set.__val[(sig - 1) / k_bits] |= 1UL << ((sig - 1) % k_bits);
}

}  // namespace

util::Result<SignalIntake> SignalIntake::open() {
  SignalIntake in;
  sigemptyset(&in.m_blocked);
  sigemptyset(&in.m_child_defaults);
  for (int sig : k_forwarded) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) {
      continue;  // inherited ignored (nohup): keep it that way for the job too
    }
    sigaddset(&in.m_blocked, sig);
  }
  // The job gets every signal with its default action, as from a shell, except
  // those ignored when gpualert started (nohup's SIGHUP). posix_spawn gives that for
  // all but three by itself (a caught signal is reset, an ignored one kept, POSIX
  // says): glibc's spawn would leave its internal signals 32 and 33 ignored in the
  // job, and SIGPIPE is ignored by us, while a job writing to a closed pipe must
  // end as it would in a shell. Those three are named to be reset.
  add_any(in.m_child_defaults, SIGPIPE);
  for (int sig : {32, 33}) {
    if (!util::signal_ignored(sig)) {
      add_any(in.m_child_defaults, sig);
    }
  }
  sigaddset(&in.m_blocked, SIGCHLD);
  if (::sigprocmask(SIG_BLOCK, &in.m_blocked, &in.m_old_mask) != 0) {
    return util::errno_error("sigprocmask");
  }
  in.m_active = true;
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ign, &in.m_old_pipe);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the job behind
  // our back (no SIGCHLD, waitpid fails with ECHILD): we need its wait status.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &dfl, &in.m_old_chld);
  in.m_fd.reset(::signalfd(-1, &in.m_blocked, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!in.m_fd.valid()) {
    return util::errno_error("signalfd");
  }
  return in;
}

SignalIntake::SignalIntake(SignalIntake&& other) noexcept
    : m_fd(std::move(other.m_fd)),
      m_blocked(other.m_blocked),
      m_old_mask(other.m_old_mask),
      m_child_defaults(other.m_child_defaults),
      m_old_pipe(other.m_old_pipe),
      m_old_chld(other.m_old_chld),
      m_active(other.m_active) {
  other.m_active = false;
}

SignalIntake::~SignalIntake() {
  if (m_active) {
    m_fd.reset();
    ::sigaction(SIGPIPE, &m_old_pipe, nullptr);
    ::sigaction(SIGCHLD, &m_old_chld, nullptr);
    ::sigprocmask(SIG_SETMASK, &m_old_mask, nullptr);
  }
}

bool SignalIntake::handles(int sig) const { return sigismember(&m_blocked, sig) == 1; }

bool is_slurmstepd(pid_t pid) {
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  return comm && std::getline(comm, name) && name.rfind("slurmstepd", 0) == 0;
}

SlurmStep Forwarding::step_from_environment() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job == nullptr || *job == '\0') {
    return SlurmStep::none;
  }
  const char* step = std::getenv("SLURM_STEP_ID");
  return step != nullptr && *step != '\0' && std::strcmp(step, "batch") != 0 ? SlurmStep::srun
                                                                             : SlurmStep::batch;
}

bool Forwarding::stepd_signals_every_process() {
  if (m_tracking == SlurmTracking::detect) {
    m_tracking = slurm_tracking_from_host();
  }
  return m_tracking == SlurmTracking::every_process;
}

bool Forwarding::should_forward(const signalfd_siginfo& info, double now_s) {
  const int sig = static_cast<int>(info.ssi_signo);
  if (sig == SIGCHLD) {
    return false;
  }
  if (m_mode == JobControl::shared_group && info.ssi_code == SI_KERNEL) {
    return false;  // Ctrl-C, Ctrl-\, hangup: the terminal signalled the job too
  }
  const auto sender = static_cast<pid_t>(info.ssi_pid);
  if (sender == ::getpid()) {
    return false;
  }
  if ((info.ssi_code != SI_USER && info.ssi_code != SI_QUEUE) || !is_slurmstepd(sender)) {
    return true;
  }
  // The job's end: SIGCONT then SIGTERM (an srun step's time limit: SIGTERM, SIGCONT,
  // SIGTERM); a SIGTERM without that SIGCONT just before it was asked for.
  bool ending = false;
  if (sig == SIGCONT) {
    m_stepd_cont_at = now_s;
  } else if (sig == SIGTERM) {
    // slurmstepd sends SIGCONT first, but when both are pending the signalfd gives the
    // lower number first: a SIGCONT still pending belongs to this ending.
    sigset_t pending;
    bool cont_pending = ::sigpending(&pending) == 0 && sigismember(&pending, SIGCONT) == 1;
    ending = m_step == SlurmStep::srun || now_s - m_stepd_cont_at < 10.0 || cont_pending;
    m_scheduler_ending |= ending;
  }
  if (stepd_signals_every_process()) {
    if (m_step != SlurmStep::batch) {
      return false;  // an srun step: slurmstepd signals each of its processes
    }
    // The batch step: only the job's end reached every process.
    return sig != SIGCONT && !ending;
  }
  // Task-only delivery: we are the task, and the job is not. One SIGTERM of an
  // ending is passed on; the second of an srun step's time limit (10 ms later) is
  // the same ending, which the job is already handling.
  if (sig == SIGTERM && ending) {
    if (now_s - m_stepd_term_sent < 5.0) {
      return false;
    }
    m_stepd_term_sent = now_s;
  }
  return true;
}

namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (in) {
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return text.size() > (4u << 20) ? std::string() : text;
}

}  // namespace

std::optional<SlurmTracking> tracking_from_slurm_conf(std::string_view text) {
  std::optional<SlurmTracking> found;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos ||
        !util::equals_ignoring_case(util::trim_blanks(line.substr(0, eq)), "ProctrackType")) {
      continue;
    }
    std::string_view value = util::trim_blanks(line.substr(eq + 1));
    found = value.find("linuxproc") != std::string_view::npos ? SlurmTracking::every_process
                                                              : SlurmTracking::task_only;
  }
  return found;
}

SlurmTracking slurm_tracking_from_host() {
  std::vector<std::string> candidates;
  if (const char* conf = std::getenv("SLURM_CONF"); conf != nullptr && *conf != '\0') {
    candidates.emplace_back(conf);
  }
  for (const char* p : {"/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf",
                        "/var/spool/slurmd/conf-cache/slurm.conf", "/etc/slurm-llnl/slurm.conf",
                        "/usr/local/etc/slurm.conf"}) {
    candidates.emplace_back(p);
  }
  for (const auto& path : candidates) {
    if (auto t = tracking_from_slurm_conf(read_small_file(path))) {
      return *t;
    }
  }
  // proctrack/cgroup (v1) keeps each step in a freezer cgroup of Slurm's.
  std::string cgroups = read_small_file("/proc/self/cgroup");
  for (std::string_view rest = cgroups; !rest.empty();) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.find(":freezer:") != std::string_view::npos &&
        line.find("/slurm") != std::string_view::npos) {
      return SlurmTracking::task_only;
    }
  }
  return SlurmTracking::task_only;
}

}  // namespace supervise
