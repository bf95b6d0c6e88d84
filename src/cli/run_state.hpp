// cli/run_state.hpp: what keeps a run findable when its wrapper dies with the job.
//
// Under Slurm's cgroup tracking, a batch script that runs `gpualert run` without
// `exec` dies of scancel's SIGTERM and Slurm SIGKILLs the rest of the step at once;
// an OOM kill, KillWait's SIGKILL or a node that goes down end the wrapper too. So a
// run says from its first sync that it is in progress (output.log's header names
// the wrapper's pid and the host's boot id, and the wrapper holds a lock on the
// log), and `run` adds an entry to a journal in the state directory (a symbolic
// link to the run directory) that the final report removes. `gpualert sweep`, and
// the flushes that `run` and `outbox flush` start, look there for runs whose
// wrapper is gone and report them from what they left.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "model/verdict.hpp"

namespace cli {

// The job's name when --name is not given: the scheduler's (SLURM_JOB_NAME, LSB_JOBNAME,
// PBS_JOBNAME), else the command's basename.
std::string default_job_name(char** envp, const std::string& command_basename);

// <state_dir>/running
std::string journal_dir(const config::Config& config);

// Adds the run to the journal; returns the entry's path ("" if it could not be made:
// sweeping the log directory still finds the run).
std::string journal_add(const config::Config& config, const std::string& run_dir);
void journal_remove(const std::string& entry);

// The scheduler's evidence about a job that it ended, asked within `deadline`: see
// host::slurm_evidence. Empty outside Slurm or when the controller does not answer.
std::vector<std::string> scheduler_evidence(const std::map<std::string, std::string>& env,
                                            std::chrono::milliseconds deadline);

// A requeued job (see host::slurm_evidence) will run again by itself: the verdict's
// action says so instead of advising a resubmit, which would run it twice.
void note_requeue(model::Verdict& verdict, const std::vector<std::string>& scheduler_lines);

}  // namespace cli
