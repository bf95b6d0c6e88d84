// host/scheduler.hpp: what the scheduler says about a job it ended.
//
// When Slurm ends a job (time limit, scancel, memory limit, preemption), its step
// daemon sends SIGCONT and SIGTERM to every process, and the reason is printed by
// slurmstepd into the job's own output file, which `run` does not see. So `run`
// asks the controller, once, right after such an end: `scontrol show job
// --oneliner ID`, within a deadline, and keeps the job's state, the reason and its
// run time against its limit as a line of scheduler evidence for the rules. While
// the job's processes (gpualert among them) are still there, Slurm 22.05 shows the
// state as COMPLETING, and the reason tells a time limit ("JobState=COMPLETING
// Reason=TimeLimit RunTime=00:01:27 TimeLimit=00:01:00") from a scancel
// ("Reason=None"). Nothing is asked when the job ended by itself.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/fd.hpp"

namespace host {

// What `scontrol show job --oneliner` says of a job.
struct SlurmJob {
  std::string id, state, reason, run_time, time_limit;
  std::string std_err, std_out;  // the job's output files, as Slurm names them
  int restarts = 0;              // how often it was requeued
  std::string exit_code;         // "code:signal" of the batch script
  std::string line;              // the state line kept as evidence (see slurm_state_line)
};

std::optional<SlurmJob> parse_slurm_job(std::string_view scontrol_output, std::string_view job_id);

// "scontrol: job ID JobState=X Reason=Y RunTime=... TimeLimit=..." from `scontrol show
// job --oneliner` output, or nothing when it holds no JobState.
std::optional<std::string> slurm_state_line(std::string_view scontrol_output,
                                            std::string_view job_id);

// Runs `scontrol show job --oneliner JOB_ID` (from PATH); nothing if scontrol is
// missing, fails, or does not answer within `deadline` (then it is killed). job_id
// must be digits (and '_' for array jobs).
std::optional<SlurmJob> query_slurm_job(const std::string& job_id,
                                        std::chrono::milliseconds deadline);
std::optional<std::string> query_slurm_job_state(const std::string& job_id,
                                                 std::chrono::milliseconds deadline);

// The last banner slurmstepd wrote for this job into one of its output files
// ("slurmstepd: error: *** JOB 7 ON n1 CANCELLED AT ... DUE TO NODE FAILURE ... ***"):
// Slurm's own word on why it ended the job, which only that file holds. Reads at
// most the file's last 256 KiB.
std::optional<std::string> slurmstepd_banner(const std::string& path, std::string_view job_id);
// Every line slurmstepd wrote about this job into that file (its banner, a memory
// limit that was exceeded, OOM kills it detected), the last four at most.
std::vector<std::string> slurmstepd_lines(const std::string& path, std::string_view job_id);

// The scheduler's evidence about a job it ended: the state line, slurmstepd's lines
// from the job's output file (its own `std_err`, else `own_stderr`, the wrapper's stderr
// when that is a file), and, when the job was requeued since this run started
// (Restarts above `restart_count_at_start`, SLURM_RESTART_COUNT), a line saying so.
std::vector<std::string> slurm_evidence(const SlurmJob& job, int restart_count_at_start,
                                        const std::string& own_stderr);

// The "requeued" line's run number, when `line` is one (see slurm_evidence).
std::optional<int> requeued_run(std::string_view line);

// `scontrol update JobId=ID Comment=TEXT` running beside the caller, so that
// `sacct -o JobID,State,Comment` and `squeue -O comment` show why each job ended.
// Users may update their own job's comment. The caller goes on with its work
// (sending the notice) and calls finish() at its end; a controller that does not
// answer costs at most the deadline, then scontrol is killed.
class CommentWrite {
 public:
  CommentWrite() = default;  // nothing running
  CommentWrite(pid_t pid, util::UniqueFd output, std::chrono::steady_clock::time_point deadline)
      : m_pid(pid), m_output(std::move(output)), m_deadline(deadline) {}
  CommentWrite(CommentWrite&& o) noexcept
      : m_pid(o.m_pid), m_output(std::move(o.m_output)), m_deadline(o.m_deadline) {
    o.m_pid = -1;
  }
  CommentWrite& operator=(CommentWrite&&) = delete;
  CommentWrite(const CommentWrite&) = delete;
  ~CommentWrite() { (void)finish(); }

  bool running() const { return m_pid > 0; }
  // Waits for scontrol until the deadline, kills it then. True when it exited 0.
  bool finish();

 private:
  pid_t m_pid = -1;
  util::UniqueFd m_output;
  std::chrono::steady_clock::time_point m_deadline;
};

// Slurm's Comment field is one line that scontrol parses: control characters and
// quotes become spaces or ', runs of spaces collapse, at most max_bytes (cut at a
// UTF-8 boundary, "..." marking the cut).
std::string slurm_comment_text(std::string_view text, size_t max_bytes = 120);

// Starts `scontrol update JobId=<job_id> Comment=<slurm_comment_text(comment)>` (from
// PATH). Not running when job_id is not a job id or scontrol cannot be started.
CommentWrite start_comment_write(const std::string& job_id, const std::string& comment,
                                 std::chrono::milliseconds deadline);

}  // namespace host
