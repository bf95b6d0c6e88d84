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

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace host {

// "scontrol: job ID JobState=X Reason=Y RunTime=... TimeLimit=..." from `scontrol show
// job --oneliner` output, or nothing when it holds no JobState.
std::optional<std::string> slurm_state_line(std::string_view scontrol_output,
                                            std::string_view job_id);

// Runs `scontrol show job --oneliner JOB_ID` (from PATH) and returns its state line;
// nothing if scontrol is missing, fails, or does not answer within `deadline`
// (then it is killed). job_id must be digits (and '_' for array jobs).
std::optional<std::string> query_slurm_job_state(const std::string& job_id,
                                                 std::chrono::milliseconds deadline);

}  // namespace host
