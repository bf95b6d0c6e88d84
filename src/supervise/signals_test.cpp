// The forwarding policy, with a real process named slurmstepd as the sender
// (the integration test test_run_slurm.py checks it against a real Slurm).
#include "supervise/signals.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace {

using supervise::Forwarding;
using supervise::JobControl;
using supervise::SlurmStep;
using supervise::SlurmTracking;
constexpr auto k_linuxproc = SlurmTracking::every_process;

// A child process whose name (/proc/PID/comm) is `name`, alive until destroyed.
class NamedProcess {
 public:
  explicit NamedProcess(const char* name) {
    int ready[2];
    EXPECT_EQ(::pipe(ready), 0);
    m_pid = ::fork();
    if (m_pid == 0) {
      ::prctl(PR_SET_NAME, name);
      ::close(ready[0]);
      (void)::write(ready[1], "x", 1);
      ::pause();
      ::_exit(0);
    }
    ::close(ready[1]);
    char c;
    EXPECT_EQ(::read(ready[0], &c, 1), 1);
    ::close(ready[0]);
  }
  ~NamedProcess() {
    ::kill(m_pid, SIGKILL);
    ::waitpid(m_pid, nullptr, 0);
  }
  pid_t pid() const { return m_pid; }

 private:
  pid_t m_pid = -1;
};

signalfd_siginfo from(int sig, pid_t sender, int code = SI_USER) {
  signalfd_siginfo info{};
  info.ssi_signo = static_cast<uint32_t>(sig);
  info.ssi_pid = static_cast<uint32_t>(sender);
  info.ssi_code = code;
  return info;
}

TEST(Forwarding, SenderIsSlurmstepdByItsName) {
  NamedProcess stepd("slurmstepd"), other("python3");
  EXPECT_TRUE(supervise::is_slurmstepd(stepd.pid()));
  EXPECT_FALSE(supervise::is_slurmstepd(other.pid()));
}

TEST(Forwarding, InTheBatchStepOnlyTheJobsEndReachedEveryProcess) {
  NamedProcess stepd("slurmstepd");
  Forwarding f(JobControl::own_group, SlurmStep::batch, k_linuxproc);
  // sbatch --signal=B:USR1@60, scancel --batch/--full --signal: the batch script alone.
  EXPECT_TRUE(f.should_forward(from(SIGUSR1, stepd.pid()), 100.0));
  EXPECT_TRUE(f.should_forward(from(SIGTERM, stepd.pid()), 101.0));  // asked for, no SIGCONT
  // scancel, a time limit: SIGCONT then SIGTERM to every process.
  EXPECT_FALSE(f.should_forward(from(SIGCONT, stepd.pid()), 200.0));
  EXPECT_FALSE(f.should_forward(from(SIGTERM, stepd.pid()), 200.01));
  // A SIGTERM long after that SIGCONT (a resume) was asked for on its own.
  EXPECT_TRUE(f.should_forward(from(SIGTERM, stepd.pid()), 230.0));
}

TEST(Forwarding, KnowsWhenSlurmBeganEndingTheJob) {
  NamedProcess stepd("slurmstepd"), other("bash");
  Forwarding batch(JobControl::own_group, SlurmStep::batch, k_linuxproc);
  batch.should_forward(from(SIGUSR1, stepd.pid()), 1.0);
  batch.should_forward(from(SIGTERM, other.pid()), 2.0);
  batch.should_forward(from(SIGTERM, stepd.pid()), 3.0);  // asked for: not the end
  EXPECT_FALSE(batch.scheduler_ending());
  batch.should_forward(from(SIGCONT, stepd.pid()), 4.0);
  batch.should_forward(from(SIGTERM, stepd.pid()), 4.001);
  EXPECT_TRUE(batch.scheduler_ending());
  Forwarding srun(JobControl::own_group, SlurmStep::srun, k_linuxproc);
  srun.should_forward(from(SIGUSR1, stepd.pid()), 1.0);
  EXPECT_FALSE(srun.scheduler_ending());
  srun.should_forward(from(SIGTERM, stepd.pid()), 2.0);
  EXPECT_TRUE(srun.scheduler_ending());
}

TEST(Forwarding, InAnSrunStepSlurmstepdSignalsEveryProcess) {
  NamedProcess stepd("slurmstepd");
  Forwarding f(JobControl::own_group, SlurmStep::srun, k_linuxproc);
  for (int sig : {SIGUSR1, SIGTERM, SIGCONT, SIGINT}) {
    EXPECT_FALSE(f.should_forward(from(sig, stepd.pid()), 1.0)) << sig;
  }
}

TEST(Forwarding, UnderCgroupTrackingOnlyTheTaskIsSignalledSoEverySignalIsPassedOnOnce) {
  NamedProcess stepd("slurmstepd");
  for (SlurmStep step : {SlurmStep::batch, SlurmStep::srun}) {
    Forwarding f(JobControl::own_group, step, SlurmTracking::task_only);
    EXPECT_TRUE(f.should_forward(from(SIGUSR1, stepd.pid()), 1.0));
    // scancel: SIGCONT, SIGTERM to the task alone (gpualert): the job needs both.
    EXPECT_TRUE(f.should_forward(from(SIGCONT, stepd.pid()), 10.0));
    EXPECT_TRUE(f.should_forward(from(SIGTERM, stepd.pid()), 10.001));
    EXPECT_TRUE(f.scheduler_ending());
    // An srun step's time limit: SIGTERM, SIGCONT, SIGTERM within 10 ms: one ending.
    EXPECT_TRUE(f.should_forward(from(SIGCONT, stepd.pid()), 10.005));
    EXPECT_FALSE(f.should_forward(from(SIGTERM, stepd.pid()), 10.01));
  }
  // A requested SIGTERM in the batch step (no SIGCONT before it) is not the end.
  Forwarding asked(JobControl::own_group, SlurmStep::batch, SlurmTracking::task_only);
  EXPECT_TRUE(asked.should_forward(from(SIGTERM, stepd.pid()), 50.0));
  EXPECT_FALSE(asked.scheduler_ending());
}

TEST(Forwarding, ASigcontStillPendingMakesSlurmstepdsSigtermTheJobsEnd) {
  // Both pending at once (the signalfd gives SIGTERM, the lower number, first).
  NamedProcess stepd("slurmstepd");
  sigset_t cont, old;
  sigemptyset(&cont);
  sigaddset(&cont, SIGCONT);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &cont, &old), 0);
  ASSERT_EQ(::kill(::getpid(), SIGCONT), 0);
  Forwarding f(JobControl::own_group, SlurmStep::batch, k_linuxproc);
  EXPECT_FALSE(f.should_forward(from(SIGTERM, stepd.pid()), 100.0));
  EXPECT_TRUE(f.scheduler_ending());
  timespec zero{};
  EXPECT_EQ(::sigtimedwait(&cont, nullptr, &zero), SIGCONT);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  // Without it, a SIGTERM alone was asked for (scancel --signal=TERM --batch).
  Forwarding g(JobControl::own_group, SlurmStep::batch, k_linuxproc);
  EXPECT_TRUE(g.should_forward(from(SIGTERM, stepd.pid()), 100.0));
  EXPECT_FALSE(g.scheduler_ending());
}

TEST(Forwarding, TrackingFromSlurmConf) {
  using supervise::tracking_from_slurm_conf;
  EXPECT_EQ(tracking_from_slurm_conf("ClusterName=x\nProctrackType=proctrack/linuxproc\n"),
            SlurmTracking::every_process);
  EXPECT_EQ(tracking_from_slurm_conf("  proctracktype = proctrack/cgroup # prod\n"),
            SlurmTracking::task_only);
  EXPECT_EQ(tracking_from_slurm_conf("ProctrackType=proctrack/pgid\n"), SlurmTracking::task_only);
  EXPECT_EQ(tracking_from_slurm_conf("#ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"),
            std::nullopt);
  EXPECT_EQ(tracking_from_slurm_conf(""), std::nullopt);
}

TEST(Forwarding, OtherSendersAreForwardedOnceOurOwnAndTheTerminalsAreNot) {
  NamedProcess other("bash");
  Forwarding batch(JobControl::own_group, SlurmStep::none);
  EXPECT_TRUE(batch.should_forward(from(SIGTERM, other.pid()), 1.0));
  EXPECT_TRUE(batch.should_forward(from(SIGINT, 0, SI_KERNEL), 1.0));  // no shared terminal
  EXPECT_FALSE(batch.should_forward(from(SIGTERM, ::getpid()), 1.0));
  EXPECT_FALSE(batch.should_forward(from(SIGCHLD, other.pid()), 1.0));
  Forwarding interactive(JobControl::shared_group, SlurmStep::none);
  EXPECT_FALSE(interactive.should_forward(from(SIGINT, 0, SI_KERNEL), 1.0));  // Ctrl-C
  EXPECT_TRUE(interactive.should_forward(from(SIGUSR1, other.pid()), 1.0));
}

TEST(Forwarding, StepFromTheEnvironment) {
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_STEP_ID");
  EXPECT_EQ(Forwarding::step_from_environment(), SlurmStep::none);
  ::setenv("SLURM_JOB_ID", "42", 1);
  EXPECT_EQ(Forwarding::step_from_environment(), SlurmStep::batch);
  ::setenv("SLURM_STEP_ID", "0", 1);
  EXPECT_EQ(Forwarding::step_from_environment(), SlurmStep::srun);
  ::unsetenv("SLURM_JOB_ID");
  ::unsetenv("SLURM_STEP_ID");
}

}  // namespace
