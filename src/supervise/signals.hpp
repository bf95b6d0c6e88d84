// supervise/signals.hpp: the signals the wrapper takes over while it supervises a job.
//
// The wrapper blocks them and reads them from a signalfd in its poll loop, so no
// handler runs asynchronously and each delivery comes with its sender (si_code,
// si_pid), which decides whether the job already got the same signal (see
// Forwarding). Signals that were ignored when gpualert started (nohup's SIGHUP)
// are left alone: the job inherits them ignored, as it would without the wrapper.
#pragma once

#include <sys/signalfd.h>

#include <csignal>
#include <optional>
#include <string_view>
#include <vector>

#include "util/fd.hpp"
#include "util/result.hpp"

namespace supervise {

// Signals forwarded to the job: the ones people, shells and schedulers send.
inline constexpr int k_forwarded[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGUSR1,
                                      SIGUSR2, SIGALRM, SIGXCPU, SIGPWR,  SIGCONT};

// Blocks the forwarded signals (those not ignored at start) and SIGCHLD; restores
// the previous mask on destruction. SIGPIPE is ignored in the wrapper (a closed
// terminal must not kill the supervisor) and restored too.
class SignalIntake {
 public:
  static util::Result<SignalIntake> open();
  // Moving transfers the duty to restore the old state (only one owner restores it).
  SignalIntake(SignalIntake&& other) noexcept;
  SignalIntake& operator=(SignalIntake&&) = delete;
  ~SignalIntake();

  int fd() const { return m_fd.get(); }
  // Signals whose disposition the child must get back to default (SETSIGDEF).
  const sigset_t& child_defaults() const { return m_child_defaults; }
  const sigset_t& previous_mask() const { return m_old_mask; }
  bool handles(int sig) const;

 private:
  SignalIntake() = default;
  util::UniqueFd m_fd;
  sigset_t m_blocked{};
  sigset_t m_old_mask{};
  sigset_t m_child_defaults{};
  struct sigaction m_old_pipe {};
  struct sigaction m_old_chld {};
  bool m_active = false;
};

enum class JobControl {
  shared_group,  // interactive: the job stays in the terminal's foreground group with us
  own_group,     // batch: the job has its own process group, we forward to all of it
};

// Where Slurm's step daemon (slurmstepd) sends its signals depends on how Slurm
// tracks the job's processes (measured on Slurm 22.05, see
// tests/integration/test_run_slurm.py):
// - proctrack/linuxproc (and jobs it can't place otherwise): in a step started by
//   srun, to every process of the step (the job has it too); in the batch step, to
//   every process only when it ends the job (scancel, time limit, memory limit,
//   preemption: SIGCONT, then SIGTERM, then SIGKILL); any other signal (`sbatch
//   --signal=B:USR1@60`, `scancel --batch` or `--full --signal=...`) goes to the
//   batch script's process or process group alone, which does not hold the job.
// - proctrack/cgroup (most production clusters) and proctrack/pgid: to the step's
//   task processes only (the batch script's process, or each srun task), never to
//   their children: a wrapper that is the task must pass every signal on, once.
enum class SlurmStep { none, batch, srun };
enum class SlurmTracking {
  detect,         // read ProctrackType when slurmstepd first signals us
  every_process,  // proctrack/linuxproc
  task_only,      // proctrack/cgroup, proctrack/pgid
};

// Decides, for each signal the wrapper receives, whether to send it on to the job,
// so that the job gets it exactly once: not when the terminal already sent it to the
// whole foreground group (shared_group and SI_KERNEL), not when we sent it ourselves,
// and not when slurmstepd sent it to every process (see SlurmTracking). Remembers
// slurmstepd's SIGCONT, which tells its job-ending SIGTERM from a requested one.
class Forwarding {
 public:
  Forwarding(JobControl mode, SlurmStep step, SlurmTracking tracking = SlurmTracking::detect)
      : m_mode(mode), m_step(step), m_tracking(tracking) {}
  // now_s: a monotonic clock in seconds.
  bool should_forward(const signalfd_siginfo& info, double now_s);
  // Which step we run in, from the environment (SLURM_JOB_ID, SLURM_STEP_ID).
  static SlurmStep step_from_environment();
  // Whether slurmstepd has begun ending the job (its SIGTERM after a SIGCONT, or
  // any SIGTERM of it in an srun step): the scheduler then knows why (time limit,
  // scancel, memory, preemption, node failure).
  bool scheduler_ending() const { return m_scheduler_ending; }

 private:
  bool stepd_signals_every_process();
  JobControl m_mode;
  SlurmStep m_step;
  SlurmTracking m_tracking;
  double m_stepd_cont_at = -1e9;    // when slurmstepd last sent SIGCONT
  double m_stepd_term_sent = -1e9;  // when we last passed on slurmstepd's SIGTERM
  bool m_scheduler_ending = false;
};

// How the local Slurm tracks a job's processes: ProctrackType from slurm.conf
// ($SLURM_CONF, else the usual places, including slurmd's configless cache); if no
// file says, a freezer cgroup of Slurm's around this process means proctrack/cgroup.
// When nothing tells, task_only: passing a signal on twice is safer than never.
SlurmTracking slurm_tracking_from_host();
// The same decision from a slurm.conf's text (nothing if it names no ProctrackType).
std::optional<SlurmTracking> tracking_from_slurm_conf(std::string_view text);

// Whether a process is Slurm's step daemon (its /proc/PID/comm).
bool is_slurmstepd(pid_t pid);

}  // namespace supervise
