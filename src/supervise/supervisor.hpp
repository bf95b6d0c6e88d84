// supervise/supervisor.hpp: the wait loop of `run`, from spawn to the job's end.
//
// One poll loop over the output pipes, the terminals (when output waits for them)
// and the signalfd (signals stay blocked the whole time, so no handler races with
// it): copies output through the Tee, reaps the child on SIGCHLD, forwards signals exactly once,
// and enforces --timeout (SIGTERM, then SIGKILL after --kill-after). The job ends when the child
// exits, not at pipe EOF: grandchildren that keep the pipes open get a short drain deadline, then
// are left behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "capture/tee.hpp"
#include "supervise/exit_status.hpp"
#include "supervise/signals.hpp"

namespace supervise {

struct SuperviseOptions {
  JobControl mode = JobControl::own_group;
  SlurmStep slurm_step = SlurmStep::none;  // where slurmstepd's signals go (see signals.hpp)
  std::optional<std::chrono::milliseconds> timeout;
  std::chrono::milliseconds kill_after{30000};
  std::chrono::milliseconds drain_idle{300};  // after exit: stop when pipes are quiet this long
  std::chrono::milliseconds drain_max{3000};  // ... or after this long in any case
  // Then the terminal gets what it was not shown yet while it takes some every
  // drain_idle, for at most this long; the rest is counted as not shown.
  std::chrono::milliseconds terminal_max{10000};
  // Called once, from the loop, when the job is still running `helpers_after` after
  // the start or has printed `helpers_after_bytes`: what a job that goes on needs
  // beside the copy (the periodic sync, diagnosis reading the log back) starts then.
  // A job that ends sooner is supervised by this one thread from start to end: no
  // wake-up passes between threads, each a cross-CPU interrupt that on a loaded VM
  // was measured to cost milliseconds.
  std::function<void()> start_helpers;
  // Called once when Slurm began ending the job (Forwarding::scheduler_ending) and the
  // job is still running `keep_notice_after` later: Slurm's SIGKILL, which ends every
  // process of the job, gpualert too, may come before the job exits.
  std::function<void()> keep_notice;
  std::chrono::milliseconds keep_notice_after{2000};
  std::chrono::milliseconds helpers_after{50};
  // One more fd the loop polls for reading (the window-size signalfd of the job's
  // pty), and what to do when it is readable.
  int extra_fd = -1;
  std::function<void()> on_extra;
  uint64_t helpers_after_bytes = 1u << 20;
  // --stall: the job printed nothing (no byte on any of its streams) for this long.
  // on_stall() is then called once, from the loop, and must not block (it hands the
  // notice to a thread); with stall_kill the job is then ended the way --timeout ends
  // it (SIGTERM, SIGKILL after kill_after). One stall per run is reported.
  std::optional<std::chrono::milliseconds> stall;
  bool stall_kill = false;
  std::function<void()> on_stall;
  // One more fd to poll while the job runs (the kernel log, read as records arrive):
  // on_watch_readable() is called from the loop when it is readable, and must not block.
  int watch_fd = -1;
  std::function<void()> on_watch_readable;
};

struct SuperviseResult {
  ExitStatus status;
  bool wrapper_timeout = false;
  bool scheduler_ended = false;     // Slurm's step daemon began ending the job (see Forwarding)
  std::vector<std::string> events;  // "sent SIGTERM after --timeout 90s", for the log footer
  // --stall: seconds after the start when the job had printed nothing for --stall
  // (the last output was stall earlier), whether --stall-action kill then ended it, and
  // when output came again after that (a job that went on by itself).
  std::optional<double> stalled_at_s;
  bool stall_killed = false;
  std::optional<double> resumed_at_s;
};

SuperviseResult supervise(pid_t child, const SignalIntake& signals, capture::Tee& tee,
                          const SuperviseOptions& options);

}  // namespace supervise
